//! The capacity search, pure: given the steps measured so far, the next open-loop rate to
//! try or the conclusion. Exponential growth from the start rate until a step breaks an SLO
//! (or, when the first one already does, shrinking towards the lowest rate), then bisection
//! of the bracket (highest held, lowest broken) down to the precision asked for, then one
//! repeat of the boundary rate so that one lucky step does not decide. A step where the
//! generator was the limit (`StepOutcome::ClientLimited`) bounds what can be measured but
//! never defines the capacity; a step that found the target gone (`StepOutcome::TargetDown`)
//! ends the search. How one step's `RunResult` is judged against the SLOs is
//! `capacity_judge`'s job; running the steps is `capacity_run`'s.

pub use crate::capacity_judge::{judge_step, judged_step, Judged};
use webtune_model::capacity::{CapacityLimit, SearchSettings, StepOutcome};
use webtune_model::{Threshold, ThresholdError};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CapacityError {
    #[error("give at least one --slo, e.g. --slo 'p99<=100ms' --slo 'errors<=0.1%'")]
    NoSlo,
    #[error("--slo: {0}")]
    Slo(#[from] ThresholdError),
    #[error("--slo {0:?} is relative: a capacity search needs absolute limits, e.g. 'p99<=100ms'")]
    Relative(String),
    #[error("{0}")]
    Settings(String),
}

/// Parse the `--slo` expressions (the threshold grammar), refusing none and relative ones.
pub fn parse_slos<S: AsRef<str>>(texts: &[S]) -> Result<Vec<Threshold>, CapacityError> {
    if texts.is_empty() {
        return Err(CapacityError::NoSlo);
    }
    let slos = Threshold::parse_all(texts)?;
    if let Some(t) = slos.iter().find(|t| t.is_relative()) {
        return Err(CapacityError::Relative(t.text.clone()));
    }
    Ok(slos)
}

/// Refuse settings the search cannot work with, one line each.
pub fn check(s: &SearchSettings) -> Result<(), CapacityError> {
    let bad = |why: &str| Err(CapacityError::Settings(why.to_string()));
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if !positive(s.start_rps) || !positive(s.min_rps) {
        return bad("--start-rate and --min-rate must be positive numbers of requests/s");
    }
    if s.min_rps > s.start_rps {
        return bad("--min-rate must not be above --start-rate");
    }
    if let Some(max) = s.max_rps {
        if !positive(max) || max < s.start_rps {
            return bad("--max-rate must be a number of requests/s at least --start-rate");
        }
    }
    if !(s.growth.is_finite() && s.growth > 1.0) {
        return bad("the growth factor must be above 1");
    }
    if !(s.precision.is_finite() && s.precision > 0.0 && s.precision < 1.0) {
        return bad("--precision must be above 0% and below 100%, e.g. 5%");
    }
    if s.max_steps == 0 {
        return bad("--max-steps must be at least 1");
    }
    Ok(())
}

/// What the search needs of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    pub rate: f64,
    pub outcome: StepOutcome,
}

/// Where the search stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Conclusion {
    /// The highest rate that held below every bound (None: none did).
    pub capacity_rps: Option<f64>,
    pub limit: CapacityLimit,
    /// The lowest rate at which an SLO broke.
    pub broke_at_rps: Option<f64>,
    /// The lowest rate at which the generator was the limit.
    pub generator_limited_at_rps: Option<f64>,
}

/// The search's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Measure this rate next.
    Run(f64),
    Done(Conclusion),
}

/// The bracket the steps define.
struct Bounds {
    /// Highest rate that held (and nothing worse was seen there) below `hi`.
    lo: Option<f64>,
    /// Lowest rate where an SLO broke.
    hi_slo: Option<f64>,
    /// Lowest rate where the generator was the limit.
    hi_gen: Option<f64>,
}

impl Bounds {
    fn of(steps: &[Seen]) -> Bounds {
        let lowest = |outcome: StepOutcome| {
            steps
                .iter()
                .filter(|s| s.outcome == outcome)
                .map(|s| s.rate)
                .reduce(f64::min)
        };
        let hi_slo = lowest(StepOutcome::Broke);
        let hi_gen = lowest(StepOutcome::ClientLimited);
        let hi = min_option(hi_slo, hi_gen).unwrap_or(f64::INFINITY);
        let lo = steps
            .iter()
            .filter(|s| s.outcome == StepOutcome::Held && s.rate < hi)
            .map(|s| s.rate)
            .filter(|&r| held_everywhere(steps, r))
            .reduce(f64::max);
        Bounds { lo, hi_slo, hi_gen }
    }

    fn hi(&self) -> Option<f64> {
        min_option(self.hi_slo, self.hi_gen)
    }

    /// What bounds the capacity from above: an SLO, or the generator.
    fn upper_limit(&self) -> CapacityLimit {
        match (self.hi_slo, self.hi_gen) {
            (Some(s), Some(g)) if g < s => CapacityLimit::Generator,
            (None, Some(_)) => CapacityLimit::Generator,
            _ => CapacityLimit::Slo,
        }
    }

    fn conclude(&self, limit: CapacityLimit) -> Conclusion {
        Conclusion {
            capacity_rps: self.lo,
            limit,
            broke_at_rps: self.hi_slo,
            generator_limited_at_rps: self.hi_gen,
        }
    }
}

fn min_option(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

fn same_rate(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Every step at `rate` held (interrupted ones aside).
fn held_everywhere(steps: &[Seen], rate: f64) -> bool {
    steps
        .iter()
        .filter(|s| same_rate(s.rate, rate) && s.outcome != StepOutcome::Interrupted)
        .all(|s| s.outcome == StepOutcome::Held)
}

fn held_count(steps: &[Seen], rate: f64) -> usize {
    steps
        .iter()
        .filter(|s| same_rate(s.rate, rate) && s.outcome == StepOutcome::Held)
        .count()
}

/// A rate between `lo` and `hi` (their geometric mean), rounded to three significant
/// digits when that keeps it strictly inside.
fn between(lo: f64, hi: f64) -> f64 {
    let mid = (lo * hi).sqrt();
    let rounded: f64 = format!("{mid:.2e}").parse().unwrap_or(mid);
    if rounded > lo && rounded < hi {
        rounded
    } else {
        mid
    }
}

/// The next step, or the conclusion, from the steps so far (in any order; interrupted
/// steps are ignored).
pub fn next(settings: &SearchSettings, steps: &[Seen]) -> Next {
    if steps.iter().any(|s| s.outcome == StepOutcome::TargetDown) {
        // Nothing measured from here on would describe the server that was searched.
        return Next::Done(target_down(steps));
    }
    let steps: Vec<Seen> = steps
        .iter()
        .copied()
        .filter(|s| s.outcome != StepOutcome::Interrupted)
        .collect();
    let start = match settings.max_rps {
        Some(max) => settings.start_rps.min(max),
        None => settings.start_rps,
    };
    if steps.is_empty() {
        return Next::Run(start);
    }
    let b = Bounds::of(&steps);
    if steps.len() >= settings.max_steps as usize {
        return Next::Done(b.conclude(CapacityLimit::StepBudget));
    }
    let planned = plan(settings, &steps, &b, start);
    // The last step the budget allows re-checks the best rate so far when it ran only once
    // (perhaps at step 1): the answer is then measured twice, and a server that drifted
    // since shows it (`capacity_judge::drift`).
    match (planned, b.lo) {
        (Next::Run(rate), Some(lo))
            if steps.len() + 1 == settings.max_steps as usize
                && held_count(&steps, lo) < 2
                && !same_rate(rate, lo) =>
        {
            Next::Run(lo)
        }
        _ => planned,
    }
}

/// The next step as growth, descent and bisection see it.
fn plan(settings: &SearchSettings, steps: &[Seen], b: &Bounds, start: f64) -> Next {
    match (b.lo, b.hi()) {
        (None, None) => Next::Run(start),
        (None, Some(_)) => {
            // Nothing held: go down, to the lowest rate allowed.
            let lowest = steps.iter().map(|s| s.rate).fold(f64::INFINITY, f64::min);
            if lowest <= settings.min_rps * (1.0 + 1e-9) {
                let limit = match b.upper_limit() {
                    CapacityLimit::Generator => CapacityLimit::Generator,
                    _ => CapacityLimit::Unmeetable,
                };
                Next::Done(b.conclude(limit))
            } else {
                Next::Run((lowest / settings.growth).max(settings.min_rps))
            }
        }
        (Some(lo), None) => match settings.max_rps {
            Some(max) if lo >= max * (1.0 - 1e-9) => {
                if held_count(steps, lo) < 2 {
                    Next::Run(lo)
                } else {
                    Next::Done(b.conclude(CapacityLimit::MaxRate))
                }
            }
            Some(max) => Next::Run((lo * settings.growth).min(max)),
            None => Next::Run(lo * settings.growth),
        },
        (Some(lo), Some(hi)) => {
            if hi <= lo * (1.0 + settings.precision) {
                if held_count(steps, lo) < 2 {
                    // The repeat at the boundary: one noisy step does not decide.
                    Next::Run(lo)
                } else {
                    Next::Done(b.conclude(b.upper_limit()))
                }
            } else {
                Next::Run(between(lo, hi))
            }
        }
    }
}

/// The conclusion of a search whose target went down: no capacity (what held before
/// described a server that is gone), the bounds seen before kept for the record.
fn target_down(steps: &[Seen]) -> Conclusion {
    let before: Vec<Seen> = steps
        .iter()
        .copied()
        .filter(|s| {
            matches!(
                s.outcome,
                StepOutcome::Held | StepOutcome::Broke | StepOutcome::ClientLimited
            )
        })
        .collect();
    Conclusion {
        capacity_rps: None,
        ..Bounds::of(&before).conclude(CapacityLimit::TargetDown)
    }
}

/// The best bounds known from the steps so far, for a search stopped early.
pub fn conclude_early(steps: &[Seen], limit: CapacityLimit) -> Conclusion {
    if steps.iter().any(|s| s.outcome == StepOutcome::TargetDown) {
        return target_down(steps);
    }
    let steps: Vec<Seen> = steps
        .iter()
        .copied()
        .filter(|s| s.outcome != StepOutcome::Interrupted)
        .collect();
    Bounds::of(&steps).conclude(limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepOutcome::*;

    fn settings() -> SearchSettings {
        SearchSettings {
            start_rps: 10.0,
            min_rps: 1.0,
            max_rps: None,
            growth: 2.0,
            precision: 0.05,
            max_steps: 40,
        }
    }

    /// Run the search against a server whose verdict at each rate is `server(rate)`.
    fn search(s: &SearchSettings, server: impl Fn(f64) -> StepOutcome) -> (Vec<Seen>, Conclusion) {
        let mut steps = Vec::new();
        loop {
            match next(s, &steps) {
                Next::Run(rate) => steps.push(Seen {
                    rate,
                    outcome: server(rate),
                }),
                Next::Done(c) => return (steps, c),
            }
            assert!(steps.len() <= 100, "the search does not end: {steps:?}");
        }
    }

    fn threshold(capacity: f64) -> impl Fn(f64) -> StepOutcome {
        move |rate| if rate <= capacity { Held } else { Broke }
    }

    #[test]
    fn grows_then_bisects_to_the_precision_and_repeats_the_boundary() {
        let (steps, c) = search(&settings(), threshold(437.0));
        let rates: Vec<f64> = steps.iter().map(|s| s.rate).collect();
        assert_eq!(&rates[..7], &[10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0]);
        let cap = c.capacity_rps.unwrap();
        assert!((437.0 / 1.05..=437.0).contains(&cap), "{cap}");
        assert_eq!(c.limit, CapacityLimit::Slo);
        assert!(c.broke_at_rps.unwrap() <= cap * 1.05);
        // The last step repeats the answer.
        assert_eq!(steps.last().unwrap().rate, cap);
        assert_eq!(held_count(&steps, cap), 2);
    }

    #[test]
    fn a_boundary_that_fails_its_repeat_is_not_the_answer() {
        // Noisy at 300..=310: held the first time, broken the second.
        let seen = std::cell::RefCell::new(Vec::<f64>::new());
        let (steps, c) = search(&settings(), |rate| {
            let mut seen = seen.borrow_mut();
            let again = seen.contains(&rate);
            seen.push(rate);
            if rate <= 290.0 || (rate <= 310.0 && !again) {
                Held
            } else {
                Broke
            }
        });
        let cap = c.capacity_rps.unwrap();
        assert!(cap <= 290.0, "{cap} {steps:?}");
        assert_eq!(held_count(&steps, cap), 2);
    }

    #[test]
    fn a_client_limited_step_never_becomes_the_answer() {
        // The generator gives up above 150/s; the server would hold up to 1000/s.
        let (steps, c) = search(
            &settings(),
            |rate| {
                if rate > 150.0 {
                    ClientLimited
                } else {
                    Held
                }
            },
        );
        let cap = c.capacity_rps.unwrap();
        assert!(cap <= 150.0);
        assert_eq!(c.limit, CapacityLimit::Generator);
        assert!(c.generator_limited_at_rps.unwrap() > cap);
        assert!(steps
            .iter()
            .filter(|s| s.outcome == ClientLimited)
            .all(|s| s.rate > cap));
    }

    #[test]
    fn an_slo_broken_even_at_the_lowest_rate_ends_without_a_capacity() {
        let (steps, c) = search(&settings(), |_| Broke);
        assert_eq!(c.capacity_rps, None);
        assert_eq!(c.limit, CapacityLimit::Unmeetable);
        let rates: Vec<f64> = steps.iter().map(|s| s.rate).collect();
        assert_eq!(rates, vec![10.0, 5.0, 2.5, 1.25, 1.0]);
    }

    #[test]
    fn the_first_step_breaking_goes_down_until_one_holds() {
        let (_, c) = search(&settings(), threshold(3.0));
        let cap = c.capacity_rps.unwrap();
        assert!((3.0 / 1.05..=3.0).contains(&cap), "{cap}");
    }

    #[test]
    fn the_ceiling_and_the_step_budget_end_the_search() {
        let mut s = settings();
        s.max_rps = Some(100.0);
        let (steps, c) = search(&s, |_| Held);
        assert_eq!(c.capacity_rps, Some(100.0));
        assert_eq!(c.limit, CapacityLimit::MaxRate);
        assert!(steps.iter().all(|s| s.rate <= 100.0));
        s.max_rps = None;
        s.max_steps = 3;
        let (steps, c) = search(&s, |_| Held);
        assert_eq!(steps.len(), 3);
        assert_eq!(c.limit, CapacityLimit::StepBudget);
        // The last step re-checked the best rate so far instead of growing once more.
        assert_eq!(c.capacity_rps, Some(20.0));
        assert_eq!(held_count(&steps, 20.0), 2);
    }

    #[test]
    fn the_last_step_re_checks_a_rate_measured_only_once_long_ago() {
        // A server that slows down: 50/s holds at the first step only; by the end the
        // budget is spent between 50 and 100. The last step runs 50/s again, which now
        // breaks, so no stale "at least 50" comes out of step 1.
        let mut s = settings();
        s.start_rps = 50.0;
        s.max_steps = 4;
        let count = std::cell::Cell::new(0);
        let (steps, c) = search(&s, |_| {
            count.set(count.get() + 1);
            if count.get() == 1 {
                Held
            } else {
                Broke
            }
        });
        let rates: Vec<f64> = steps.iter().map(|s| s.rate).collect();
        assert_eq!(rates, vec![50.0, 100.0, 70.7, 50.0]);
        assert_eq!(c.limit, CapacityLimit::StepBudget);
        assert_eq!(c.capacity_rps, None, "50/s broke on its re-check");
    }

    #[test]
    fn interrupted_steps_are_left_out() {
        let steps = [
            Seen {
                rate: 10.0,
                outcome: Held,
            },
            Seen {
                rate: 20.0,
                outcome: Interrupted,
            },
        ];
        assert_eq!(next(&settings(), &steps), Next::Run(20.0));
        let c = conclude_early(&steps, CapacityLimit::Interrupted);
        assert_eq!(c.capacity_rps, Some(10.0));
    }

    #[test]
    fn the_search_stops_at_the_first_step_whose_target_is_gone() {
        // The server dies during the fourth step; every step after would be refused.
        let (steps, c) = search(
            &settings(),
            |rate| {
                if rate >= 80.0 {
                    TargetDown
                } else {
                    Held
                }
            },
        );
        let rates: Vec<f64> = steps.iter().map(|s| s.rate).collect();
        assert_eq!(rates, vec![10.0, 20.0, 40.0, 80.0]);
        assert_eq!(c.limit, CapacityLimit::TargetDown);
        assert_eq!(c.capacity_rps, None, "a server that died has no capacity");
        // Down at the very first step: stop there too, not 22 steps later.
        let (steps, c) = search(&settings(), |_| TargetDown);
        assert_eq!(steps.len(), 1);
        assert_eq!(c.limit, CapacityLimit::TargetDown);
        // A stop (Ctrl-C) after the death still says the target went down.
        let seen = [
            Seen {
                rate: 10.0,
                outcome: Held,
            },
            Seen {
                rate: 20.0,
                outcome: TargetDown,
            },
        ];
        let c = conclude_early(&seen, CapacityLimit::Interrupted);
        assert_eq!(c.limit, CapacityLimit::TargetDown);
        assert_eq!(c.capacity_rps, None);
    }

    #[test]
    fn bad_settings_and_slos_are_refused() {
        let mut s = settings();
        s.min_rps = 50.0;
        assert!(check(&s).is_err());
        let mut s = settings();
        s.precision = 0.0;
        assert!(check(&s).is_err());
        assert!(check(&settings()).is_ok());
        assert_eq!(parse_slos::<&str>(&[]), Err(CapacityError::NoSlo));
        assert!(matches!(
            parse_slos(&["p99<=+10%"]),
            Err(CapacityError::Relative(_))
        ));
        assert!(parse_slos(&["p99 <= 100ms", "errors<=0.1%"]).is_ok());
        assert!(parse_slos(&["p99 100ms"]).is_err());
    }

    #[test]
    fn midpoints_are_round_when_they_can_be() {
        assert_eq!(between(100.0, 200.0), 141.0);
        let m = between(100.0, 100.2);
        assert!(m > 100.0 && m < 100.2);
    }
}
