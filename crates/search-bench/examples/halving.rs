//! Successive halving against the fixed 15-run mode on the sampler benchmark suite
//! (`webtune_search_bench::suite`): hits (pick within 5% of the true optimum) per minute of load.
//! A full run is `-d 10s`; the fixed mode runs 15 of them (2.5 minutes of load). The
//! halving mode (`tune --budget`, `webtune_search::halving`) gets the same 2.5 minutes, and
//! half of it: new candidates screened at a third of the duration, whose run-to-run noise is
//! taken as √3 times a full run's (variance ∝ 1/duration), promising ones re-run in full.
//!
//! `cargo run --release -p webtune-search-bench --example halving -- [SEEDS]`
use webtune_model::rng::Rng;
use webtune_search::halving::{fidelity_for, screen_fraction};
use webtune_search::{GpSampler, Next, StudySettings};
use webtune_search_bench::suite::Server;
use webtune_search_bench::suite_run::study;
use webtune_search_bench::suite_servers::servers;

const FULL_S: f64 = 10.0;

/// One seeded study: the pick's share of the optimum, the runs it made and its load in s.
fn one(server: &Server, optimum: f64, seed: u64, load_s: Option<f64>) -> (f64, usize, f64) {
    let screen = load_s.and_then(|_| screen_fraction(FULL_S, 2.0));
    let settings = StudySettings {
        trials: if load_s.is_some() { 200 } else { 15 },
        seed,
        screen,
        ..StudySettings::default()
    };
    let mut s = study(server, Box::new(GpSampler::default()), settings);
    let mut noise = Rng::seeded(seed.wrapping_add(0xA5A5));
    let mut spent = 0.0;
    loop {
        if load_s.is_some_and(|l| spent >= l) {
            break;
        }
        let Next::Measure(c, why) = s.next() else {
            break;
        };
        let f = fidelity_for(s.settings.screen, why);
        let mut at = server.clone();
        at.noise = server.noise / f.sqrt();
        let outcome = at.measure(&c, &mut noise);
        spent += FULL_S * f;
        s.record_at(c, why, outcome, f);
    }
    let pick = s
        .best()
        .map_or(0.0, |b| server.true_value(&b.config) / optimum);
    (pick, s.trials().len(), spent)
}

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(30);
    println!("| server | mode | load (min) | runs | hits | hits per minute of load |");
    println!("|---|---|---|---|---|---|");
    let mut totals = [(0usize, 0.0f64); 3];
    for server in servers() {
        let (optimum, _) = server.optimum();
        for (i, (mode, load)) in [
            ("fixed 15 runs of 10 s", None),
            ("--budget 2.5m, halving", Some(150.0)),
            ("--budget 75s, halving", Some(75.0)),
        ]
        .into_iter()
        .enumerate()
        {
            let runs: Vec<(f64, usize, f64)> = (0..seeds)
                .map(|seed| one(&server, optimum, seed, load))
                .collect();
            let hits = runs.iter().filter(|r| r.0 >= 0.95).count();
            let minutes = runs.iter().map(|r| r.2).sum::<f64>() / 60.0 / seeds as f64;
            let trials = runs.iter().map(|r| r.1).sum::<usize>() as f64 / seeds as f64;
            let rate = hits as f64 / seeds as f64;
            totals[i].0 += hits;
            totals[i].1 += minutes;
            println!(
                "| {} | {mode} | {minutes:.2} | {trials:.1} | {:.0}% | {:.1}% |",
                server.name,
                100.0 * rate,
                100.0 * rate / minutes
            );
        }
    }
    let n = servers().len() as f64;
    for (i, mode) in ["fixed 15", "halving 2.5m", "halving 75s"]
        .iter()
        .enumerate()
    {
        let rate = totals[i].0 as f64 / (seeds as f64 * n);
        let minutes = totals[i].1 / n;
        println!(
            "| all | {mode} | {minutes:.2} | | {:.0}% | {:.1}% |",
            100.0 * rate,
            100.0 * rate / minutes
        );
    }
}
