//! The HTTP/2 worker against scripted h2c servers that misbehave or hold back: every run
//! ends within its timeout, each failure is counted as its kind, and the server's stream
//! limit is kept. The servers are plain std listeners on loopback that speak just enough
//! HTTP/2 (frames by hand, `:status 200` as one HPACK byte: `support::h2`) to break it in
//! one way.

mod support;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;
use support::h2::{
    h2_server, H2Conn, ENABLE_PUSH, END_HEADERS, END_STREAM, HEADERS, MAX_CONCURRENT_STREAMS,
    PROTOCOL_ERROR, STATUS_200,
};
use support::run;
use support::TestServer;
use webtune_engine::{RunControl, Workload};
use webtune_model::{Arrival, ErrorKind, LoadMode, RunResult, RunSpec, StopCondition};

fn spec(addr: SocketAddr, n: u64, connections: u32, streams: u32) -> RunSpec {
    RunSpec {
        url: format!("http://{addr}/x"),
        connections,
        threads: 1,
        stop: StopCondition::Requests { count: n },
        timeout_ms: 2_000,
        connect_timeout_ms: 1_000,
        http2: true,
        streams,
        ..RunSpec::default()
    }
}

/// Run `spec`; the test fails (rather than hangs) if the run has not ended within `limit`.
fn bench_within(spec: &RunSpec, limit: Duration) -> RunResult {
    let (tx, rx) = mpsc::channel();
    let spec = spec.clone();
    thread::spawn(move || {
        let r = run(&spec, &Workload::request(), &RunControl::new(), &mut |_| {});
        let _ = tx.send(r.expect("run starts"));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the run did not end within {limit:?}"))
}

/// Wait (a few seconds at most) until `goaways` holds `n` codes; return them.
fn goaways_seen(goaways: &Mutex<Vec<u32>>, n: usize) -> Vec<u32> {
    webtune_testkit::wait_until(Duration::from_secs(5), || {
        goaways.lock().unwrap().len() >= n
    });
    goaways.lock().unwrap().clone()
}

/// Answers every connection with its SETTINGS and GOAWAY(NO_ERROR, last stream 0).
fn turning_every_connection_away() -> TestServer {
    h2_server(|mut c| {
        c.settings(&[]);
        c.goaway(0, 0);
        c.drain(&Mutex::new(Vec::new()));
    })
}

#[test]
fn a_goaway_on_every_connection_fails_the_requests_and_n_counts_them() {
    let server = turning_every_connection_away();
    let r = bench_within(&spec(server.addr, 10, 2, 4), Duration::from_secs(10));
    assert_eq!(r.errors.get(ErrorKind::H2Goaway), 10, "{:?}", r.errors);
    assert_eq!(r.errors.total(), 10, "{:?}", r.errors);
    assert_eq!(r.responses, 0);
    let h2 = r.h2.expect("an h2 summary");
    assert_eq!(h2.goaway_retries, 0, "{h2:?}");
    // Each connection took up to 4 of the 10 requests before it was turned away.
    assert!(r.connect_attempts <= 10, "{} connects", r.connect_attempts);
}

#[test]
fn a_goaway_on_every_connection_is_backed_off_like_a_refused_connect() {
    let server = turning_every_connection_away();
    let mut spec = spec(server.addr, 0, 2, 4);
    spec.stop = StopCondition::Duration { seconds: 1.0 };
    let r = bench_within(&spec, Duration::from_secs(10));
    assert!(r.errors.get(ErrorKind::H2Goaway) > 0, "{:?}", r.errors);
    assert_eq!(r.errors.total(), r.errors.get(ErrorKind::H2Goaway));
    // The connect backoff (1 ms doubling to 100 ms, jittered down to half) allows about 30
    // connections per connection slot in a second; without it there were thousands.
    assert!(
        r.connect_attempts <= 2 * 60,
        "{} connections in 1 s from -c 2",
        r.connect_attempts
    );
}

/// Allows no stream at all (SETTINGS_MAX_CONCURRENT_STREAMS = 0), and waits.
fn allowing_no_streams() -> TestServer {
    h2_server(|mut c| {
        c.settings(&[(MAX_CONCURRENT_STREAMS, 0)]);
        c.drain(&Mutex::new(Vec::new()));
    })
}

#[test]
fn requests_waiting_for_a_stream_time_out() {
    let server = allowing_no_streams();
    let mut spec = spec(server.addr, 3, 1, 2);
    spec.timeout_ms = 300;
    let r = bench_within(&spec, Duration::from_secs(10));
    assert_eq!(r.errors.get(ErrorKind::RequestTimeout), 3, "{:?}", r.errors);
    assert_eq!(r.errors.total(), 3, "{:?}", r.errors);
    let h2 = r.h2.expect("an h2 summary");
    assert_eq!(h2.server_max_streams, Some(0));
    assert!(h2.queued_for_stream >= 3, "{h2:?}");
}

#[test]
fn open_loop_requests_waiting_for_a_stream_time_out() {
    let server = allowing_no_streams();
    let mut spec = spec(server.addr, 0, 1, 2);
    spec.timeout_ms = 200;
    spec.stop = StopCondition::Duration { seconds: 1.0 };
    spec.load = LoadMode::Open {
        rate: 20.0,
        arrival: Arrival::Uniform,
    };
    let r = bench_within(&spec, Duration::from_secs(10));
    let timeouts = r.errors.get(ErrorKind::RequestTimeout);
    assert!(timeouts >= 10, "{:?}", r.errors);
    assert_eq!(r.errors.total(), timeouts, "{:?}", r.errors);
}

#[test]
fn a_servers_stream_limit_is_never_exceeded() {
    let (open_max, open_now) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (max2, now2) = (open_max.clone(), open_now.clone());
    let server = h2_server(move |mut c| {
        c.settings(&[(MAX_CONCURRENT_STREAMS, 2)]);
        // Hold requests 20 ms before answering, so a client over the limit would show.
        let _ = c.s.set_read_timeout(Some(Duration::from_millis(20)));
        let mut waiting = Vec::new();
        while let Some(frames) = c.frames() {
            for f in frames.iter().filter(|f| f.kind == HEADERS) {
                let open = now2.fetch_add(1, Ordering::SeqCst) + 1;
                max2.fetch_max(open, Ordering::SeqCst);
                waiting.push(f.stream);
            }
            if frames.is_empty() {
                for id in waiting.drain(..) {
                    now2.fetch_sub(1, Ordering::SeqCst);
                    c.send(HEADERS, END_STREAM | END_HEADERS, id, STATUS_200);
                }
            }
        }
    });
    let r = bench_within(&spec(server.addr, 40, 1, 100), Duration::from_secs(20));
    assert_eq!(r.ok, 40, "{:?}", r.errors);
    assert_eq!(r.errors.total(), 0);
    assert_eq!(open_max.load(Ordering::SeqCst), 2);
    let h2 = r.h2.expect("an h2 summary");
    assert_eq!(h2.server_max_streams, Some(2));
    assert_eq!(h2.streams_per_connection, 100);
}

/// Runs `-n 3` with one stream against a server scripted by `behave`, which must end each
/// connection with a protocol error: three `malformed` failures, and a GOAWAY
/// (PROTOCOL_ERROR) from the client on each connection.
fn protocol_error_each_time(behave: fn(&mut H2Conn)) {
    let goaways = Arc::new(Mutex::new(Vec::new()));
    let seen = goaways.clone();
    let server = h2_server(move |mut c| {
        behave(&mut c);
        c.drain(&seen);
    });
    let r = bench_within(&spec(server.addr, 3, 1, 1), Duration::from_secs(10));
    assert_eq!(r.errors.get(ErrorKind::Malformed), 3, "{:?}", r.errors);
    assert_eq!(r.errors.total(), 3, "{:?}", r.errors);
    assert_eq!(goaways_seen(&goaways, 3), vec![PROTOCOL_ERROR; 3]);
}

#[test]
fn enable_push_7_from_a_server_is_a_protocol_error() {
    protocol_error_each_time(|c| c.settings(&[(ENABLE_PUSH, 7)]));
}

#[test]
fn headers_on_a_stream_never_opened_are_a_protocol_error() {
    protocol_error_each_time(|c| {
        c.settings(&[]);
        // Wait for the client's request (stream 1), then answer on stream 5.
        while let Some(frames) = c.frames() {
            if frames.iter().any(|f| f.kind == HEADERS && f.stream == 1) {
                c.send(HEADERS, END_STREAM | END_HEADERS, 5, STATUS_200);
                return;
            }
        }
    });
}
