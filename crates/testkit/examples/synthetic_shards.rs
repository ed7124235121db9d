//! Synthetic shard files for bench/merge-scale.sh: N shards of one T-second open-loop test
//! (one run id, starts a few ms apart), each with a per-second time series and histograms
//! whose latencies spread from 50 µs to 5 s (about 10,000 distinct buckets each: a shard
//! that saw timeouts and a fast path), written as `DIR/shard-I.json`.
//!
//!   cargo run --release -p webtune-testkit --example synthetic_shards -- DIR [N] [T]
//!
//! Prints the number of responses in each shard, so the caller can check the merge's sum.

use webtune_model::result::{Histograms, Schedule};
use webtune_model::{
    Arrival, IntervalSample, LoadMode, RunSpec, Shard, StartRecord, StopCondition, Window,
};

/// xorshift64*: a fixed, seedable sequence (the shards must be the same on every run).
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Log-uniform between `lo` and `hi` µs.
    fn latency(&mut self, lo: f64, hi: f64) -> u64 {
        (lo * (hi / lo).powf(self.next_f64())) as u64
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: synthetic_shards DIR [SHARDS] [SECONDS]");
        std::process::exit(2);
    };
    let count: u32 = args.get(1).map_or(Ok(1000), |a| a.parse()).unwrap_or(1000);
    let seconds: u32 = args.get(2).map_or(Ok(60), |a| a.parse()).unwrap_or(60);
    // 1,000 requests/s per shard: 60,000 responses in a 60 s shard.
    let per_second: u64 = 1000;
    let planned: u64 = 1_796_119_200_000;
    let base = webtune_testkit::results::blank_result();
    let spec = RunSpec {
        url: "http://10.0.0.1:8080/".into(),
        connections: 100 * count,
        load: LoadMode::Open {
            rate: (per_second * u64::from(count)) as f64,
            arrival: Arrival::Uniform,
        },
        stop: StopCondition::Duration {
            seconds: f64::from(seconds),
        },
        start_at_unix_ms: Some(planned),
        ..RunSpec::default()
    };
    std::fs::create_dir_all(dir).expect("output directory");
    for index in 1..=count {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(index));
        let mut histograms = Histograms::default();
        let mut timeline = Vec::new();
        for second in 0..seconds {
            let mut max = 0;
            for _ in 0..per_second {
                let us = rng.latency(50.0, 5_000_000.0);
                histograms.total.record(us);
                histograms.service.record(us * 9 / 10);
                histograms.first_byte.record(us * 8 / 10);
                max = max.max(us);
            }
            timeline.push(IntervalSample {
                start_s: f64::from(second),
                length_s: 1.0,
                responses: per_second,
                bytes: per_second * 300,
                open_connections: 100,
                p50_us: 3_000,
                p90_us: 300_000,
                p99_us: 3_000_000,
                max_us: max,
                ..IntervalSample::default()
            });
        }
        for _ in 0..100 {
            histograms.connect.record(rng.latency(50.0, 3_000.0));
        }
        let mut lag = webtune_model::LatencyHistogram::new();
        for _ in 0..1000 {
            lag.record(rng.latency(1.0, 2_000.0));
        }
        let late_ms = rng.next_f64() * 5.0;
        let start = planned as f64 + late_ms;
        let responses = per_second * u64::from(seconds);
        let mut shard = base.clone();
        shard.spec = RunSpec {
            shard: Some(Shard { index, count }),
            ..spec.clone()
        };
        shard.started_at_unix_ms = start as u64;
        shard.duration_s = f64::from(seconds);
        shard.responses = responses;
        shard.ok = responses;
        shard.status = [(200, responses)].into_iter().collect();
        shard.bytes_received = responses * 300;
        shard.connections_opened = 100;
        shard.connect_attempts = 100;
        shard.first_body_bytes = Some(43);
        shard.histograms = histograms;
        shard.timeline = timeline;
        shard.schedule = Some(Schedule {
            requested_rate: per_second as f64,
            achieved_rate: per_second as f64,
            lag_histogram: lag.clone(),
            generator_lag_histogram: lag,
            ..Schedule::default()
        });
        shard.start = Some(StartRecord {
            planned_unix_ms: Some(planned),
            late_ms: Some(late_ms),
            clock: "CLOCK_REALTIME".into(),
            synchronised: Some(true),
            estimated_error_us: Some(500),
            max_error_us: Some(1000),
            run_id: Some("merge-scale".into()),
            window: Some(Window {
                start_unix_ms: start,
                end_unix_ms: start + f64::from(seconds) * 1000.0,
            }),
        });
        shard.finish_summaries();
        let path = std::path::Path::new(dir).join(format!("shard-{index}.json"));
        std::fs::write(&path, shard.to_json_pretty()).expect("write a shard");
        if index == 1 {
            println!("{responses}");
        }
    }
}
