//! The TLS stacks for real: nginx with ssl, Apache event with mod_ssl and mod_http2, nginx
//! terminating TLS in front of Apache event. Each starts with its self-signed certificate,
//! answers HTTPS (checked by the engine with `--cacert` set to the lab's certificate), and
//! its TLS parameters change what a client sees: session resumption on or off, the
//! protocol version, HTTP/2 offered by ALPN.

use std::time::Duration;
use webtune_engine::{run, RunControl, Workload};
use webtune_lab::{settings_for, RunningStack, StackKind, StartOptions};
use webtune_model::{RunResult, RunSpec, StopCondition, TlsOptions};

fn start(stack: &str, sets: &[&str]) -> RunningStack {
    let kind = StackKind::from_name(stack).expect("known stack");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let settings = settings_for(kind, &sets).expect("valid settings");
    let options = StartOptions {
        stop_grace: Duration::from_secs(3),
        ..StartOptions::default()
    };
    RunningStack::start(kind, &settings, options)
        .unwrap_or_else(|e| panic!("{stack} did not start: {e}"))
}

/// `n` requests over new connections (each a handshake), trusting the lab's certificate.
fn load(stack: &RunningStack, path: &str, n: u64) -> RunResult {
    let spec = RunSpec {
        url: format!("{}{path}", stack.base_url()),
        connections: 2,
        threads: 1,
        stop: StopCondition::Requests { count: n },
        keepalive: false,
        tls: TlsOptions {
            cacert: stack.certificate().map(|p| p.display().to_string()),
            ..TlsOptions::default()
        },
        ..RunSpec::default()
    };
    run(&spec, &Workload::request(), &RunControl::new(), &mut |_| {}).expect("run starts")
}

fn config(stack: &RunningStack, name: &str) -> String {
    std::fs::read_to_string(stack.private_dir().join(name)).unwrap()
}

#[test]
fn nginx_tls_resumes_by_default_and_not_without_tickets_or_cache() {
    let stack = start("nginx-tls", &["worker_processes=1"]);
    assert!(stack.base_url().starts_with("https://127.0.0.1:"));
    let r = load(&stack, "/empty.gif", 60);
    assert_eq!(r.ok, 60, "{:?}", r.errors);
    let tls = r.tls.unwrap();
    assert!(tls.resumed_handshakes >= 50, "{tls:?}");
    assert_eq!(tls.version.as_deref(), Some("TLSv1.3"));
    stack.stop().unwrap();

    let stack = start(
        "nginx-tls",
        &[
            "worker_processes=1",
            "ssl_session_tickets=off",
            "ssl_protocols=TLSv1.2",
            "http2=on",
        ],
    );
    let conf = config(&stack, "nginx.conf");
    assert!(conf.contains(" ssl http2;"), "{conf}");
    assert!(conf.contains("ssl_session_cache none;"), "{conf}");
    let r = load(&stack, "/empty.gif", 30);
    assert_eq!(r.ok, 30, "{:?}", r.errors);
    let tls = r.tls.unwrap();
    assert_eq!((tls.full_handshakes, tls.resumed_handshakes), (30, 0));
    assert_eq!(tls.version.as_deref(), Some("TLSv1.2"));
    stack.stop().unwrap();
}

#[test]
fn apache_event_tls_serves_php_with_http2_offered() {
    let stack = start(
        "apache-event-tls",
        &["Protocols_h2=on", "H2MaxSessionStreams=50"],
    );
    let conf = config(&stack, "apache2.conf");
    assert!(conf.contains("LoadModule http2_module"), "{conf}");
    assert!(conf.contains("H2MaxSessionStreams 50"), "{conf}");
    assert!(conf.contains("SSLSessionCache shmcb:"), "{conf}");
    let r = load(&stack, "/cpu/1", 20);
    assert_eq!(r.ok, 20, "{:?}", r.errors);
    let tls = r.tls.unwrap();
    assert!(tls.resumed_handshakes >= 10, "{tls:?}");
    // We offer only http/1.1, so the server picks it even with h2 on.
    assert_eq!(tls.alpn.as_deref(), Some("http/1.1"));
    stack.stop().unwrap();
}

#[test]
fn nginx_terminates_tls_in_front_of_apache_event() {
    let stack = start("nginx-apache-event-tls", &["frontend.ssl_session_cache=1"]);
    let r = load(&stack, "/cpu/1", 20);
    assert_eq!(r.ok, 20, "{:?}", r.errors);
    // The backend speaks plain HTTP: only the front has the certificate's directives.
    let conf = config(&stack, "nginx.conf");
    assert!(conf.contains("ssl_session_cache shared:SSL:1m;"), "{conf}");
    assert!(!config(&stack, "apache2.conf").contains("SSLEngine"));
    stack.stop().unwrap();
}
