//! The capacity search run for real: one trial (`webtune_lab::trial::run_adaptive`) whose
//! levels are open-loop rates that `capacity::next` picks from the steps measured so far.
//! The target starts once; every step is judged against the SLOs (`capacity::judge_step`);
//! a stop (Ctrl-C) keeps the steps measured and concludes with the best bounds known; a step
//! that finds the target gone ends the search. The result is `webtune.capacity/1` with its
//! one-sentence summary, which names what to do when the generator was the limit.

use webtune_lab::trial::{self, Level, LevelResult, Target, Trial, TrialEvents};
use webtune_lab::LabError;
use webtune_model::capacity::{
    CapacityLimit, CapacityResult, CapacityStep, SearchSettings, StepOutcome, CAPACITY_SCHEMA,
};
use webtune_model::{StopCondition, StopToken, Threshold};
use webtune_search::capacity::{self, Conclusion, Next, Seen};
use webtune_search::capacity_judge::{self, GeneratorCause};

/// A capacity search: the trial (target, load with its connection cap and step length,
/// workload, pause between steps), the SLOs and the search's settings.
pub struct CapacitySpec {
    /// Its `levels` must hold one level, any (the search picks the rates; one level keeps
    /// the narration plain); its load's stop condition must be a duration: every step's
    /// length.
    pub trial: Trial,
    pub slos: Vec<Threshold>,
    pub search: SearchSettings,
    /// "webtune X.Y.Z".
    pub tool: String,
}

/// Run the search; `on_step` hears every step as soon as it is judged.
pub fn run(
    spec: &CapacitySpec,
    stop: &StopToken,
    events: &mut dyn TrialEvents,
    on_step: &mut dyn FnMut(usize, &CapacityStep),
) -> Result<CapacityResult, LabError> {
    capacity::check(&spec.search).map_err(|e| LabError::Inconsistent(e.to_string()))?;
    let step_s = match spec.trial.load.stop {
        StopCondition::Duration { seconds } if seconds > 0.0 => seconds,
        _ => {
            return Err(LabError::Inconsistent(
                "a capacity step is timed: give its length (--step-duration), not -n".into(),
            ))
        }
    };
    let mut steps: Vec<CapacityStep> = Vec::new();
    let mut conclusion: Option<Conclusion> = None;
    let mut next_level = |measured: &[LevelResult]| -> Option<Level> {
        for level in &measured[steps.len().min(measured.len())..] {
            let step = judge(level, &spec.slos);
            on_step(steps.len(), &step);
            steps.push(step);
        }
        if stop.stop_requested() {
            return None;
        }
        match capacity::next(&spec.search, &seen(&steps)) {
            Next::Run(rate) => Some(Level::Rate(rate)),
            Next::Done(c) => {
                conclusion = Some(c);
                None
            }
        }
    };
    if spec.trial.levels.is_empty() {
        return Err(LabError::Inconsistent(
            "a capacity trial needs one level (any: the search picks the rates)".into(),
        ));
    }
    let outcome = trial::run_adaptive(&spec.trial, stop, events, &mut next_level)?;
    for level in outcome.levels.into_iter().skip(steps.len()) {
        let step = judge(&level, &spec.slos);
        on_step(steps.len(), &step);
        steps.push(step);
    }
    let interrupted = outcome.interrupted || stop.stop_requested();
    let conclusion = match conclusion {
        Some(c) if !interrupted => c,
        _ => capacity::conclude_early(&seen(&steps), CapacityLimit::Interrupted),
    };
    let mut result = CapacityResult {
        schema: CAPACITY_SCHEMA.into(),
        tool: spec.tool.clone(),
        target: describe_target(&spec.trial, &outcome.base_url),
        settings: match &spec.trial.target {
            Target::External { .. } => String::new(),
            target => target.describe_settings(),
        },
        slos: spec.slos.iter().map(|t| t.text.clone()).collect(),
        search: spec.search,
        step_s,
        capacity_rps: conclusion.capacity_rps,
        limit: conclusion.limit,
        broke_at_rps: conclusion.broke_at_rps,
        broke_first: Vec::new(),
        generator_limited_at_rps: conclusion.generator_limited_at_rps,
        interrupted,
        target_down: None,
        drift: Vec::new(),
        summary: String::new(),
        steps,
    };
    result.target_down = result
        .steps
        .iter()
        .find(|s| s.outcome == StepOutcome::TargetDown)
        .and_then(|s| s.reasons.first().cloned());
    result.drift = capacity_judge::drift(&result.steps);
    result.broke_first = broke_first(&result);
    result.summary = summary(&result);
    Ok(result)
}

fn judge(level: &LevelResult, slos: &[Threshold]) -> CapacityStep {
    capacity::judged_step(level.level.value(), level.result.clone(), slos)
}

fn seen(steps: &[CapacityStep]) -> Vec<Seen> {
    steps
        .iter()
        .map(|s| Seen {
            rate: s.rate_rps,
            outcome: s.outcome,
        })
        .collect()
}

fn describe_target(trial: &Trial, base_url: &str) -> String {
    match &trial.target {
        Target::External { .. } if trial.load.url.contains("://") => trial.load.url.clone(),
        Target::External { base_url: base, .. } => {
            format!("{}{}", base.trim_end_matches('/'), trial.load.url)
        }
        target => {
            let path = if trial.load.url.is_empty() {
                "/"
            } else {
                &trial.load.url
            };
            if base_url.is_empty() {
                format!("{} {path}", target.name())
            } else {
                format!("{} {path} ({base_url})", target.name())
            }
        }
    }
}

/// The SLOs that broke at the lowest rate where one did.
fn broke_first(r: &CapacityResult) -> Vec<String> {
    let Some(at) = r.broke_at_rps else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    for step in r
        .steps
        .iter()
        .filter(|s| s.outcome == StepOutcome::Broke && s.rate_rps == at)
    {
        for slo in &step.broken {
            if !out.contains(slo) {
                out.push(slo.clone());
            }
        }
    }
    out
}

fn rate(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// Where the generator ran relative to the server, as the steps' results show it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Placement {
    /// A lab stack on this machine; `pinned_apart` when --server-cpus and --client-cpus
    /// gave them disjoint CPUs (the generator's CPUs then named).
    Lab { pinned_apart: Option<String> },
    /// A server on a loopback address: this machine, sharing its cores.
    Loopback,
    /// Another machine (or unknown).
    Elsewhere,
}

/// CPUs of a list like "0-2,5".
fn cpu_list(text: &str) -> Vec<u32> {
    text.split(',')
        .filter_map(|part| {
            let (a, b) = part
                .trim()
                .split_once('-')
                .unwrap_or((part.trim(), part.trim()));
            Some(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?)
        })
        .flatten()
        .collect()
}

fn placement(r: &CapacityResult, step: &CapacityStep) -> Placement {
    if !r.settings.is_empty() {
        let host = step.result.server.as_ref().and_then(|s| s.host.as_ref());
        let pinned_apart = host.and_then(|h| {
            let (client, server) = (cpu_list(&h.client_cpus), cpu_list(&h.server_cpus));
            let apart = !client.is_empty()
                && !server.is_empty()
                && client.iter().all(|c| !server.contains(c));
            apart.then(|| h.client_cpus.clone())
        });
        return Placement::Lab { pinned_apart };
    }
    let loopback = step.result.addresses.iter().any(|a| {
        a.parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.ip().is_loopback() || a.ip().is_unspecified())
    });
    if loopback {
        Placement::Loopback
    } else {
        Placement::Elsewhere
    }
}

/// What to do about a client-limited step, by its cause and where the server ran.
fn generator_advice(r: &CapacityResult, step: &CapacityStep) -> String {
    match capacity_judge::generator_cause(&step.result) {
        GeneratorCause::ConnectionCap => "raise -c (connections)".into(),
        GeneratorCause::Busy => {
            "raise -t (threads) where cores are free, or load from another machine".into()
        }
        GeneratorCause::Starved => match placement(r, step) {
            Placement::Lab { pinned_apart: None } => "the server and the generator share this \
                machine's cores and the server took them: pin them apart with --server-cpus and \
                --client-cpus (e.g. --server-cpus 1 --client-cpus 0), or load from another \
                machine"
                .into(),
            Placement::Lab {
                pinned_apart: Some(cpus),
            } => format!(
                "something else ran on the generator's CPUs ({cpus}, --client-cpus): free \
                 them, or load from another machine"
            ),
            Placement::Loopback => "the server runs on this machine and took the cores the \
                generator shares with it: load from another machine, or pin the two apart \
                (taskset; `webtune lab capacity` does it with --server-cpus and --client-cpus)"
                .into(),
            Placement::Elsewhere => "other processes on this machine took the generator's \
                cores: free them, or load from another machine"
                .into(),
        },
    }
}

/// The conclusion in one sentence (with the first drift, when the server changed during
/// the search).
pub fn summary(r: &CapacityResult) -> String {
    let mut out = conclusion(r);
    if let Some(drift) = r.drift.first() {
        out.push_str(&format!("; DRIFT: {drift}"));
    }
    out
}

fn conclusion(r: &CapacityResult) -> String {
    let broke = match (r.broke_at_rps, r.broke_first.is_empty()) {
        (Some(at), false) => format!(
            "; {} broke first, at {} req/s",
            r.broke_first.join(" and "),
            rate(at)
        ),
        _ => String::new(),
    };
    let generator = |at: f64| {
        let step = r
            .steps
            .iter()
            .find(|s| s.outcome == StepOutcome::ClientLimited && s.rate_rps == at);
        let reason = step
            .and_then(|s| s.reasons.first().cloned())
            .unwrap_or_default();
        let advice = step.map_or_else(
            || "raise -t (threads) or -c (connections), or load from another machine".into(),
            |s| generator_advice(r, s),
        );
        format!(
            "the generator was the limit at {} req/s ({reason}): {advice}",
            rate(at)
        )
    };
    if r.limit == CapacityLimit::TargetDown {
        let (index, step) = r
            .steps
            .iter()
            .enumerate()
            .find(|(_, s)| s.outcome == StepOutcome::TargetDown)
            .map_or((r.steps.len(), None), |(i, s)| (i + 1, Some(s)));
        let why = r
            .target_down
            .clone()
            .unwrap_or_else(|| "the target went away".into());
        let held = r
            .steps
            .iter()
            .filter(|s| s.outcome == StepOutcome::Held)
            .map(|s| s.rate_rps)
            .reduce(f64::max);
        return format!(
            "target down at step {index}{}: {why}; the search stopped there, no capacity{}",
            step.map_or(String::new(), |s| format!(" ({} req/s)", rate(s.rate_rps))),
            match held {
                Some(h) => format!(
                    " (before it went down every SLO held at up to {} req/s)",
                    rate(h)
                ),
                None => String::new(),
            }
        );
    }
    match (r.limit, r.capacity_rps) {
        (CapacityLimit::Slo, Some(c)) => format!(
            "capacity {} req/s: every SLO held there (measured twice){broke}",
            rate(c)
        ),
        (CapacityLimit::Generator, Some(c)) => format!(
            "capacity at least {} req/s, not more known: {}",
            rate(c),
            generator(r.generator_limited_at_rps.unwrap_or(c))
        ),
        (CapacityLimit::Generator, None) => format!(
            "no capacity measured: {}",
            generator(r.generator_limited_at_rps.unwrap_or(r.search.min_rps))
        ),
        (CapacityLimit::MaxRate, Some(c)) => format!(
            "capacity at least {} req/s: every SLO held at --max-rate",
            rate(c)
        ),
        (CapacityLimit::StepBudget, Some(c)) => format!(
            "capacity at least {} req/s: the search's {} steps ran out before the bracket \
             narrowed{broke}",
            rate(c),
            r.search.max_steps
        ),
        (CapacityLimit::Interrupted, Some(c)) => format!(
            "interrupted: capacity at least {} req/s{}",
            rate(c),
            match (r.broke_at_rps, r.generator_limited_at_rps) {
                (Some(b), _) => format!(", below {} req/s", rate(b)),
                _ => String::new(),
            }
        ),
        (CapacityLimit::StepBudget, None) => format!(
            "no capacity measured: the search's {} steps ran out before a rate held twice{broke}",
            r.search.max_steps
        ),
        (CapacityLimit::Interrupted, None) => {
            "interrupted before any rate was measured to hold".to_string()
        }
        _ => format!(
            "no capacity: {} broke even at {} req/s, the lowest rate tried (--min-rate)",
            if r.broke_first.is_empty() {
                "an SLO".to_string()
            } else {
                r.broke_first.join(" and ")
            },
            rate(
                r.steps
                    .iter()
                    .map(|s| s.rate_rps)
                    .fold(f64::INFINITY, f64::min)
            )
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::server::{HostSection, ProcessDeath};
    use webtune_model::{ErrorCounts, ErrorKind, Schedule, ServerSamples};
    use webtune_testkit::results::{blank_result, synthetic_result_without_stall};

    fn slos() -> Vec<Threshold> {
        Threshold::parse_all(&["p99<=100ms"]).unwrap()
    }

    fn step_of(rate: f64, mut result: webtune_model::RunResult) -> CapacityStep {
        result.finish_summaries();
        capacity::judged_step(rate, result, &slos())
    }

    fn answered(p99_us: u64) -> webtune_model::RunResult {
        let mut r = synthetic_result_without_stall(100, &[p99_us]);
        r.errors = ErrorCounts::default();
        r
    }

    /// Late sends at 3% generator CPU: starved by whatever shares its cores.
    fn starved() -> webtune_model::RunResult {
        let mut r = answered(5_000);
        let mut schedule = Schedule {
            requested_rate: 200.0,
            achieved_rate: 120.0,
            ..Schedule::default()
        };
        schedule.generator_lag.p99_us = 30_000;
        r.schedule = Some(schedule);
        r.validity.client_limited = true;
        r.validity.cpu_busy = 0.03;
        r.validity.reasons = vec!["requests were sent late with a connection free".into()];
        r
    }

    /// A finished search over `steps`, concluded as `run` does.
    fn result_of(steps: Vec<CapacityStep>, settings: &str) -> CapacityResult {
        let c = match capacity::next(&SearchSettings::default(), &seen(&steps)) {
            Next::Done(c) => c,
            Next::Run(_) => capacity::conclude_early(&seen(&steps), CapacityLimit::StepBudget),
        };
        let mut r = CapacityResult {
            schema: CAPACITY_SCHEMA.into(),
            tool: "webtune test".into(),
            target: "http://127.0.0.1:8080/".into(),
            settings: settings.into(),
            slos: vec!["p99<=100ms".into()],
            search: SearchSettings::default(),
            step_s: 1.0,
            capacity_rps: c.capacity_rps,
            limit: c.limit,
            broke_at_rps: c.broke_at_rps,
            broke_first: Vec::new(),
            generator_limited_at_rps: c.generator_limited_at_rps,
            interrupted: false,
            target_down: steps
                .iter()
                .find(|s| s.outcome == StepOutcome::TargetDown)
                .and_then(|s| s.reasons.first().cloned()),
            drift: capacity_judge::drift(&steps),
            summary: String::new(),
            steps,
        };
        r.broke_first = broke_first(&r);
        r
    }

    #[test]
    fn a_starved_generator_is_not_told_to_raise_t() {
        // On loopback (a plain `capacity URL`): the flags named are lab's, as lab's.
        let steps = vec![
            step_of(100.0, answered(5_000)),
            step_of(104.0, starved()),
            step_of(100.0, answered(5_000)),
        ];
        let r = result_of(steps.clone(), "");
        assert_eq!(r.limit, CapacityLimit::Generator);
        let text = summary(&r);
        assert!(
            text.contains("the generator was the limit at 104 req/s"),
            "{text}"
        );
        assert!(!text.contains("raise -t"), "{text}");
        assert!(text.contains("runs on this machine"), "{text}");
        assert!(text.contains("load from another machine"), "{text}");
        // A lab stack on shared cores: pin them apart with lab's own flags.
        let text = summary(&result_of(steps.clone(), "defaults"));
        assert!(
            text.contains("share this machine's cores")
                && text.contains("--server-cpus and --client-cpus"),
            "{text}"
        );
        // Pinned apart already: something else ran on the generator's CPUs.
        let mut pinned = steps;
        pinned[1].result.server = Some(ServerSamples {
            host: Some(HostSection {
                client_cpus: "0".into(),
                server_cpus: "1".into(),
                ..HostSection::default()
            }),
            ..ServerSamples::default()
        });
        let text = summary(&result_of(pinned, "defaults"));
        assert!(
            text.contains("generator's CPUs (0, --client-cpus)"),
            "{text}"
        );
        // A busy generator is still told to use more threads.
        let mut busy = starved();
        busy.validity.cpu_busy = 0.97;
        let steps = vec![
            step_of(100.0, answered(5_000)),
            step_of(104.0, busy),
            step_of(100.0, answered(5_000)),
        ];
        let text = summary(&result_of(steps, ""));
        assert!(text.contains("raise -t"), "{text}");
    }

    #[test]
    fn a_target_that_went_down_says_so_and_gives_no_capacity() {
        let mut gone = blank_result();
        for _ in 0..50 {
            gone.errors.add(ErrorKind::ConnectRefused);
        }
        let steps = vec![
            step_of(100.0, answered(5_000)),
            step_of(200.0, answered(8_000)),
            step_of(400.0, gone),
        ];
        let r = result_of(steps, "");
        assert_eq!(r.limit, CapacityLimit::TargetDown);
        assert_eq!(r.capacity_rps, None);
        let text = summary(&r);
        assert!(
            text.starts_with("target down at step 3 (400 req/s): every connect was refused"),
            "{text}"
        );
        assert!(text.contains("every SLO held at up to 200 req/s"), "{text}");
        // A lab server's death names the process.
        let mut died = answered(5_000);
        died.server = Some(ServerSamples {
            deaths: vec![ProcessDeath {
                process: "nginx".into(),
                pid: 812,
                t_s: 0.0,
                how: String::new(),
            }],
            ..ServerSamples::default()
        });
        let r = result_of(vec![step_of(100.0, died)], "defaults");
        let text = summary(&r);
        assert!(
            text.contains("nginx (pid 812), a main process of the stack, died before the step"),
            "{text}"
        );
    }

    #[test]
    fn drift_is_part_of_the_summary() {
        let steps = vec![
            step_of(50.0, answered(10_000)),
            step_of(100.0, answered(300_000)),
            step_of(70.7, answered(150_000)),
            step_of(54.5, answered(120_000)),
            step_of(52.2, answered(110_000)),
            step_of(50.0, answered(90_000)),
        ];
        let r = result_of(steps, "");
        assert_eq!(r.capacity_rps, Some(50.0));
        let text = summary(&r);
        assert!(text.starts_with("capacity 50 req/s"), "{text}");
        assert!(text.contains("DRIFT: the server got slower"), "{text}");
    }
}
