//! The sampler benchmark suite: synthetic web and database servers with known optima, each
//! built to test one way a search goes wrong at small budgets (a memory cliff, a narrow
//! contention optimum, a categorical × integer interaction, an infeasible default, an SLO
//! that cuts off the unconstrained optimum, heavy and light noise). A server is data
//! (`Server`: parameters, throughput factors, latency factors, SLO, noise), serialisable as
//! JSON, so the Python ports in `examples/optuna_suite.py` evaluate the very same functions
//! (`examples/suite.rs --json` prints them, with noise-free check points the port must
//! reproduce). The named servers themselves: `suite_servers`; running a study on a server:
//! `suite_run`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use webtune_model::rng::Rng;
use webtune_search::objective::LevelSummary;
use webtune_search::space::{Config, Kind, ParamSpec, Space, Value};
use webtune_search::study::Outcome;

/// One searched parameter: an integer range (optionally on a log scale) or a list of words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamDef {
    pub name: String,
    /// `[lo, hi]` for an integer parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int: Option<[i64; 2]>,
    #[serde(default)]
    pub log: bool,
    /// The words of a categorical parameter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    pub default: String,
}

/// A multiplicative factor of throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "term", rename_all = "snake_case")]
pub enum Term {
    /// `(1 − depth) + depth·exp(−½((t(x) − t(peak))/width)²)`, t = ln on a log scale. With
    /// `by`, the peak is `peaks[value of by]` (an interaction); else `peaks["*"]`.
    Bump {
        param: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        peaks: BTreeMap<String, f64>,
        width: f64,
        log: bool,
        depth: f64,
    },
    /// A multiplier per word of a categorical parameter.
    Choice {
        param: String,
        mult: BTreeMap<String, f64>,
    },
    /// Memory `base + Σ weight·value` over `limit` (RAM): the machine swaps; throughput is
    /// multiplied by `drop` and p99 by `slow`.
    Cliff {
        weights: BTreeMap<String, f64>,
        base: f64,
        limit: f64,
        drop: f64,
        slow: f64,
    },
    /// A ridge made by a sum of parameters: `s = Σ weight·t(x)` (t = ln on a log scale, so a
    /// product such as workers × threads), factor `(1 − depth) + depth·exp(−½((s −
    /// peak)/width)²)`, `peak` and `width` in the units of `s` (the generated family,
    /// `surfaces.rs`).
    Ridge {
        weights: BTreeMap<String, f64>,
        log: bool,
        peak: f64,
        width: f64,
        depth: f64,
    },
}

/// A multiplicative factor of p99.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "term", rename_all = "snake_case")]
pub enum Latency {
    /// `1 + (x / knee)^power`: queueing past the knee (`knees[value of by]` or `knees["*"]`).
    Knee {
        param: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        knees: BTreeMap<String, f64>,
        power: f64,
    },
    /// `1 + scale / x`: too few of something, requests wait for one.
    Starve { param: String, scale: f64 },
}

/// One synthetic server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Server {
    pub name: String,
    /// What it stands for and what it tests.
    pub about: String,
    pub params: Vec<ParamDef>,
    /// Throughput (ok/s) when every factor is 1.
    pub base_throughput: f64,
    /// p99 (ms) when every factor is 1.
    pub base_p99_ms: f64,
    pub throughput: Vec<Term>,
    pub p99: Vec<Latency>,
    /// The SLO: p99 at most this (ms).
    pub slo_p99_ms: f64,
    /// Uniform multiplicative run-to-run noise, ± this fraction, on throughput and on p99.
    pub noise: f64,
    /// Noise per start, ± this fraction: a configuration keeps the throughput factor
    /// `1 + U(−start_noise, +start_noise)` drawn when it is first measured in a study
    /// (p99 divided by it), so re-measuring it does not average it away (a redeployed
    /// configuration differs between starts: TUNA, EuroSys 2025). 0 for the seven named
    /// servers.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_noise: f64,
    /// Rule-of-thumb seeds (name=value pairs), measured after the default.
    pub seeds: Vec<Vec<(String, String)>>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn number(c: &Config, name: &str) -> f64 {
    match c.get(name) {
        Some(Value::Int(v)) => *v as f64,
        _ => f64::NAN,
    }
}

fn word<'a>(c: &'a Config, name: &str) -> &'a str {
    match c.get(name) {
        Some(Value::Word(w)) => w,
        _ => "*",
    }
}

fn keyed(map: &BTreeMap<String, f64>, by: &Option<String>, c: &Config) -> f64 {
    let key = by.as_deref().map_or("*", |b| word(c, b));
    map.get(key).copied().unwrap_or(f64::NAN)
}

impl Server {
    pub fn space(&self) -> Space {
        let params = self
            .params
            .iter()
            .map(|p| match p.int {
                Some([lo, hi]) => ParamSpec {
                    name: p.name.clone(),
                    kind: Kind::Int { lo, hi, log: p.log },
                    default: Value::parse(&p.default),
                },
                None => ParamSpec {
                    name: p.name.clone(),
                    kind: Kind::Choice(p.choices.iter().map(|w| Value::Word(w.clone())).collect()),
                    default: Value::Word(p.default.clone()),
                },
            })
            .collect();
        Space {
            params,
            inert: Vec::new(),
        }
    }

    pub fn seeds(&self, space: &Space) -> Vec<Config> {
        self.seeds
            .iter()
            .map(|pairs| space.config_from_text(pairs))
            .collect()
    }

    fn memory_over(&self, c: &Config) -> Option<(f64, f64)> {
        self.throughput.iter().find_map(|t| match t {
            Term::Cliff {
                weights,
                base,
                limit,
                drop,
                slow,
            } => {
                let m = base + weights.iter().map(|(k, w)| w * number(c, k)).sum::<f64>();
                (m > *limit).then_some((*drop, *slow))
            }
            _ => None,
        })
    }

    /// Noise-free throughput (ok/s) and p99 (ms) of a configuration.
    pub fn truth(&self, c: &Config) -> (f64, f64) {
        let mut tp = self.base_throughput;
        for t in &self.throughput {
            tp *= match t {
                Term::Bump {
                    param,
                    by,
                    peaks,
                    width,
                    log,
                    depth,
                } => {
                    let (x, p) = (number(c, param), keyed(peaks, by, c));
                    let z = if *log {
                        (x.max(0.5).ln() - p.ln()) / width
                    } else {
                        (x - p) / width
                    };
                    (1.0 - depth) + depth * (-0.5 * z * z).exp()
                }
                Term::Choice { param, mult } => mult.get(word(c, param)).copied().unwrap_or(0.0),
                Term::Ridge {
                    weights,
                    log,
                    peak,
                    width,
                    depth,
                } => {
                    let sum: f64 = weights
                        .iter()
                        .map(|(k, w)| {
                            let x = number(c, k);
                            w * if *log { x.max(0.5).ln() } else { x }
                        })
                        .sum();
                    let z = (sum - peak) / width;
                    (1.0 - depth) + depth * (-0.5 * z * z).exp()
                }
                Term::Cliff { .. } => 1.0,
            };
        }
        let mut p99 = self.base_p99_ms;
        for l in &self.p99 {
            p99 *= match l {
                Latency::Knee {
                    param,
                    by,
                    knees,
                    power,
                } => 1.0 + (number(c, param) / keyed(knees, by, c)).powf(*power),
                Latency::Starve { param, scale } => 1.0 + scale / number(c, param).max(0.5),
            };
        }
        if let Some((drop, slow)) = self.memory_over(c) {
            tp *= drop;
            p99 *= slow;
        }
        (tp, p99)
    }

    /// The true value that counts: throughput when the SLO is met, else 0.
    pub fn true_value(&self, c: &Config) -> f64 {
        let (tp, p99) = self.truth(c);
        if p99 <= self.slo_p99_ms {
            tp
        } else {
            0.0
        }
    }

    /// One noisy measurement: throughput and p99 each times `1 + U(−noise, +noise)`, drawn
    /// in that order.
    pub fn measure(&self, c: &Config, rng: &mut Rng) -> Outcome {
        self.measure_started(c, 1.0, rng)
    }

    /// One noisy measurement of a configuration whose start drew the throughput factor
    /// `start` (see `start_noise`; 1 without noise per start).
    pub fn measure_started(&self, c: &Config, start: f64, rng: &mut Rng) -> Outcome {
        let (tp, p99) = self.truth(c);
        let tp = tp * start * (1.0 + crate::synthetic::symmetric(rng, self.noise));
        let p99 = p99 / start * (1.0 + crate::synthetic::symmetric(rng, self.noise));
        Outcome::Measured(vec![LevelSummary {
            level: "c=256".into(),
            throughput: tp,
            p50_ms: p99 / 4.0,
            p90_ms: p99 / 2.0,
            p99_ms: p99,
            p999_ms: p99 * 2.0,
            mean_ms: p99 / 3.0,
            error_ratio: 0.0,
            mail: None,
        }])
    }

    /// The SLO as `--slo` text.
    pub fn slo(&self) -> String {
        format!("p99<={}ms", self.slo_p99_ms)
    }

    /// The feasible optimum: coordinate-wise sweeps (every value of one parameter with the
    /// others fixed, until nothing improves) from a 3-point grid of starts per parameter;
    /// checked against random sampling by the unit tests.
    pub fn optimum(&self) -> (f64, Config) {
        let space = self.space();
        let values: Vec<Vec<Value>> = space
            .params
            .iter()
            .map(|p| match &p.kind {
                // Every value of a range up to 2 000 values, else 2 000 steps on its scale.
                Kind::Int { lo, hi, .. } if hi - lo <= 2000 => {
                    (*lo..=*hi).map(Value::Int).collect()
                }
                Kind::Int { .. } => {
                    let mut v: Vec<Value> =
                        (0..=2000).map(|i| p.decode(i as f64 / 2000.0)).collect();
                    v.dedup();
                    v
                }
                Kind::Choice(c) => c.clone(),
            })
            .collect();
        let d = space.dims();
        let mut best = (0.0, space.default_config());
        // Starts: a grid of 3 points per range parameter up to four parameters (the named
        // servers), 2 beyond (the generated family's five and six), and every word of a
        // categorical, so a mode × integer interaction is swept from each mode; checked
        // against random sampling by the unit tests.
        let points: Vec<Vec<f64>> = space
            .params
            .iter()
            .map(|p| {
                let n = match &p.kind {
                    Kind::Choice(c) => c.len().max(3),
                    _ if d <= 4 => 3,
                    _ => 2,
                };
                (0..n).map(|i| (i as f64 + 0.5) / n as f64).collect()
            })
            .collect();
        let total: usize = points.iter().map(Vec::len).product();
        for s in 0..total {
            let mut k = s;
            let u: Vec<f64> = points
                .iter()
                .map(|pts| {
                    let i = k % pts.len();
                    k /= pts.len();
                    pts[i]
                })
                .collect();
            let c = space.decode(&u);
            let v = self.true_value(&c);
            let (c, v) = self.climb(&space, &values, c, v);
            if v > best.0 {
                best = (v, c);
            }
        }
        // A ridge of a sum of parameters stalls coordinate sweeps on the grid (a step along
        // it changes two at once): from the best, every pair of values of each ridge's
        // parameters, the others fixed, then the sweeps again, until nothing improves.
        let ridges: Vec<Vec<usize>> = self
            .throughput
            .iter()
            .filter_map(|t| match t {
                Term::Ridge { weights, .. } => Some(
                    weights
                        .keys()
                        .filter_map(|k| space.params.iter().position(|p| p.name == *k))
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        loop {
            let before = best.0;
            for r in ridges.iter().filter(|r| r.len() == 2) {
                let (a, b) = (&space.params[r[0]], &space.params[r[1]]);
                let mut c = best.1.clone();
                for x in &values[r[0]] {
                    c.insert(a.name.clone(), x.clone());
                    for y in &values[r[1]] {
                        c.insert(b.name.clone(), y.clone());
                        let v = self.true_value(&c);
                        if v > best.0 {
                            best = (v, c.clone());
                        }
                    }
                }
            }
            if best.0 <= before {
                break;
            }
            let (c, v) = self.climb(&space, &values, best.1, best.0);
            best = (v, c);
        }
        best
    }

    /// Coordinate sweeps from `c` (of value `v`): every value of one parameter with the
    /// others fixed, until nothing improves.
    fn climb(
        &self,
        space: &Space,
        values: &[Vec<Value>],
        mut c: Config,
        mut v: f64,
    ) -> (Config, f64) {
        loop {
            let before = v;
            for (i, p) in space.params.iter().enumerate() {
                for x in &values[i] {
                    let old = c.insert(p.name.clone(), x.clone());
                    let nv = self.true_value(&c);
                    if nv > v {
                        v = nv;
                    } else if let Some(o) = old {
                        c.insert(p.name.clone(), o);
                    }
                }
            }
            if v <= before {
                return (c, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite_servers::servers;
    use webtune_search::sampler::random_config;

    #[test]
    fn each_server_tests_what_it_claims() {
        let all = servers();
        assert!(all.len() >= 6);
        for s in &all {
            let sp = s.space();
            let (opt, at) = s.optimum();
            assert!(opt > 0.0, "{}", s.name);
            assert_eq!(s.true_value(&at), opt);
            // No random configuration beats the optimum found.
            let mut rng = Rng::seeded(3);
            for _ in 0..3000 {
                let c = random_config(&sp, &mut rng);
                assert!(s.true_value(&c) <= opt * (1.0 + 1e-12), "{} {c:?}", s.name);
            }
            let d = s.true_value(&sp.default_config());
            assert!(d < 0.9 * opt, "{}: the default is already good", s.name);
        }
        let by = |n: &str| all.iter().find(|s| s.name == n).unwrap();
        // The infeasible default.
        let nginx = by("nginx-infeasible-default");
        assert_eq!(nginx.true_value(&nginx.space().default_config()), 0.0);
        // The cliff: one child more than the optimum swaps.
        let php = by("php-fpm-cliff");
        let (opt, mut at) = php.optimum();
        let Value::Int(n) = at["pm_max_children"] else {
            panic!()
        };
        at.insert("pm_max_children".into(), Value::Int(n + 1));
        assert!(php.true_value(&at) < 0.5 * opt);
        // The SLO cut: the unconstrained optimum (48 workers) breaks the SLO.
        let g = by("gunicorn-slo-cut");
        let (_, mut at) = g.optimum();
        at.insert("workers".into(), Value::Int(48));
        assert!(g.truth(&at).1 > g.slo_p99_ms);
        // The interaction: the best worker count differs by MPM.
        let a = by("apache-mpm");
        let (_, at) = a.optimum();
        assert_eq!(at["mpm"], Value::Word("event".into()));
        let mut pre = at.clone();
        pre.insert("mpm".into(), Value::Word("prefork".into()));
        assert_eq!(
            a.true_value(&pre),
            0.0,
            "event's worker count breaks prefork"
        );
    }

    #[test]
    fn the_definitions_round_trip_as_json() {
        let all = servers();
        let text = serde_json::to_string(&all).unwrap();
        let back: Vec<Server> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, all);
    }
}
