//! Synthetic results for tests, examples and documentation: a `RunResult` built from known
//! latencies and counts, so every layout can be checked against numbers we chose.

use webtune_model::result::{GeneratorUsage, Histograms};
use webtune_model::{
    ErrorCounts, ErrorKind, IntervalSample, Percentiles, RepeatSummary, RunResult, RunSpec, SCHEMA,
};

/// A result of `responses` requests whose total latency cycles through `total_us`
/// (first byte is 80% of it, connect 10% for every tenth request), with one status 404 per
/// 50 responses, a few errors of three kinds, and a 10-interval timeline with a stall in
/// interval 6.
pub fn synthetic_result(responses: u64, total_us: &[u64]) -> RunResult {
    let mut histograms = Histograms::default();
    let mut status = std::collections::BTreeMap::new();
    let mut connections = 0;
    for i in 0..responses {
        let total = total_us[(i as usize) % total_us.len().max(1)];
        histograms.total.record(total);
        histograms.first_byte.record(total * 8 / 10);
        if i % 10 == 0 {
            histograms.connect.record((total / 10).max(1));
            connections += 1;
        }
        let code = if i % 50 == 49 { 404 } else { 200 };
        *status.entry(code).or_insert(0u64) += 1;
    }
    let mut errors = ErrorCounts::default();
    for _ in 0..3 {
        errors.add(ErrorKind::ConnectRefused);
    }
    errors.add(ErrorKind::Reset);
    errors.add(ErrorKind::RequestTimeout);
    let unexpected = status.get(&404).copied().unwrap_or(0);
    for _ in 0..unexpected {
        errors.add(ErrorKind::UnexpectedStatus);
    }
    let duration_s = 10.0;
    let body = 1234u64;
    let header = 200u64;
    let timeline = (0..10)
        .map(|i| {
            let stalled = i == 6;
            let per = if stalled { 0 } else { responses / 9 };
            let mut e = ErrorCounts::default();
            if i == 3 {
                e.add(ErrorKind::Reset);
            }
            IntervalSample {
                start_s: i as f64,
                length_s: 1.0,
                responses: per,
                errors: e,
                bytes: per * (body + header),
                open_connections: 10,
                p50_us: if stalled { 0 } else { 1_000 + i * 100 },
                p90_us: if stalled { 0 } else { 2_000 + i * 100 },
                p99_us: if stalled { 0 } else { 5_000 + i * 300 },
                max_us: if stalled { 0 } else { 9_000 + i * 300 },
            }
        })
        .collect();
    let mut result = blank_result();
    result.spec = RunSpec {
        url: "http://127.0.0.1:8080/forum/index.php?f=2".into(),
        connections: 10,
        threads: 2,
        ..RunSpec::default()
    };
    result.addresses = vec!["127.0.0.1:8080".into()];
    result.duration_s = duration_s;
    result.responses = responses;
    result.ok = responses - unexpected;
    result.errors = errors;
    result.length_varies = responses / 20;
    result.first_body_bytes = Some(body);
    result.status = status;
    result.bytes_received = responses * (body + header);
    result.body_bytes = responses * body;
    result.bytes_sent = responses * 80;
    result.connections_opened = connections;
    result.connect_attempts = connections + 3; // and 3 refused
    result.stale_reconnects = 2;
    result.histograms = histograms;
    result.timeline = timeline;
    result.generator = GeneratorUsage {
        user_cpu_s: 0.25,
        system_cpu_s: 0.75,
        max_rss_kib: 8_000,
        threads: 2,
    };
    result.server_software = Some("nginx/1.22.1".into());
    result.finish_summaries();
    result
}

/// `synthetic_result` without its stall: interval 6 answered like the others (a steady
/// level, for sweeps whose knee it should feed).
pub fn synthetic_result_without_stall(responses: u64, total_us: &[u64]) -> RunResult {
    let mut result = synthetic_result(responses, total_us);
    let busy = result.timeline[5].clone();
    result.timeline[6] = webtune_model::IntervalSample {
        start_s: 6.0,
        ..busy
    };
    result
}

/// A result with every field zero or empty. Built from JSON so that fields added to
/// `RunResult` later (always `#[serde(default)]`) never break it.
pub fn blank_result() -> RunResult {
    let value = serde_json::json!({
        "schema": SCHEMA,
        "tool": "webtune 0.1.0",
        "started_at_unix_ms": 1_700_000_000_000u64,
        "spec": RunSpec::default(),
        "addresses": [],
        "duration_s": 0.0,
        "interrupted": false,
        "responses": 0,
        "ok": 0,
        "errors": ErrorCounts::default(),
        "length_varies": 0,
        "first_body_bytes": null,
        "status": {},
        "bytes_received": 0,
        "body_bytes": 0,
        "bytes_sent": 0,
        "connections_opened": 0,
        "stale_reconnects": 0,
        "requests_per_s": 0.0,
        "bytes_per_s": 0.0,
        "latency": webtune_model::LatencySummary::default(),
        "histograms": Histograms::default(),
        "timeline": [],
        "generator": GeneratorUsage::default(),
    });
    // The literal above carries every field webtune.run/1 requires.
    serde_json::from_value(value).expect("blank result matches the schema")
}

/// An empty histogram-free result (a run that got nothing back).
pub fn empty_result() -> RunResult {
    let mut r = synthetic_result(0, &[1]);
    r.timeline.clear();
    r.errors = ErrorCounts::default();
    r.histograms = Histograms::default();
    r.length_varies = 0;
    r.first_body_bytes = None;
    r.stale_reconnects = 0;
    r.finish_summaries();
    r
}

/// Server samples as the lab's sampler takes them: `n` half-second samples on two CPUs, the
/// first CPU much busier than the second (seed 003's imbalance), memory growing slowly.
// Assigned field by field on purpose: fields the sampler gains later keep their defaults
// without this function having to change (a struct literal would not compile, and
// `..Default::default()` is flagged as needless while no field is left over).
#[allow(clippy::field_reassign_with_default)]
pub fn synthetic_server_samples(n: usize) -> webtune_model::ServerSamples {
    use webtune_model::server::{CpuShare, ServerSample};
    let samples = (0..n)
        .map(|i| {
            let t = (i + 1) as f64 * 0.5;
            ServerSample {
                t_s: t,
                length_s: 0.5,
                cpus: vec![
                    CpuShare {
                        user: 70.0,
                        system: 25.0,
                        idle: 5.0,
                        ..CpuShare::default()
                    },
                    CpuShare {
                        user: 10.0,
                        system: 5.0,
                        steal: 2.0,
                        idle: 83.0,
                        ..CpuShare::default()
                    },
                ],
                run_queue: 3,
                processes: 5,
                threads: 5,
                cpu_user_s: 0.4,
                cpu_system_s: 0.1,
                rss_kib: 60_000 + i as u64 * 100,
                pss_kib: 40_000 + i as u64 * 100,
                voluntary_ctxt_switches: 2_000,
                involuntary_ctxt_switches: 300,
                open_fds: 40,
                listen_overflows: if i == 3 { 12 } else { 0 },
                time_wait: 100,
                ..ServerSample::default()
            }
        })
        .collect();
    let mut server = webtune_model::ServerSamples::default();
    server.interval_ms = 500;
    server.target = "nginx".into();
    server.selector = "sessions 4123".into();
    server.cpu_count = 2;
    server.samples = samples;
    server.sampler_cpu_s = 0.02;
    server
}

/// One 5 s repeat per rate in `rps`, its latency percentiles scaled from 1/rate (p50 = 1 s /
/// rate, p99 twice that), for the tests of `--repeat` comparisons.
pub fn repeats_at(rps: &[f64]) -> Vec<RepeatSummary> {
    rps.iter()
        .map(|&v| RepeatSummary {
            duration_s: 5.0,
            responses: (v * 5.0) as u64,
            errors: 0,
            requests_per_s: v,
            latency: Percentiles {
                count: 10,
                mean_us: 1e6 / v,
                p50_us: (1e6 / v) as u64,
                p75_us: (1.2e6 / v) as u64,
                p90_us: (1.5e6 / v) as u64,
                p95_us: (1.7e6 / v) as u64,
                p99_us: (2e6 / v) as u64,
                p999_us: (3e6 / v) as u64,
                max_us: (4e6 / v) as u64,
                ..Percentiles::default()
            },
        })
        .collect()
}
