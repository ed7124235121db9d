//! A synthetic noisy "server" with a known optimum, for judging samplers: five parameters
//! (log-scale integer, integer, categorical), a p99 SLO that cuts off the unconstrained
//! optimum, and ±8% multiplicative run-to-run noise (uniform) on throughput and p99. Used by
//! the unit test that compares samplers and by `examples/synthetic.rs`.
//!
//! The search crate's own unit tests (journal, effects, report) drive a study of this same
//! server: `webtune-search` compiles this file into its test build only (`#[path]` in its
//! `lib.rs`, with `extern crate self as webtune_search` so the paths below resolve there too),
//! so the library ships without it and there is one copy of the server. Keep this file free
//! of `crate::` paths for that reason.

use webtune_model::rng::Rng;
use webtune_search::objective::{LevelSummary, Objective, Slo};
use webtune_search::sampler::Sampler;
use webtune_search::space::{Config, KnownKind, KnownParam, Space, Value};
use webtune_search::study::{Next, Outcome, Study, StudySettings};

/// Uniform in `[-half, half)`: a run's multiplicative noise in the benchmarks.
pub fn symmetric(rng: &mut Rng, half: f64) -> f64 {
    half * (2.0 * rng.unit() - 1.0)
}

/// The `--param` texts of the benchmark.
pub const PARAMS: [&str; 5] = [
    "workers=1..128:log",
    "keepalive=1..10000:log",
    "mpm=prefork,worker,event",
    "buffer_kb=4..256",
    "backlog=16..4096:log",
];

/// The SLO of the benchmark.
pub const SLO: &str = "p99<=40ms";

/// The catalogue the synthetic server declares.
pub fn catalogue() -> Vec<KnownParam> {
    let int = |name: &str, max: i64, default: &str| KnownParam {
        name: name.into(),
        kind: KnownKind::Int {
            min: 1,
            max,
            keywords: vec![],
        },
        default: default.into(),
    };
    vec![
        int("workers", 1024, "4"),
        int("keepalive", 100_000, "100"),
        KnownParam {
            name: "mpm".into(),
            kind: KnownKind::Choice(vec!["prefork".into(), "worker".into(), "event".into()]),
            default: "prefork".into(),
        },
        int("buffer_kb", 1024, "8"),
        int("backlog", 65535, "128"),
    ]
}

pub fn space() -> Space {
    let texts: Vec<String> = PARAMS.iter().map(|s| s.to_string()).collect();
    Space::parse(&texts, &catalogue()).expect("the benchmark's space is valid")
}

/// The rule-of-thumb seed: two workers per core on an 8-core machine.
pub fn seeds(space: &Space) -> Vec<Config> {
    vec![space.config_from_text(&[("workers".into(), "16".into())])]
}

fn int(c: &Config, k: &str) -> f64 {
    match c.get(k) {
        Some(Value::Int(v)) => *v as f64,
        _ => 1.0,
    }
}

/// Noise-free throughput (ok/s) and p99 (ms) of a configuration.
pub fn truth(c: &Config) -> (f64, f64) {
    let w = int(c, "workers");
    let (mult, knee) = match c.get("mpm") {
        Some(Value::Word(m)) if m == "event" => (1.0, 24.0),
        Some(Value::Word(m)) if m == "worker" => (0.9, 30.0),
        _ => (0.75, 16.0),
    };
    // Throughput peaks at 24 workers (a broad bump on the log scale); the SLO cuts event's
    // peak off at 24 (p99 reaches the SLO right at the peak).
    let workers = (-0.5 * ((w / 24.0).ln() / 1.2).powi(2)).exp();
    // Keep-alive: a broad optimum near 500 requests per connection.
    let k = int(c, "keepalive").ln();
    let keepalive = 0.95 + 0.05 * (-0.5 * ((k - 500f64.ln()) / 2.0).powi(2)).exp();
    // Buffer size and backlog: minor, the backlog saturating at 256.
    let b = int(c, "buffer_kb");
    let buffer = 1.0 - 0.03 * ((b - 96.0) / 160.0).powi(2);
    let q = int(c, "backlog");
    let backlog = 0.96 + 0.04 * ((q / 16.0).ln() / 16f64.ln()).min(1.0);
    let throughput = 10_000.0 * mult * workers * keepalive * buffer * backlog;
    let p99 = 20.0 * (1.0 + (w / knee).powi(2));
    (throughput, p99)
}

/// The true value that counts: throughput when the SLO is met, else 0.
pub fn true_value(c: &Config) -> f64 {
    let (tp, p99) = truth(c);
    if p99 <= 40.0 {
        tp
    } else {
        0.0
    }
}

/// The true optimum, by enumeration (the factors are separable given workers and mpm).
pub fn optimum() -> f64 {
    let sp = space();
    let mut c = sp.default_config();
    let best_each = |name: &str, lo: i64, hi: i64, c: &mut Config| {
        let mut best = (f64::MIN, lo);
        for v in lo..=hi {
            c.insert(name.into(), Value::Int(v));
            let t = truth(c).0;
            if t > best.0 {
                best = (t, v);
            }
        }
        c.insert(name.into(), Value::Int(best.1));
    };
    best_each("keepalive", 1, 10000, &mut c);
    best_each("buffer_kb", 4, 256, &mut c);
    best_each("backlog", 16, 4096, &mut c);
    let mut best = 0.0f64;
    for m in ["prefork", "worker", "event"] {
        c.insert("mpm".into(), Value::Word(m.into()));
        for w in 1..=128 {
            c.insert("workers".into(), Value::Int(w));
            best = best.max(true_value(&c));
        }
    }
    best
}

/// One noisy measurement.
pub fn measure(c: &Config, rng: &mut Rng) -> Outcome {
    let (tp, p99) = truth(c);
    let noise = |rng: &mut Rng| 1.0 + symmetric(rng, 0.08);
    let p99 = p99 * noise(rng);
    Outcome::Measured(vec![LevelSummary {
        level: "c=256".into(),
        throughput: tp * noise(rng),
        p50_ms: p99 / 4.0,
        p90_ms: p99 / 2.0,
        p99_ms: p99,
        p999_ms: p99 * 2.0,
        mean_ms: p99 / 3.0,
        error_ratio: 0.0,
        mail: None,
    }])
}

/// Run one seeded study to its budget and return the winner's true value over the optimum
/// (0 when nothing feasible was found or the winner truly misses the SLO).
pub fn run(sampler: Box<dyn Sampler>, seed: u64, budget: usize) -> f64 {
    let sp = space();
    let settings = StudySettings {
        trials: budget,
        seed,
        ..StudySettings::default()
    };
    let seeds = seeds(&sp);
    let slos = vec![Slo::parse(SLO).expect("valid SLO")];
    let mut study = Study::new(
        sp,
        Objective::MaximizeThroughput,
        slos,
        seeds,
        settings,
        sampler,
    );
    let mut noise = Rng::seeded(seed.wrapping_add(0xA5A5));
    while let Next::Measure(c, why) = study.next() {
        let outcome = measure(&c, &mut noise);
        study.record(c, why, outcome);
    }
    match study.best() {
        Some(b) => true_value(&b.config) / optimum(),
        None => 0.0,
    }
}

/// Plain random search as the reference benchmark ran it: `budget` uniformly random
/// configurations, each measured once, the best feasible measurement wins (no A/A, no
/// seeds, no racing). Returns the winner's true value over the optimum.
pub fn run_plain_random(seed: u64, budget: usize) -> f64 {
    let sp = space();
    let slos = vec![Slo::parse(SLO).expect("valid SLO")];
    let mut rng = Rng::seeded(seed);
    let mut noise = Rng::seeded(seed.wrapping_add(0xA5A5));
    let mut best: Option<(f64, Config)> = None;
    for _ in 0..budget {
        let c = webtune_search::sampler::random_config(&sp, &mut rng);
        if let Outcome::Measured(levels) = measure(&c, &mut noise) {
            if let Some(e) =
                webtune_search::objective::evaluate(Objective::MaximizeThroughput, &slos, &levels)
            {
                if e.feasible && best.as_ref().is_none_or(|b| e.objective > b.0) {
                    best = Some((e.objective, c));
                }
            }
        }
    }
    best.map_or(0.0, |(_, c)| true_value(&c) / optimum())
}

/// Fraction of `runs` seeded studies whose winner is within 5% of the true optimum.
pub fn hit_rate(make: impl Fn() -> Box<dyn Sampler>, runs: u64, budget: usize) -> f64 {
    let hits = (0..runs)
        .filter(|s| run(make(), *s, budget) >= 0.95)
        .count();
    hits as f64 / runs as f64
}
