//! The sampler benchmark: 100 seeded studies of 15 measured runs each on the synthetic
//! five-parameter server (`webtune_search_bench::synthetic`), for the Gaussian-process sampler and
//! for random search; prints how often the winner is truly within 5% of the optimum.
//!
//! `cargo run --release -p webtune-search-bench --example synthetic [RUNS] [BUDGET]`
use webtune_search::sampler::random_config;
use webtune_search::{GpSampler, RandomSampler, Sampler};
use webtune_search_bench::synthetic;

type Make = fn() -> Box<dyn Sampler>;

fn main() {
    let mut args = std::env::args().skip(1);
    let runs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let budget: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15);
    println!(
        "synthetic server: {} ; SLO {} ; optimum {:.0} ok/s",
        synthetic::PARAMS.join(" "),
        synthetic::SLO,
        synthetic::optimum()
    );
    let space = synthetic::space();
    let mut rng = webtune_model::rng::Rng::seeded(1);
    let draws = 100_000;
    let optimum = synthetic::optimum();
    let inside = (0..draws)
        .filter(|_| synthetic::true_value(&random_config(&space, &mut rng)) >= 0.95 * optimum)
        .count();
    println!(
        "share of the space within 5% of the optimum (and feasible): {:.2}%",
        100.0 * inside as f64 / draws as f64
    );
    println!("{runs} seeded runs x {budget} measured runs (A/A and re-measurements included)");
    let samplers: [(&str, Make); 2] = [
        ("gp (ours)", || Box::new(GpSampler::default())),
        ("random", || Box::new(RandomSampler)),
    ];
    let mut rows: Vec<(String, Vec<f64>)> = samplers
        .iter()
        .map(|(name, make)| {
            let r: Vec<f64> = (0..runs)
                .map(|s| synthetic::run(make(), s, budget))
                .collect();
            (name.to_string(), r)
        })
        .collect();
    rows.push((
        "plain random (no A/A, seeds or racing)".to_string(),
        (0..runs)
            .map(|s| synthetic::run_plain_random(s, budget))
            .collect(),
    ));
    for (name, ratios) in rows {
        let hits = ratios.iter().filter(|r| **r >= 0.95).count();
        let mut sorted = ratios.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "{name:>10}: within 5% of the optimum in {hits}/{runs} runs ({:.0}%); median winner {:.1}% of optimum; worst {:.1}%",
            100.0 * hits as f64 / runs as f64,
            100.0 * sorted[sorted.len() / 2],
            100.0 * sorted[0]
        );
    }
}
