//! The sampler benchmark suite: seeded studies on each synthetic server of
//! `webtune_search_bench::suite`, read at 10, 15 and 25 measured runs; prints one markdown table row
//! per server, search and budget: hits (pick within 5% of the true optimum), median and
//! worst pick, and where the budget went (A/A, seeds, space-filling, racing, model); "found":
//! the studies that measured a hit at all, picked or not (a miss with a found hit is the
//! pick's fault, not the search's). `--gp`: the GP rows only.
//!
//! `cargo run --release -p webtune-search-bench --example suite -- [SEEDS] [--first-seed N] [--only NAME] [--budgets 10,15,25] [--lhs N] [--race N] [--noise-scale F] [--step S] [--ridge N] [--between N] [--second-look N] [--surprise S|none] [--past-edge DEPTH|none] [--turn MARGIN|none] [--candidates N] [--gp]`
//!
//! `--noise-scale F` multiplies every server's run-to-run noise (0: noise-free), to tell
//! what the noise costs a search from what its exploration costs it.
//! `cargo run --release -p webtune-search-bench --example suite -- --json > suite.json` prints the
//! servers' definitions, optima and noise-free check points for `optuna_suite.py`.

use webtune_search::{RandomSampler, Sampler, StudySettings};
use webtune_search_bench::suite::Server;
use webtune_search_bench::suite_run::{bench, check_points, gp_from_args};
use webtune_search_bench::suite_servers::servers;

type Make = fn() -> Box<dyn Sampler>;

/// The GP with the variant flags (`--step S`, `--ridge N`, `--between N`, …;
/// `suite_run::gp_from_args`), to measure a change on the named servers before making it
/// the default.
fn gp() -> Box<dyn Sampler> {
    let args: Vec<String> = std::env::args().collect();
    Box::new(gp_from_args(&args).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    }))
}

fn json() {
    let all: Vec<serde_json::Value> = servers()
        .iter()
        .map(|s| {
            let (opt, at) = s.optimum();
            let checks: Vec<serde_json::Value> = check_points(s, 30)
                .into_iter()
                .map(|(c, tp, p99)| serde_json::json!({"config": c, "throughput": tp, "p99_ms": p99}))
                .collect();
            serde_json::json!({
                "server": s,
                "optimum": opt,
                "optimum_config": at,
                "checks": checks,
            })
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&all).unwrap());
}

fn share_near_optimum(s: &Server, opt: f64) -> f64 {
    let space = s.space();
    let mut rng = webtune_model::rng::Rng::seeded(1);
    let draws = 20_000;
    let inside = (0..draws)
        .filter(|_| {
            s.true_value(&webtune_search::sampler::random_config(&space, &mut rng)) >= 0.95 * opt
        })
        .count();
    inside as f64 / draws as f64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--json") {
        return json();
    }
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let seeds: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let budgets: Vec<usize> = value("--budgets")
        .unwrap_or_else(|| "10,15,25".into())
        .split(',')
        .filter_map(|b| b.parse().ok())
        .collect();
    // `--first-seed N`: seeds N..N+SEEDS, to confirm a change measured on seeds 0..100 on
    // seeds it was not chosen on.
    let first: u64 = value("--first-seed")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let only = value("--only");
    // `--lhs N`: Latin-hypercube points of the start (default 3), to measure the choice.
    let settings = StudySettings {
        space_filling: value("--lhs")
            .and_then(|v| v.parse().ok())
            .unwrap_or(StudySettings::default().space_filling),
        max_measurements: value("--race")
            .and_then(|v| v.parse().ok())
            .unwrap_or(StudySettings::default().max_measurements),
        ..StudySettings::default()
    };
    let mut samplers: Vec<(&str, Make)> = vec![
        ("webtune GP", gp),
        ("webtune random (same study)", || Box::new(RandomSampler)),
    ];
    // `--gp`: the GP alone (what a change to the search is measured with).
    if args.iter().any(|a| a == "--gp") {
        samplers.truncate(1);
    }
    let noise_scale: f64 = value("--noise-scale")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let chosen: Vec<Server> = servers()
        .into_iter()
        .filter(|s| only.as_ref().is_none_or(|o| *o == s.name))
        .map(|s| Server {
            noise: s.noise * noise_scale,
            ..s
        })
        .collect();
    println!("{seeds} seeds per row (from seed {first}), noise ×{noise_scale}; A/A, seed, LHS, race, model: mean trials spent on each");
    println!("| server | search | trials | hits | median pick | worst pick | A/A | seeds | LHS | race | model | found |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    // One thread per server (the studies are independent and deterministic); rows printed
    // in the suite's order.
    let tables: Vec<Vec<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chosen
            .iter()
            .map(|s| {
                let (samplers, settings, budgets) = (&samplers, &settings, &budgets);
                scope.spawn(move || {
                    let (opt, _) = s.optimum();
                    eprintln!(
                        "{}: optimum {opt:.0} ok/s; {:.2}% of the space within 5% of it",
                        s.name,
                        100.0 * share_near_optimum(s, opt)
                    );
                    let mut lines = Vec::new();
                    for (name, make) in samplers {
                        let rows = bench(s, opt, make, settings, first..first + seeds, budgets);
                        for (b, r) in budgets.iter().zip(rows) {
                            lines.push(format!(
                                "| {} | {name} | {b} | {:.0}% | {:.1}% | {:.1}% | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0}% |",
                                s.name,
                                100.0 * r.hits as f64 / r.runs as f64,
                                100.0 * r.median,
                                100.0 * r.worst,
                                r.spent[0],
                                r.spent[1],
                                r.spent[2],
                                r.spent[3],
                                r.spent[4],
                                100.0 * r.found as f64 / r.runs as f64,
                            ));
                        }
                    }
                    lines
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for line in tables.into_iter().flatten() {
        println!("{line}");
    }
}
