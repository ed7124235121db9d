//! The answer's bytes as io_uring's multishot receive hands them over (plain-TCP HTTP/1.1
//! under `--io uring`): split over many small arrivals, cut short by a close, larger than
//! the whole buffer ring, and many connections sharing a ring of two buffers; and the open
//! loop's wake-ups, timed by the ring's wait instead of a timerfd. These specs ask for
//! io_uring; `WEBTUNE_TEST_IO` runs them under the other backend too, where the answers
//! must read the same.

mod support;

use std::io::Write;
use std::net::{Shutdown, SocketAddr};
use std::thread;
use std::time::Duration;
use support::{read_head, run, serve_connections};
use webtune_engine::{RunControl, Workload};
use webtune_model::{Arrival, ErrorKind, IoChoice, LoadMode, RunResult, RunSpec, StopCondition};

fn spec_for(addr: SocketAddr, connections: u32, n: u64) -> RunSpec {
    RunSpec {
        url: format!("http://{addr}/x"),
        connections,
        threads: 1,
        stop: StopCondition::Requests { count: n },
        timeout_ms: 5000,
        connect_timeout_ms: 2000,
        io: IoChoice::Uring,
        ..RunSpec::default()
    }
}

fn bench(spec: &RunSpec) -> RunResult {
    run(spec, &Workload::request(), &RunControl::new(), &mut |_| {}).expect("run starts")
}

fn response(body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

#[test]
fn an_answer_split_over_many_small_arrivals_is_read_whole() {
    let s = serve_connections(|mut s| {
        let _ = s.set_nodelay(true);
        let mut pending = Vec::new();
        while read_head(&mut s, &mut pending).is_some() {
            for chunk in response(b"split into many small pieces").chunks(3) {
                if s.write_all(chunk).is_err() {
                    return;
                }
                thread::sleep(Duration::from_millis(1));
            }
        }
    });
    let r = bench(&spec_for(s.addr, 1, 4));
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert_eq!(r.ok, 4);
    assert_eq!(r.body_bytes, 4 * 28);
    assert_eq!(r.connections_opened, 1, "kept alive");
}

#[test]
fn a_server_that_closes_mid_answer_is_closed_early() {
    let s = serve_connections(|mut s| {
        if read_head(&mut s, &mut Vec::new()).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part");
            let _ = s.shutdown(Shutdown::Both);
        }
    });
    let r = bench(&spec_for(s.addr, 1, 3));
    assert_eq!(r.errors.get(ErrorKind::ClosedEarly), 3, "{:?}", r.errors);
    assert_eq!(r.errors.total(), 3, "{:?}", r.errors);
}

#[test]
fn a_body_larger_than_the_buffer_ring_arrives_whole() {
    // 4 MiB: more than the ring's buffers hold at once (64 × 16 KiB at least).
    let body: Vec<u8> = (0..4u32 << 20).map(|b| b as u8).collect();
    let answer = response(&body);
    let s = serve_connections(move |mut s| {
        let mut pending = Vec::new();
        while read_head(&mut s, &mut pending).is_some() {
            if s.write_all(&answer).is_err() {
                return;
            }
        }
    });
    let r = bench(&spec_for(s.addr, 2, 6));
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert_eq!(r.ok, 6);
    assert_eq!(r.body_bytes, 6 * (4 << 20));
}

#[test]
fn many_connections_sharing_a_ring_of_two_buffers_all_get_their_answers() {
    // The internal knob sizes the buffer ring: two buffers for 64 connections run dry in
    // most turns (ENOBUFS), and each receive is armed again. It is read when a worker starts,
    // and a tiny ring is correct for any other test of this binary too, only slower.
    std::env::set_var("WEBTUNE_URING_RECV_BUFFERS", "2");
    let s = serve_connections(|mut s| {
        let _ = s.set_nodelay(true);
        let mut pending = Vec::new();
        while read_head(&mut s, &mut pending).is_some() {
            if s.write_all(&response(&[b'x'; 20_000])).is_err() {
                return;
            }
        }
    });
    let r = bench(&spec_for(s.addr, 64, 640));
    std::env::remove_var("WEBTUNE_URING_RECV_BUFFERS");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert_eq!(r.ok, 640);
    assert_eq!(r.body_bytes, 640 * 20_000);
}

#[test]
fn a_kept_alive_connection_the_server_closed_while_idle_is_reopened_not_failed() {
    // One answer per connection, then the server closes it while the connection is idle
    // (an open loop at 20 requests/s, one connection): the end of file arrives while no
    // request is in flight and waits for the next one, which finds the connection stale
    // and goes again on a new one.
    let s = serve_connections(|mut s| {
        if read_head(&mut s, &mut Vec::new()).is_some() {
            let _ = s.write_all(&response(b"once"));
            thread::sleep(Duration::from_millis(5));
        }
    });
    let mut spec = spec_for(s.addr, 1, 4);
    spec.load = LoadMode::Open {
        rate: 20.0,
        arrival: Arrival::Uniform,
    };
    let r = bench(&spec);
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert_eq!(r.ok, 4);
    assert_eq!(
        r.stale_reconnects, 3,
        "each later request found its connection closed"
    );
}

/// Timer file descriptors this process holds now.
fn timerfds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().contains("timerfd"))
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn an_open_loop_under_io_uring_is_woken_by_the_rings_wait_not_a_timerfd() {
    let s = support::http_server(|_, _| (Duration::ZERO, b"ok".to_vec()));
    let mut spec = spec_for(s.addr, 4, 0);
    spec.stop = StopCondition::Duration { seconds: 1.0 };
    spec.interval_ms = 100;
    spec.load = LoadMode::Open {
        rate: 200.0,
        arrival: Arrival::Uniform,
    };
    let mut most = 0;
    let r = run(&spec, &Workload::request(), &RunControl::new(), &mut |_| {
        most = most.max(timerfds())
    })
    .expect("run starts");
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    let sched = r
        .schedule
        .as_ref()
        .expect("an open loop reports its schedule");
    assert!(r.responses >= 50, "due requests were sent: {}", r.responses);
    assert_eq!(sched.not_sent, 0);
    match r.io_backend {
        // Other tests of this binary may run beside this one (each with its own timerfd
        // under epoll), so epoll is only checked to have one.
        Some(webtune_model::IoBackend::Epoll) => assert!(most >= 1, "epoll wakes by timerfd"),
        _ => assert_eq!(most, 0, "no timerfd under io_uring"),
    }
}
