//! `webtune sweep`: the same test at several load levels (connections, or request rates in
//! open loop), one run per level, then a table and plots of throughput, p50, p99 and error %
//! against the level, with the knee marked. The JSON (`webtune.sweep/1`) holds every run.

use crate::exit;
use crate::flags::bench::{load_mode, stop_condition, RequestArgs};
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use crate::output_flags::{OutputFlags, OutputHelp};
use crate::sweeps::{sweep_of, warn_unanswered};
use std::time::Duration;
use webtune_lab::trial::{self, Level, Target, Trial};
use webtune_model::{parse_duration, LoadMode, RunSpec};
use webtune_report::sweep::{render_sweep_csv, render_sweep_html, render_sweep_text};

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune sweep http://127.0.0.1:8080/ -c 8,32,128,256,512,1024 -d 10s --json sweep.json\n  \
    webtune sweep http://127.0.0.1:8080/ -c 1,2,4,8 -n 10000 --html sweep.html\n  \
    webtune sweep http://127.0.0.1:8080/ --rates 1000,2000,4000,8000 -d 10s --warmup 2s\n\
    The knee is the level after which throughput grows by less than 5% while p99 keeps growing.\n\
    A level that stalled in its measured window (not its warm-up), was cut short, or where the\n\
    generator was the limit is left out of it, and marked so in the table.\n\
    Load flags and defaults are bench's (no warm-up, no cool-down, no pause): this sweeps a\n\
    server you run, already warm. `webtune lab sweep` starts cold servers and so defaults to\n\
    --warmup 2s --cooldown 1s --pause 1s (seed 003's protocol).")]
pub struct SweepArgs {
    /// The URL to load: http:// or https:// (HTTP/1.1; --http2 for h2, or h2c over http://).
    pub url: String,
    /// Connection levels, comma-separated (closed loop), e.g. 8,32,128,256.
    #[arg(
        short = 'c',
        long = "connections",
        value_delimiter = ',',
        value_name = "N,N,…",
        conflicts_with = "rates"
    )]
    pub connections: Vec<u32>,
    /// Request rates per second, comma-separated (open loop), e.g. 1000,2000,4000.
    #[arg(long = "rates", value_delimiter = ',', value_name = "R,R,…")]
    pub rates: Vec<f64>,
    /// Open loop: the most connections opened at each rate level (a request due while all
    /// are busy waits, and the wait counts).
    #[arg(long = "rate-connections", default_value_t = webtune_model::spec::OPEN_LOOP_CONNECTIONS)]
    pub rate_connections: u32,
    /// Open loop: how intended start times are spaced.
    #[arg(long = "arrival", default_value = "uniform", value_parser = ["uniform", "poisson"])]
    pub arrival: String,
    /// Length of each level's run (e.g. 10s, 500ms, 1m30s). Default 10s unless -n is given.
    #[arg(short = 'd', long = "duration", value_parser = parse_duration, conflicts_with = "requests",
          value_name = "DURATION")]
    pub duration: Option<Duration>,
    /// Requests per level instead of a duration.
    #[arg(short = 'n', long = "requests")]
    pub requests: Option<u64>,
    #[command(flatten)]
    pub request: RequestArgs,
    /// Pause between levels, letting the server settle (e.g. 1s).
    #[arg(long = "pause", default_value = "0s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub pause: Duration,
    #[command(flatten)]
    pub output: OutputFlags<SweepOutput>,
}

/// The help of sweep's output flags.
#[derive(Debug, Clone)]
pub struct SweepOutput;

impl OutputHelp for SweepOutput {
    const JSON: &'static str =
        "Write the sweep (every run) as JSON, schema webtune.sweep/1, to FILE or \"-\"";
    const HTML: &'static str = "Write the HTML report (table, plots, every level) to FILE";
    const CSV: Option<&'static str> =
        Some("Also write the table as CSV (one line per level) to FILE");
    const REPEAT: Option<&'static str> = Some(
        "Run each level N times and keep every run's summary (as bench --repeat does); the \
         level's figures are all its runs merged",
    );
    const QUIET: &'static str = "No progress line, no per-level lines and no table (the files \
        are still written; errors still go to stderr)";
}

impl SweepArgs {
    /// The run of one level.
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
