//! HTTP/2 request bodies larger than the server's windows (issue 33, items 13 and 14):
//! streams on one connection share its window oldest first, so no body waits while a stream
//! opened after it is given window, every body gets through, and the waits are counted in
//! `h2.flow_control_waits`. Against stock `nghttpd --echo-upload` (default and small
//! windows), and against a scripted h2c server that watches the order in which bodies
//! arrive. (Every `h2` field read from one run against real nginx: `h2.rs`.)

mod support;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;
use support::h2::{
    h2_server, DATA, END_HEADERS, END_STREAM, HEADERS, INITIAL_WINDOW_SIZE, MAX_CONCURRENT_STREAMS,
    STATUS_200, WINDOW_UPDATE,
};
use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::{RunResult, RunSpec, StopCondition};
use webtune_testkit::free_port;
use webtune_testkit::servers::{binary, wait_listening, Server};

/// The POST body: 100 KB, larger than HTTP/2's default 65,535-byte windows.
const BODY: usize = 100_000;

fn post(url: String, n: u64, connections: u32, streams: u32) -> RunSpec {
    let body: Vec<u8> = (0..BODY).map(|i| b'a' + (i % 26) as u8).collect();
    RunSpec {
        url,
        method: "POST".into(),
        body_bytes: body.len() as u64,
        body,
        connections,
        threads: 1,
        stop: StopCondition::Requests { count: n },
        connect_timeout_ms: 5_000,
        // Generous: the bodies must get through, not race a clock.
        timeout_ms: 30_000,
        http2: true,
        streams,
        ..RunSpec::default()
    }
}

/// Run `spec`; the test fails (rather than hangs) if the run has not ended within `limit`.
fn bench_within(spec: &RunSpec, workload: Workload, limit: Duration) -> RunResult {
    let (tx, rx) = mpsc::channel();
    let spec = spec.clone();
    thread::spawn(move || {
        let r = run(&spec, &workload, &RunControl::new(), &mut |_| {});
        let _ = tx.send(r.expect("run starts"));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the run did not end within {limit:?}"))
}

/// Stock nghttpd, h2c, echoing uploads; `windows` are its -w/-W (window bits) if given.
fn start_nghttpd(windows: Option<(u32, u32)>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut cmd = Command::new(binary(&["/usr/sbin/nghttpd"], "nghttp2-server"));
    cmd.args(["--no-tls", "--echo-upload", "-a", "127.0.0.1", "-d"])
        .arg(dir.path());
    if let Some((stream, conn)) = windows {
        cmd.arg(format!("--window-bits={stream}"))
            .arg(format!("--connection-window-bits={conn}"));
    }
    let child = cmd
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nghttpd starts");
    let mut server = Server { child, port, dir };
    wait_listening(&mut server);
    server
}

/// issue 33 item 13's case: 100 KB POSTs, 10 streams a connection, against nghttpd's echo.
/// Every body goes and comes back whole, none times out, and the waits are counted.
#[test]
fn every_body_gets_through_to_nghttpd_echo_upload() {
    // Default windows (65,535), and small ones: 16,383 per stream, 32,767 per connection.
    for windows in [None, Some((14, 15))] {
        let server = start_nghttpd(windows);
        let url = format!("http://127.0.0.1:{}/echo", server.port);
        let spec = post(url, 200, 2, 10);
        let r = bench_within(&spec, Workload::request(), Duration::from_secs(120));
        let case = format!("windows {windows:?}");
        assert_eq!(r.errors.total(), 0, "{case}: {:?}", r.errors);
        assert_eq!(r.ok, 200, "{case}");
        assert_eq!(r.body_bytes, 200 * BODY as u64, "{case}: the echo");
        let h2 = r.h2.expect("an h2 summary");
        // Every body is larger than the window: most wait (each counts once).
        assert!(
            h2.flow_control_waits >= 100 && h2.flow_control_waits <= 200,
            "{case}: {h2:?}"
        );
    }
}

/// What the scripted server saw: DATA for a stream while an older stream's body was
/// still coming (older, newer), and bodies received whole.
#[derive(Default)]
struct Seen {
    overtaken: Vec<(u32, u32)>,
    bodies: u64,
}

/// An h2c server with wide stream windows (2^24) whose connection window comes back 8 KiB
/// at a time: only the connection's window holds bodies back. It answers each body once
/// it has all of it, and notes any DATA frame that overtakes an older stream's body.
fn watching_the_order_of_bodies(seen: Arc<Mutex<Seen>>) -> support::TestServer {
    h2_server(move |mut c| {
        c.settings(&[(INITIAL_WINDOW_SIZE, 1 << 24), (MAX_CONCURRENT_STREAMS, 10)]);
        let mut coming = BTreeSet::new();
        let mut consumed = 0usize;
        while let Some(frames) = c.frames() {
            for f in frames {
                match f.kind {
                    HEADERS if f.flags & END_STREAM == 0 => {
                        coming.insert(f.stream);
                    }
                    HEADERS => c.send(HEADERS, END_STREAM | END_HEADERS, f.stream, STATUS_200),
                    DATA => {
                        consumed += f.payload.len();
                        let mut seen = seen.lock().unwrap();
                        if let Some(&older) = coming.range(..f.stream).next() {
                            seen.overtaken.push((older, f.stream));
                        }
                        if f.flags & END_STREAM != 0 {
                            coming.remove(&f.stream);
                            seen.bodies += 1;
                            drop(seen);
                            c.send(HEADERS, END_STREAM | END_HEADERS, f.stream, STATUS_200);
                        }
                    }
                    _ => {}
                }
            }
            // The client always keeps 65,535 − 8,191 bytes of window or more: never stuck.
            if consumed >= 8192 {
                c.send(WINDOW_UPDATE, 0, 0, &(consumed as u32).to_be_bytes());
                consumed = 0;
            }
        }
    })
}

/// No body waits while a stream opened after it on the same connection is given window:
/// the server never sees DATA for a stream while an older stream's body is still coming.
/// Under the old rule (the window went to the lowest slot, and a finished stream's slot
/// takes the next request) newer streams overtook older ones all the time.
#[test]
fn no_body_waits_while_a_newer_stream_gets_window() {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = watching_the_order_of_bodies(seen.clone());
    let spec = post(format!("http://{}/up", server.addr), 150, 2, 10);
    let r = bench_within(&spec, Workload::request(), Duration::from_secs(120));
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert_eq!(r.ok, 150);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.bodies, 150);
    assert!(
        seen.overtaken.is_empty(),
        "{} DATA frames overtook an older body, e.g. {:?}",
        seen.overtaken.len(),
        &seen.overtaken[..seen.overtaken.len().min(5)]
    );
    let h2 = r.h2.expect("an h2 summary");
    assert!(h2.flow_control_waits > 0, "{h2:?}");
}
