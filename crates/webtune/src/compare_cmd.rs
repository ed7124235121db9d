//! `webtune compare`: saved results side by side, in the order given, the first being the
//! baseline; each figure with its change in percent, and with `bench --repeat N` results a
//! 95% confidence interval per difference (see `webtune_report::compare`). With `--live`,
//! two running servers compared side by side in alternating blocks (`run_urls`, ending in
//! the shared `decisive` step).

use crate::decisive::measure_and_report;
use crate::flags::bench::BenchArgsExt;
use crate::flags::bench::RequestArgsExt;
use crate::flags::compare::ProtocolArgsExt;
use crate::gate::ThresholdArgsExt;
use crate::inputs::read_run;
use crate::output::{self, Outputs};
use anyhow::bail;
use std::path::PathBuf;
use webtune_cli::compare::CompareArgs;
use webtune_cli::flags::bench::bench_args;
use webtune_cli::flags::compare::LiveArgs;
use webtune_cli::flags::threshold::ThresholdArgs;
use webtune_report::compare::{judge_against_first, labels};
use webtune_tuner::interleaved::ArmLoad;

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
    let thresholds = ThresholdArgs {
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
