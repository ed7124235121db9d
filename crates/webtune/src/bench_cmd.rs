//! `webtune bench`: one load test. Parses the flags into a `RunSpec`, starts the embedded
//! target when no URL is given, shows a progress line on a terminal, turns Ctrl-C into a
//! clean stop that keeps what was measured, and writes the reports.

use crate::exit;
use crate::flags::bench::check_outputs;
use crate::flags::bench::BenchArgsExt;
use crate::flags::bench::RequestArgsExt;
use crate::gate::ThresholdArgsExt;
use crate::output::{self};
use crate::running::{emit, no_response_line, run_spec_repeated, verdicts_to_stderr};
use crate::sharding::ShardArgsExt;
use anyhow::{bail, Context};
use webtune_cli::flags::bench::BenchArgs;

pub fn run(args: BenchArgs) -> anyhow::Result<i32> {
    check_outputs(&args)?;
    let thresholds = args.gate.parse(false)?;
    if args.sharding.shard.is_some() && args.output.repeat > 1 {
        bail!(
            "--repeat does not go with --shard: a shard runs once (repeat the whole sharded test)"
        );
    }
    // Nothing is measured yet: a signal while the scenario or the body file is read (a
    // FIFO, a huge file) exits at once.
    let at_once = crate::signals::exit_at_once();
    // The base URL: the argument, else the scenario's base_url, else the embedded target.
    let workload = args.request.workload()?;
    let scenario_base = workload.base_url().map(str::to_string);
    // Every flag is checked before the embedded target starts (the URL is the engine's).
    let mut spec = args.to_spec("")?;
    drop(at_once);
    let metrics = match &args.metrics_listen {
        Some(addr) => {
            let server = webtune_engine::metrics::MetricsServer::start(addr, spec.shard)?;
            if !args.output.quiet {
                eprintln!("webtune: live metrics at http://{}/metrics", server.addr);
            }
            Some(server)
        }
        None => None,
    };
    match crate::sharding::start_note(&spec) {
        Some(webtune_model::start_at::StartNote::Late(warning)) => output::warn(&warning),
        Some(webtune_model::start_at::StartNote::Waiting(line)) if !args.output.quiet => {
            eprintln!("{line}")
        }
        _ => {}
    }
    let mut embedded = None;
    let url = match args.url.clone().or(scenario_base) {
        Some(u) => u,
        None => {
            let server =
                webtune_serve::EmbeddedServer::start(webtune_serve::ServeOptions::default())
                    .context("cannot start the embedded target")?;
            let path = if args.request.scenario.is_some() {
                ""
            } else {
                "/empty.gif"
            };
            let url = format!("http://{}{path}", server.local_addr());
            eprintln!(
                "webtune: no URL given: benchmarking the embedded target at {url} \
                 (it runs in this process and shares the CPU with the generator)"
            );
            embedded = Some(server);
            url
        }
    };
    spec.url = url;
    let mut abort = crate::gate::abort_check(&thresholds, args.gate.threshold_abort, spec.warmup_s);
    let outcome = run_spec_repeated(
        &spec,
        &workload,
        args.output.repeat,
        "",
        args.output.quiet,
        &mut |p| {
            if let Some(m) = &metrics {
                m.update(p);
            }
            abort.check(p);
        },
    );
    if let Some(m) = metrics {
        m.stop();
    }
    if let Some(server) = embedded {
        server.shutdown();
    }
    let (mut result, interrupted) = outcome?;
    args.sharding.record(&mut result);
    crate::gate::judge(&mut result, &thresholds, abort.failed);
    let outputs = emit(&result, &args, "", "");
    verdicts_to_stderr(&result, &args);
    let own = if interrupted {
        exit::INTERRUPTED
    } else if result.responses == 0 {
        // Even under -q: a failed run must not end in silence (the status alone says little).
        eprintln!(
            "webtune: bench: {}",
            no_response_line(&result, "no request got a response")
        );
        exit::NO_SUCCESS
    } else {
        exit::SUCCESS
    };
    let code = crate::gate::status(&result.thresholds, own);
    Ok(outputs.exit_code(code))
}
