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
        repeats: Vec::new(),
        start: None,
        sharding: None,
        thresholds: Vec::new(),
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
