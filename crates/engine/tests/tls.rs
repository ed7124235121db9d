//! HTTPS against real servers: nginx with `ssl` and a self-signed certificate made with the
//! openssl CLI (as the lab makes them), `openssl s_server` for a server that finishes the
//! handshake and then says nothing, and plain listeners for servers that do not speak TLS.
//! Checks exact counts, `--cacert` trust and refusal, resumption counted, and that every
//! misbehaviour ends in a named error, not a hang.

mod support;

use std::time::{Duration, Instant};
use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::{ErrorKind, ProbeSpec, RunResult, RunSpec, StopCondition, TlsOptions};

use webtune_testkit::free_port;
use webtune_testkit::servers::{make_cert, make_dated_cert, start_nginx, start_s_server, Server};

/// nginx, one worker, TLS on a free loopback port, a 43-byte file and an 80 kB page.
fn start_nginx_tls(protocols: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    make_cert(dir.path(), "");
    let port = free_port();
    let http = format!(
        "ssl_session_cache shared:SSL:1m; ssl_protocols {protocols};\n\
         server {{ listen 127.0.0.1:{port} ssl; root {{d}}/www;\n\
           ssl_certificate {{d}}/cert.pem; ssl_certificate_key {{d}}/key.pem; }}"
    );
    let page = vec![b'x'; 80_000];
    start_nginx(
        dir,
        port,
        &[("empty.gif", &[0u8; 43]), ("page.html", &page)],
        &http,
    )
}

fn spec(url: String, n: u64, c: u32, keepalive: bool, tls: TlsOptions) -> RunSpec {
    RunSpec {
        url,
        connections: c,
        threads: 1,
        stop: StopCondition::Requests { count: n },
        keepalive,
        connect_timeout_ms: 2_000,
        timeout_ms: 2_000,
        tls,
        ..RunSpec::default()
    }
}

fn bench(spec: &RunSpec) -> RunResult {
    run(spec, &Workload::request(), &RunControl::new(), &mut |_| {}).expect("run starts")
}

fn trusting(server: &Server) -> TlsOptions {
    TlsOptions {
        cacert: Some(server.cert()),
        ..TlsOptions::default()
    }
}

#[test]
fn https_against_nginx_counts_exactly_with_the_labs_certificate() {
    let nginx = start_nginx_tls("TLSv1.2 TLSv1.3");
    // By name (SNI localhost) and by address (the certificate's IP entry).
    for host in ["localhost", "127.0.0.1"] {
        let url = format!("https://{host}:{}/empty.gif", nginx.port);
        let r = bench(&spec(url, 2000, 10, true, trusting(&nginx)));
        assert_eq!(r.ok, 2000, "{host}: {:?}", r.errors);
        assert_eq!(r.body_bytes, 2000 * 43);
        assert_eq!(r.connections_opened, 10);
        let tls = r.tls.as_ref().expect("an https run reports TLS");
        assert_eq!(tls.full_handshakes + tls.resumed_handshakes, 10);
        assert_eq!(tls.alpn.as_deref(), Some("http/1.1"));
        assert_eq!(tls.version.as_deref(), Some("TLSv1.3"));
        assert_eq!(r.histograms.tls_handshake.count(), 10);
    }
    // Bodies of many TLS records: read on to WouldBlock, not to the first short read.
    let url = format!("https://localhost:{}/page.html", nginx.port);
    let r = bench(&spec(url, 200, 4, true, trusting(&nginx)));
    assert_eq!(r.ok, 200, "{:?}", r.errors);
    assert_eq!(r.body_bytes, 200 * 80_000);
}

#[test]
fn tls12_works_and_resumes() {
    let nginx = start_nginx_tls("TLSv1.2");
    let url = format!("https://localhost:{}/empty.gif", nginx.port);
    let r = bench(&spec(url, 100, 2, false, trusting(&nginx)));
    assert_eq!(r.ok, 100, "{:?}", r.errors);
    let tls = r.tls.unwrap();
    assert_eq!(tls.version.as_deref(), Some("TLSv1.2"));
    assert_eq!(tls.full_handshakes + tls.resumed_handshakes, 100);
    assert!(tls.resumed_handshakes >= 90, "{tls:?}");
}

#[test]
fn resumption_is_counted_and_can_be_turned_off() {
    let nginx = start_nginx_tls("TLSv1.2 TLSv1.3");
    let url = format!("https://localhost:{}/empty.gif", nginx.port);
    // A new connection per request: after the first, the session is resumed.
    let r = bench(&spec(url.clone(), 200, 2, false, trusting(&nginx)));
    assert_eq!(r.ok, 200, "{:?}", r.errors);
    let tls = r.tls.clone().unwrap();
    assert_eq!(tls.full_handshakes + tls.resumed_handshakes, 200);
    assert!(tls.resumed_handshakes >= 150, "{tls:?}");
    assert_eq!(r.histograms.tls_handshake.count(), 200);

    let no_resume = TlsOptions {
        no_resume: true,
        ..trusting(&nginx)
    };
    let r = bench(&spec(url, 100, 2, false, no_resume));
    assert_eq!(r.ok, 100, "{:?}", r.errors);
    let tls = r.tls.unwrap();
    assert_eq!((tls.full_handshakes, tls.resumed_handshakes), (100, 0));
}

#[test]
fn a_self_signed_cacert_outside_its_dates_is_a_certificate_error() {
    // A certificate that is its own --cacert is trusted as curl trusts it: only between
    // its notBefore and notAfter.
    for (start, end, when) in [
        ("20200101000000Z", "20210101000000Z", "expired"),
        ("20900101000000Z", "20910101000000Z", "not yet valid"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        make_dated_cert(dir.path(), start, end);
        let server = start_s_server(dir, true);
        let url = format!("https://localhost:{}/", server.port);
        let r = bench(&spec(url, 3, 1, true, trusting(&server)));
        assert_eq!(r.ok, 0, "{when}");
        assert_eq!(
            r.errors.get(ErrorKind::TlsCertificate),
            3,
            "{when}: {:?}",
            r.errors
        );
    }
    // The same kind of certificate within its dates is trusted. Three connections one after
    // another to a server that serves one at a time: under io_uring a poll left armed on a
    // closed socket once kept the first open, and the next handshakes timed out (`uring`).
    let dir = tempfile::tempdir().unwrap();
    make_dated_cert(dir.path(), "20200101000000Z", "20900101000000Z");
    let server = start_s_server(dir, true);
    let url = format!("https://localhost:{}/", server.port);
    let r = bench(&spec(url, 3, 1, false, trusting(&server)));
    assert_eq!(
        r.ok, 3,
        "{:?}; {:?}; handshakes {:?}",
        r.errors, r.tls, r.latency.tls_handshake
    );
}

#[test]
fn a_wrong_ca_is_a_certificate_error_and_insecure_accepts_any() {
    let nginx = start_nginx_tls("TLSv1.2 TLSv1.3");
    let other = tempfile::tempdir().unwrap();
    make_cert(other.path(), "other-");
    let url = format!("https://localhost:{}/empty.gif", nginx.port);
    let wrong = TlsOptions {
        cacert: Some(other.path().join("other-cert.pem").display().to_string()),
        ..TlsOptions::default()
    };
    let r = bench(&spec(url.clone(), 20, 2, true, wrong));
    assert_eq!(r.ok, 0);
    assert_eq!(
        r.errors.get(ErrorKind::TlsCertificate),
        20,
        "{:?}",
        r.errors
    );

    // The system roots do not know a self-signed certificate either.
    let r = bench(&spec(url.clone(), 5, 1, true, TlsOptions::default()));
    assert_eq!(r.errors.get(ErrorKind::TlsCertificate), 5, "{:?}", r.errors);

    let insecure = TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    };
    let r = bench(&spec(url, 50, 2, true, insecure));
    assert_eq!(r.ok, 50, "{:?}", r.errors);
}

#[test]
fn the_probe_speaks_tls_too() {
    let nginx = start_nginx_tls("TLSv1.2 TLSv1.3");
    let url = format!("https://localhost:{}/empty.gif", nginx.port);
    let mut s = spec(url.clone(), 0, 2, true, trusting(&nginx));
    s.stop = StopCondition::Duration { seconds: 1.5 };
    s.probe = Some(ProbeSpec {
        url,
        rate_per_s: 10.0,
    });
    let r = bench(&s);
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    let probe = r.probe.expect("probe results");
    assert!(probe.responses >= 5, "{probe:?}");
    assert_eq!(probe.errors.total(), 0, "{:?}", probe.errors);
}

#[test]
fn plain_http_on_the_tls_port_is_a_handshake_error() {
    // A server that answers anything with an HTTP/1.1 400 and closes, as nginx's plain
    // port does for a ClientHello.
    let server = support::serve_connections(|mut s| {
        let mut buf = [0u8; 1024];
        let _ = std::io::Read::read(&mut s, &mut buf);
        let _ = std::io::Write::write_all(
            &mut s,
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    });
    let url = format!("https://127.0.0.1:{}/", server.addr.port());
    let insecure = TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    };
    let r = bench(&spec(url, 10, 2, true, insecure));
    assert_eq!(r.errors.get(ErrorKind::TlsHandshake), 10, "{:?}", r.errors);
}

#[test]
fn silence_during_or_after_the_handshake_is_named_not_a_hang() {
    // Accepts, reads the ClientHello, never answers: the handshake times out.
    let silent = support::serve_connections(|mut s| {
        let mut buf = [0u8; 1024];
        let _ = std::io::Read::read(&mut s, &mut buf);
        std::thread::sleep(Duration::from_secs(20));
    });
    let insecure = TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    };
    let mut s = spec(
        format!("https://127.0.0.1:{}/", silent.addr.port()),
        2,
        2,
        true,
        insecure.clone(),
    );
    s.connect_timeout_ms = 300;
    let began = Instant::now();
    let r = bench(&s);
    assert_eq!(r.errors.get(ErrorKind::TlsHandshake), 2, "{:?}", r.errors);
    // 300 ms each, not the server's 20 s of silence (room for a loaded machine).
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );

    // openssl s_server finishes the handshake and then never answers the request.
    let dir = tempfile::tempdir().unwrap();
    make_cert(dir.path(), "");
    let server = start_s_server(dir, false);
    let port = server.port;
    let mut s = spec(format!("https://127.0.0.1:{port}/"), 1, 1, true, insecure);
    s.timeout_ms = 300;
    let r = bench(&s);
    assert_eq!(r.errors.get(ErrorKind::RequestTimeout), 1, "{:?}", r.errors);
    assert_eq!(r.tls.map(|t| t.full_handshakes), Some(1));
}

#[test]
fn a_stalled_handshake_is_bounded_by_the_connect_timeout_not_the_request_timeout() {
    // Accepts TCP, reads the ClientHello, never answers; holds the socket far past any
    // deadline below, so only the client's own deadline can end the handshake.
    let silent = support::serve_connections(|mut s| {
        let mut buf = [0u8; 1024];
        let _ = std::io::Read::read(&mut s, &mut buf);
        std::thread::sleep(Duration::from_secs(60));
    });
    let insecure = TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    };
    let url = format!("https://127.0.0.1:{}/", silent.addr.port());
    for http2 in [false, true] {
        // A short --connect-timeout and a long --timeout: the handshake ends at the first.
        let mut s = spec(url.clone(), 1, 1, true, insecure.clone());
        s.http2 = http2;
        s.connect_timeout_ms = 300;
        s.timeout_ms = 60_000;
        let began = Instant::now();
        let r = bench(&s);
        let took = began.elapsed();
        assert_eq!(r.errors.get(ErrorKind::TlsHandshake), 1, "{:?}", r.errors);
        assert_eq!(r.errors.total(), 1, "h2 {http2}: {:?}", r.errors);
        assert!(took < Duration::from_secs(10), "h2 {http2}: took {took:?}");

        // A long --connect-timeout and a short --timeout: --timeout does not cut the
        // handshake short (it counts from the request's send), the connect timeout ends it.
        let mut s = spec(url.clone(), 1, 1, true, insecure.clone());
        s.http2 = http2;
        s.connect_timeout_ms = 1_500;
        s.timeout_ms = 100;
        let began = Instant::now();
        let r = bench(&s);
        let took = began.elapsed();
        assert_eq!(r.errors.get(ErrorKind::TlsHandshake), 1, "{:?}", r.errors);
        assert_eq!(r.errors.get(ErrorKind::RequestTimeout), 0, "{:?}", r.errors);
        assert!(
            took >= Duration::from_millis(1_200) && took < Duration::from_secs(10),
            "h2 {http2}: took {took:?}"
        );
    }
}
