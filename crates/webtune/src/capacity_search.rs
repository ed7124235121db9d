//! The capacity search as the commands run it: a trial searched step by step
//! (`webtune_tuner::capacity_run`), every step narrated on stderr, and the outputs (text
//! table on stdout, `--json` webtune.capacity/1, `--html`). Shared by `capacity` and `lab
//! capacity`; the request is `webtune_tuner::capacity_request`'s, the search and the judging
//! `webtune_search::capacity`'s.

use crate::exit;
use crate::flags::bench::load_mode;
use crate::flags::capacity::SearchArgsExt;
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use anyhow::bail;
use webtune_cli::flags::capacity::SearchArgs;
use webtune_lab::trial::Trial;
use webtune_model::capacity::{CapacityLimit, CapacityStep, StepOutcome};
use webtune_model::{Arrival, LoadMode};
use webtune_report::capacity::{render_capacity_html, render_capacity_text};
use webtune_tuner::capacity_request::CapacityRequest;
use webtune_tuner::capacity_run;

/// `lab capacity`: the bench flags given after `--` that make no sense for a search are
/// refused; the rest shaped the trial already.
pub fn run_lab(
    trial: Trial,
    bench: &webtune_cli::flags::bench::BenchArgs,
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

pub fn search(
    trial: Trial,
    connections: u32,
    arrival: &str,
    args: &SearchArgs,
) -> anyhow::Result<i32> {
    let request = CapacityRequest {
        slos: args.slo.clone(),
        search: args.settings(),
        connections,
        arrival: match load_mode(Some(1.0), arrival) {
            LoadMode::Open { arrival, .. } => arrival,
            LoadMode::Closed => Arrival::Uniform,
        },
        step: args.step_duration,
        pause: args.pause,
    };
    // Everything the user typed is checked before any load.
    request.check()?;
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
    ])?;
    let spec = request.spec(trial, &format!("webtune {}", env!("CARGO_PKG_VERSION")))?;
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
