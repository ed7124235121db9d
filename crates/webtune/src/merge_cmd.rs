//! `webtune merge`: the shards of one test (`bench --shard i/n --json sI.json` on several
//! machines) merged into the result of the whole test, exactly (`report::saved::merge_shards`,
//! one file at a time: histograms added bucket by bucket, never averaged percentiles), then reported as
//! `bench` reports a run, thresholds included. Shards of another test or run, or that did not run
//! together, are refused (the model's `shard_check`); `--allow-skew` lets the last through.

use crate::gate;
use crate::gate::ThresholdArgsExt;
use crate::output::{self, Outputs};
use crate::signals;
use webtune_cli::merge::MergeArgs;
use webtune_model::MergeOptions;

pub fn run(args: MergeArgs) -> anyhow::Result<i32> {
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
    ])?;
    if args.gate.threshold_abort {
        anyhow::bail!("--threshold-abort needs a running test; merge checks --threshold only");
    }
    let thresholds = args.gate.parse(false)?;
    // Nothing is measured here: a signal while the shards are read (a FIFO, a huge file)
    // or merged exits at once.
    let at_once = signals::exit_at_once();
    let mut merged = webtune_report::saved::merge_shards(
        &args.files,
        MergeOptions {
            allow_skew: args.allow_skew,
        },
    )?;
    gate::judge(&mut merged, &thresholds, None);
    drop(at_once);
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.output.html {
        let html = webtune_report::render(&merged, webtune_report::Format::Html);
        outputs.file("--html", dest, &html);
    }
    if let Some(dest) = &args.output.json {
        outputs.file("--json", dest, &(merged.to_json_pretty() + "\n"));
    }
    let text = args.format == webtune_report::Format::Text;
    let printed = !(args.output.quiet && text) && args.output.json.as_deref() != Some("-");
    if printed {
        outputs.stdout(&webtune_report::render(&merged, args.format));
    }
    let summary_has_verdicts = printed && text;
    if !summary_has_verdicts && !merged.thresholds.is_empty() {
        eprint!(
            "webtune: thresholds:\n{}",
            webtune_report::verdicts::render_verdicts(&merged.thresholds)
        );
    }
    let own = if signals::stop_requested() {
        crate::exit::INTERRUPTED
    } else {
        gate::status(&merged.thresholds, crate::exit::SUCCESS)
    };
    Ok(outputs.exit_code(own))
}
