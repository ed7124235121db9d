//! The drop-in front ends and `report --format`, end to end: `webtune ab` and
//! `webtune http_load` load a real server on loopback, and their output is checked line by
//! line against layouts captured from the real tools (tests/data), and number by number
//! against the JSON result of the same run.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use webtune_model::RunResult;

fn webtune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .output()
        .expect("the webtune binary runs")
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "webtune failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("webtune-frontends-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The embedded target on a free loopback port.
fn embedded() -> webtune_serve::EmbeddedServer {
    webtune_serve::EmbeddedServer::start(webtune_serve::ServeOptions {
        workers: 1,
        ..Default::default()
    })
    .expect("embedded target starts")
}

/// A one-request-per-connection server whose body length cycles through 100, 101, 102
/// bytes: a dynamic page as seed 001 saw it (ab calls these "Failed (Length)").
fn varying_length_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let served = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let n = served.fetch_add(1, Ordering::Relaxed);
            std::thread::spawn(move || answer_once(stream, 100 + n % 3));
        }
    });
    format!("http://{addr}/vary")
}

fn answer_once(mut stream: TcpStream, body_len: u64) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let response = format!(
        "HTTP/1.0 200 OK\r\nServer: vary-test\r\nContent-Length: {body_len}\r\nConnection: close\r\n\r\n{}",
        "x".repeat(body_len as usize)
    );
    let _ = stream.write_all(response.as_bytes());
}

/// Split a line into tokens with their start and end columns.
fn tokens(line: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c == ' ', start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((s, i, &line[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, line.len(), &line[s..]));
    }
    out
}

/// Replace numbers (integers, decimals, %g exponents) by "N".
fn numbers_to_n(token: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = token.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (chars[i] == '.' && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit()))
                    || (chars[i] == 'e'
                        && matches!(chars.get(i + 1), Some('+') | Some('-'))
                        && chars.get(i + 2).is_some_and(|c| c.is_ascii_digit()))
                    || ((chars[i] == '+' || chars[i] == '-') && i > 0 && chars[i - 1] == 'e'))
            {
                i += 1;
            }
            out.push('N');
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// Labels whose value is free text that differs between servers.
const FREE_VALUE_LABELS: [&str; 3] = ["Server Software:", "Document Path:", "Server Hostname:"];

/// A line's shape: its words with numbers as "N" and, for ab's right-aligned tables, the
/// column where each number ends; for "Label:   value" lines the column where the value
/// starts.
fn shape(line: &str) -> (String, Vec<usize>) {
    if let Some(label) = FREE_VALUE_LABELS.iter().find(|l| line.starts_with(*l)) {
        return (format!("{label} V"), vec![]);
    }
    let toks = tokens(line);
    let words: Vec<String> = toks.iter().map(|t| numbers_to_n(t.2)).collect();
    let is_table = ["Connect:", "Processing:", "Waiting:", "Total:"]
        .iter()
        .any(|l| line.starts_with(l))
        || line.trim_start().starts_with(|c: char| c.is_ascii_digit()) && line.contains('%');
    let columns = if is_table {
        toks.iter().skip(1).map(|t| t.1).collect()
    } else if line.contains(':') && toks.len() >= 2 && !line.starts_with(' ') {
        // the value column of "Label:      value"
        let colon_token = toks.iter().position(|t| t.2.ends_with(':')).unwrap_or(0);
        toks.get(colon_token + 1)
            .map(|t| vec![t.0])
            .unwrap_or_default()
    } else {
        vec![]
    };
    (words.join(" "), columns)
}

/// The lines from "Server Software:" on (ab's report proper).
fn ab_report(text: &str) -> Vec<&str> {
    let start = text
        .lines()
        .position(|l| l.starts_with("Server Software:"))
        .unwrap_or_else(|| panic!("no ab report in:\n{text}"));
    text.lines().skip(start).collect()
}

fn assert_same_layout(ours: &[&str], captured: &[&str]) {
    assert_eq!(
        ours.len(),
        captured.len(),
        "line count differs\nours:\n{}\ncaptured:\n{}",
        ours.join("\n"),
        captured.join("\n")
    );
    for (i, (a, b)) in ours.iter().zip(captured).enumerate() {
        assert_eq!(
            shape(a),
            shape(b),
            "line {} differs:\nours:     {a:?}\ncaptured: {b:?}",
            i + 1
        );
    }
}

fn field<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} in:\n{text}"))
        .trim()
}

#[test]
fn ab_keepalive_layout_matches_captured_ab() {
    let server = embedded();
    let url = format!("http://{}/bytes/12", server.local_addr());
    let out = stdout_of(&webtune(&[
        "ab", "-k", "-q", "-n", "2000", "-c", "10", &url,
    ]));
    assert_same_layout(&ab_report(&out), &ab_report(&data("ab_keepalive.txt")));
    assert_eq!(field(&out, "Complete requests:"), "2000");
    assert_eq!(field(&out, "Keep-Alive requests:"), "2000");
    server.shutdown();
}

#[test]
fn ab_length_failures_layout_and_variable_length() {
    let url = varying_length_server();
    let out = stdout_of(&webtune(&["ab", "-n", "200", "-c", "4", &url]));
    assert_same_layout(
        &ab_report(&out),
        &ab_report(&data("ab_length_failures.txt")),
    );
    // 100, 101, 102 cycling: about two thirds differ from the first response's length
    let failed: u64 = field(&out, "Failed requests:").parse().unwrap();
    assert!((100..=160).contains(&failed), "{failed}");
    assert!(out.contains(&format!(
        "   (Connect: 0, Receive: 0, Length: {failed}, Exceptions: 0)"
    )));

    let out = stdout_of(&webtune(&[
        "ab", "-l", "-S", "-d", "-n", "200", "-c", "4", &url,
    ]));
    assert_same_layout(
        &ab_report(&out),
        &ab_report(&data("ab_variable_no_confidence.txt")),
    );
    assert_eq!(field(&out, "Failed requests:"), "0");
}

#[test]
fn ab_non_2xx_layout() {
    let server = embedded();
    let url = format!("http://{}/status/404", server.local_addr());
    let out = stdout_of(&webtune(&["ab", "-n", "50", "-c", "2", &url]));
    assert_same_layout(&ab_report(&out), &ab_report(&data("ab_non2xx.txt")));
    // up to 150 requests ab reports its progress on the same line, then two blank lines
    let from_benchmarking = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("Benchmarking"))
            .take(3)
            .map(str::to_string)
            .collect()
    };
    assert_eq!(
        from_benchmarking(&out),
        from_benchmarking(&data("ab_non2xx.txt"))
    );
    assert_eq!(field(&out, "Non-2xx responses:"), "50");
    server.shutdown();
}

#[test]
fn ab_layout_carries_the_json_counts_and_percentiles() {
    let server = embedded();
    let dir = temp_dir("ab-json");
    let json = dir.join("r.json");
    let url = format!("http://{}/bytes/100", server.local_addr());
    let out = stdout_of(&webtune(&[
        "ab",
        "-q",
        "-n",
        "500",
        "-c",
        "5",
        "--json",
        json.to_str().unwrap(),
        &url,
    ]));
    server.shutdown();
    let r = RunResult::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        r.spec.stop,
        webtune_model::StopCondition::Requests { count: 500 }
    );
    assert_eq!(field(&out, "Complete requests:"), r.attempted().to_string());
    assert_eq!(field(&out, "Failed requests:"), "0");
    assert_eq!(
        field(&out, "Total transferred:"),
        format!("{} bytes", r.bytes_received)
    );
    assert_eq!(
        field(&out, "HTML transferred:"),
        format!("{} bytes", r.body_bytes)
    );
    assert_eq!(field(&out, "Document Length:"), "100 bytes");
    assert_eq!(
        field(&out, "Requests per second:"),
        format!("{:.2} [#/sec] (mean)", r.requests_per_s)
    );
    let round = |us: u64| ((us + 500) / 1000).to_string();
    let h = r.histograms.total.inner();
    for (label, expected) in [
        ("  50%", round(r.latency.total.p50_us)),
        ("  66%", round(h.value_at_percentile(66.0))),
        ("  75%", round(r.latency.total.p75_us)),
        ("  90%", round(r.latency.total.p90_us)),
        ("  95%", round(r.latency.total.p95_us)),
        ("  99%", round(r.latency.total.p99_us)),
    ] {
        assert_eq!(field(&out, label), expected, "{label}");
    }
    assert_eq!(
        field(&out, " 100%"),
        format!("{} (longest request)", round(r.latency.total.max_us))
    );
    // the saved result renders to the same ab report
    let again = stdout_of(&webtune(&[
        "report",
        json.to_str().unwrap(),
        "--format",
        "ab",
    ]));
    assert_eq!(ab_report(&again), ab_report(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ab_writes_e_and_g_files_like_ab() {
    let server = embedded();
    let dir = temp_dir("ab-files");
    let (e, g) = (dir.join("p.csv"), dir.join("g.tsv"));
    let url = format!("http://{}/empty.gif", server.local_addr());
    stdout_of(&webtune(&[
        "ab",
        "-q",
        "-n",
        "100",
        "-c",
        "2",
        "-e",
        e.to_str().unwrap(),
        "-g",
        g.to_str().unwrap(),
        &url,
    ]));
    server.shutdown();
    let csv = std::fs::read_to_string(&e).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "Percentage served,Time in ms");
    assert_eq!(lines.len(), 102);
    assert!(lines[51].starts_with("50,"));
    let tsv = std::fs::read_to_string(&g).unwrap();
    let rows: Vec<&str> = tsv.lines().collect();
    assert_eq!(rows[0], "starttime\tseconds\tctime\tdtime\tttime\twait");
    assert_eq!(rows.len(), 101);
    assert!(rows[1..].iter().all(|r| r.split('\t').count() == 6));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ab_refuses_unsupported_options_by_name() {
    for (flag, value) in [
        ("-X", Some("proxy:3128")),
        ("-w", None),
        ("-b", Some("4096")),
    ] {
        let mut args = vec!["ab", flag];
        args.extend(value);
        args.push("http://127.0.0.1:9/");
        let out = webtune(&args);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("ab option {flag} ")), "{err}");
        assert!(err.contains("not supported"), "{err}");
    }
}

#[test]
fn http_load_layout_and_numbers() {
    let server = embedded();
    let dir = temp_dir("http-load");
    let urls = dir.join("urls.txt");
    std::fs::write(&urls, format!("http://{}/empty.gif\n", server.local_addr())).unwrap();
    let json = dir.join("r.json");
    let out = stdout_of(&webtune(&[
        "http_load",
        "-parallel",
        "4",
        "-fetches",
        "300",
        "-json",
        json.to_str().unwrap(),
        urls.to_str().unwrap(),
    ]));
    server.shutdown();
    let captured: Vec<String> = data("http_load_layout.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let ours: Vec<&str> = out.lines().take(captured.len()).collect();
    for (a, b) in ours.iter().zip(&captured) {
        assert_eq!(shape(a).0, shape(b).0, "ours {a:?} vs http_load {b:?}");
    }
    let r = RunResult::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        ours[0].starts_with("300 fetches, 4 max parallel, 12900 bytes, in "),
        "{}",
        ours[0]
    );
    assert_eq!(ours[1], "43 mean bytes/connection");
    assert_eq!(ours[6], "  code 200 -- 300");
    assert_eq!(
        r.connections_opened, 300,
        "http_load opens a connection per fetch"
    );
    // webtune's own percentiles beneath
    let rest: Vec<&str> = out.lines().skip(captured.len()).collect();
    assert!(rest.contains(&"webtune:"), "{out}");
    assert!(rest
        .iter()
        .any(|l| l.starts_with("Latency (ms)") && l.contains("p99.9")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn http_load_picks_urls_at_random_and_paces_with_rate() {
    let server = embedded();
    let dir = temp_dir("http-load-mix");
    let urls = dir.join("urls.txt");
    let base = format!("http://{}", server.local_addr());
    std::fs::write(&urls, format!("{base}/bytes/10\n{base}/bytes/30\n")).unwrap();
    let json = dir.join("r.json");
    let out = stdout_of(&webtune(&[
        "http_load",
        "-parallel",
        "4",
        "-fetches",
        "400",
        "-json",
        json.to_str().unwrap(),
        urls.to_str().unwrap(),
    ]));
    let r = RunResult::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r.responses, 400, "{out}");
    assert_eq!(r.by_name.len(), 2, "one breakdown per URL");
    for (name, named) in &r.by_name {
        // a fair coin over 400 fetches: far outside 120..280 would mean no random pick
        assert!(
            (120..=280).contains(&named.responses),
            "{name}: {}",
            named.responses
        );
    }
    // every fetch's body is 10 or 30 bytes: both must have been fetched
    assert!(
        r.body_bytes > 400 * 10 && r.body_bytes < 400 * 30,
        "{}",
        r.body_bytes
    );
    // lengths are compared per URL, as http_load does: two fixed sizes are no bad count
    assert!(!out.contains("bad byte counts"), "{out}");

    std::fs::write(&urls, format!("{base}/empty.gif\n")).unwrap();
    let out = stdout_of(&webtune(&[
        "http_load",
        "-rate",
        "200",
        "-seconds",
        "1",
        "-json",
        json.to_str().unwrap(),
        urls.to_str().unwrap(),
    ]));
    server.shutdown();
    let r = RunResult::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(r.spec.is_open_loop());
    // 200 fell due in the second: answered, or on a loaded machine still in flight at the
    // end (abandoned) or left unsent.
    let due = r.attempted() + r.abandoned + r.schedule.as_ref().map_or(0, |s| s.not_sent);
    assert!((150..=250).contains(&due), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn http_load_refuses_what_it_cannot_do() {
    let dir = temp_dir("http-load-refuse");
    let urls = dir.join("urls.txt");
    std::fs::write(&urls, "http://127.0.0.1:9/a\nhttp://127.0.0.1:9/b\n").unwrap();
    let out = webtune(&[
        "http_load",
        "-parallel",
        "2",
        "-fetches",
        "5",
        "-throttle",
        urls.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-throttle is not supported"));
    let out = webtune(&["http_load", "-parallel", "2", "-fetches", "5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("URL file"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_renders_a_saved_result_in_every_format() {
    let dir = temp_dir("report");
    let json = dir.join("r.json");
    let result = webtune_testkit::results::synthetic_result(500, &[900, 1_500, 20_000]);
    std::fs::write(&json, result.to_json_pretty()).unwrap();
    let path = json.to_str().unwrap();
    let text = stdout_of(&webtune(&["report", path]));
    assert!(text.contains("requests/s    50.00"), "{text}");
    let ab = stdout_of(&webtune(&["report", path, "--format", "ab"]));
    assert!(ab.starts_with("Server Software:        nginx/1.22.1\n"));
    let hl = stdout_of(&webtune(&["report", path, "--format", "http_load"]));
    assert!(hl.starts_with("505 fetches, 10 max parallel, "), "{hl}");
    let csv = stdout_of(&webtune(&["report", path, "--format", "csv"]));
    assert_eq!(csv.lines().count(), 2);
    let back = stdout_of(&webtune(&["report", path, "--format", "json"]));
    assert_eq!(RunResult::from_json(&back).unwrap(), result);
    let html_path = dir.join("r.html");
    stdout_of(&webtune(&[
        "report",
        path,
        "--html",
        html_path.to_str().unwrap(),
    ]));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("id=\"plot-latency-percentiles\""));
    let bad = webtune(&["report", path, "--format", "xml"]);
    assert_eq!(bad.status.code(), Some(2));
    let missing = webtune(&["report", dir.join("nope.json").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_puts_files_side_by_side_in_order() {
    let dir = temp_dir("compare");
    let mut before = webtune_testkit::results::synthetic_result(1000, &[5_000]);
    before.requests_per_s = 3.63;
    let mut after = webtune_testkit::results::synthetic_result(1000, &[4_000]);
    after.requests_per_s = 4.47;
    let (a, b) = (dir.join("before.json"), dir.join("after.json"));
    std::fs::write(&a, before.to_json_pretty()).unwrap();
    std::fs::write(&b, after.to_json_pretty()).unwrap();
    let out = stdout_of(&webtune(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]));
    let rps = out.lines().find(|l| l.starts_with("requests/s")).unwrap();
    assert_eq!(
        rps.split_whitespace().collect::<Vec<_>>(),
        ["requests/s", "3.63", "4.47", "+23.1%"]
    );
    let reversed = stdout_of(&webtune(&[
        "compare",
        b.to_str().unwrap(),
        a.to_str().unwrap(),
    ]));
    let rps = reversed
        .lines()
        .find(|l| l.starts_with("requests/s"))
        .unwrap();
    assert_eq!(
        rps.split_whitespace().collect::<Vec<_>>(),
        ["requests/s", "4.47", "3.63", "-18.8%"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_runs_every_level_and_saves_them() {
    let server = embedded();
    let dir = temp_dir("sweep");
    let json = dir.join("s.json");
    let url = format!("http://{}/empty.gif", server.local_addr());
    let out = stdout_of(&webtune(&[
        "sweep",
        &url,
        "-c",
        "1,2,4",
        "-d",
        "300ms",
        "--json",
        json.to_str().unwrap(),
    ]));
    server.shutdown();
    let sweep =
        webtune_model::sweep::SweepResult::from_json(&std::fs::read_to_string(&json).unwrap())
            .unwrap();
    let levels: Vec<f64> = sweep.levels.iter().map(|l| l.level).collect();
    assert_eq!(levels, [1.0, 2.0, 4.0]);
    assert!(sweep.levels.iter().all(|l| l.result.responses > 0));
    assert_eq!(sweep.levels[2].result.spec.connections, 4);
    for level in ["1", "2", "4"] {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().next() == Some(level)),
            "no row for {level}:\n{out}"
        );
    }
    assert!(out.contains("requests/s") && out.contains("p99 (ms)"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_over_rates_is_open_loop_with_warmup() {
    let server = embedded();
    let dir = temp_dir("sweep-rates");
    let json = dir.join("s.json");
    let url = format!("http://{}/empty.gif", server.local_addr());
    let out = stdout_of(&webtune(&[
        "sweep",
        &url,
        "--rates",
        "100,200",
        "-d",
        "600ms",
        "--warmup",
        "100ms",
        "--rate-connections",
        "8",
        "--json",
        json.to_str().unwrap(),
    ]));
    server.shutdown();
    let sweep =
        webtune_model::sweep::SweepResult::from_json(&std::fs::read_to_string(&json).unwrap())
            .unwrap();
    assert_eq!(sweep.variable, webtune_model::sweep::SweepVariable::Rate);
    let levels: Vec<f64> = sweep.levels.iter().map(|l| l.level).collect();
    assert_eq!(levels, [100.0, 200.0]);
    for l in &sweep.levels {
        assert!(l.result.spec.is_open_loop());
        assert_eq!(l.result.spec.warmup_s, 0.1);
        assert_eq!(l.result.spec.connections, 8);
    }
    assert!(out.contains("rate (req/s)"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_with_repeats_gives_intervals_and_verdicts() {
    let dir = temp_dir("compare-repeats");
    // Two configurations measured five times each: A and A' differ only by noise, B is
    // clearly faster.
    let runs = |rates: &[u64]| {
        webtune_report::with_repeats(
            rates
                .iter()
                .map(|&n| webtune_testkit::results::synthetic_result(n, &[1_000]))
                .collect(),
        )
        .unwrap()
    };
    let a = runs(&[1000, 1040, 980, 1010, 990]);
    let a_again = runs(&[1020, 970, 1005, 995, 1030]);
    let b = runs(&[1400, 1380, 1420, 1390, 1410]);
    let paths: Vec<PathBuf> = ["a.json", "a2.json", "b.json"]
        .iter()
        .map(|n| dir.join(n))
        .collect();
    for (path, r) in paths.iter().zip([&a, &a_again, &b]) {
        std::fs::write(path, r.to_json_pretty()).unwrap();
    }
    let p = |i: usize| paths[i].to_str().unwrap().to_string();
    let out = stdout_of(&webtune(&["compare", &p(0), &p(1), &p(2)]));
    let section = |name: &str| {
        let start = out
            .find(&format!("{name} vs a.json: 95% confidence interval"))
            .unwrap_or_else(|| panic!("no interval for {name}:\n{out}"));
        out[start..]
            .lines()
            .find(|l| l.starts_with("requests/s"))
            .unwrap()
            .to_string()
    };
    assert!(
        section("a2.json").ends_with("no significant difference"),
        "{out}"
    );
    assert!(section("b.json").ends_with("better"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ab_fails_like_ab_when_no_request_gets_a_response() {
    let port = webtune_testkit::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let out = webtune(&["ab", "-n", "5", "-c", "1", &url]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no request got a response"), "{stderr}");
    assert!(stderr.contains("5 connect refused"), "{stderr}");
    // What was measured is still printed, in ab's layout.
    assert!(String::from_utf8_lossy(&out.stdout).contains("Complete requests:"));
}

#[test]
fn ab_keepalive_requests_counts_responses_the_server_kept_alive() {
    // A server that closes every connection: no response was kept alive, as ab reports it.
    let closing = webtune_serve::EmbeddedServer::start(webtune_serve::ServeOptions {
        workers: 1,
        keepalive_timeout: Duration::ZERO,
        ..Default::default()
    })
    .expect("embedded target starts");
    let url = format!("http://{}/bytes/12", closing.local_addr());
    let out = stdout_of(&webtune(&["ab", "-k", "-n", "40", "-c", "2", &url]));
    closing.shutdown();
    assert_eq!(field(&out, "Complete requests:"), "40");
    assert!(out.contains("\nKeep-Alive requests:    0\n"), "{out}");
    // One that answers "Connection: close" explicitly.
    let url = varying_length_server();
    let out = stdout_of(&webtune(&["ab", "-k", "-l", "-n", "30", "-c", "2", &url]));
    assert_eq!(field(&out, "Complete requests:"), "30");
    assert_eq!(field(&out, "Keep-Alive requests:"), "0");

    // Keep-alive on, non-2xx answers: every response kept alive, and ab's line order
    // (Non-2xx responses before Keep-Alive requests).
    let server = embedded();
    let url = format!("http://{}/status/404", server.local_addr());
    let out = stdout_of(&webtune(&["ab", "-k", "-n", "60", "-c", "3", &url]));
    server.shutdown();
    assert_eq!(field(&out, "Complete requests:"), "60");
    assert!(
        out.contains("\nNon-2xx responses:      60\nKeep-Alive requests:    60\n"),
        "{out}"
    );
}

#[test]
fn ab_v_prints_a_version_and_exits_0() {
    let out = webtune(&["ab", "-V"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout_of(&out);
    assert!(
        text.starts_with(&format!("This is webtune {}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(!text.contains("Benchmarking"), "{text}");
}

#[test]
fn http_load_rate_reports_the_connections_actually_used_at_once() {
    let server = embedded();
    let dir = temp_dir("http-load-peak");
    let urls = dir.join("urls.txt");
    std::fs::write(&urls, format!("http://{}/empty.gif\n", server.local_addr())).unwrap();
    let json = dir.join("r.json");
    let out = stdout_of(&webtune(&[
        "http_load",
        "-rate",
        "50",
        "-seconds",
        "1",
        "-json",
        json.to_str().unwrap(),
        urls.to_str().unwrap(),
    ]));
    server.shutdown();
    let r = RunResult::from_json(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let first = out.lines().next().unwrap_or_default();
    let parallel: u64 = first
        .split(", ")
        .nth(1)
        .and_then(|p| p.strip_suffix(" max parallel"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no max parallel in {first:?}"));
    assert_eq!(parallel, r.peak_open_connections, "{out}");
    // One fetch every 20 ms, each done well inside that on loopback: the connections in use
    // at once are a handful, never the open-loop cap of 1000; at most the run's 50 fetches
    // even if a loaded machine stalls them all.
    assert!((1..=50).contains(&parallel), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_quiet_and_repeat_work_as_in_bench() {
    let server = embedded();
    let url = format!("http://{}/empty.gif", server.local_addr());
    let out = webtune(&[
        "sweep", &url, "-c", "1,2", "-n", "20", "--repeat", "2", "-q", "--json", "-",
    ]);
    server.shutdown();
    let stdout = stdout_of(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.trim().is_empty(), "quiet sweep wrote: {stderr}");
    let sweep = webtune_model::sweep::SweepResult::from_json(&stdout).expect("stdout is the JSON");
    assert_eq!(sweep.levels.len(), 2);
    for level in &sweep.levels {
        assert_eq!(level.result.repeats.len(), 2, "each level ran twice");
        assert_eq!(level.result.responses, 40);
    }
}
