//! `webtune merge`: the shards of one test (`bench --shard i/n --json sI.json` on several
//! machines) merged into the result of the whole test, exactly (`report::saved::merge_shards`,
//! one file at a time: histograms added bucket by bucket, never averaged percentiles), then reported as
//! `bench` reports a run, thresholds included. Shards of another test or run, or that did not run
//! together, are refused (the model's `shard_check`); `--allow-skew` lets the last through.

use crate::gate::{self, ThresholdArgs};
use crate::output::{self, Outputs};
use crate::output_flags::{OutputFlags, OutputHelp};
use crate::signals;
use std::path::PathBuf;
use webtune_model::MergeOptions;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune merge s1.json s2.json s3.json --json all.json --html all.html\n  \
    webtune merge results/s*.json --threshold 'p99<=50ms'      (exit 99 when it fails)\n\
    Every input must be a shard of the same test (bench --shard I/N, same flags otherwise)\n\
    and run (the same --run-id, or the same absolute --start-at), and all N shards must be\n\
    there; their measured windows must start within 1 s (or 10% of the test's length, if\n\
    more) of each other. Otherwise merge exits 2 and names the file at fault.")]
// --threshold-abort stops a running test: merge has none, so its help does not offer it (given
// anyway, it is refused in one line).
#[command(mut_arg("threshold_abort", |a| a.hide(true)))]
pub struct MergeArgs {
    /// The shards' results, saved with --json.
    #[arg(required = true, value_name = "SHARD.json")]
    pub files: Vec<PathBuf>,
    /// Layout of the summary on stdout: text, ab, http_load, json, csv or html.
    #[arg(
        short = 'f',
        long = "format",
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub format: webtune_report::Format,
    #[command(flatten)]
    pub output: OutputFlags<MergeOutput>,
    #[command(flatten)]
    pub gate: ThresholdArgs,
    /// Merge shards whose starts lie further apart than the limit (1 s or 10% of the test's
    /// length) instead of refusing them; the result is then marked invalid, with the
    /// shards that ran late in its validity reasons.
    #[arg(long = "allow-skew")]
    pub allow_skew: bool,
}

/// The help of merge's output flags.
#[derive(Debug, Clone)]
pub struct MergeOutput;

impl OutputHelp for MergeOutput {
    const JSON: &'static str =
        "Write the merged result as JSON (schema webtune.run/1) to FILE, or \"-\" for stdout";
    const HTML: &'static str = "Write a self-contained HTML report of the merged result to FILE";
    const QUIET: &'static str =
        "No summary on stdout (a --format other than text is still printed)";
}

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
