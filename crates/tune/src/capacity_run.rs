//! The capacity search run for real: one trial (`webtune_lab::trial::run_adaptive`) whose
//! levels are open-loop rates that `capacity::next` picks from the steps measured so far.
//! The target starts once; every step is judged against the SLOs (`capacity::judge_step`);
//! a stop (Ctrl-C) keeps the steps measured and concludes with the best bounds known. The
//! result is `webtune.capacity/1` with its one-sentence summary.

use crate::capacity::{self, Conclusion, Next, Seen};
use webtune_lab::trial::{self, Level, LevelResult, Target, Trial, TrialEvents};
use webtune_lab::LabError;
use webtune_model::capacity::{
    CapacityLimit, CapacityResult, CapacityStep, SearchSettings, StepOutcome, CAPACITY_SCHEMA,
};
use webtune_model::{StopCondition, StopToken, Threshold};

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
        summary: String::new(),
        steps,
    };
    result.broke_first = broke_first(&result);
    result.summary = summary(&result);
    Ok(result)
}

fn judge(level: &LevelResult, slos: &[Threshold]) -> CapacityStep {
    let judged = capacity::judge_step(&level.result, slos);
    CapacityStep {
        rate_rps: level.level.value(),
        outcome: judged.outcome,
        verdicts: judged.verdicts,
        broken: judged.broken,
        reasons: judged.reasons,
        result: level.result.clone(),
    }
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

/// The conclusion in one sentence.
pub fn summary(r: &CapacityResult) -> String {
    let broke = match (r.broke_at_rps, r.broke_first.is_empty()) {
        (Some(at), false) => format!(
            "; {} broke first, at {} req/s",
            r.broke_first.join(" and "),
            rate(at)
        ),
        _ => String::new(),
    };
    let generator = |at: f64| {
        let reason = r
            .steps
            .iter()
            .find(|s| s.outcome == StepOutcome::ClientLimited && s.rate_rps == at)
            .and_then(|s| s.reasons.first().cloned())
            .unwrap_or_default();
        format!(
            "the generator was the limit at {} req/s ({reason}): raise -t (threads) or -c \
             (connections), or load from another machine",
            rate(at)
        )
    };
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
