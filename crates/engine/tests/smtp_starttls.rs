//! SMTP STARTTLS through the engine's TLS layer: a scripted server (rustls on the server
//! side, a self-signed certificate made by openssl) that offers STARTTLS, upgrades, and
//! serves the rest of the session encrypted; and one that does not offer it, which fails
//! every session as `tls_handshake` instead of falling back to plaintext.

mod support;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use support::run;
use support::serve_connections;
use webtune_engine::smtp::Mailboxes;
use webtune_engine::{RunControl, Workload};
use webtune_model::{ErrorKind, RunSpec, SmtpSpec, StopCondition, TlsOptions};
use webtune_testkit::servers::make_cert;

fn server_config(dir: &std::path::Path) -> Arc<ServerConfig> {
    make_cert(dir, "");
    let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(dir.join("cert.pem"))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join("key.pem")).unwrap();
    Arc::new(
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    )
}

/// One line (without CRLF) from `r`, bytes after it kept in `pending`; None at the end.
fn read_line<R: Read>(r: &mut R, pending: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(at) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=at).collect();
            return Some(String::from_utf8_lossy(&line).trim_end().to_string());
        }
        let mut chunk = [0u8; 4096];
        match r.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The session after EHLO: MAIL, RCPT, DATA, QUIT, each line logged with `tag`.
fn serve_mail<S: Read + Write>(
    s: &mut S,
    pending: &mut Vec<u8>,
    log: &Mutex<Vec<String>>,
    tag: &str,
) {
    while let Some(line) = read_line(s, pending) {
        log.lock().unwrap().push(format!("{tag} {line}"));
        let reply: &[u8] = match line.to_ascii_uppercase().as_str() {
            l if l.starts_with("EHLO") => b"250-test\r\n250 PIPELINING\r\n",
            "DATA" => {
                let _ = s.write_all(b"354 go\r\n");
                while read_line(s, pending).is_some_and(|l| l != ".") {}
                b"250 queued\r\n"
            }
            "QUIT" => {
                let _ = s.write_all(b"221 bye\r\n");
                let _ = s.flush();
                return;
            }
            _ => b"250 ok\r\n",
        };
        let _ = s.write_all(reply);
        let _ = s.flush();
    }
}

fn session(mut s: TcpStream, tls: Option<Arc<ServerConfig>>, log: &Mutex<Vec<String>>) {
    let mut pending = Vec::new();
    let _ = s.write_all(b"220 test ESMTP\r\n");
    let Some(ehlo) = read_line(&mut s, &mut pending) else {
        return;
    };
    log.lock().unwrap().push(format!("plain {ehlo}"));
    let Some(config) = tls else {
        let _ = s.write_all(b"250-test\r\n250 PIPELINING\r\n");
        return serve_mail(&mut s, &mut pending, log, "plain");
    };
    let _ = s.write_all(b"250-test\r\n250-STARTTLS\r\n250 PIPELINING\r\n");
    match read_line(&mut s, &mut pending) {
        Some(l) if l.eq_ignore_ascii_case("STARTTLS") => {}
        _ => return,
    }
    let _ = s.write_all(b"220 ready to start TLS\r\n");
    let conn = ServerConnection::new(config).unwrap();
    let mut tls = StreamOwned::new(conn, s);
    serve_mail(&mut tls, &mut pending, log, "tls");
}

fn spec(addr: std::net::SocketAddr, cacert: Option<String>) -> RunSpec {
    RunSpec {
        url: format!("smtp://{addr}"),
        connections: 2,
        threads: 1,
        stop: StopCondition::Requests { count: 10 },
        timeout_ms: 2_000,
        connect_timeout_ms: 2_000,
        tls: TlsOptions {
            cacert,
            ..TlsOptions::default()
        },
        smtp: Some(SmtpSpec {
            starttls: true,
            per_connection: 2,
            ..SmtpSpec::default()
        }),
        ..RunSpec::default()
    }
}

fn run_it(spec: &RunSpec) -> webtune_model::RunResult {
    let workload = Workload::mailboxes(Mailboxes::generated(10, "example.com"), "g");
    run(spec, &workload, &RunControl::new(), &mut |_| {}).expect("run")
}

#[test]
fn starttls_upgrades_the_session_and_mail_goes_encrypted() {
    let dir = tempfile::tempdir().unwrap();
    let config = server_config(dir.path());
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = Arc::clone(&log);
    let server = serve_connections(move |s| session(s, Some(Arc::clone(&config)), &log2));
    let cert = dir.path().join("cert.pem").display().to_string();
    let r = run_it(&spec(server.addr, Some(cert)));
    assert_eq!((r.responses, r.ok), (10, 10), "{:?}", r.errors);
    assert_eq!(r.protocol.as_deref(), Some("smtp+starttls"));
    let sum = r.smtp.unwrap();
    assert_eq!(sum.starttls.histogram.count(), sum.sessions);
    // Two messages a session: five sessions, six when both connections share the last two.
    assert!((5..=6).contains(&sum.sessions), "{}", sum.sessions);
    let tls = r.tls.unwrap();
    assert_eq!(tls.full_handshakes + tls.resumed_handshakes, sum.sessions);
    let log = log.lock().unwrap();
    assert!(
        log.iter().any(|l| l.starts_with("tls EHLO")),
        "EHLO again after STARTTLS"
    );
    assert!(log.iter().all(|l| !l.starts_with("plain MAIL")), "{log:?}");
    assert_eq!(log.iter().filter(|l| l.starts_with("tls MAIL")).count(), 10);
}

#[test]
fn a_server_without_starttls_fails_rather_than_sending_in_the_clear() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = Arc::clone(&log);
    let server = serve_connections(move |s| session(s, None, &log2));
    let r = run_it(&spec(server.addr, None));
    assert_eq!(r.responses, 0);
    assert_eq!(r.errors.get(ErrorKind::TlsHandshake), 10, "{:?}", r.errors);
    assert!(log.lock().unwrap().iter().all(|l| !l.contains("MAIL")));
}
