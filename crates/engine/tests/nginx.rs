//! The engine against real nginx from Debian's package (installed by .ci/run): exact counts,
//! connection reuse vs a connection per request, status codes. nginx runs in a private
//! directory with `daemon off;`, one worker, on a free loopback port; it is stopped on drop.

mod support;

use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::{ErrorKind, RunResult, RunSpec, StopCondition};
use webtune_testkit::free_port;
use webtune_testkit::servers::{self, Server};

/// nginx, one worker, plain HTTP on a free loopback port, a 43-byte file and an 80 kB page.
fn start_nginx(keepalive_requests: u32) -> Server {
    let port = free_port();
    let http = format!(
        "keepalive_requests {keepalive_requests};\n\
         server {{ listen 127.0.0.1:{port}; root {{d}}/www; }}"
    );
    let page = vec![b'x'; 80_000];
    servers::start_nginx(
        tempfile::tempdir().unwrap(),
        port,
        &[("empty.gif", &[0u8; 43]), ("page.html", &page)],
        &http,
    )
}

fn bench(nginx: &Server, path: &str, n: u64, c: u32, keepalive: bool) -> RunResult {
    let spec = RunSpec {
        url: format!("http://127.0.0.1:{}{path}", nginx.port),
        connections: c,
        threads: 2,
        stop: StopCondition::Requests { count: n },
        keepalive,
        ..RunSpec::default()
    };
    run(&spec, &Workload::request(), &RunControl::new(), &mut |_| {}).expect("run starts")
}

#[test]
fn exact_counts_and_connection_reuse_against_nginx() {
    let nginx = start_nginx(1000);
    let r = bench(&nginx, "/empty.gif", 5000, 20, true);
    assert_eq!(r.ok, 5000, "{:?}", r.errors);
    assert_eq!(r.connections_opened, 20);
    assert_eq!(r.body_bytes, 5000 * 43);
    assert_eq!(
        r.server_software.as_deref().map(|s| s.starts_with("nginx")),
        Some(true)
    );

    let r = bench(&nginx, "/empty.gif", 500, 10, false);
    assert_eq!(r.ok, 500, "{:?}", r.errors);
    assert_eq!(r.connections_opened, 500);

    let r = bench(&nginx, "/page.html", 200, 4, true);
    assert_eq!(r.body_bytes, 200 * 80_000);
}

#[test]
fn nginx_closing_after_keepalive_requests_is_not_an_error() {
    // keepalive_requests 10: nginx answers the 10th request with "Connection: close".
    let nginx = start_nginx(10);
    let r = bench(&nginx, "/empty.gif", 1000, 5, true);
    assert_eq!(r.ok, 1000, "{:?}", r.errors);
    assert_eq!(r.errors.total(), 0);
    // At least 1000 / 10 connections; the last one of each connection slot may be cut short
    // by the end of the budget, so up to one more per connection.
    assert!(
        (100..=105).contains(&r.connections_opened),
        "{}",
        r.connections_opened
    );
}

#[test]
fn status_codes_from_nginx_are_counted() {
    let nginx = start_nginx(1000);
    let r = bench(&nginx, "/missing", 300, 3, true);
    assert_eq!(r.status.get(&404), Some(&300));
    assert_eq!(r.errors.get(ErrorKind::UnexpectedStatus), 300);
}
