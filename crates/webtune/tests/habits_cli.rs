//! The drop-ins' and bench's last habits (issue 26): `bench -q` that fails says so in one
//! line; http_load's option prefixes as http_load resolves them, `-jitter` without `-rate`
//! refused; "Length varies" names the request names it means.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn webtune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the webtune binary runs")
}

fn closed_port() -> u16 {
    webtune_testkit::free_port()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("webtune-habits-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn bench_quiet_against_a_closed_port_says_why_in_one_line() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let out = webtune(&["bench", "-q", "-n", "5", "-c", "1", &url]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("webtune: bench: no request got a response (")
            && lines[0].contains("connect refused"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "-q prints no summary");
}

/// A one-request-per-connection server: /vary's body length cycles 100, 101, 102 bytes,
/// every other path's is 50.
fn varying_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let served = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let served = served.clone();
            std::thread::spawn(move || answer_once(stream, &served));
        }
    });
    format!("http://{addr}")
}

fn answer_once(mut stream: TcpStream, served: &AtomicU64) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let len = if head.starts_with(b"GET /vary ") {
        100 + served.fetch_add(1, Ordering::Relaxed) % 3
    } else {
        50
    };
    let response = format!(
        "HTTP/1.0 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n{}",
        "x".repeat(len as usize)
    );
    let _ = stream.write_all(response.as_bytes());
}

#[test]
fn http_load_takes_option_prefixes_as_http_load_does() {
    let base = varying_server();
    let dir = temp_dir("prefix");
    let urls = dir.join("urls.txt");
    std::fs::write(&urls, format!("{base}/vary\n{base}/fixed\n")).unwrap();
    let json = dir.join("r.json");
    let urls = urls.to_str().unwrap();
    // -p is -parallel (not -proxy), -f -fetches, -j... is -json only when spelt past -j.
    let out = webtune(&[
        "http_load",
        "-p",
        "2",
        "-f",
        "60",
        "-js",
        json.to_str().unwrap(),
        urls,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["spec"]["connections"], 2);
    assert_eq!(r["responses"], 60);
    // "Length varies" names the request names whose lengths varied (there is no table
    // "below" in http_load's layout), and not the one that did not.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Length varies"))
        .unwrap_or_else(|| panic!("no Length varies line: {stdout}"));
    assert!(!line.contains("below"), "{line}");
    assert!(line.contains("url1_vary "), "{line}");
    assert!(!line.contains("url2_fixed"), "{line}");

    // -s is -seconds (not -sip).
    let out = webtune(&["http_load", "-p", "1", "-s", "1", urls]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // -t could be -throttle (http_load's pick, not supported) or -timeout: refused, naming both.
    let out = webtune(&["http_load", "-p", "1", "-s", "1", "-t", "5", urls]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("-t is ambiguous") && stderr.contains("-throttle, -timeout"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // -jitter with -parallel is a usage error, as in http_load.
    let out = webtune(&["http_load", "-parallel", "1", "-jitter", "-s", "1", urls]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("-jitter goes with -rate only"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ab_v_2_prints_the_request_and_response_headers_as_ab_does() {
    let (_server, base) = support::embedded::serve();
    let url = format!("{}empty.gif", base.trim_end_matches('/').to_string() + "/");
    let out = webtune(&["ab", "-v", "2", "-n", "1", &url]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // ab's words and layout: the request head between "---" lines, then the response head.
    assert!(
        stdout.contains("INFO: GET header == \n---\nGET /empty.gif HTTP/1.0\r\n"),
        "{stdout}"
    );
    assert!(stdout.contains("\r\nHost: 127.0.0.1:"), "{stdout}");
    assert!(stdout.contains("\r\n\r\n\n---\n"), "{stdout}");
    assert!(
        stdout.contains("LOG: header received:\nHTTP/1.0 200 OK\r\n"),
        "{stdout}"
    );
    assert!(
        stdout
            .to_ascii_lowercase()
            .contains("content-type: image/gif\r\n"),
        "{stdout}"
    );
    // The report follows, counting the run's one request only.
    assert!(stdout.contains("Complete requests:      1\n"), "{stdout}");
}

#[test]
fn report_renders_capacity_and_tune_json_too() {
    let (_server, base) = support::embedded::serve();
    let url = format!("{}/empty.gif", base.trim_end_matches('/'));
    let dir = temp_dir("report-kinds");
    let capacity = dir.join("capacity.json");
    let tune = dir.join("tune.json");
    let out = webtune(&[
        "capacity",
        &url,
        "--slo",
        "p99<=1s",
        "--start-rate",
        "20",
        "-d",
        "1s",
        "--pause",
        "0s",
        "--max-steps",
        "2",
        "-q",
        "--json",
        capacity.to_str().unwrap(),
    ]);
    assert!(capacity.exists(), "{out:?}");
    let out = webtune(&[
        "tune",
        "external",
        "--apply",
        "true",
        "--param",
        "w=1..4",
        "--trials",
        "3",
        "--confirm",
        "0",
        "-q",
        "--json",
        tune.to_str().unwrap(),
        "--",
        "-c",
        "1",
        "-d",
        "1s",
        &url,
    ]);
    assert!(tune.exists(), "{out:?}");
    for (file, text_mark, schema) in [
        (&capacity, "Capacity search:", "webtune.capacity/1"),
        (&tune, "noise floor:", "webtune.tune/1"),
    ] {
        let file = file.to_str().unwrap();
        let out = webtune(&["report", file]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains(text_mark));
        let out = webtune(&["report", file, "--format", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["schema"], schema);
        let out = webtune(&["report", file, "--format", "html"]);
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("<!DOCTYPE html>"));
        // A layout that does not fit: one line that says which do.
        let out = webtune(&["report", file, "--format", "ab"]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("renders as text, json or html"), "{stderr}");
    }
    // compare takes runs only, and says what the file is.
    let out = webtune(&[
        "compare",
        capacity.to_str().unwrap(),
        tune.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is a capacity search"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
