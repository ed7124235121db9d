//! The engine against the embedded target: exact request counts, connection reuse, status
//! counting, chunked bodies, and a result that round-trips through JSON.

mod support;

use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::{ErrorKind, RunResult, RunSpec, StopCondition};
use webtune_serve::{EmbeddedServer, ServeOptions};

fn server() -> EmbeddedServer {
    EmbeddedServer::start(ServeOptions {
        workers: 1,
        ..ServeOptions::default()
    })
    .expect("embedded target starts")
}

fn spec(srv: &EmbeddedServer, path: &str, n: u64, c: u32) -> RunSpec {
    RunSpec {
        url: format!("http://{}{path}", srv.local_addr()),
        connections: c,
        threads: 2,
        stop: StopCondition::Requests { count: n },
        ..RunSpec::default()
    }
}

fn bench(spec: &RunSpec) -> RunResult {
    run(spec, &Workload::request(), &RunControl::new(), &mut |_| {}).expect("run starts")
}

#[test]
fn n_is_honoured_exactly_and_keepalive_reuses_connections() {
    let srv = server();
    for (n, c) in [(1, 1), (7, 3), (1000, 10), (999, 7)] {
        let r = bench(&spec(&srv, "/empty.gif", n, c));
        assert_eq!(r.responses + r.errors.total(), n, "n={n} c={c}");
        assert_eq!(r.ok, n, "n={n} c={c}: {:?}", r.errors);
        assert_eq!(r.connections_opened, c.min(n as u32) as u64, "n={n} c={c}");
        assert_eq!(r.body_bytes, 43 * n);
        assert_eq!(r.status.get(&200), Some(&n));
        assert_eq!(r.histograms.total.count(), n);
        assert_eq!(r.histograms.connect.count(), r.connections_opened);
    }
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let srv = server();
    let mut s = spec(&srv, "/empty.gif", 200, 4);
    s.keepalive = false;
    let r = bench(&s);
    assert_eq!(r.ok, 200, "{:?}", r.errors);
    assert_eq!(r.connections_opened, 200);
    assert_eq!(r.histograms.connect.count(), 200);
}

#[test]
fn max_requests_per_conn_reconnects() {
    let srv = server();
    let mut s = spec(&srv, "/empty.gif", 100, 2);
    s.max_requests_per_conn = Some(10);
    let r = bench(&s);
    assert_eq!(r.ok, 100);
    assert_eq!(r.connections_opened, 10);
}

#[test]
fn http10_keepalive_works() {
    let srv = server();
    let mut s = spec(&srv, "/empty.gif", 50, 2);
    s.http10 = true;
    let r = bench(&s);
    assert_eq!(r.ok, 50, "{:?}", r.errors);
}

#[test]
fn statuses_are_counted_and_unexpected_ones_flagged() {
    let srv = server();
    let r = bench(&spec(&srv, "/status/404", 30, 3));
    assert_eq!(r.status.get(&404), Some(&30));
    assert_eq!(r.errors.get(ErrorKind::UnexpectedStatus), 30);
    let mut s = spec(&srv, "/status/404", 30, 3);
    s.expect_status = vec![(404, 404)];
    let r = bench(&s);
    assert_eq!(r.ok, 30);
    assert_eq!(r.errors.total(), 0);
}

#[test]
fn chunked_and_large_bodies_are_counted() {
    let srv = server();
    let r = bench(&spec(&srv, "/chunked/100000", 20, 2));
    assert_eq!(r.ok, 20, "{:?}", r.errors);
    assert_eq!(r.body_bytes, 20 * 100_000);
    let r = bench(&spec(&srv, "/bytes/1000000", 10, 2));
    assert_eq!(r.body_bytes, 10 * 1_000_000);
    assert_eq!(r.length_varies, 0);
}

#[test]
fn head_requests_expect_no_body() {
    let srv = server();
    let mut s = spec(&srv, "/bytes/5000", 10, 1);
    s.method = "HEAD".into();
    let r = bench(&s);
    assert_eq!(r.ok, 10, "{:?}", r.errors);
    assert_eq!(r.body_bytes, 0);
}

#[test]
fn duration_runs_stop_and_fill_the_time_series() {
    let srv = server();
    let mut s = spec(&srv, "/empty.gif", 0, 4);
    s.stop = StopCondition::Duration { seconds: 1.0 };
    s.interval_ms = 200;
    let r = bench(&s);
    assert!(r.ok > 0);
    assert!(r.timeline.len() >= 4, "{} intervals", r.timeline.len());
    let summed: u64 = r.timeline.iter().map(|i| i.responses).sum();
    assert_eq!(summed, r.responses);
    assert!(!r.interrupted);
}

#[test]
fn stop_request_ends_a_long_run_and_marks_it_interrupted() {
    let srv = server();
    let mut s = spec(&srv, "/empty.gif", 0, 2);
    s.stop = StopCondition::Duration { seconds: 60.0 };
    let control = RunControl::new();
    let stopper = control.clone();
    // Stopped once the run has responses, not after a guessed delay.
    let r = run(&s, &Workload::request(), &control, &mut |p| {
        if p.responses > 0 {
            stopper.request_stop();
        }
    })
    .unwrap();
    assert!(r.interrupted);
    assert!(r.responses > 0);
    assert!(r.duration_s < 60.0);
}

#[test]
fn result_round_trips_through_json_and_carries_the_schema() {
    let srv = server();
    let r = bench(&spec(&srv, "/empty.gif", 100, 2));
    let text = r.to_json_pretty();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], "webtune.run/1");
    assert_eq!(v["ok"], 100);
    assert!(v["histograms"]["total"]
        .as_str()
        .unwrap()
        .starts_with("HISTF"));
    assert_eq!(v["errors"].as_object().unwrap().len(), ErrorKind::ALL.len());
    let back = RunResult::from_json(&text).unwrap();
    assert_eq!(back.histograms, r.histograms);
    assert_eq!(back.responses, r.responses);
    assert_eq!(back.latency, r.latency);
    assert!(RunResult::from_json(&text.replace("webtune.run/1", "webtune.run/9")).is_err());
}
