//! The command line over HTTPS against real nginx with a self-signed certificate (made with
//! the openssl CLI): `bench --cacert` with the TLS row, counts and JSON names; `--insecure`;
//! `--no-tls-resume`; `ab` and `http_load` with https:// URLs (like the originals, they do
//! not check the certificate).

use serde_json::Value;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

struct Nginx {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn start_nginx_tls() -> Nginx {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .arg("ec_paramgen_curve:P-256")
        .args(["-nodes", "-days", "30", "-subj", "/CN=localhost", "-addext"])
        .arg("subjectAltName=DNS:localhost,IP:127.0.0.1")
        .arg("-keyout")
        .arg(root.join("key.pem"))
        .arg("-out")
        .arg(root.join("cert.pem"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl is installed");
    assert!(status.success());
    std::fs::create_dir(root.join("www")).unwrap();
    std::fs::write(root.join("www/empty.gif"), [0u8; 43]).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for (p, mode) in [("", 0o755), ("www", 0o755), ("www/empty.gif", 0o644)] {
        let path = root.join(p);
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let port = webtune_testkit::free_port();
    let d = root.display();
    let conf = format!(
        "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 256; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/cb;\n  proxy_temp_path {d}/px;\n\
           fastcgi_temp_path {d}/fc;\n  uwsgi_temp_path {d}/uw;\n  scgi_temp_path {d}/sc;\n\
           ssl_session_cache shared:SSL:1m; ssl_protocols TLSv1.2 TLSv1.3;\n\
           server {{ listen 127.0.0.1:{port} ssl; root {d}/www;\n\
             ssl_certificate {d}/cert.pem; ssl_certificate_key {d}/key.pem; }}\n}}\n"
    );
    std::fs::write(root.join("nginx.conf"), conf).unwrap();
    let child = Command::new("nginx")
        .arg("-p")
        .arg(root)
        .arg("-c")
        .arg(root.join("nginx.conf"))
        .arg("-e")
        .arg(root.join("error.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx is installed (apt-get install nginx-light)");
    let nginx = Nginx { child, port, dir };
    assert!(
        webtune_testkit::wait_for_port(([127, 0, 0, 1], port).into(), Duration::from_secs(10)),
        "nginx did not listen"
    );
    nginx
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
