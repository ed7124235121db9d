//! The sampler benchmark suite: synthetic web and database servers with known optima, each
//! built to test one way a search goes wrong at small budgets (a memory cliff, a narrow
//! contention optimum, a categorical × integer interaction, an infeasible default, an SLO
//! that cuts off the unconstrained optimum, heavy and light noise). A server is data
//! (`Server`: parameters, throughput factors, latency factors, SLO, noise), serialisable as
//! JSON, so the Python ports in `examples/optuna_suite.py` evaluate the very same functions
//! (`examples/suite.rs --json` prints them, with noise-free check points the port must
//! reproduce). Running a study on a server: `suite_run`.

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

fn map(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn int(name: &str, lo: i64, hi: i64, log: bool, default: i64) -> ParamDef {
    ParamDef {
        name: name.into(),
        int: Some([lo, hi]),
        log,
        choices: vec![],
        default: default.to_string(),
    }
}

fn words(name: &str, choices: &[&str], default: &str) -> ParamDef {
    ParamDef {
        name: name.into(),
        int: None,
        log: false,
        choices: choices.iter().map(|s| s.to_string()).collect(),
        default: default.into(),
    }
}

fn bump(param: &str, peak: f64, width: f64, log: bool, depth: f64) -> Term {
    Term::Bump {
        param: param.into(),
        by: None,
        peaks: map(&[("*", peak)]),
        width,
        log,
        depth,
    }
}

fn seed(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The suite's servers.
pub fn servers() -> Vec<Server> {
    let haproxy = |name: &str, noise: f64, what: &str| Server {
        name: name.into(),
        about: format!(
            "HAProxy in front of a pool: threads, maxconn, buffer size and balance algorithm; \
             a broad optimum, {what}"
        ),
        params: vec![
            int("nbthread", 1, 64, true, 1),
            int("maxconn", 100, 100_000, true, 2000),
            int("bufsize_kb", 4, 64, false, 16),
            words(
                "balance",
                &["roundrobin", "leastconn", "source"],
                "roundrobin",
            ),
        ],
        base_throughput: 40_000.0,
        base_p99_ms: 30.0,
        throughput: vec![
            bump("nbthread", 16.0, 1.2, true, 0.95),
            bump("maxconn", 20_000.0, 1.5, true, 0.2),
            bump("bufsize_kb", 24.0, 20.0, false, 0.05),
            Term::Choice {
                param: "balance".into(),
                mult: map(&[("roundrobin", 0.97), ("leastconn", 1.0), ("source", 0.85)]),
            },
        ],
        p99: vec![Latency::Knee {
            param: "nbthread".into(),
            by: None,
            knees: map(&[("*", 48.0)]),
            power: 2.0,
        }],
        slo_p99_ms: 100.0,
        noise,
        start_noise: 0.0,
        seeds: vec![seed(&[("nbthread", "8")])],
    };
    vec![
        Server {
            name: "php-fpm-cliff".into(),
            about: "PHP-FPM on 4 GiB: each child takes 48 MiB; throughput grows with children \
                    until memory (children, OPcache, 300 MiB base) passes RAM and the box swaps \
                    (a cliff: throughput ×0.25, p99 ×4). The optimum sits at the edge."
                .into(),
            params: vec![
                int("pm_max_children", 1, 256, true, 5),
                int("opcache_mb", 32, 1024, true, 128),
                words("pm", &["static", "dynamic", "ondemand"], "dynamic"),
                int("max_requests", 0, 2000, false, 0),
            ],
            base_throughput: 3000.0,
            base_p99_ms: 40.0,
            throughput: vec![
                bump("pm_max_children", 120.0, 1.0, true, 0.95),
                bump("opcache_mb", 256.0, 1.2, true, 0.15),
                Term::Choice {
                    param: "pm".into(),
                    mult: map(&[("static", 1.0), ("dynamic", 0.97), ("ondemand", 0.85)]),
                },
                bump("max_requests", 500.0, 900.0, false, 0.04),
                Term::Cliff {
                    weights: map(&[("pm_max_children", 48.0), ("opcache_mb", 1.0)]),
                    base: 300.0,
                    limit: 4096.0,
                    drop: 0.25,
                    slow: 4.0,
                },
            ],
            p99: vec![
                Latency::Starve {
                    param: "pm_max_children".into(),
                    scale: 8.0,
                },
                Latency::Knee {
                    param: "pm_max_children".into(),
                    by: None,
                    knees: map(&[("*", 400.0)]),
                    power: 2.0,
                },
            ],
            slo_p99_ms: 300.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("pm_max_children", "50")])],
        },
        Server {
            name: "mariadb-contention".into(),
            about: "MariaDB under a write-heavy load: innodb_thread_concurrency has a narrow \
                    optimum at 12 (fewer idles the cores, more contend for the same locks); \
                    buffer pool and I/O threads matter less."
                .into(),
            params: vec![
                int("thread_concurrency", 1, 256, true, 8),
                int("buffer_pool_mb", 128, 8192, true, 128),
                words("flush_method", &["fsync", "O_DIRECT", "O_DSYNC"], "fsync"),
                int("io_threads", 1, 64, true, 4),
            ],
            base_throughput: 5000.0,
            base_p99_ms: 10.0,
            throughput: vec![
                bump("thread_concurrency", 12.0, 0.35, true, 0.6),
                bump("buffer_pool_mb", 4096.0, 1.5, true, 0.5),
                Term::Choice {
                    param: "flush_method".into(),
                    mult: map(&[("fsync", 0.9), ("O_DIRECT", 1.0), ("O_DSYNC", 0.7)]),
                },
                bump("io_threads", 16.0, 1.5, true, 0.1),
            ],
            p99: vec![Latency::Knee {
                param: "thread_concurrency".into(),
                by: None,
                knees: map(&[("*", 64.0)]),
                power: 2.0,
            }],
            slo_p99_ms: 50.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("thread_concurrency", "16")])],
        },
        Server {
            name: "apache-mpm".into(),
            about: "Apache httpd: the MPM changes the best MaxRequestWorkers (prefork 40, \
                    worker 160, event 500) and where p99 starts to climb."
                .into(),
            params: vec![
                words("mpm", &["prefork", "worker", "event"], "prefork"),
                int("max_workers", 1, 1024, true, 64),
                int("keepalive_s", 1, 60, true, 5),
            ],
            base_throughput: 8000.0,
            base_p99_ms: 25.0,
            throughput: vec![
                Term::Bump {
                    param: "max_workers".into(),
                    by: Some("mpm".into()),
                    peaks: map(&[("prefork", 40.0), ("worker", 160.0), ("event", 500.0)]),
                    width: 0.5,
                    log: true,
                    depth: 0.9,
                },
                Term::Choice {
                    param: "mpm".into(),
                    mult: map(&[("prefork", 0.8), ("worker", 0.92), ("event", 1.0)]),
                },
                bump("keepalive_s", 5.0, 1.0, true, 0.1),
            ],
            p99: vec![Latency::Knee {
                param: "max_workers".into(),
                by: Some("mpm".into()),
                knees: map(&[("prefork", 64.0), ("worker", 400.0), ("event", 2000.0)]),
                power: 2.0,
            }],
            slo_p99_ms: 100.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("mpm", "event"), ("max_workers", "256")])],
        },
        Server {
            name: "nginx-infeasible-default".into(),
            about: "nginx as a proxy: one worker with 512 connections queues requests, so the \
                    default (and the one-worker-per-core seed) misses the p99 SLO; the A/A \
                    pair measures an infeasible configuration twice."
                .into(),
            params: vec![
                int("worker_processes", 1, 64, true, 1),
                int("worker_connections", 64, 16384, true, 512),
                int("keepalive_requests", 1, 10000, true, 100),
                words("proxy_buffering", &["on", "off"], "on"),
            ],
            base_throughput: 20_000.0,
            base_p99_ms: 50.0,
            throughput: vec![
                bump("worker_processes", 8.0, 0.8, true, 0.95),
                bump("worker_connections", 4096.0, 1.5, true, 0.3),
                bump("keepalive_requests", 1000.0, 2.0, true, 0.1),
                Term::Choice {
                    param: "proxy_buffering".into(),
                    mult: map(&[("on", 1.0), ("off", 0.9)]),
                },
            ],
            p99: vec![
                Latency::Starve {
                    param: "worker_processes".into(),
                    scale: 2.0,
                },
                Latency::Starve {
                    param: "worker_connections".into(),
                    scale: 2048.0,
                },
                Latency::Knee {
                    param: "worker_processes".into(),
                    by: None,
                    knees: map(&[("*", 24.0)]),
                    power: 2.0,
                },
            ],
            slo_p99_ms: 200.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("worker_processes", "8")])],
        },
        Server {
            name: "gunicorn-slo-cut".into(),
            about: "gunicorn: throughput peaks at 48 workers, but p99 passes the SLO at about \
                    23 (gevent), 20 (gthread) or 16 (sync) workers: the SLO cuts off the \
                    unconstrained optimum, and the best feasible point is at its edge."
                .into(),
            params: vec![
                int("workers", 1, 128, true, 4),
                int("threads", 1, 32, true, 1),
                words("worker_class", &["sync", "gthread", "gevent"], "sync"),
                int("backlog", 64, 4096, true, 2048),
            ],
            base_throughput: 6000.0,
            base_p99_ms: 20.0,
            throughput: vec![
                bump("workers", 48.0, 0.8, true, 0.95),
                bump("threads", 8.0, 1.0, true, 0.3),
                Term::Choice {
                    param: "worker_class".into(),
                    mult: map(&[("sync", 0.8), ("gthread", 0.95), ("gevent", 1.0)]),
                },
                bump("backlog", 512.0, 1.5, true, 0.04),
            ],
            p99: vec![Latency::Knee {
                param: "workers".into(),
                by: Some("worker_class".into()),
                knees: map(&[("sync", 16.5), ("gthread", 20.5), ("gevent", 23.5)]),
                power: 2.0,
            }],
            slo_p99_ms: 40.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("workers", "17")])],
        },
        haproxy(
            "haproxy-noisy",
            0.15,
            "±15% run-to-run noise (a shared cloud VM)",
        ),
        haproxy(
            "haproxy-quiet",
            0.03,
            "±3% run-to-run noise (a quiet dedicated box)",
        ),
    ]
}

/// The server of this name.
pub fn server(name: &str) -> Option<Server> {
    servers().into_iter().find(|s| s.name == name)
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
