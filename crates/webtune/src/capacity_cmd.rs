//! `webtune capacity URL` and the search behind `webtune lab capacity STACK`: flags into a
//! capacity trial (`webtune_tuner::capacity_run`), narration of every step on stderr, and the
//! outputs (text table on stdout, `--json` webtune.capacity/1, `--html`). The search and the
//! judging live in `webtune_tune::capacity`; this file only wires them.

use crate::bench_cmd::{load_mode, RequestArgs};
use crate::exit;
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use crate::output_flags::{OutputFlags, OutputHelp};
use anyhow::bail;
use std::time::Duration;
use webtune_lab::trial::{Level, Target, Trial};
use webtune_model::capacity::{CapacityLimit, CapacityStep, SearchSettings, StepOutcome};
use webtune_model::{parse_duration, RunSpec, StopCondition};
use webtune_report::capacity::{render_capacity_html, render_capacity_text};
use webtune_tune::capacity::{check, parse_slos};
use webtune_tuner::capacity_run::{self, CapacitySpec};

/// The search's flags, shared by `capacity` and `lab capacity`.
#[derive(clap::Args, Debug, Clone)]
pub struct SearchArgs {
    /// A service-level objective every step must meet (repeatable), in the --threshold
    /// grammar: 'p99<=100ms', 'p999<=1s', 'mean<=20ms', 'errors<=0.1%'.
    #[arg(long = "slo", value_name = "EXPR")]
    pub slo: Vec<String>,
    /// The first rate tried, requests/s; the search doubles it until an SLO breaks.
    #[arg(long = "start-rate", default_value_t = 100.0, value_name = "REQ/S")]
    pub start_rate: f64,
    /// When the first rate already breaks an SLO, halve down to this rate at most.
    #[arg(long = "min-rate", default_value_t = 1.0, value_name = "REQ/S")]
    pub min_rate: f64,
    /// Never try above this rate.
    #[arg(long = "max-rate", value_name = "REQ/S")]
    pub max_rate: Option<f64>,
    /// Stop bisecting when the highest held and the lowest broken rate are this close.
    #[arg(long = "precision", default_value = "5%", value_parser = webtune_model::units::parse_percent,
          value_name = "PCT")]
    pub precision: f64,
    /// Steps at most (the boundary's repeat included).
    #[arg(long = "max-steps", default_value_t = 30, value_name = "N")]
    pub max_steps: u32,
    /// Length of every step [default: 10s].
    #[arg(short = 'd', long = "step-duration", value_parser = parse_duration,
          value_name = "DURATION")]
    pub step_duration: Option<Duration>,
    /// Rest between steps, so the server drains what an overloaded step queued.
    #[arg(long = "pause", default_value = "1s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub pause: Duration,
    #[command(flatten)]
    pub output: OutputFlags<CapacityOutput>,
}

/// The help of the search's output flags (`capacity`, `lab capacity`).
#[derive(Debug, Clone)]
pub struct CapacityOutput;

impl OutputHelp for CapacityOutput {
    const JSON: &'static str = "Write the search (every step's full result) as JSON, schema \
        webtune.capacity/1, to FILE or \"-\"";
    const HTML: &'static str = "Write the HTML report (table, latency against rate with the SLO \
        line and the capacity marked, every step) to FILE";
    const QUIET: &'static str =
        "No progress line, no step lines and no table (files are still written)";
}

impl SearchArgs {
    fn settings(&self) -> SearchSettings {
        SearchSettings {
            start_rps: self.start_rate,
            min_rps: self.min_rate,
            max_rps: self.max_rate,
            growth: 2.0,
            precision: self.precision,
            max_steps: self.max_steps,
        }
    }
}

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune capacity http://127.0.0.1:8080/ --slo 'p99<=100ms' --slo 'errors<=0.1%'\n  \
    webtune capacity URL --slo 'p99<=50ms' -c 500 --step-duration 10s --json cap.json --html cap.html\n\
    Open loop at growing rates (doubling from --start-rate until an SLO breaks, then bisection to\n\
    --precision, then the boundary rate once more): the capacity is the highest rate at which every\n\
    SLO held, latency measured from each request's intended start. A step where the generator was\n\
    the limit never counts. The search stops at a step that finds the target gone (every connect\n\
    refused), exit 3. Exit 5 when no rate met the SLOs (docs/capacity.md).")]
pub struct CapacityArgs {
    /// The URL to load.
    pub url: String,
    /// The most connections opened to keep each step's schedule (a request due while all are
    /// busy waits, and the wait counts).
    #[arg(short = 'c', long = "connections", default_value_t = webtune_model::spec::OPEN_LOOP_CONNECTIONS)]
    pub connections: u32,
    /// How intended start times are spaced: uniform or poisson.
    #[arg(long = "arrival", default_value = "uniform", value_parser = ["uniform", "poisson"])]
    pub arrival: String,
    #[command(flatten)]
    pub search: SearchArgs,
    #[command(flatten)]
    pub request: RequestArgs,
}

pub fn run(args: CapacityArgs) -> anyhow::Result<i32> {
    let mut load = RunSpec {
        url: args.url.clone(),
        ..RunSpec::default()
    };
    // Nothing is measured yet: a signal while the inputs are read (a FIFO) exits at once.
    let at_once = crate::signals::exit_at_once();
    args.request.apply(&mut load)?;
    // smtp://: messages with `webtune smtp`'s defaults to its generated mailboxes.
    let smtp = args.url.starts_with("smtp://");
    if smtp {
        load.smtp = Some(webtune_model::SmtpSpec::default());
        load.expect_status = vec![(200, 299)];
    }
    let mut trial = Trial::new(
        Target::External {
            base_url: args.url.clone(),
            processes: Vec::new(),
            pids: Vec::new(),
        },
        load,
    );
    trial.workload = match smtp {
        true => crate::smtp_cmd::mailboxes(None, "")?,
        false => args.request.workload()?,
    };
    drop(at_once);
    search(trial, args.connections, &args.arrival, &args.search)
}

/// `lab capacity`: the bench flags given after `--` that make no sense for a search are
/// refused; the rest shaped the trial already.
pub fn run_lab(
    trial: Trial,
    bench: &crate::bench_cmd::BenchArgs,
    search_args: &SearchArgs,
) -> anyhow::Result<i32> {
    if bench.rate.is_some() || bench.requests.is_some() || bench.stages.is_some() {
        bail!("lab capacity picks the rates: no --rate, -n or --stages after --");
    }
    if bench.output.json.is_some() || bench.output.html.is_some() || bench.output.csv.is_some() {
        bail!("give --json and --html before --: they hold the whole search");
    }
    if !bench.gate.threshold.is_empty() || bench.output.repeat > 1 {
        bail!("lab capacity judges --slo (before --), not --threshold or --repeat");
    }
    let mut search_args = search_args.clone();
    if search_args.step_duration.is_none() {
        search_args.step_duration = bench.duration;
    }
    search(
        trial,
        bench
            .connections
            .unwrap_or(webtune_model::spec::OPEN_LOOP_CONNECTIONS),
        &bench.arrival,
        &search_args,
    )
}

fn search(
    mut trial: Trial,
    connections: u32,
    arrival: &str,
    args: &SearchArgs,
) -> anyhow::Result<i32> {
    // Everything the user typed is checked before any load.
    let slos = parse_slos(&args.slo)?;
    let settings = args.settings();
    check(&settings)?;
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
    ])?;
    if connections == 0 {
        bail!("-c must be at least 1");
    }
    let step = args.step_duration.unwrap_or(Duration::from_secs(10));
    trial.load.connections = connections;
    trial.load.load = load_mode(Some(settings.start_rps), arrival);
    trial.load.stop = StopCondition::Duration {
        seconds: step.as_secs_f64(),
    };
    trial.load.validate()?;
    trial.levels = vec![Level::Rate(settings.start_rps)];
    trial.pause = args.pause;
    let spec = CapacitySpec {
        trial,
        slos,
        search: settings,
        tool: format!("webtune {}", env!("CARGO_PKG_VERSION")),
    };
    let stop = crate::signals::stop_token();
    let quiet = args.output.quiet;
    let mut narrator = Narrator::new(quiet, !quiet);
    let mut on_step = |index: usize, s: &CapacityStep| {
        if !quiet {
            eprintln!("  step {} at {}/s: {}", index + 1, s.rate_rps, step_word(s));
        }
    };
    let result = capacity_run::run(&spec, &stop, &mut narrator, &mut on_step)?;
    if result.interrupted {
        eprintln!(
            "webtune capacity: interrupted: keeping the {} step(s) measured",
            result.steps.len()
        );
    }
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.output.html {
        outputs.file("--html", dest, &render_capacity_html(&result));
    }
    // Last: "--json -" goes to stdout.
    if let Some(dest) = &args.output.json {
        outputs.file("--json", dest, &(result.to_json_pretty() + "\n"));
    }
    if args.output.json.as_deref() != Some("-") && !quiet {
        outputs.stdout(&format!("\n{}", render_capacity_text(&result)));
    }
    let no_capacity = result.capacity_rps.is_none()
        && matches!(
            result.limit,
            CapacityLimit::Unmeetable | CapacityLimit::Generator | CapacityLimit::StepBudget
        );
    if no_capacity {
        output::warn(&format!("capacity: {}", result.summary));
    }
    if result.limit == CapacityLimit::TargetDown {
        output::warn(&format!("capacity: {}", result.summary));
    }
    let died = result.limit == CapacityLimit::TargetDown
        || result.steps.iter().any(|s| {
            s.result
                .server
                .as_ref()
                .is_some_and(|server| server.server_died())
        });
    Ok(outputs.exit_code(if result.interrupted {
        exit::INTERRUPTED
    } else if died {
        exit::TARGET_DOWN
    } else if no_capacity {
        exit::NO_CAPACITY
    } else {
        exit::SUCCESS
    }))
}

fn step_word(s: &CapacityStep) -> String {
    match s.outcome {
        StepOutcome::Held => "held".into(),
        StepOutcome::Broke => format!("broke {}", s.broken.join(", ")),
        StepOutcome::ClientLimited => format!(
            "not counted, the generator was the limit ({})",
            s.reasons.join("; ")
        ),
        StepOutcome::Interrupted => "interrupted".into(),
        StepOutcome::TargetDown => format!("TARGET DOWN ({})", s.reasons.join("; ")),
    }
}
