//! The generated family of response surfaces (issue 34 item 5): a seeded generator of
//! synthetic servers in the suite's data form (`suite::Server`), so a change to the search is
//! judged on 50+ functions no one chose rather than on the seven named servers it was tuned
//! on. Five shapes — a memory cliff, a ridge made by a sum of (log) parameters, a categorical ×
//! integer interaction, an SLO edge and an infeasible default — each with 3–6 parameters of
//! the suite's kinds (integer log and linear ranges, categoricals), noise per run log-uniform
//! from ±2% to ±20% and, on about half, noise per start. Every draw is checked (by cheap
//! sufficient conditions, not by the optimum) to have the property its shape names and a
//! default clearly worse than the best; a draw that fails is drawn again from the same stream,
//! so the family is a pure function of its seed. The Python ports read the same definitions
//! (`examples/family.rs --json`).

use crate::suite::{Latency, ParamDef, Server, Term};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use webtune_model::rng::Rng;
use webtune_search::sampler::random_config;
use webtune_search::space::{Config, Value};

/// What a generated server tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// Memory (a weighted sum of two parameters) past RAM: throughput collapses, p99 climbs;
    /// the unconstrained optimum lies past the cliff.
    Cliff,
    /// Throughput peaks along a ridge of a product (a sum of logs) of two parameters, such
    /// as workers × threads near the cores: one parameter alone has no good value.
    Ridge,
    /// A mode (categorical) moves the best value of an integer parameter, and often where
    /// p99 starts to climb.
    Interaction,
    /// p99 passes the SLO before throughput peaks: the best feasible point is on the edge.
    SloEdge,
    /// The default (too few of something) breaks the SLO.
    InfeasibleDefault,
}

/// Every shape, in the family's round-robin order.
pub const SHAPES: [Shape; 5] = [
    Shape::Cliff,
    Shape::Ridge,
    Shape::Interaction,
    Shape::SloEdge,
    Shape::InfeasibleDefault,
];

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::Cliff => "cliff",
            Shape::Ridge => "ridge",
            Shape::Interaction => "interaction",
            Shape::SloEdge => "slo-edge",
            Shape::InfeasibleDefault => "infeasible-default",
        }
    }
}

/// One generated server and its shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Generated {
    pub shape: Shape,
    pub server: Server,
}

/// `n` servers, shapes in round-robin order, the `i`-th drawn from its own stream of `seed`.
pub fn family(seed: u64, n: usize) -> Vec<Generated> {
    (0..n)
        .map(|i| {
            let shape = SHAPES[i % SHAPES.len()];
            let stream = seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(i as u64 + 1);
            Generated {
                shape,
                server: generate(shape, stream, &format!("f{i:02}-{}", shape.name())),
            }
        })
        .collect()
}

/// One server of `shape` from the stream `seed`, redrawn until it passes `accept`.
pub fn generate(shape: Shape, seed: u64, name: &str) -> Server {
    let mut rng = Rng::seeded(seed);
    for _ in 0..200 {
        let (server, peak) = draw(shape, &mut rng, name);
        if accept(shape, &server, &peak) {
            return server;
        }
    }
    // Not reached for any seed the tests draw; a clear message if a change to the draw
    // makes a shape impossible.
    panic!("no acceptable {} server in 200 draws", shape.name())
}

fn between(rng: &mut Rng, a: f64, b: f64) -> f64 {
    a + (b - a) * rng.unit()
}

fn pick<T: Copy>(rng: &mut Rng, from: &[T]) -> T {
    from[rng.below(from.len() as u64) as usize]
}

/// An integer range as drawn: the value at a position of the unit interval, on its scale.
#[derive(Debug, Clone, Copy)]
struct Range {
    lo: i64,
    hi: i64,
    log: bool,
}

impl Range {
    fn at(self, u: f64) -> f64 {
        let (lo, hi) = (self.lo as f64, self.hi as f64);
        if self.log {
            (lo.max(0.5).ln() + u * (hi.ln() - lo.max(0.5).ln())).exp()
        } else {
            lo + u * (hi - lo)
        }
    }
    fn int_at(self, u: f64) -> i64 {
        (self.at(u).round() as i64).clamp(self.lo, self.hi)
    }
    /// The length of the range on its scale (the width unit of its bumps).
    fn span(self) -> f64 {
        if self.log {
            (self.hi as f64).ln() - (self.lo as f64).max(0.5).ln()
        } else {
            (self.hi - self.lo) as f64
        }
    }
    fn draw(rng: &mut Rng, log: bool) -> Range {
        if log {
            let lo = pick(rng, &[1, 1, 1, 2, 4, 8, 16, 32, 64, 100]);
            Range {
                lo,
                hi: lo << rng.between(6, 11),
                log,
            }
        } else {
            Range {
                lo: pick(rng, &[0, 1]),
                hi: pick(rng, &[64, 100, 256, 500, 1000, 2000]),
                log,
            }
        }
    }
}

const INT_NAMES: [&str; 12] = [
    "workers",
    "threads",
    "connections",
    "pool",
    "cache_mb",
    "buffer_kb",
    "queue",
    "backlog",
    "batch",
    "keepalive_s",
    "max_requests",
    "io_threads",
];
const WORD_NAMES: [&str; 4] = ["mode", "scheduler", "flush", "balance"];
const WORDS: [&str; 4] = ["alpha", "beta", "gamma", "delta"];

/// The server being drawn, and the configuration each term alone would want (the
/// unconstrained peak, for `accept`).
struct Builder<'a> {
    rng: &'a mut Rng,
    params: Vec<ParamDef>,
    ranges: BTreeMap<String, Range>,
    throughput: Vec<Term>,
    p99: Vec<Latency>,
    peak: Config,
    used: Vec<&'static str>,
}

impl Builder<'_> {
    fn fresh_name(&mut self, pool: &[&'static str]) -> String {
        let free: Vec<&'static str> = pool
            .iter()
            .copied()
            .filter(|n| !self.used.contains(n))
            .collect();
        let n = pick(self.rng, &free);
        self.used.push(n);
        n.to_string()
    }

    /// An integer parameter with its default at position `default_u`.
    fn int(&mut self, log: bool, default_u: f64) -> (String, Range) {
        let name = self.fresh_name(&INT_NAMES);
        let r = Range::draw(self.rng, log);
        self.params.push(ParamDef {
            name: name.clone(),
            int: Some([r.lo, r.hi]),
            log,
            choices: vec![],
            default: r.int_at(default_u).to_string(),
        });
        self.ranges.insert(name.clone(), r);
        (name, r)
    }

    /// A categorical parameter of `k` words, the default the first.
    fn choice(&mut self, k: usize) -> (String, Vec<String>) {
        let name = self.fresh_name(&WORD_NAMES);
        let words: Vec<String> = WORDS[..k].iter().map(|w| w.to_string()).collect();
        self.params.push(ParamDef {
            name: name.clone(),
            int: None,
            log: false,
            choices: words.clone(),
            default: words[0].clone(),
        });
        (name, words)
    }

    /// A throughput bump on `name` at position `u` of its range.
    fn bump(&mut self, name: &str, u: f64, width_u: f64, depth: f64) {
        let r = self.ranges[name];
        let peak = r.at(u);
        self.throughput.push(Term::Bump {
            param: name.into(),
            by: None,
            peaks: [("*".to_string(), peak)].into(),
            width: width_u * r.span(),
            log: r.log,
            depth,
        });
        self.peak.insert(name.into(), Value::Int(r.int_at(u)));
    }

    /// Multipliers per word: one word best (1.0), the others `worst`–0.98 of it.
    fn mult(&mut self, name: &str, words: &[String], worst: f64) -> String {
        let best = words[self.rng.below(words.len() as u64) as usize].clone();
        let mut mult = BTreeMap::new();
        for w in words {
            let m = if *w == best {
                1.0
            } else {
                between(self.rng, worst, 0.98)
            };
            mult.insert(w.clone(), m);
        }
        self.throughput.push(Term::Choice {
            param: name.into(),
            mult,
        });
        self.peak.insert(name.into(), Value::Word(best.clone()));
        best
    }

    /// A minor parameter: an integer with a shallow bump, or a categorical.
    fn filler(&mut self) {
        let roll = self.rng.unit();
        if roll < 0.2 && self.used.iter().all(|n| !WORD_NAMES.contains(n)) {
            let k = self.rng.between(2, 4) as usize;
            let (name, words) = self.choice(k);
            self.mult(&name, &words, 0.85);
        } else {
            let log = roll < 0.75;
            let d = self.rng.unit();
            let (name, _) = self.int(log, d);
            // Minor: a broad, shallow preference (most of a server's knobs matter little).
            let (u, w, depth) = (
                between(self.rng, 0.1, 0.9),
                between(self.rng, 0.2, 0.6),
                between(self.rng, 0.02, 0.25),
            );
            self.bump(&name, u, w, depth);
        }
    }
}

fn draw(shape: Shape, rng: &mut Rng, name: &str) -> (Server, Config) {
    let dims = rng.between(3, 6) as usize;
    let noise = 0.02 * 10f64.powf(rng.unit());
    let start_noise = if rng.unit() < 0.5 {
        (noise * between(rng, 0.25, 1.0)).max(0.01)
    } else {
        0.0
    };
    let base_throughput = (1000.0 * 10f64.powf(1.3 * rng.unit())).round();
    let base_p99_ms = (5.0 * 10f64.powf(rng.unit()) * 10.0).round() / 10.0;
    let mut b = Builder {
        rng,
        params: Vec::new(),
        ranges: BTreeMap::new(),
        throughput: Vec::new(),
        p99: Vec::new(),
        peak: Config::new(),
        used: Vec::new(),
    };
    // The main parameter: an integer on a log scale whose default is low (one worker, a
    // small pool), as shipped defaults are.
    let du = between(b.rng, 0.0, 0.25);
    let (main, range) = b.int(true, du);
    // The value the rule-of-thumb seed aims at (within ×2.8 either way of it).
    let aim: f64;
    let slo_p99_ms: f64;
    let about: String;
    match shape {
        Shape::Cliff => {
            let (u, w, depth) = (
                between(b.rng, 0.45, 0.85),
                between(b.rng, 0.15, 0.35),
                between(b.rng, 0.7, 0.95),
            );
            b.bump(&main, u, w, depth);
            let d = b.rng.unit();
            let log = b.rng.unit() < 0.6;
            let (other, orange) = b.int(log, d);
            let (ou, ow, od) = (
                between(b.rng, 0.2, 0.9),
                between(b.rng, 0.2, 0.5),
                between(b.rng, 0.05, 0.3),
            );
            b.bump(&other, ou, ow, od);
            let limit = range.at(u) * between(b.rng, 0.35, 0.75);
            let share = between(b.rng, 0.1, 0.4);
            let (drop, slow) = (between(b.rng, 0.15, 0.5), between(b.rng, 1.5, 5.0));
            b.throughput.push(Term::Cliff {
                weights: [
                    (main.clone(), 1.0),
                    (other.clone(), share * limit / orange.hi as f64),
                ]
                .into(),
                base: 0.0,
                limit,
                drop,
                slow,
            });
            aim = limit * 0.9;
            slo_p99_ms = base_p99_ms * between(b.rng, 1.5, 3.0);
            about = format!(
                "memory {main} + {other}·w past the limit collapses throughput (×{drop:.2}, \
                 p99 ×{slow:.1}); {main} alone would peak past it"
            );
        }
        Shape::Ridge => {
            let d = b.rng.unit();
            let (other, orange) = b.int(true, d);
            let (ua, ub) = (between(b.rng, 0.3, 0.7), between(b.rng, 0.3, 0.7));
            let peak = range.at(ua).ln() + orange.at(ub).ln();
            let width = between(b.rng, 0.1, 0.25) * range.span().min(orange.span());
            let depth = between(b.rng, 0.6, 0.9);
            b.throughput.push(Term::Ridge {
                weights: [(main.clone(), 1.0), (other.clone(), 1.0)].into(),
                log: true,
                peak,
                width,
                depth,
            });
            // Along the ridge, shallow preferences of each parameter pick the point.
            let (pa, pb) = (between(b.rng, 0.2, 0.8), between(b.rng, 0.2, 0.8));
            let (wa, wb) = (between(b.rng, 0.2, 0.5), between(b.rng, 0.2, 0.5));
            let (da, db) = (between(b.rng, 0.1, 0.35), between(b.rng, 0.1, 0.35));
            b.bump(&main, pa, wa, da);
            b.bump(&other, pb, wb, db);
            aim = range.at(ua);
            slo_p99_ms = base_p99_ms * 3.0;
            about = format!(
                "throughput peaks along {main} × {other} ≈ {:.0} (a ridge of a sum of logs)",
                peak.exp()
            );
        }
        Shape::Interaction => {
            let k = b.rng.between(2, 4) as usize;
            let (mode, words) = b.choice(k);
            // Peaks per word at least 0.15 apart on the unit scale.
            let mut us: Vec<f64>;
            loop {
                us = (0..k).map(|_| between(b.rng, 0.15, 0.9)).collect();
                let mut s = us.clone();
                s.sort_by(f64::total_cmp);
                if s.windows(2).all(|w| w[1] - w[0] >= 0.15) {
                    break;
                }
            }
            let peaks: BTreeMap<String, f64> = words
                .iter()
                .zip(&us)
                .map(|(w, u)| (w.clone(), range.at(*u)))
                .collect();
            let best = b.mult(&mode, &words, 0.75);
            b.throughput.push(Term::Bump {
                param: main.clone(),
                by: Some(mode.clone()),
                peaks: peaks.clone(),
                width: between(b.rng, 0.08, 0.2) * range.span(),
                log: true,
                depth: between(b.rng, 0.8, 0.95),
            });
            b.peak
                .insert(main.clone(), Value::Int(peaks[&best].round() as i64));
            if b.rng.unit() < 0.5 {
                let knees: BTreeMap<String, f64> = peaks
                    .iter()
                    .map(|(w, p)| (w.clone(), p * between(b.rng, 1.3, 2.5)))
                    .collect();
                b.p99.push(Latency::Knee {
                    param: main.clone(),
                    by: Some(mode.clone()),
                    knees,
                    power: 2.0,
                });
                slo_p99_ms = base_p99_ms * 2.0;
            } else {
                slo_p99_ms = base_p99_ms * 3.0;
            }
            aim = peaks[&words[0]];
            about = format!("the best {main} depends on {mode} ({k} words)");
        }
        Shape::SloEdge => {
            let (u, w, depth) = (
                between(b.rng, 0.5, 0.85),
                between(b.rng, 0.15, 0.35),
                between(b.rng, 0.7, 0.95),
            );
            b.bump(&main, u, w, depth);
            let edge = range.at(u) * between(b.rng, 0.3, 0.75);
            let knee = edge * between(b.rng, 0.7, 1.3);
            let power = between(b.rng, 2.0, 4.0);
            b.p99.push(Latency::Knee {
                param: main.clone(),
                by: None,
                knees: [("*".to_string(), knee)].into(),
                power,
            });
            slo_p99_ms = base_p99_ms * (1.0 + (edge / knee).powf(power));
            aim = edge;
            about = format!("p99 passes the SLO at {main} ≈ {edge:.0}, before throughput peaks");
        }
        Shape::InfeasibleDefault => {
            let factor = between(b.rng, 2.0, 4.0);
            slo_p99_ms = base_p99_ms * factor;
            let ut = between(b.rng, 0.25, 0.45);
            let threshold = range.at(ut);
            b.p99.push(Latency::Starve {
                param: main.clone(),
                scale: threshold * (factor - 1.0),
            });
            let (u, w, depth) = (
                between(b.rng, ut + 0.15, 0.9),
                between(b.rng, 0.15, 0.35),
                between(b.rng, 0.6, 0.95),
            );
            b.bump(&main, u, w, depth);
            aim = range.at(u);
            about = format!("the default {main} starves: p99 breaks the SLO below {threshold:.0}");
        }
    }
    while b.params.len() < dims {
        b.filler();
    }
    let seed_value = (aim * 2f64.powf(between(b.rng, -1.5, 1.5))).round() as i64;
    let seeds = vec![vec![(
        main.clone(),
        seed_value.clamp(range.lo, range.hi).to_string(),
    )]];
    let server = Server {
        name: name.into(),
        about,
        params: b.params,
        base_throughput,
        base_p99_ms,
        throughput: b.throughput,
        p99: b.p99,
        slo_p99_ms,
        noise,
        start_noise,
        seeds,
    };
    let peak = b.peak;
    (server, peak)
}

/// Cheap sufficient conditions that `server` is a fair test of `shape`: some of 400 random
/// configurations beat the default by more than 10% (so the optimum does), fewer than 10% of
/// them are within 5% of the best of them (the problem is not trivial), and the shape's
/// property holds at the unconstrained peak or the default.
fn accept(shape: Shape, server: &Server, peak: &Config) -> bool {
    let space = server.space();
    let mut rng = Rng::seeded(17);
    let values: Vec<f64> = (0..400)
        .map(|_| server.true_value(&random_config(&space, &mut rng)))
        .collect();
    let best = values.iter().copied().fold(0.0, f64::max);
    let default = server.true_value(&space.default_config());
    let near = values.iter().filter(|v| **v >= 0.95 * best).count();
    if best <= 0.0 || default >= 0.9 * best || near >= 40 {
        return false;
    }
    let mut at_peak = space.default_config();
    at_peak.extend(peak.iter().map(|(k, v)| (k.clone(), v.clone())));
    match shape {
        Shape::Cliff => server.truth(&at_peak).0 < 0.6 * best,
        Shape::SloEdge => server.truth(&at_peak).1 > server.slo_p99_ms,
        Shape::InfeasibleDefault => default == 0.0,
        Shape::Ridge | Shape::Interaction => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_family_is_a_function_of_its_seed() {
        let a = family(1, 10);
        assert_eq!(a, family(1, 10));
        assert_ne!(a, family(2, 10));
        // The first servers of a longer family are the same servers.
        assert_eq!(family(1, 15)[..10], a[..]);
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Vec<Generated>>(&text).unwrap(), a);
    }

    #[test]
    fn the_family_covers_every_shape_size_and_noise() {
        let all = family(1, 50);
        for shape in SHAPES {
            assert_eq!(all.iter().filter(|g| g.shape == shape).count(), 10);
        }
        for g in &all {
            let s = &g.server;
            assert!((3..=6).contains(&s.params.len()), "{}", s.name);
            assert!((0.02..=0.2).contains(&s.noise), "{}", s.name);
            let names: std::collections::BTreeSet<&str> =
                s.params.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(names.len(), s.params.len(), "{}: duplicate names", s.name);
            let d = s.space().default_config();
            if g.shape == Shape::InfeasibleDefault {
                assert_eq!(s.true_value(&d), 0.0, "{}", s.name);
            }
        }
        let dims: std::collections::BTreeSet<usize> =
            all.iter().map(|g| g.server.params.len()).collect();
        assert_eq!(dims.len(), 4, "3, 4, 5 and 6 parameters: {dims:?}");
        assert!(all.iter().any(|g| g.server.noise < 0.04));
        assert!(all.iter().any(|g| g.server.noise > 0.12));
        let with_starts = all.iter().filter(|g| g.server.start_noise > 0.0).count();
        assert!((10..=40).contains(&with_starts), "{with_starts}");
        assert!(all
            .iter()
            .any(|g| g.server.params.iter().any(|p| p.int.is_some() && !p.log)));
    }

    /// One server of each shape: the optimum found beats random sampling and the default,
    /// and has the shape's property.
    #[test]
    fn each_shape_has_its_property_at_the_optimum() {
        let all = family(1, 5);
        for g in &all {
            let s = &g.server;
            let space = s.space();
            let (opt, at) = s.optimum();
            assert!(opt > 0.0, "{}", s.name);
            let mut rng = Rng::seeded(3);
            for _ in 0..1000 {
                let c = random_config(&space, &mut rng);
                assert!(s.true_value(&c) <= opt * (1.0 + 1e-12), "{} {c:?}", s.name);
            }
            assert!(
                s.true_value(&space.default_config()) < 0.9 * opt,
                "{}",
                s.name
            );
            let main = &s.params[0].name;
            let Value::Int(n) = at[main] else { panic!() };
            let mut more = at.clone();
            more.insert(main.clone(), Value::Int(n * 2));
            match g.shape {
                // Twice the main parameter at the optimum is over the cliff or the SLO.
                Shape::Cliff | Shape::SloEdge => {
                    assert!(s.true_value(&more) < 0.8 * opt, "{}", s.name)
                }
                // The smallest value of the main parameter starves.
                Shape::InfeasibleDefault => {
                    let mut less = at.clone();
                    let lo = s.params[0].int.unwrap()[0];
                    less.insert(main.clone(), Value::Int(lo));
                    assert_eq!(s.true_value(&less), 0.0, "{}", s.name)
                }
                // Another mode at the optimum's main value is clearly worse: its own best
                // main value lies elsewhere.
                Shape::Interaction => {
                    let mode = s.params.iter().find(|p| p.int.is_none()).unwrap();
                    for w in mode
                        .choices
                        .iter()
                        .filter(|w| Value::Word(w.to_string()) != at[&mode.name])
                    {
                        let mut other = at.clone();
                        other.insert(mode.name.clone(), Value::Word(w.clone()));
                        assert!(s.true_value(&other) < 0.9 * opt, "{} {w}", s.name);
                    }
                }
                Shape::Ridge => {}
            }
        }
    }
}
