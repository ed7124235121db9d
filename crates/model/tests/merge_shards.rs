//! `RunResult::merge_shards`: the shards of one test merge to exact totals and histograms,
//! aligned on the earliest start; anything that is not all the shards of one spec is refused
//! with the reason.

use webtune_model::result::Histograms;
use webtune_model::{
    IntervalSample, LatencyHistogram, MergeError, RunResult, RunSpec, Shard, Validity, SCHEMA,
};

fn shard(index: u32, started_at_unix_ms: u64, latencies: &[u64]) -> RunResult {
    let mut total = LatencyHistogram::new();
    for &us in latencies {
        total.record(us);
    }
    let n = latencies.len() as u64;
    let mut r = RunResult {
        schema: SCHEMA.into(),
        tool: "webtune test".into(),
        started_at_unix_ms,
        spec: RunSpec {
            url: "http://127.0.0.1:8080/".into(),
            threads: index,
            shard: Some(Shard { index, count: 3 }),
            ..RunSpec::default()
        },
        addresses: vec!["127.0.0.1:8080".into()],
        skipped_addresses: Vec::new(),
        duration_s: 2.0,
        interrupted: false,
        responses: n,
        ok: n,
        errors: Default::default(),
        length_varies: 0,
        first_body_bytes: Some(0),
        status: [(200, n)].into_iter().collect(),
        bytes_received: 100 * n,
        body_bytes: 0,
        bytes_sent: 50 * n,
        connections_opened: 2,
        peak_open_connections: 2,
        keepalive_responses: n,
        connect_attempts: 2,
        stale_reconnects: 0,
        abandoned: 0,
        requests_per_s: 0.0,
        bytes_per_s: 0.0,
        latency: Default::default(),
        histograms: Histograms {
            total,
            ..Histograms::default()
        },
        timeline: vec![
            IntervalSample {
                start_s: 0.0,
                length_s: 1.0,
                responses: n / 2,
                p99_us: latencies.iter().copied().max().unwrap_or(0),
                ..IntervalSample::default()
            },
            IntervalSample {
                start_s: 1.0,
                length_s: 1.0,
                responses: n - n / 2,
                ..IntervalSample::default()
            },
        ],
        generator: Default::default(),
        server: None,
        schedule: None,
        validity: Validity::default(),
        stalls: Vec::new(),
        by_name: Default::default(),
        probe: None,
        server_software: None,
        tls: None,
        protocol: None,
        h2: None,
        smtp: None,
        repeats: Vec::new(),
        start: None,
        sharding: None,
        thresholds: Vec::new(),
        io_backend: None,
    };
    r.finish_summaries();
    r
}

fn labelled(results: Vec<RunResult>) -> Vec<(String, RunResult)> {
    results
        .into_iter()
        .enumerate()
        .map(|(i, r)| (format!("s{}.json", i + 1), r))
        .collect()
}

#[test]
fn three_shards_merge_to_exact_totals_and_histograms() {
    let a = shard(1, 1_000_000, &[100, 200, 300, 400]);
    let mut b = shard(2, 1_000_004, &[1_000, 2_000]);
    b.validity = Validity {
        client_limited: true,
        reasons: vec!["the generator's CPU was 95% busy".into()],
        cpu_busy: 0.95,
        ..Validity::default()
    };
    let c = shard(3, 1_000_002, &[50_000, 60, 70, 80, 90, 110]);
    let mut expected = LatencyHistogram::new();
    for r in [&a, &b, &c] {
        expected.merge(&r.histograms.total);
    }
    // Given in any order.
    let merged = RunResult::merge_shards(labelled(vec![c, a, b])).unwrap();
    assert_eq!(merged.responses, 12);
    assert_eq!(merged.status[&200], 12);
    assert_eq!(merged.bytes_received, 1200);
    assert_eq!(merged.connections_opened, 6);
    assert_eq!(merged.histograms.total, expected);
    assert_eq!(merged.latency.total, expected.percentiles());
    assert_eq!(
        merged.spec.shard, None,
        "the merged result is the whole test"
    );
    assert_eq!(merged.spec.threads, 6, "every shard's threads");
    assert_eq!(merged.started_at_unix_ms, 1_000_000);
    assert!((merged.duration_s - 2.004).abs() < 1e-9);
    // Intervals aligned on the common start: two, each with every shard's responses.
    assert_eq!(merged.timeline.len(), 2);
    assert_eq!(merged.timeline.iter().map(|s| s.responses).sum::<u64>(), 12);
    assert_eq!(merged.timeline[0].responses, 2 + 1 + 3);
    assert_eq!(merged.timeline[0].p99_us, 50_000);
    // One client-limited shard makes the whole run so, and says which.
    assert!(merged.validity.client_limited);
    assert_eq!(
        merged.validity.reasons,
        vec!["shard 2/3: the generator's CPU was 95% busy".to_string()]
    );
    let set = merged.sharding.as_ref().unwrap();
    assert_eq!(set.start_skew_ms, 4.0);
    let order: Vec<u32> = set.shards.iter().map(|s| s.shard.index).collect();
    assert_eq!(order, vec![1, 2, 3]);
    // The JSON round-trips.
    let back = RunResult::from_json(&merged.to_json_pretty()).unwrap();
    assert_eq!(back, merged);
}

#[test]
fn anything_but_all_shards_of_one_spec_is_refused() {
    let three = || {
        vec![
            shard(1, 0, &[100]),
            shard(2, 0, &[100]),
            shard(3, 0, &[100]),
        ]
    };
    let refused = |results: Vec<RunResult>| {
        RunResult::merge_shards(labelled(results))
            .expect_err("refused")
            .to_string()
    };
    // Planned starts may differ (a relative --start-at): the skew is reported instead.
    let mut other_start = three();
    other_start[1].spec.start_at_unix_ms = Some(5);
    assert!(RunResult::merge_shards(labelled(other_start)).is_ok());
    let mut other_url = three();
    other_url[2].spec.url = "http://127.0.0.1:9090/".into();
    let e = refused(other_url);
    assert!(
        e.contains("s3.json is of another test than s1.json: url"),
        "{e}"
    );
    let mut other_rate = three();
    other_rate[1].spec.connections = 99;
    assert!(refused(other_rate).contains("connections is 99 there, 10 in s1.json"));
    let mut unsharded = three();
    unsharded[1].spec.shard = None;
    assert_eq!(
        refused(unsharded),
        "s2.json is not a shard (it was run without --shard i/n)"
    );
    let mut twice = three();
    twice[2].spec.shard = Some(Shard { index: 1, count: 3 });
    assert_eq!(refused(twice), "s3.json and s1.json are both shard 1/3");
    let mut missing = three();
    missing.pop();
    assert_eq!(refused(missing), "shard 3/3 of 3 missing");
    let mut other_count = three();
    other_count[1].spec.shard = Some(Shard { index: 2, count: 4 });
    assert!(refused(other_count).contains("s2.json is shard 2/4 but s1.json is of 3 shards"));
    assert_eq!(RunResult::merge_shards(Vec::new()), Err(MergeError::Empty));
}

fn three_plain() -> Vec<RunResult> {
    (1..=3).map(|i| shard(i, 1_000_000, &[100, 200])).collect()
}

fn overflow(shards: Vec<RunResult>) -> String {
    RunResult::merge_shards(labelled(shards))
        .expect_err("the sums overflow")
        .to_string()
}

#[test]
fn counters_that_cannot_add_up_are_refused_naming_file_and_field() {
    // Three u64::MAX responses once wrapped to u64::MAX - 2.
    let mut huge = three_plain();
    for r in &mut huge {
        r.responses = u64::MAX;
    }
    let e = overflow(huge);
    assert!(e.starts_with("s2.json: responses cannot be added"), "{e}");
    let mut status = three_plain();
    status[2].status.insert(200, u64::MAX);
    assert!(overflow(status).starts_with("s3.json: status.200 "));
    let mut kinds = three_plain();
    kinds[0].errors = serde_json::from_value(serde_json::json!({
        "request_timeout": u64::MAX,
        "connect_refused": 1,
    }))
    .unwrap();
    let e = overflow(kinds);
    assert!(
        e.starts_with("s1.json: errors (the sum of its kinds) "),
        "{e}"
    );
    let mut interval = three_plain();
    interval[1].timeline[0].bytes = u64::MAX;
    interval[2].timeline[0].bytes = 1;
    assert!(overflow(interval).starts_with("s3.json: timeline.bytes "));
    let mut threads = three_plain();
    threads[0].spec.threads = u32::MAX;
    assert!(overflow(threads).starts_with("s2.json: spec.threads "));
    // Large but representable totals still merge exactly.
    let mut big = three_plain();
    for r in &mut big {
        r.bytes_received = u64::MAX / 3;
    }
    let merged = RunResult::merge_shards(labelled(big)).unwrap();
    assert_eq!(merged.bytes_received, u64::MAX / 3 * 3);
}

/// A histogram holding `count` values of each of `values`, through its serialised form
/// (as a shard file carries it).
fn histogram_of(values: &[u64], count: u64) -> Result<LatencyHistogram, String> {
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for &v in values {
        h.saturating_record_n(v, count);
    }
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&h, &mut bytes)
        .unwrap();
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
    LatencyHistogram::from_base64(&text).map_err(|e| e.to_string())
}

#[test]
fn saturated_histograms_are_refused_and_large_ones_read_right() {
    // Counts that add up past u64::MAX inside one histogram: HdrHistogram saturates, and
    // its percentiles read 0. Such a histogram is refused when it is read.
    let quarter = 1u64 << 62;
    let e = histogram_of(&[100, 200, 300, 400, 500], quarter).unwrap_err();
    assert!(e.contains("saturated"), "{e}");
    // Three shards whose histograms together pass u64::MAX.
    let mut shards = three_plain();
    for r in &mut shards {
        r.histograms.total = histogram_of(&[1_000, 2_000], quarter).unwrap();
    }
    let e = overflow(shards);
    assert!(e.starts_with("s2.json: histograms.total "), "{e}");
    // Three large shards that fit: the percentiles are the real ones.
    let mut shards = three_plain();
    for (r, us) in shards.iter_mut().zip([100, 2_000, 30_000]) {
        r.histograms.total = histogram_of(&[us], quarter).unwrap();
    }
    let merged = RunResult::merge_shards(labelled(shards)).unwrap();
    let p = merged.latency.total;
    assert_eq!(merged.histograms.total.count(), 3 * quarter);
    assert_eq!(p.p50_us / 10, 2_000 / 10, "{p:?}");
    assert!(p.p99_us >= 30_000 && p.p999_us >= 30_000, "{p:?}");
    assert!(p.min_us >= 100 && p.min_us < 101, "{p:?}");
}
