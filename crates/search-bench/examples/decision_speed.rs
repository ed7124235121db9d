//! How long the sampler takes to decide (issue 25 item 7: ≤ 1 s at 40 trials on this
//! machine's 2 cores). Runs seeded studies of the synthetic five-parameter server
//! (`webtune_search_bench::synthetic`: SLO p99 <= 40ms, so the constraint GP is fitted too) and
//! times every `Study::next` — the whole decision: the GP fits and the acquisition over
//! its candidates — and the report's effects at the end. A benchmark, not a timed test.
//!
//! `cargo run --release -p webtune-search-bench --example decision_speed [TRIALS] [SEEDS]`
use std::time::{Duration, Instant};
use webtune_search::study::{Next, Study, StudySettings};
use webtune_search::{effects, GpSampler, Objective, Slo};
use webtune_search_bench::synthetic;

fn main() {
    let mut args = std::env::args().skip(1);
    let trials: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(40);
    let seeds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("decision time of the GP sampler, synthetic server, {cores} core(s) seen");
    let mut at_n: Vec<Duration> = Vec::new();
    let mut effects_time: Vec<Duration> = Vec::new();
    for seed in 1..=seeds {
        let space = synthetic::space();
        let seeded = synthetic::seeds(&space);
        // One more than the trials, so the last decision is taken with `trials` measured.
        let mut study = Study::new(
            space.clone(),
            Objective::MaximizeThroughput,
            vec![Slo::parse(synthetic::SLO).expect("the benchmark's SLO")],
            seeded,
            StudySettings {
                trials: trials + 1,
                seed,
                ..StudySettings::default()
            },
            Box::new(GpSampler::default()),
        );
        let mut rng = webtune_model::rng::Rng::seeded(seed);
        loop {
            let measured = study.trials().len();
            let start = Instant::now();
            let next = study.next();
            let took = start.elapsed();
            let Next::Measure(c, why) = next else { break };
            if measured == trials {
                at_n.push(took);
                println!(
                    "  seed {seed}: decision with {measured} trials measured ({}) took {:.3} s",
                    why.as_str(),
                    took.as_secs_f64()
                );
            }
            let o = synthetic::measure(&c, &mut rng);
            study.record(c, why, o);
        }
        let start = Instant::now();
        let e = effects(&space, Objective::MaximizeThroughput, study.trials());
        effects_time.push(start.elapsed());
        assert!(!e.is_empty());
    }
    at_n.sort();
    effects_time.sort();
    let median = |v: &[Duration]| v.get(v.len() / 2).map_or(0.0, |d| d.as_secs_f64());
    let max = |v: &[Duration]| v.last().map_or(0.0, |d| d.as_secs_f64());
    println!(
        "decision at {trials} trials over {} seeds: median {:.3} s, max {:.3} s",
        at_n.len(),
        median(&at_n),
        max(&at_n)
    );
    println!(
        "effects (the report's why) at {} trials: median {:.3} s, max {:.3} s",
        trials + 1,
        median(&effects_time),
        max(&effects_time)
    );
}
