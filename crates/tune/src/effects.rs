//! The "why": the effect of each parameter on the objective across the trials, as a partial
//! dependence from the model — for each group of a parameter's values (each choice, or the
//! low / middle / high third of a range on its own scale), the objective the fitted GP
//! predicts with that parameter set to the group's centre, averaged over the measured
//! configurations (so parameters that moved together do not share credit, as they would in
//! a raw per-group average). The spread between the best and the worst group is the
//! parameter's effect. Sorted, largest effect first. With fewer than two measured trials,
//! every effect is 0; with none, there are none. A default outside the searched range is in no group.
//! A parameter is judged only over the trials where it does something (`Space::inert_in`:
//! KeepAliveTimeout over the KeepAlive-on trials), so an inert value is never credited.

use crate::gp::Model;
use crate::objective::Objective;
use crate::space::{Kind, Space};
use crate::study::Trial;
use crate::Observation;
use serde::{Deserialize, Serialize};

/// One group of a parameter's values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// `event`, or `2..9` (the values of that third of the range).
    pub label: String,
    /// Measured trials whose value falls in the group.
    pub trials: usize,
    /// The model's objective with the parameter in this group, averaged over the trials.
    pub objective: f64,
    /// How many of the group's trials met every SLO.
    pub feasible: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    pub param: String,
    /// Best group over worst group, minus one, in the better direction (0.25 = 25%).
    pub spread: f64,
    /// The best group's label.
    pub best: String,
    pub bins: Vec<Bin>,
}

/// The groups of one parameter: (label, centre in the cube, lower edge, upper edge).
fn groups(space: &Space, i: usize) -> Vec<(String, f64, f64, f64)> {
    let p = &space.params[i];
    match &p.kind {
        Kind::Choice(c) => (0..c.len())
            .map(|k| {
                let w = 1.0 / c.len() as f64;
                (
                    c[k].to_string(),
                    (k as f64 + 0.5) * w,
                    k as f64 * w,
                    (k + 1) as f64 * w,
                )
            })
            .collect(),
        Kind::Int { .. } => (0..3)
            .map(|k| {
                let (lo, hi) = (k as f64 / 3.0, (k + 1) as f64 / 3.0);
                let (a, b) = (p.decode(lo), p.decode(hi - 1e-9));
                let label = if a == b {
                    a.to_string()
                } else {
                    format!("{a}..{b}")
                };
                (label, (lo + hi) / 2.0, lo, hi)
            })
            .collect(),
    }
}

/// Effects of every parameter over the measured trials, largest first.
pub fn effects(space: &Space, objective: Objective, trials: &[Trial]) -> Vec<Effect> {
    let history: Vec<Observation> = trials
        .iter()
        .filter_map(|t| {
            t.evaluation.map(|e| Observation {
                config: t.config.clone(),
                score: Some(objective.score(e.objective)),
                margin: e.margin,
            })
        })
        .collect();
    if history.is_empty() {
        // Nothing was measured (every trial failed): there is no effect to speak of.
        return Vec::new();
    }
    let model = Model::fit(space, &history);
    let all: Vec<(Vec<f64>, bool, Vec<String>)> = trials
        .iter()
        .filter_map(|t| {
            t.evaluation.map(|e| {
                (
                    space.encode(&t.config),
                    e.feasible,
                    space.inert_in(&t.config),
                )
            })
        })
        .collect();
    let mut out: Vec<Effect> = (0..space.dims())
        .map(|i| {
            let name = &space.params[i].name;
            // Only the trials where this parameter does something.
            let points: Vec<(Vec<f64>, bool)> = all
                .iter()
                .filter(|(_, _, inert)| !inert.contains(name))
                .map(|(u, f, _)| (u.clone(), *f))
                .collect();
            let bins: Vec<Bin> = groups(space, i)
                .into_iter()
                .map(|(label, centre, lo, hi)| {
                    let inside: Vec<&(Vec<f64>, bool)> = points
                        .iter()
                        .filter(|(u, _)| {
                            u[i] >= lo && u[i] < hi + if hi >= 1.0 { 1e-9 } else { 0.0 }
                        })
                        .collect();
                    let score = match &model {
                        Some(_) if points.is_empty() => 0.0,
                        Some(m) => {
                            points
                                .iter()
                                .map(|(u, _)| {
                                    let mut u = u.clone();
                                    u[i] = centre;
                                    m.predict(&u)
                                })
                                .sum::<f64>()
                                / points.len() as f64
                        }
                        None => 0.0,
                    };
                    Bin {
                        label,
                        trials: inside.len(),
                        objective: objective.unscore(score),
                        feasible: inside.iter().filter(|(_, f)| *f).count(),
                    }
                })
                .collect();
            let key = |b: &Bin| objective.score(b.objective);
            let best = bins.iter().max_by(|a, b| key(a).total_cmp(&key(b)));
            let worst = bins.iter().min_by(|a, b| key(a).total_cmp(&key(b)));
            let (spread, best_label) = match (best, worst, &model) {
                (_, _, Some(_)) if points.is_empty() => (0.0, String::new()),
                (Some(b), Some(w), Some(_)) => ((key(b) - key(w)).exp() - 1.0, b.label.clone()),
                _ => (0.0, String::new()),
            };
            Effect {
                param: space.params[i].name.clone(),
                spread,
                best: best_label,
                bins,
            }
        })
        .collect();
    out.sort_by(|a, b| b.spread.total_cmp(&a.spread));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::{Next, Settings, Study};
    use crate::{synthetic, GpSampler, Slo};
    use rand::SeedableRng;

    #[test]
    fn the_parameter_that_matters_comes_first() {
        let sp = synthetic::space();
        let mut s = Study::new(
            sp.clone(),
            Objective::MaximizeThroughput,
            vec![Slo::parse(synthetic::SLO).unwrap()],
            vec![],
            Settings {
                budget: 20,
                space_filling: 12,
                seed: 3,
                ..Settings::default()
            },
            Box::new(GpSampler::default()),
        );
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        while let Next::Measure(c, why) = s.next() {
            let o = synthetic::measure(&c, &mut rng);
            s.record(c, why, o);
        }
        let e = effects(&sp, Objective::MaximizeThroughput, s.trials());
        assert_eq!(e.len(), 5);
        // Workers swing throughput by far the most; the buffer size hardly at all.
        assert_eq!(e[0].param, "workers", "{e:#?}");
        let buffer = e.iter().find(|x| x.param == "buffer_kb").unwrap();
        assert!(buffer.spread < e[0].spread / 3.0, "{e:#?}");
        assert!(e.windows(2).all(|w| w[0].spread >= w[1].spread));
        let total: usize = e[0].bins.iter().map(|b| b.trials).sum();
        assert_eq!(total, 20);
    }

    #[test]
    fn an_inert_parameter_is_credited_nothing() {
        let mut sp = synthetic::space();
        let mut s = Study::new(
            sp.clone(),
            Objective::MaximizeThroughput,
            vec![],
            vec![],
            Settings {
                budget: 12,
                seed: 3,
                ..Settings::default()
            },
            Box::new(GpSampler::default()),
        );
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        while let Next::Measure(c, why) = s.next() {
            let o = synthetic::measure(&c, &mut rng);
            s.record(c, why, o);
        }
        // Workers matter most; said to do nothing in every trial, they get no effect.
        sp.inert = vec![crate::space::Inert {
            param: "workers".into(),
            when: None,
        }];
        let e = effects(&sp, Objective::MaximizeThroughput, s.trials());
        let workers = e.iter().find(|x| x.param == "workers").unwrap();
        assert_eq!(workers.spread, 0.0);
        assert!(workers.best.is_empty());
        assert!(workers.bins.iter().all(|b| b.trials == 0));
    }

    #[test]
    fn too_few_trials_give_no_effect() {
        let sp = synthetic::space();
        let e = effects(&sp, Objective::MaximizeThroughput, &[]);
        assert!(e.is_empty(), "nothing measured, no effect");
    }
}
