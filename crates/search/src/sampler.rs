//! The samplers: the algorithms that propose the next configuration from the history, behind
//! one trait so the study never asks which one it holds (Optuna's sampler seam). Also the
//! space-filling start (Latin hypercube) and the plain random sampler used as the baseline.

use crate::space::{Config, Space};
use webtune_model::rng::Rng;

/// One measurement the sampler may learn from.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub config: Config,
    /// The objective on the optimizer's scale (larger is better); None for a failed trial.
    pub score: Option<f64>,
    /// The largest relative SLO margin (<= 0: every SLO met).
    pub margin: f64,
}

impl Observation {
    pub fn feasible(&self) -> bool {
        self.score.is_some() && self.margin <= 0.0
    }
}

/// Proposes the next configuration to measure.
pub trait Sampler {
    /// A name for reports ("gp", "random").
    fn name(&self) -> &'static str;
    /// The next configuration. `history` holds every measurement so far (repeats included).
    fn ask(&mut self, space: &Space, history: &[Observation], rng: &mut Rng) -> Config;
}

/// Uniform random configurations, avoiding ones already measured where it can.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomSampler;

impl Sampler for RandomSampler {
    fn name(&self) -> &'static str {
        "random"
    }

    fn ask(&mut self, space: &Space, history: &[Observation], rng: &mut Rng) -> Config {
        let mut c = random_config(space, rng);
        for _ in 0..20 {
            if !history.iter().any(|o| o.config == c) {
                break;
            }
            c = random_config(space, rng);
        }
        c
    }
}

/// Fisher–Yates shuffle (every order equally likely), from the one seeded stream.
pub fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

pub fn random_point(dims: usize, rng: &mut Rng) -> Vec<f64> {
    (0..dims).map(|_| rng.unit()).collect()
}

pub fn random_config(space: &Space, rng: &mut Rng) -> Config {
    space.decode(&random_point(space.dims(), rng))
}

/// `n` points of a Latin hypercube: each parameter's range cut into `n` strata, one point
/// in each, strata shuffled independently per parameter.
pub fn latin_hypercube(space: &Space, n: usize, rng: &mut Rng) -> Vec<Config> {
    let d = space.dims();
    let mut columns: Vec<Vec<f64>> = (0..d)
        .map(|_| {
            let mut col: Vec<f64> = (0..n).map(|i| (i as f64 + rng.unit()) / n as f64).collect();
            shuffle(&mut col, rng);
            col
        })
        .collect();
    (0..n)
        .map(|i| {
            let u: Vec<f64> = columns.iter_mut().map(|c| c[i]).collect();
            space.decode(&u)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::{Kind, ParamSpec, Value};

    fn space() -> Space {
        Space {
            params: vec![
                ParamSpec {
                    name: "a".into(),
                    kind: Kind::Int {
                        lo: 1,
                        hi: 100,
                        log: false,
                    },
                    default: Value::Int(10),
                },
                ParamSpec {
                    name: "b".into(),
                    kind: Kind::Choice(vec![Value::Word("x".into()), Value::Word("y".into())]),
                    default: Value::Word("x".into()),
                },
            ],
            inert: Vec::new(),
        }
    }

    #[test]
    fn latin_hypercube_covers_each_stratum_once() {
        let s = space();
        let mut rng = Rng::seeded(7);
        let pts = latin_hypercube(&s, 10, &mut rng);
        let mut strata: Vec<usize> = pts
            .iter()
            .map(|c| match c["a"] {
                Value::Int(v) => ((v - 1) / 10) as usize,
                _ => unreachable!(),
            })
            .collect();
        strata.sort();
        assert_eq!(strata, (0..10).collect::<Vec<_>>());
        // Same seed, same design.
        let mut rng = Rng::seeded(7);
        assert_eq!(latin_hypercube(&s, 10, &mut rng), pts);
    }

    #[test]
    fn shuffle_permutes_from_the_seed_and_reaches_every_order() {
        let mut seen = std::collections::BTreeSet::new();
        let mut rng = Rng::seeded(5);
        for _ in 0..200 {
            let mut v = [0, 1, 2];
            shuffle(&mut v, &mut rng);
            let mut sorted = v;
            sorted.sort();
            assert_eq!(sorted, [0, 1, 2]);
            seen.insert(v);
        }
        assert_eq!(seen.len(), 6, "{seen:?}");
        let order = |seed| {
            let mut v: Vec<u32> = (0..10).collect();
            shuffle(&mut v, &mut Rng::seeded(seed));
            v
        };
        assert_eq!(order(9), order(9));
        assert_ne!(order(9), order(10));
    }

    #[test]
    fn random_sampler_avoids_repeats() {
        let s = space();
        let mut rng = Rng::seeded(1);
        let mut hist = Vec::new();
        for _ in 0..30 {
            let c = RandomSampler.ask(&s, &hist, &mut rng);
            assert!(!hist.iter().any(|o: &Observation| o.config == c));
            hist.push(Observation {
                config: c,
                score: Some(0.0),
                margin: -1.0,
            });
        }
    }
}
