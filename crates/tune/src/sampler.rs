//! The samplers: the algorithms that propose the next configuration from the history, behind
//! one trait so the study never asks which one it holds (Optuna's sampler seam). Also the
//! space-filling start (Latin hypercube) and the plain random sampler used as the baseline.

use crate::space::{Config, Space};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

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
    fn ask(&mut self, space: &Space, history: &[Observation], rng: &mut ChaCha8Rng) -> Config;
}

/// Uniform random configurations, avoiding ones already measured where it can.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomSampler;

impl Sampler for RandomSampler {
    fn name(&self) -> &'static str {
        "random"
    }

    fn ask(&mut self, space: &Space, history: &[Observation], rng: &mut ChaCha8Rng) -> Config {
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

pub fn random_point(dims: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    (0..dims).map(|_| rng.gen::<f64>()).collect()
}

pub fn random_config(space: &Space, rng: &mut ChaCha8Rng) -> Config {
    space.decode(&random_point(space.dims(), rng))
}

/// `n` points of a Latin hypercube: each parameter's range cut into `n` strata, one point
/// in each, strata shuffled independently per parameter.
pub fn latin_hypercube(space: &Space, n: usize, rng: &mut ChaCha8Rng) -> Vec<Config> {
    let d = space.dims();
    let mut columns: Vec<Vec<f64>> = (0..d)
        .map(|_| {
            let mut col: Vec<f64> = (0..n)
                .map(|i| (i as f64 + rng.gen::<f64>()) / n as f64)
                .collect();
            col.shuffle(rng);
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
    use rand::SeedableRng;

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
        let mut rng = ChaCha8Rng::seed_from_u64(7);
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
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        assert_eq!(latin_hypercube(&s, 10, &mut rng), pts);
    }

    #[test]
    fn random_sampler_avoids_repeats() {
        let s = space();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
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
