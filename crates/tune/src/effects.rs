//! The "why": a simple per-parameter partial view of the trials. For each parameter, the
//! measured trials are grouped by its value (each choice, or the low / middle / high third
//! of a range on its own scale); the spread between the best and the worst group's
//! geometric-mean objective is the parameter's effect. Marginal, not causal: parameters
//! that moved together share credit. Sorted, largest effect first.

use crate::objective::Objective;
use crate::space::{Kind, Space, Value};
use crate::study::Trial;
use serde::{Deserialize, Serialize};

/// One group of trials sharing a parameter's value (or third of its range).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// `event`, or `2..9` (the values measured in that third).
    pub label: String,
    pub trials: usize,
    /// Geometric mean of the objective over the group.
    pub objective: f64,
    /// How many of the group met every SLO.
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

/// Effects of every parameter over the measured trials, largest first.
pub fn effects(space: &Space, objective: Objective, trials: &[Trial]) -> Vec<Effect> {
    let measured: Vec<(&Trial, f64, bool)> = trials
        .iter()
        .filter_map(|t| t.evaluation.map(|e| (t, e.objective, e.feasible)))
        .filter(|(_, v, _)| *v > 0.0 && v.is_finite())
        .collect();
    let mut out: Vec<Effect> = space
        .params
        .iter()
        .map(|p| {
            let groups: usize = match &p.kind {
                Kind::Choice(c) => c.len(),
                Kind::Int { .. } => 3,
            };
            // (values seen, sum of log objective, count, feasible)
            let mut acc: Vec<(Vec<Value>, f64, usize, usize)> =
                vec![(Vec::new(), 0.0, 0, 0); groups + 1];
            for (t, v, feasible) in &measured {
                let value = t.config.get(&p.name).unwrap_or(&p.default);
                let u = p.encode(value);
                let g = if !(0.0..=1.0).contains(&u) {
                    groups // outside the searched values (the default)
                } else {
                    ((u * groups as f64) as usize).min(groups - 1)
                };
                let a = &mut acc[g];
                if !a.0.contains(value) {
                    a.0.push(value.clone());
                }
                a.1 += v.ln();
                a.2 += 1;
                a.3 += usize::from(*feasible);
            }
            let bins: Vec<Bin> = acc
                .into_iter()
                .filter(|a| a.2 > 0)
                .map(|(mut values, sum, n, feasible)| {
                    values.sort();
                    let label = match (&p.kind, values.as_slice()) {
                        (_, [one]) => one.to_string(),
                        (Kind::Int { .. }, [first, .., last]) => format!("{first}..{last}"),
                        _ => values
                            .iter()
                            .map(|v| v.to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                    };
                    Bin {
                        label,
                        trials: n,
                        objective: (sum / n as f64).exp(),
                        feasible,
                    }
                })
                .collect();
            let key = |b: &Bin| objective.score(b.objective);
            let best = bins.iter().max_by(|a, b| key(a).total_cmp(&key(b)));
            let worst = bins.iter().min_by(|a, b| key(a).total_cmp(&key(b)));
            let (spread, best_label) = match (best, worst) {
                (Some(b), Some(w)) => ((key(b) - key(w)).exp() - 1.0, b.label.clone()),
                _ => (0.0, String::new()),
            };
            Effect {
                param: p.name.clone(),
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
        // Workers swing throughput by far the most; buffer size hardly at all.
        assert_eq!(e[0].param, "workers", "{e:#?}");
        assert!(e.windows(2).all(|w| w[0].spread >= w[1].spread));
        let total: usize = e[0].bins.iter().map(|b| b.trials).sum();
        assert_eq!(total, 20);
    }
}
