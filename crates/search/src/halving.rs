//! Successive halving under a budget of time (`tune --budget`): new candidates are screened
//! with short runs, and only the promising ones are measured again at the full duration.
//! The promotion rule is asynchronous successive halving's (ASHA: Li et al., "A System for
//! Massively Parallel Hyperparameter Tuning", 2020): a screened configuration goes up when
//! it is among the top 1/η of the screened configurations' scores, η = 3. Ranking within
//! the screening rung needs no correction for a short run's bias (a stack still warming
//! up); only full-duration measurements can win, race or set the noise (`Study::stats`).
//!
//! The model learns from every run, short ones weighted down: a short run's score is taken
//! with its bias against full runs removed (measured on the configurations run at both
//! durations) and shrunk toward the mean by the share of its variance that is signal,
//! τ² / (τ² + σ²/f), against τ² / (τ² + σ²) for a full run — its run-to-run variance grows
//! as 1/f with the fraction f of the full duration it ran. Free of I/O, like the study.

use crate::objective::Objective;
use crate::space::Config;
use crate::trial::{Trial, Why};

/// ASHA's reduction factor: one in η screened configurations is measured in full.
pub const ETA: usize = 3;

/// A screening run's share of the full duration: a third of it, at least `min_s` seconds;
/// None when that saves too little (under half of the full run) to be worth a second run.
pub fn screen_fraction(full_s: f64, min_s: f64) -> Option<f64> {
    let short = (full_s / 3.0).max(min_s);
    (full_s > 0.0 && short <= full_s / 2.0).then(|| short / full_s)
}

/// Is a run of this fidelity a full one?
pub fn is_full(fidelity: f64) -> bool {
    fidelity >= 1.0 - 1e-9
}

/// The fidelity the study measures a trial of `why` at: the A/A pair, racing and promotions
/// in full; everything new screened when screening is on.
pub fn fidelity_for(screen: Option<f64>, why: Why) -> f64 {
    match (screen, why) {
        (Some(f), Why::Seed | Why::SpaceFilling | Why::Model) => f,
        _ => 1.0,
    }
}

/// The screened configuration to measure in full next, if one is promising: among the
/// feasible screened configurations without a full run (a failed one counts as one), the
/// best whose score ranks in the top ⌊n/η⌋ of all n screened configurations (each
/// configuration's best screening score).
/// (`screen`: the study's screening share; None, no screening and no promotion.)
pub fn promotion(trials: &[Trial], objective: Objective, screen: Option<f64>) -> Option<Config> {
    screen?;
    // Measured in full, or tried: a promotion whose full run failed is not promoted again
    // (it was, every trial, until the budget ran out: a forum pool that served its screening
    // run and then never started again).
    let full = |c: &Config| trials.iter().any(|t| t.config == *c && is_full(t.fidelity));
    // Each screened configuration once, with its score (None: failed or breaks an SLO).
    let mut rung: Vec<(Config, Option<f64>)> = Vec::new();
    for t in trials.iter().filter(|t| !is_full(t.fidelity)) {
        let score = t
            .evaluation
            .filter(|e| e.feasible)
            .map(|e| objective.score(e.objective));
        match rung.iter_mut().find(|(c, _)| *c == t.config) {
            Some((_, s)) => {
                *s = match (*s, score) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                }
            }
            None => rung.push((t.config.clone(), score)),
        }
    }
    let top = rung.len() / ETA;
    if top == 0 {
        return None;
    }
    let mut ranked: Vec<&(Config, Option<f64>)> =
        rung.iter().filter(|(_, s)| s.is_some()).collect();
    ranked.sort_by(|a, b| b.1.unwrap().total_cmp(&a.1.unwrap()));
    ranked
        .into_iter()
        .take(top)
        .find(|(c, _)| !full(c))
        .map(|(c, _)| c.clone())
}

/// The scores the sampler sees, one per trial in order (None for a failed trial): full
/// runs as measured, short runs corrected for their bias and shrunk toward the mean
/// (`noise`: the study's run-to-run noise, `Study::noise`).
pub fn model_scores(trials: &[Trial], objective: Objective, noise: f64) -> Vec<Option<f64>> {
    let raw: Vec<Option<f64>> = trials
        .iter()
        .map(|t| t.evaluation.map(|e| objective.score(e.objective)))
        .collect();
    if trials.iter().all(|t| is_full(t.fidelity)) {
        return raw;
    }
    // The bias of a short run: full mean − short mean over configurations run at both.
    let mean_at = |c: &Config, full: bool| -> Option<f64> {
        let v: Vec<f64> = trials
            .iter()
            .zip(&raw)
            .filter(|(t, s)| t.config == *c && is_full(t.fidelity) == full && s.is_some())
            .map(|(_, s)| s.unwrap())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let mut diffs = Vec::new();
    let mut seen: Vec<&Config> = Vec::new();
    for t in trials.iter().filter(|t| !is_full(t.fidelity)) {
        if seen.contains(&&t.config) {
            continue;
        }
        seen.push(&t.config);
        if let (Some(f), Some(s)) = (mean_at(&t.config, true), mean_at(&t.config, false)) {
            diffs.push(f - s);
        }
    }
    let bias = if diffs.is_empty() {
        0.0
    } else {
        diffs.iter().sum::<f64>() / diffs.len() as f64
    };
    let corrected: Vec<Option<f64>> = trials
        .iter()
        .zip(&raw)
        .map(|(t, s)| s.map(|s| if is_full(t.fidelity) { s } else { s + bias }))
        .collect();
    let known: Vec<f64> = corrected.iter().flatten().copied().collect();
    let m = known.iter().sum::<f64>() / known.len().max(1) as f64;
    let var = known.iter().map(|x| (x - m).powi(2)).sum::<f64>() / known.len().max(1) as f64;
    let sigma2 = noise.powi(2);
    // The spread of the configurations themselves (never below the noise's quarter).
    let tau2 = (var - sigma2).max(sigma2 / 4.0);
    let weight = |f: f64| (tau2 / (tau2 + sigma2 / f)) / (tau2 / (tau2 + sigma2));
    trials
        .iter()
        .zip(corrected)
        .map(|(t, s)| {
            s.map(|s| {
                if is_full(t.fidelity) {
                    s
                } else {
                    m + weight(t.fidelity.max(0.01)) * (s - m)
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::Objective;
    use crate::sampler::RandomSampler;
    use crate::space::Value;
    use crate::study::{Next, Outcome, Study, StudySettings};

    fn run(tp: f64) -> Outcome {
        crate::study::tests::level(tp, 1.0)
    }

    fn study(screen: Option<f64>) -> Study {
        let space = crate::study::tests::one_int_space(32);
        Study::new(
            space,
            Objective::MaximizeThroughput,
            Vec::new(),
            Vec::new(),
            StudySettings {
                trials: 30,
                space_filling: 3,
                screen,
                ..StudySettings::default()
            },
            Box::new(RandomSampler),
        )
    }

    #[test]
    fn the_screen_is_a_third_at_least_two_seconds_and_only_when_it_saves() {
        assert_eq!(screen_fraction(30.0, 2.0), Some(1.0 / 3.0));
        assert_eq!(screen_fraction(5.0, 2.0), Some(0.4));
        assert_eq!(screen_fraction(3.0, 2.0), None, "2 s of 3 saves too little");
        assert_eq!(fidelity_for(Some(0.4), Why::Model), 0.4);
        assert_eq!(fidelity_for(Some(0.4), Why::Baseline), 1.0);
        assert_eq!(fidelity_for(None, Why::Model), 1.0);
    }

    /// w's throughput peaks at 40; short runs read 20% low (a stack warming up).
    fn truth(c: &Config, fidelity: f64) -> Outcome {
        let Value::Int(w) = c["w"] else {
            unreachable!()
        };
        let tp = 1000.0 * (1.0 - ((w - 40) as f64 / 64.0).powi(2));
        run(if is_full(fidelity) { tp } else { 0.8 * tp })
    }

    #[test]
    fn screened_candidates_are_promoted_by_rank_and_only_full_runs_win() {
        let mut s = study(Some(0.4));
        let mut whys = Vec::new();
        for _ in 0..14 {
            let Next::Measure(c, why) = s.next() else {
                break;
            };
            let f = fidelity_for(s.settings.screen, why);
            let o = truth(&c, f);
            s.record_at(c, why, o, f);
            whys.push(why);
        }
        let screened = s.trials().iter().filter(|t| !is_full(t.fidelity)).count();
        let promoted = whys.iter().filter(|w| **w == Why::Promote).count();
        assert!(promoted >= 1, "{whys:?}");
        assert!(promoted <= screened / ETA + 1, "{whys:?}");
        // Every promotion is the full run of a configuration screened before it.
        for t in s.trials().iter().filter(|t| t.why == Why::Promote) {
            assert!(is_full(t.fidelity));
            assert!(s.trials()[..t.number - 1]
                .iter()
                .any(|u| u.config == t.config && !is_full(u.fidelity)));
        }
        // The best has a full run; a short run's figure never wins.
        let best = s.best().unwrap();
        assert!(best
            .trials
            .iter()
            .all(|n| is_full(s.trials()[n - 1].fidelity)));
        // The model sees the short runs' bias removed: a promoted configuration's short and
        // full scores agree.
        let scores = model_scores(s.trials(), s.objective, s.noise());
        assert_eq!(scores.len(), s.trials().len());
        let p = s.trials().iter().find(|t| t.why == Why::Promote).unwrap();
        let short = s
            .trials()
            .iter()
            .position(|t| t.config == p.config && !is_full(t.fidelity))
            .unwrap();
        let gap = (scores[short].unwrap() - scores[p.number - 1].unwrap()).abs();
        assert!(gap < 0.1, "{gap}");
    }

    #[test]
    fn a_promotion_whose_full_run_failed_is_not_promoted_again() {
        let mut s = study(Some(0.4));
        let mut promoted: Vec<Config> = Vec::new();
        for _ in 0..20 {
            let Next::Measure(c, why) = s.next() else {
                break;
            };
            let f = fidelity_for(s.settings.screen, why);
            if why == Why::Promote {
                assert!(!promoted.contains(&c), "promoted twice: {c:?}");
                promoted.push(c.clone());
                s.record_at(c, why, Outcome::Failed("did not start".into()), f);
            } else {
                let o = truth(&c, f);
                s.record_at(c, why, o, f);
            }
        }
        assert!(!promoted.is_empty());
        assert_eq!(s.trials().len(), 20);
    }

    #[test]
    fn without_screening_nothing_changes() {
        let mut s = study(None);
        while let Next::Measure(c, why) = s.next() {
            assert_ne!(why, Why::Promote);
            assert_eq!(fidelity_for(s.settings.screen, why), 1.0);
            let o = truth(&c, 1.0);
            s.record(c, why, o);
            if s.trials().len() == 8 {
                break;
            }
        }
        assert!(s.trials().iter().all(|t| is_full(t.fidelity)));
        let raw: Vec<Option<f64>> = s
            .trials()
            .iter()
            .map(|t| t.evaluation.map(|e| s.objective.score(e.objective)))
            .collect();
        assert_eq!(model_scores(s.trials(), s.objective, s.noise()), raw);
    }
}
