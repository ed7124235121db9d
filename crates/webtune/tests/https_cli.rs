//! The command line over HTTPS against real nginx with a self-signed certificate (made with
//! the openssl CLI): `bench --cacert` with the TLS row, counts and JSON names; `--insecure`;
//! `--no-tls-resume`; `ab` and `http_load` with https:// URLs (like the originals, they do
//! not check the certificate).

use serde_json::Value;
use std::process::{Command, Output};
use webtune_testkit::servers::{make_cert, start_nginx, Server};

/// nginx, one worker, TLS 1.2 and 1.3 on a free loopback port with a self-signed
/// certificate (`dir`/cert.pem), a 43-byte file.
fn start_nginx_tls() -> Server {
    let dir = tempfile::tempdir().unwrap();
    make_cert(dir.path(), "");
    let port = webtune_testkit::free_port();
    let http = format!(
        "ssl_session_cache shared:SSL:1m; ssl_protocols TLSv1.2 TLSv1.3;\n\
         server {{ listen 127.0.0.1:{port} ssl; root {{d}}/www;\n\
           ssl_certificate {{d}}/cert.pem; ssl_certificate_key {{d}}/key.pem; }}"
    );
    start_nginx(dir, port, &[("empty.gif", &[0u8; 43])], &http)
}

fn webtune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .output()
        .expect("webtune runs")
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn bench_https_with_cacert_reports_handshakes_in_text_and_json() {
    let nginx = start_nginx_tls();
    let url = format!("https://localhost:{}/empty.gif", nginx.port);
    let cert = nginx.dir.path().join("cert.pem");
    let json = nginx.dir.path().join("r.json");
    let out = webtune(&[
        "bench",
        "-n",
        "300",
        "-c",
        "3",
        "-t",
        "1",
        "--no-keepalive",
        "--cacert",
        cert.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        &url,
    ]);
    let stdout = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("TLS handshake"), "{stdout}");
    assert!(stdout.contains("full handshakes"), "{stdout}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["ok"], 300);
    let full = r["tls"]["full_handshakes"].as_u64().unwrap();
    let resumed = r["tls"]["resumed_handshakes"].as_u64().unwrap();
    assert_eq!(full + resumed, 300);
    assert!(resumed > 0, "{}", r["tls"]);
    assert_eq!(r["latency"]["tls_handshake"]["count"], 300);
    assert_eq!(r["spec"]["tls"]["cacert"], cert.to_str().unwrap());
    assert_eq!(r["errors"]["tls_certificate"], 0);

    // --no-tls-resume: every connection pays the full handshake.
    let out = webtune(&[
        "bench",
        "-n",
        "50",
        "-c",
        "1",
        "--no-keepalive",
        "--insecure",
        "--no-tls-resume",
        "--json",
        json.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["tls"]["full_handshakes"], 50);
    assert_eq!(r["tls"]["resumed_handshakes"], 0);
}

#[test]
fn ab_and_http_load_take_https_urls() {
    let nginx = start_nginx_tls();
    let url = format!("https://127.0.0.1:{}/empty.gif", nginx.port);
    let out = webtune(&["ab", "-n", "100", "-c", "2", &url]);
    let stdout = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("SSL/TLS Protocol:       TLSv1.3,"),
        "{stdout}"
    );
    assert!(stdout.contains("Complete requests:      100\n"), "{stdout}");
    assert!(stdout.contains("Failed requests:        0\n"), "{stdout}");

    let urls = nginx.dir.path().join("urls.txt");
    std::fs::write(&urls, format!("{url}\n")).unwrap();
    let out = webtune(&[
        "http_load",
        "-parallel",
        "2",
        "-fetches",
        "50",
        urls.to_str().unwrap(),
    ]);
    let stdout = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("code 200 -- 50"), "{stdout}");
}

#[test]
fn a_wrong_certificate_is_named_in_the_report() {
    let nginx = start_nginx_tls();
    let url = format!("https://localhost:{}/empty.gif", nginx.port);
    // No --cacert: the system roots do not know the lab's self-signed certificate.
    let out = webtune(&["bench", "-n", "5", "-c", "1", &url]);
    assert!(
        text(&out).contains("TLS certificate refused"),
        "{}",
        text(&out)
    );
    // ... with what to do about it, once, in the error summary.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("--cacert FILE").count(), 1, "{stdout}");
    assert_eq!(stdout.matches("--insecure").count(), 1, "{stdout}");
}
