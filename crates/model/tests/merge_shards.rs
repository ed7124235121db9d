//! `RunResult::merge_shards`: the shards of one test merge to exact totals and histograms,
//! aligned on the earliest start, with the start skew to the sub-millisecond; anything that
//! is not all the shards of one spec and one run, started together, is refused with the
//! reason (or, for the skew, merged marked invalid when allowed).

use webtune_model::result::Histograms;
use webtune_model::{
    derived_run_id, parse_run_id, IntervalSample, LatencyHistogram, MergeError, MergeOptions,
    RunResult, RunSpec, Shard, ShardMerge, StartRecord, StopCondition, Validity, Window, SCHEMA,
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
        target_down: false,
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
        by_journey: Default::default(),
        probe: None,
        server_software: None,
        tls: None,
        protocol: None,
        h2: None,
        http3: None,
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

/// A shard that waited for `planned` (Unix ms) and started `late_ms` after it, in run
/// `run_id`, as `bench --shard` records it (without a recorded window: the merge works it
/// out from the start, as for results written before windows were recorded).
fn started(index: u32, planned: u64, late_ms: f64, run_id: Option<&str>) -> RunResult {
    let mut r = shard(index, planned + late_ms as u64, &[100, 200]);
    r.spec.start_at_unix_ms = Some(planned);
    r.start = Some(StartRecord {
        planned_unix_ms: Some(planned),
        late_ms: Some(late_ms),
        clock: "CLOCK_REALTIME".into(),
        synchronised: Some(true),
        estimated_error_us: None,
        max_error_us: None,
        run_id: run_id.map(str::to_string),
        window: None,
    });
    r
}

#[test]
fn the_skew_is_measured_to_the_sub_millisecond() {
    // Issue 37: shards listed 0.1 and 0.36 ms late, all in the same millisecond, once
    // merged with "start skew 0.000 ms".
    let planned = 1_796_119_200_000;
    let shards = vec![
        started(1, planned, 0.0, Some("r")),
        started(2, planned, 0.1, Some("r")),
        started(3, planned, 0.36, Some("r")),
    ];
    let merged = RunResult::merge_shards(labelled(shards)).unwrap();
    let set = merged.sharding.unwrap();
    assert!(
        (set.start_skew_ms - 0.36).abs() < 1e-3,
        "{}",
        set.start_skew_ms
    );
    let offsets: Vec<f64> = set.shards.iter().map(|s| s.start_offset_ms).collect();
    assert!((offsets[1] - 0.1).abs() < 1e-3, "{offsets:?}");
    assert_eq!(set.run_id.as_deref(), Some("r"));
    assert_eq!(set.start_skew_limit_ms, 1000.0);
    assert!(!merged.validity.client_limited);

    // A recorded window wins over the start it would be worked out from.
    let mut shards = vec![
        started(1, planned, 0.0, None),
        started(2, planned, 0.0, None),
        started(3, planned, 0.0, None),
    ];
    let record = shards[2].start.as_mut().unwrap();
    record.window = Some(Window {
        start_unix_ms: planned as f64 + 0.25,
        end_unix_ms: planned as f64 + 2000.25,
    });
    let set = RunResult::merge_shards(labelled(shards))
        .unwrap()
        .sharding
        .unwrap();
    assert!(
        (set.start_skew_ms - 0.25).abs() < 1e-3,
        "{}",
        set.start_skew_ms
    );
}

#[test]
fn shards_of_another_run_are_refused_naming_the_odd_one_out() {
    let planned = 1_796_119_200_000;
    let refused = |shards: Vec<RunResult>| {
        RunResult::merge_shards(labelled(shards))
            .expect_err("refused")
            .to_string()
    };
    let e = refused(vec![
        started(1, planned, 0.0, Some("slurm-17")),
        started(2, planned, 0.0, Some("slurm-12")),
        started(3, planned, 0.0, Some("slurm-17")),
    ]);
    assert_eq!(
        e,
        "s2.json is of another run than s1.json: run id slurm-12 there, slurm-17 in s1.json \
         and 1 other shard"
    );
    // The odd one out may come first, and may have no id at all.
    let e = refused(vec![
        started(1, planned, 0.0, None),
        started(2, planned, 0.0, Some("a")),
        started(3, planned, 0.0, Some("a")),
    ]);
    assert!(
        e.starts_with("s1.json is of another run than s2.json: run id none there, a in s2.json"),
        "{e}"
    );
    // Two whole runs given together are two runs, not the same shards twice.
    let mut six: Vec<RunResult> = (1..=3)
        .map(|i| started(i, planned, 0.0, Some("a")))
        .collect();
    six.extend((1..=3).map(|i| started(i, planned, 0.0, Some("b"))));
    let e = refused(six);
    assert!(
        e.starts_with("s4.json is of another run than s1.json"),
        "{e}"
    );
}

#[test]
fn shards_that_did_not_start_together_are_refused_or_merged_marked_invalid() {
    // Issue 37: an array let through one task at a time, in a 2 s test: shards 2.7 s and
    // 5.8 s late once merged in silence.
    let planned = 1_796_119_200_000;
    let late = || {
        let mut shards = vec![
            started(1, planned, 0.2, Some("r")),
            started(2, planned, 2_731.0, Some("r")),
            started(3, planned, 5_824.0, Some("r")),
        ];
        for r in &mut shards {
            r.spec.stop = StopCondition::Duration { seconds: 2.0 };
        }
        shards
    };
    let e = RunResult::merge_shards(labelled(late())).unwrap_err();
    assert!(matches!(e, MergeError::Skewed { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "the shards did not run together: s3.json (shard 3/3) started 5824 ms late, s2.json \
         (shard 2/3) started 2731 ms late; start skew 5824 ms, above the limit of 1000 ms (1 s \
         or 10% of the test's length, whichever is larger); --allow-skew merges them anyway, \
         marked invalid"
    );
    let allowed = MergeOptions { allow_skew: true };
    let merged = RunResult::merge_shards_with(labelled(late()), &allowed).unwrap();
    assert_eq!(merged.responses, 6, "merged all the same");
    assert!(merged.validity.client_limited, "marked invalid");
    let reason = merged.validity.reasons.join("; ");
    assert!(
        reason.starts_with("the shards did not run together (start skew 5824 ms, above the limit of 1000 ms; merged with --allow-skew): s3.json (shard 3/3) started 5824 ms late"),
        "{reason}"
    );
    assert!((merged.sharding.unwrap().start_skew_ms - 5_823.8).abs() < 1e-3);

    // A shard left from an earlier run of the same spec (no run ids): named as early.
    let mut leftover = vec![
        shard(1, 1_000_000, &[100]),
        shard(2, 1_000_001, &[100]),
        shard(3, 996_737, &[100]),
    ];
    let e = RunResult::merge_shards(labelled(std::mem::take(&mut leftover)))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "the shards did not run together: s3.json (shard 3/3) started 3263 ms early;"
        ),
        "{e}"
    );

    // The limit grows with the test: 10% of a 60 s test is 6 s.
    let mut long: Vec<RunResult> = late();
    for r in &mut long {
        r.spec.stop = StopCondition::Duration { seconds: 60.0 };
    }
    let merged = RunResult::merge_shards(labelled(long)).unwrap();
    assert_eq!(merged.sharding.unwrap().start_skew_limit_ms, 6_000.0);
}

#[test]
fn run_ids_are_checked_and_derived_from_the_start_and_the_spec() {
    assert_eq!(parse_run_id("slurm-4242").as_deref(), Ok("slurm-4242"));
    assert!(parse_run_id("0b9f7c3e-1d2a-4c5b-9e8f-0123456789ab").is_ok());
    for bad in ["", "a b", "x/y", "é", &"a".repeat(129)] {
        let e = parse_run_id(bad).unwrap_err().to_string();
        assert!(
            e.starts_with("--run-id") && e.contains("is not a run id"),
            "{e}"
        );
    }
    let spec = |index, threads, at| RunSpec {
        url: "http://127.0.0.1:8080/".into(),
        threads,
        shard: Some(Shard { index, count: 3 }),
        start_at_unix_ms: at,
        ..RunSpec::default()
    };
    let id = derived_run_id(&spec(1, 1, Some(1_796_119_200_000))).unwrap();
    assert!(id.starts_with("start-1796119200000-"), "{id}");
    // The same for every shard of the run, whatever its thread count...
    assert_eq!(
        derived_run_id(&spec(3, 8, Some(1_796_119_200_000))),
        Some(id.clone())
    );
    // ...but another start or another test is another run; no start, no id.
    assert_ne!(
        derived_run_id(&spec(1, 1, Some(1_796_119_200_001))),
        Some(id.clone())
    );
    let mut other = spec(1, 1, Some(1_796_119_200_000));
    other.connections = 11;
    assert_ne!(derived_run_id(&other), Some(id));
    assert_eq!(derived_run_id(&spec(1, 1, None)), None);
}

#[test]
fn the_merge_is_the_same_in_any_order_and_one_shard_at_a_time() {
    let make = || {
        let mut a = shard(1, 1_000_000, &[100, 200, 300, 400]);
        a.tool = "webtune 1".into();
        let mut b = shard(2, 1_000_004, &[1_000, 2_000]);
        b.tool = "webtune 2".into();
        b.first_body_bytes = Some(7);
        let c = shard(3, 1_000_002, &[50_000, 60, 70]);
        (a, b, c)
    };
    let (a, b, c) = make();
    let forward = RunResult::merge_shards(labelled(vec![a, b, c])).unwrap();
    let (a, b, c) = make();
    let backward = RunResult::merge_shards(vec![
        ("s1.json".into(), a),
        ("s3.json".into(), c),
        ("s2.json".into(), b),
    ])
    .unwrap();
    // The record (tool, spec, first body length) is shard 1's, whatever came first.
    assert_eq!(forward.tool, "webtune 1");
    assert_eq!(backward.tool, "webtune 1");
    assert_eq!(backward.first_body_bytes, Some(0));
    assert_eq!(forward, backward);
    let (a, b, c) = make();
    let mut merge = ShardMerge::new(MergeOptions::default());
    for (label, r) in [("s3.json", c), ("s2.json", b), ("s1.json", a)] {
        merge.add(label.into(), r).unwrap();
    }
    assert_eq!(merge.finish().unwrap(), forward);
    assert_eq!(
        ShardMerge::new(MergeOptions::default()).finish(),
        Err(MergeError::Empty)
    );
}
