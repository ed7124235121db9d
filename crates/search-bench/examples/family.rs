//! The search judged on the generated family (`webtune_search_bench::surfaces`, issue 34 item 5):
//! seeded studies of each generated server, picks read at 15 and 25 measured runs, hit rates
//! (pick truly feasible and within 5% of the optimum) per shape and over the family, with the
//! standard error over functions (each function's hit rate over its seeds is one
//! observation: the seeds of one function are not independent draws of the family).
//!
//! `cargo run --release -p webtune-search-bench --example family -- [FUNCTIONS] [--seeds N] [--family-seed N] [--first-seed N] [--budgets 15,25] [--lhs N] [--race N] [--switch P] [--step S] [--ridge N] [--between N] [--second-look N] [--surprise S|none] [--past-edge DEPTH|none] [--turn MARGIN|none] [--apart DEPTH] [--edge N] [--candidates N] [--shapes S,S] [--trace NAME:SEED] [--gp] [--label NAME] [--raw FILE]`
//! `cargo run --release -p webtune-search-bench --example family -- 50 --json > /tmp/family.json`
//! prints the definitions, optima and noise-free check points for `optuna_suite.py --family`.
//!
//! `--raw FILE` writes one JSON line per study (function, shape, search, seed, picks) so
//! figures from several runs can be merged.

use std::io::Write;
use webtune_search::{RandomSampler, Sampler, StudySettings};
use webtune_search_bench::suite_run::{gp_from_args, random_check_points, run, StudyRun};
use webtune_search_bench::surfaces::{family, Generated, SHAPES};

type Make = dyn Fn() -> Box<dyn Sampler> + Sync;

fn json(all: &[Generated], optima: &[(f64, webtune_search::Config)]) {
    let entries: Vec<serde_json::Value> = all
        .iter()
        .zip(optima)
        .map(|(g, (opt, at))| {
            let mut points = random_check_points(&g.server, 30);
            let (tp, p99) = g.server.truth(at);
            points.insert(1, (at.clone(), tp, p99));
            let checks: Vec<serde_json::Value> = points
                .into_iter()
                .map(|(c, tp, p99)| serde_json::json!({"config": c, "throughput": tp, "p99_ms": p99}))
                .collect();
            serde_json::json!({
                "shape": g.shape,
                "server": g.server,
                "optimum": opt,
                "optimum_config": at,
                "checks": checks,
            })
        })
        .collect();
    println!("{}", serde_json::to_string_pretty(&entries).unwrap());
}

/// `f(i)` for every `i < n` on `threads` threads, results in order.
fn parallel<T: Send>(n: usize, f: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut out: Vec<(usize, T)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (t..n)
                        .step_by(threads)
                        .map(|i| (i, f(i)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, t)| t).collect()
}

/// The optima (coordinate sweeps, seconds of CPU for 50 functions), cached under target/
/// by a hash of the definitions, so a changed generator never reads a stale optimum.
fn optima(all: &[Generated]) -> Vec<(f64, webtune_search::Config)> {
    use std::hash::{Hash, Hasher};
    // The version of `Server::optimum` is part of the key.
    let text = format!("optimum v2 {}", serde_json::to_string(all).unwrap());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    let path = format!("target/family-optima-{:016x}.json", h.finish());
    if let Some(cached) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
    {
        return cached;
    }
    let found = parallel(all.len(), &|i| all[i].server.optimum());
    let _ = std::fs::write(&path, serde_json::to_string(&found).unwrap());
    found
}

/// Hit rate over functions and its standard error over functions, in %.
fn rate(per_function: &[f64]) -> (f64, f64) {
    let n = per_function.len() as f64;
    let mean = per_function.iter().sum::<f64>() / n;
    let var = per_function.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (100.0 * mean, 100.0 * (var / n).sqrt())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let number = |flag: &str, default: u64| {
        value(flag).map_or(default, |v| {
            v.parse().unwrap_or_else(|_| {
                eprintln!("{flag}: not a number: {v}");
                std::process::exit(2)
            })
        })
    };
    let functions: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(50);
    let seeds = number("--seeds", 10);
    let first = number("--first-seed", 0);
    let family_seed = number("--family-seed", 1);
    let budgets: Vec<usize> = value("--budgets")
        .unwrap_or_else(|| "15,25".into())
        .split(',')
        .filter_map(|b| b.parse().ok())
        .collect();
    let mut all = family(family_seed, functions);
    let mut optima = optima(&all);
    // `--shapes cliff,ridge`: only the functions of those shapes (the same functions and
    // names as in the whole family), to explore a change on the shapes it aims at.
    if let Some(list) = value("--shapes") {
        let wanted: Vec<&str> = list.split(',').collect();
        if let Some(bad) = wanted
            .iter()
            .find(|w| !SHAPES.iter().any(|s| s.name() == **w))
        {
            eprintln!("--shapes: no shape {bad} (one of cliff, ridge, interaction, slo-edge, infeasible-default)");
            std::process::exit(2)
        }
        let keep: Vec<bool> = all
            .iter()
            .map(|g| wanted.contains(&g.shape.name()))
            .collect();
        let mut k = keep.iter();
        all.retain(|_| *k.next().unwrap());
        let mut k = keep.iter();
        optima.retain(|_| *k.next().unwrap());
    }
    if args.iter().any(|a| a == "--shares") {
        for (g, (opt, _)) in all.iter().zip(&optima) {
            let space = g.server.space();
            let mut rng = webtune_model::rng::Rng::seeded(1);
            let near = (0..20_000)
                .filter(|_| {
                    let c = webtune_search::sampler::random_config(&space, &mut rng);
                    g.server.true_value(&c) >= 0.95 * opt
                })
                .count();
            let default = g.server.true_value(&space.default_config()) / opt;
            println!(
                "{}: {} params, noise ±{:.0}%, per start ±{:.0}%, {:.2}% of the space within 5%, default {:.0}% of the optimum",
                g.server.name,
                g.server.params.len(),
                100.0 * g.server.noise,
                100.0 * g.server.start_noise,
                near as f64 / 200.0,
                100.0 * default
            );
        }
        return;
    }
    if args.iter().any(|a| a == "--json") {
        return json(&all, &optima);
    }
    let settings = StudySettings {
        space_filling: number("--lhs", StudySettings::default().space_filling as u64) as usize,
        max_measurements: number("--race", StudySettings::default().max_measurements as u64)
            as usize,
        ..StudySettings::default()
    };
    let gp = gp_from_args(&args).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    // `--trace NAME:SEED`: one study's trials (why, configuration, true value over the
    // optimum, truly feasible) beside the optimum's configuration, to see where runs go.
    if let Some(t) = value("--trace") {
        let (name, seed) = t.split_once(':').unwrap_or((&t, "0"));
        let Some(i) = all.iter().position(|g| g.server.name == name) else {
            eprintln!("--trace {name}: no such function");
            std::process::exit(2)
        };
        let server = &all[i].server;
        println!("{name} ({}): {}", all[i].shape.name(), server.about);
        println!("optimum {:.1} at {:?}", optima[i].0, optima[i].1);
        let r = run(
            server,
            optima[i].0,
            Box::new(gp),
            &settings,
            seed.parse().unwrap_or(0),
            &budgets,
        );
        for tr in &r.trials {
            let (tp, p99) = server.truth(&tr.config);
            println!(
                "{:>2} {:?}: {:.3} {} {:?}",
                tr.number,
                tr.why,
                server.true_value(&tr.config) / optima[i].0,
                if p99 <= server.slo_p99_ms {
                    "ok"
                } else {
                    "SLO"
                },
                tr.config
            );
            let _ = tp;
        }
        println!("picks {:?}", r.picks);
        return;
    }
    let make_gp = move || Box::new(gp) as Box<dyn Sampler>;
    let mut samplers: Vec<(&str, &Make)> = vec![
        ("webtune GP", &make_gp),
        ("webtune random (same study)", &|| Box::new(RandomSampler)),
    ];
    if args.iter().any(|a| a == "--gp") {
        samplers.truncate(1);
    }
    // `--label NAME`: the first search's name in the rows and records (a variant measured
    // beside the baseline, merged by family_table.py).
    let label = value("--label");
    if let Some(l) = &label {
        samplers[0].0 = l.as_str();
    }
    let mut raw = value("--raw").map(|p| {
        std::fs::File::create(&p).unwrap_or_else(|e| {
            eprintln!("--raw {p}: {e}");
            std::process::exit(2)
        })
    });
    println!(
        "family seed {family_seed}: {functions} functions × {seeds} seeds (from seed {first}); hits % ± s.e. over functions"
    );
    println!("| shape | search | trials | functions | studies | hits | ± s.e. |");
    println!("|---|---|---|---|---|---|---|");
    for (label, make) in &samplers {
        // runs[function][seed]: picks and the best found, per budget
        let runs: Vec<Vec<StudyRun>> = parallel(all.len(), &|i| {
            (first..first + seeds)
                .map(|s| run(&all[i].server, optima[i].0, make(), &settings, s, &budgets))
                .collect()
        });
        let picks: Vec<Vec<Vec<f64>>> = runs
            .iter()
            .map(|r| r.iter().map(|x| x.picks.clone()).collect())
            .collect();
        if let Some(f) = raw.as_mut() {
            for (i, per_seed) in runs.iter().enumerate() {
                for (k, r) in per_seed.iter().enumerate() {
                    // `found`: the best true value measured by then (over the optimum), so a
                    // miss reads as "never measured near the optimum" or "measured, not picked".
                    let line = serde_json::json!({
                        "function": all[i].server.name, "shape": all[i].shape,
                        "search": label, "seed": first + k as u64,
                        "budgets": budgets, "picks": r.picks, "found": r.found,
                    });
                    writeln!(f, "{line}").unwrap();
                }
            }
        }
        for (bi, b) in budgets.iter().enumerate() {
            let hit_rate = |i: usize| {
                picks[i].iter().filter(|p| p[bi] >= 0.95).count() as f64 / picks[i].len() as f64
            };
            let groups = SHAPES
                .iter()
                .map(|s| (s.name(), Some(*s)))
                .chain([("all", None)]);
            for (name, shape) in groups {
                let rates: Vec<f64> = (0..all.len())
                    .filter(|i| shape.is_none_or(|s| all[*i].shape == s))
                    .map(hit_rate)
                    .collect();
                if rates.is_empty() {
                    continue;
                }
                let (mean, se) = rate(&rates);
                println!(
                    "| {name} | {label} | {b} | {} | {} | {mean:.1}% | {se:.1} |",
                    rates.len(),
                    rates.len() as u64 * seeds
                );
            }
        }
    }
}
