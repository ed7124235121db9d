//! HTTP/2 against real nginx (1.22: `listen … ssl http2` and `listen … http2` for h2c with
//! prior knowledge): exact counts that agree with h2load's on the same server, h2c, and a
//! server GOAWAY (`keepalive_requests`) whose unprocessed streams are resent, not lost
//! (one with fewer requests per connection than streams in flight forces the resend).

mod support;

use std::process::Command;
use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::{RunResult, RunSpec, StopCondition, TlsOptions};

use webtune_testkit::free_port;
use webtune_testkit::servers::{binary, make_cert, start_nginx, Server};

/// nginx, one worker, h2 over TLS on one port and h2c on another, a 43-byte file.
fn start_nginx_h2(keepalive_requests: u32) -> (Server, u16) {
    let dir = tempfile::tempdir().unwrap();
    make_cert(dir.path(), "");
    let (port, h2c_port) = (free_port(), free_port());
    let http = format!(
        "keepalive_requests {keepalive_requests};\n\
         server {{ listen 127.0.0.1:{port} ssl http2; root {{d}}/www;\n\
           ssl_certificate {{d}}/cert.pem; ssl_certificate_key {{d}}/key.pem; }}\n\
         server {{ listen 127.0.0.1:{h2c_port} http2; root {{d}}/www; }}"
    );
    let server = start_nginx(dir, port, &[("empty.gif", &[0u8; 43])], &http);
    (server, h2c_port)
}

fn spec(url: String, n: u64, c: u32, streams: u32, tls: TlsOptions) -> RunSpec {
    RunSpec {
        url,
        connections: c,
        threads: 1,
        stop: StopCondition::Requests { count: n },
        connect_timeout_ms: 2_000,
        timeout_ms: 5_000,
        tls,
        http2: true,
        streams,
        ..RunSpec::default()
    }
}

fn bench(spec: &RunSpec) -> RunResult {
    run(spec, &Workload::request(), &RunControl::new(), &mut |_| {}).expect("run starts")
}

/// h2load's "status codes: N 2xx" and data bytes from the "traffic:" line.
fn h2load(url: &str, n: u64, c: u32, m: u32) -> (u64, u64) {
    let out = Command::new(binary(&["/usr/bin/h2load"], "nghttp2-client"))
        .args([
            "-n",
            &n.to_string(),
            "-c",
            &c.to_string(),
            "-m",
            &m.to_string(),
            url,
        ])
        .output()
        .expect("h2load runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let after = |line: &str, key: &str| -> u64 {
        line.split(key)
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|v| v.trim_start_matches('(').trim_end_matches(')').parse().ok())
            .unwrap_or(u64::MAX)
    };
    let ok = text
        .lines()
        .find(|l| l.starts_with("status codes:"))
        .map(|l| after(l, "status codes:"))
        .unwrap_or(u64::MAX);
    // "traffic: 1.58MB (1660660) total, … headers …, 410.16KB (420000) data"
    let data = text
        .lines()
        .find(|l| l.starts_with("traffic:"))
        .and_then(|l| {
            let part = l.split(',').find(|p| p.trim_end().ends_with("data"))?;
            part.split('(').nth(1)?.split(')').next()?.parse().ok()
        })
        .unwrap_or(u64::MAX);
    (ok, data)
}

#[test]
fn h2_over_tls_agrees_with_h2load_on_the_same_server() {
    let (server, _) = start_nginx_h2(10_000);
    let url = format!("https://localhost:{}/empty.gif", server.port);
    let tls = TlsOptions {
        cacert: Some(server.cert()),
        ..TlsOptions::default()
    };
    let r = bench(&spec(url.clone(), 500, 5, 10, tls));
    assert_eq!(r.responses, 500, "errors: {:?}", r.errors);
    assert_eq!(r.status.get(&200), Some(&500));
    assert_eq!(r.body_bytes, 500 * 43);
    assert_eq!(r.protocol.as_deref(), Some("h2"));
    assert_eq!(r.tls.as_ref().and_then(|t| t.alpn.as_deref()), Some("h2"));
    assert_eq!(r.connections_opened, 5);
    let h2 = r.h2.expect("an h2 summary");
    assert_eq!(h2.streams_per_connection, 10);
    assert_eq!(h2.server_max_streams, Some(128));
    let (ok, data) = h2load(&url, 500, 5, 10);
    assert_eq!((ok, data), (r.status[&200], r.body_bytes));
}

#[test]
fn h2c_with_prior_knowledge_against_plain_nginx_http2() {
    let (_server, h2c_port) = start_nginx_h2(10_000);
    let url = format!("http://127.0.0.1:{h2c_port}/empty.gif");
    let r = bench(&spec(url.clone(), 300, 3, 4, TlsOptions::default()));
    assert_eq!(r.responses, 300, "errors: {:?}", r.errors);
    assert_eq!(r.body_bytes, 300 * 43);
    assert_eq!(r.protocol.as_deref(), Some("h2c"));
    assert!(r.tls.is_none());
    let (ok, data) = h2load(&url, 300, 3, 4);
    assert_eq!((ok, data), (300, r.body_bytes));
}

#[test]
fn a_graceful_goaway_resends_unprocessed_streams_on_a_new_connection() {
    // nginx answers 20 streams per connection, then sends GOAWAY (NO_ERROR).
    let (_server, h2c_port) = start_nginx_h2(20);
    let url = format!("http://127.0.0.1:{h2c_port}/empty.gif");
    let r = bench(&spec(url, 200, 2, 10, TlsOptions::default()));
    assert_eq!(r.responses, 200, "errors: {:?}", r.errors);
    assert_eq!(r.errors.total(), 0);
    let h2 = r.h2.expect("an h2 summary");
    assert!(h2.goaways >= 9, "{h2:?}");
    assert!(r.connections_opened >= 10);
}

#[test]
fn streams_sent_past_the_servers_goaway_are_resent_and_all_complete() {
    // keepalive_requests 5 with 10 streams in flight: nginx answers 5 streams, sends GOAWAY
    // (NO_ERROR, last stream 9) and ignores streams 11..19, which were already sent. Those
    // must go out again on a new connection and be counted as resends, not errors.
    let (_server, h2c_port) = start_nginx_h2(5);
    let url = format!("http://127.0.0.1:{h2c_port}/empty.gif");
    let r = bench(&spec(url, 200, 2, 10, TlsOptions::default()));
    assert_eq!(r.responses, 200, "errors: {:?}", r.errors);
    assert_eq!(r.errors.total(), 0);
    assert_eq!(r.status.get(&200), Some(&200));
    let h2 = r.h2.expect("an h2 summary");
    assert!(h2.goaway_retries > 0, "{h2:?}");
    assert!(h2.goaways >= 200 / 5 - 2, "{h2:?}");
}
