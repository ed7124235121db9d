//! `webtune compare`: saved results side by side, in the order given, the first being the
//! baseline; each figure with its change in percent, and with `bench --repeat N` results a
//! 95% confidence interval per difference (see `webtune_report::compare`). With `--live`,
//! two running servers compared side by side in alternating blocks (`run_urls`, ending in
//! the shared `decisive` step).

use crate::decisive::measure_and_report;
use crate::flags::bench::bench_args;
use crate::flags::compare::LiveArgs;
use crate::inputs::read_run;
use crate::output::{self, Outputs};
use anyhow::bail;
use std::path::PathBuf;
use webtune_report::compare::{judge_against_first, labels};
use webtune_tuner::interleaved::ArmLoad;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune compare before.json after.json\n  \
    webtune compare default.json tuned.json tuned2.json --html compare.html\n  \
    webtune compare main.json pr.json --threshold 'p99 <= +10%' --threshold 'rps >= -5%'\n  \
    webtune compare --live http://127.0.0.1:8080/ http://127.0.0.1:8081/ -- -c 20\n  \
    webtune compare --live URL_A URL_B --budget 1m --json ab.json -- --rate 2000 -c 50\n\
    Results saved by `webtune bench --repeat N --json FILE` carry N repeats: compare then gives a\n\
    95% confidence interval (Welch's t) for each difference, or says there is no significant one.\n\
    --live loads two running servers in alternating blocks (each pair's order drawn at random),\n\
    the bench flags after -- applied to both, until an always-valid 95% interval of B/A decides\n\
    (throughput in closed loop, p99 with --rate) or the budget ends. Exit 0 decided, 1\n\
    undecided, 2 bad input, 130 interrupted (what was measured is still written). See\n\
    docs/tuning.md.")]
pub struct CompareArgs {
    /// Results saved with --json; the first is the baseline, the order is the column order.
    /// With --live: the two URLs, A then B.
    #[arg(required = true, num_args = 1.., value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub live: crate::flags::compare::LiveArgs,
    /// Also write the comparison as a self-contained HTML page (with --live: each block's
    /// figure of both arms over time, and the interval narrowing pair by pair).
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<String>,
    /// A regression gate, repeatable: every result after the first is checked, a relative
    /// limit ('p99 <= +10%', 'rps >= -5%') against the first. Exit 99 when one fails.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub threshold: Vec<String>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    if args.live.live {
        if !args.threshold.is_empty() {
            bail!("--threshold goes with saved results, not with --live");
        }
        return run_urls(&args.files, &args.live, args.html.as_deref());
    }
    args.live.refuse_without_live()?;
    if args.files.len() < 2 {
        bail!("give at least two results to compare");
    }
    output::check_all([("--html", args.html.as_deref())])?;
    let thresholds = crate::gate::ThresholdArgs {
        threshold: args.threshold.clone(),
        threshold_abort: false,
    }
    .parse(true)?;
    // Nothing is measured here: a signal while the results are read exits at once.
    let at_once = crate::signals::exit_at_once();
    if let Some(code) = crate::fs_runs::compare(
        &args.files,
        labels(&args.files),
        args.html.as_deref(),
        &args.threshold,
    )? {
        return Ok(code);
    }
    let results = args
        .files
        .iter()
        .map(|f| read_run(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    drop(at_once);
    let inputs: Vec<(String, &webtune_model::RunResult)> = labels(&args.files)
        .into_iter()
        .zip(results.iter())
        .collect();
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.html {
        let html = webtune_report::compare_html::render_compare_html(&inputs);
        outputs.file("--html", dest, &html);
    }
    outputs.stdout(&webtune_report::compare::render_compare_text(&inputs));
    let mut verdicts = Vec::new();
    if !thresholds.is_empty() {
        let (text, judged) = judge_against_first(&thresholds, &inputs)?;
        outputs.stdout(&text);
        verdicts = judged;
    }
    let own = if crate::signals::stop_requested() {
        crate::exit::INTERRUPTED
    } else {
        crate::gate::status(&verdicts, crate::exit::SUCCESS)
    };
    Ok(outputs.exit_code(own))
}

/// `compare --live URL_A URL_B`: both servers loaded in alternating blocks.
pub fn run_urls(urls: &[PathBuf], args: &LiveArgs, html: Option<&str>) -> anyhow::Result<i32> {
    let [a, b] = urls else {
        bail!(
            "compare --live takes two URLs, A then B (got {})",
            urls.len()
        );
    };
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let bench = bench_args(&args.protocol.bench)?;
    let spec_a = bench.to_spec(&a)?;
    let spec_b = bench.to_spec(&b)?;
    let settings = args.protocol.settings(&spec_a, Some(1))?;
    let workload = bench.request.workload()?;
    let arms = [
        ArmLoad {
            spec: spec_a,
            workload: workload.clone(),
            server_pids: Vec::new(),
        },
        ArmLoad {
            spec: spec_b,
            workload,
            server_pids: Vec::new(),
        },
    ];
    let notes = vec![
        "each block is a short run of its own: connections to the arm open in its discarded \
         first part, and the idle arm holds none; one uncounted block to each arm first"
            .to_string(),
        "other CPU includes both servers' (compare --live does not know their processes)"
            .to_string(),
    ];
    measure_and_report(
        (&a, &b),
        arms,
        settings,
        (args.protocol.json.as_deref(), html),
        &mut |_| Err("compare --live cannot restart the servers".to_string()),
        notes,
    )
}
