//! `webtune sweep`: the same test at several load levels (connections, or request rates in
//! open loop), one run per level, then a table and plots of throughput, p50, p99 and error %
//! against the level, with the knee marked. The JSON (`webtune.sweep/1`) holds every run.

use crate::exit;
use crate::flags::bench::RequestArgsExt;
use crate::flags::bench::{load_mode, stop_condition};
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use crate::sweeps::{sweep_of, warn_unanswered};
use webtune_cli::sweep::SweepArgs;
use webtune_lab::trial::{self, Level, Target, Trial};
use webtune_model::{LoadMode, RunSpec};
use webtune_report::sweep::{render_sweep_csv, render_sweep_html, render_sweep_text};

/// What the binary makes of `SweepArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait SweepArgsExt {
    /// The run of one level.
    fn spec_for(&self, level: Level) -> anyhow::Result<RunSpec>;
}

impl SweepArgsExt for SweepArgs {
    fn spec_for(&self, level: Level) -> anyhow::Result<RunSpec> {
        let (connections, load) = match level {
            Level::Rate(rate) => (
                self.rate_connections.max(1),
                load_mode(Some(rate), &self.arrival),
            ),
            Level::Connections(c) => (c, LoadMode::Closed),
            Level::AsSpecified => (webtune_model::spec::DEFAULT_CONNECTIONS, LoadMode::Closed),
        };
        let mut spec = RunSpec {
            url: self.url.clone(),
            connections,
            stop: stop_condition(self.requests, self.duration),
            load,
            ..RunSpec::default()
        };
        self.request.apply(&mut spec)?;
        spec.validate()?;
        Ok(spec)
    }
}

pub fn run(args: SweepArgs) -> anyhow::Result<i32> {
    // Nothing is measured yet: a signal while the inputs are read (a FIFO) exits at once.
    let at_once = crate::signals::exit_at_once();
    let (variable, levels) = trial::levels_of(&args.connections, &args.rates)?;
    // Check every level's spec before the first run, so a bad flag fails at once.
    let specs = levels
        .iter()
        .map(|&l| args.spec_for(l))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let workload = args.request.workload()?;
    drop(at_once);
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
        ("--csv", args.output.csv.as_deref()),
    ])?;
    // One trial on a server webtune does not start: the levels one after another.
    let mut trial = Trial::new(
        Target::external(&args.url),
        RunSpec {
            url: String::new(),
            ..specs[0].clone()
        },
    );
    trial.workload = workload;
    trial.levels = levels;
    trial.repeat = args.output.repeat;
    trial.pause = args.pause;
    let stop = crate::signals::stop_token();
    let outcome = trial::run(
        &trial,
        &stop,
        &mut Narrator::new(args.output.quiet, !args.output.quiet),
    )?;
    let sweep = sweep_of(outcome, variable, "webtune sweep");
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.output.html {
        outputs.file("--html", dest, &render_sweep_html(&sweep));
    }
    if let Some(dest) = &args.output.csv {
        outputs.file("--csv", dest, &render_sweep_csv(&sweep));
    }
    // Last: "--json -" goes to stdout.
    if let Some(dest) = &args.output.json {
        outputs.file("--json", dest, &(sweep.to_json_pretty() + "\n"));
    }
    let json_to_stdout = args.output.json.as_deref() == Some("-");
    if !json_to_stdout && !args.output.quiet {
        outputs.stdout(&format!("\n{}", render_sweep_text(&sweep)));
    }
    let unanswered = warn_unanswered(&sweep, "sweep");
    Ok(outputs.exit_code(if sweep.interrupted {
        exit::INTERRUPTED
    } else if unanswered {
        exit::NO_SUCCESS
    } else {
        exit::SUCCESS
    }))
}
