//! Running a spec from a command: with the process's stop token (Ctrl-C keeps what was
//! measured), a live progress line on a terminal, `--repeat`, and the outputs every HTTP
//! run writes (`emit`, threshold verdicts, the line that says why nothing answered). Shared
//! by bench, ab, http_load, smtp, sweep, lab run and postal; no command owns it.

use crate::output::Outputs;
use anyhow::{bail, Context};
use std::io::{IsTerminal, Write};
use webtune_cli::flags::bench::BenchArgs;
use webtune_engine::{Progress, Workload};
use webtune_model::{RunResult, RunSpec};
use webtune_report::output::RunOutputs;

pub(crate) use webtune_report::verdicts::no_response_line;

/// A one-line live view on stderr, redrawn in place; only when stderr is a terminal.
pub struct ProgressLine {
    enabled: bool,
    label: String,
}

impl ProgressLine {
    pub fn new(label: &str, quiet: bool) -> ProgressLine {
        ProgressLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            label: label.to_string(),
        }
    }

    pub fn update(&mut self, p: &Progress) {
        if !self.enabled {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{}[{:>6.1}s] {} responses  {:.0}/s  {} errors  {} open",
            self.label,
            p.elapsed.as_secs_f64(),
            p.responses,
            p.rate_per_s,
            p.errors,
            p.open_connections
        );
        let _ = err.flush();
    }

    pub fn finish(&mut self) {
        if self.enabled {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// Run one spec with a progress line (unless `quiet`), stopped by the process's stop token
/// (Ctrl-C, SIGTERM, SIGHUP). Returns the result and whether the run was interrupted.
pub fn run_spec_quiet(
    spec: &RunSpec,
    workload: &Workload,
    label: &str,
    quiet: bool,
) -> anyhow::Result<(RunResult, bool)> {
    run_spec_watched(spec, workload, label, quiet, &mut |_| {})
}

/// `run_spec_quiet`, with `watch` shown every progress report too (live thresholds, metrics).
pub(crate) fn run_spec_watched(
    spec: &RunSpec,
    workload: &Workload,
    label: &str,
    quiet: bool,
    watch: &mut dyn FnMut(&Progress),
) -> anyhow::Result<(RunResult, bool)> {
    let control = crate::signals::stop_token();
    let mut line = ProgressLine::new(label, quiet);
    let result = webtune_engine::run(spec, workload, &control, &mut |p| {
        line.update(p);
        watch(p);
    });
    line.finish();
    let result = result?;
    let interrupted = result.interrupted;
    Ok((result, interrupted))
}

/// Where `args` send a run's result (`webtune_report::output::RunOutputs`).
fn destinations(args: &BenchArgs) -> RunOutputs<'_> {
    RunOutputs {
        json: args.output.json.as_deref(),
        html: args.output.html.as_deref(),
        csv: args.output.csv.as_deref(),
        quiet: args.output.quiet,
        format: args.format,
        timeline: args.timeline,
    }
}

/// Threshold verdicts go to stderr when the text summary (which has them) is not printed.
pub fn verdicts_to_stderr(result: &RunResult, args: &BenchArgs) {
    if let Some(text) = destinations(args).verdicts_elsewhere(result) {
        eprint!("webtune: thresholds:\n{text}");
    }
}

/// Run `spec` `repeat` times (bench's and sweep's `--repeat`), stopping early when
/// interrupted; the result is the one run, or all runs merged with a summary of each. `watch` sees every
/// progress report of every run (live thresholds, metrics).
pub fn run_spec_repeated(
    spec: &RunSpec,
    workload: &Workload,
    repeat: u32,
    label: &str,
    quiet: bool,
    watch: &mut dyn FnMut(&Progress),
) -> anyhow::Result<(RunResult, bool)> {
    if repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let mut runs = Vec::new();
    let mut interrupted = false;
    for i in 0..repeat {
        let label = if repeat > 1 {
            format!("{label}run {}/{} ", i + 1, repeat)
        } else {
            label.to_string()
        };
        let (result, stopped) = run_spec_watched(spec, workload, &label, quiet, watch)?;
        runs.push(result);
        if stopped {
            interrupted = true;
            break;
        }
    }
    let result = if runs.len() > 1 {
        webtune_report::with_repeats(runs).context("no run to report")?
    } else {
        runs.pop().context("no run to report")?
    };
    Ok((result, interrupted))
}

/// Write the `--json` and `--html` files, then print the summary in `--format` (with
/// `header` and `footer` around it in text format). Returns what happened to them.
pub fn emit(result: &RunResult, args: &BenchArgs, header: &str, footer: &str) -> Outputs {
    let mut outputs = Outputs::new();
    destinations(args).write(&mut outputs, result, header, footer);
    outputs
}
