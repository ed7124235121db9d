//! `--metrics-listen` against hostile and plain scrapers: a client that sends a byte now and
//! then, or ten that connect and say nothing, never hold the run past `-d` nor keep a real
//! scrape from an answer; the first SIGTERM stops the run and writes its JSON whatever the
//! scrapers do; and the figures are the whole run's (every worker thread's connections).

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::child::wait_exit;
use support::embedded::{serve, KillOnDrop};
use webtune_testkit::free_port;

const WEBTUNE: &str = env!("CARGO_BIN_EXE_webtune");

/// A bench of `args` with its metrics at `port`, writing JSON to `json`.
fn bench(args: &[&str], port: u16, json: &Path) -> KillOnDrop {
    let child = Command::new(WEBTUNE)
        .arg("bench")
        .args(args)
        .args([
            "-q",
            "--metrics-listen",
            &format!("127.0.0.1:{port}"),
            "--json",
        ])
        .arg(json)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    KillOnDrop(child)
}

/// Connect, retrying while the endpoint is not up yet.
fn connect(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => return s,
            Err(e) if Instant::now() > deadline => panic!("no metrics endpoint: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// GET /metrics; the whole answer, or None when it failed.
fn scrape(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.starts_with("HTTP/1.1 200 OK").then_some(text)
}

/// A client that sends one byte of a request head every 200 ms until told to stop.
fn dribbler(port: u16) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let mut s = connect(port);
    let flag = Arc::clone(&stop);
    let handle = std::thread::spawn(move || {
        for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: ".iter().cycle() {
            if flag.load(Ordering::SeqCst) || s.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    (stop, handle)
}

/// Wait for the child with a deadline; its exit status.
fn wait(child: &mut KillOnDrop, limit: Duration, what: &str) -> i32 {
    wait_exit(&mut child.0, limit)
        .unwrap_or_else(|| panic!("{what}: still running after {limit:?}"))
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the result is written"))
        .expect("complete JSON")
}

#[test]
fn slow_and_idle_scrapers_neither_hold_the_run_nor_starve_a_real_scrape() {
    let (_server, base) = serve();
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let started = Instant::now();
    let mut child = bench(
        &[&format!("{base}empty.gif"), "-d", "2s", "-c", "2"],
        port,
        &json,
    );
    let (slow, slow_thread) = dribbler(port);
    let idle: Vec<TcpStream> = (0..10).map(|_| connect(port)).collect();
    // A real scrape is answered while the ten idle connections and the slow one are open.
    let page = scrape(port).expect("a real scrape is answered beside idle connections");
    assert!(
        page.contains("# TYPE webtune_requests_total counter"),
        "{page}"
    );
    // The run ends near -d although the slow client keeps sending (it used to keep the run
    // alive for as long as it stayed).
    let code = wait(
        &mut child,
        Duration::from_secs(12),
        "bench -d 2s with a slow scraper",
    );
    assert_eq!(code, 0);
    assert!(started.elapsed() < Duration::from_secs(12));
    slow.store(true, Ordering::SeqCst);
    slow_thread.join().unwrap();
    drop(idle);
    let v = read_json(&json);
    assert_eq!(v["interrupted"], false);
    assert!(v["responses"].as_u64().unwrap() > 0);
}

#[test]
fn the_first_sigterm_stops_the_run_and_writes_its_json_despite_a_slow_scraper() {
    let (_server, base) = serve();
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = bench(
        &[&format!("{base}empty.gif"), "-d", "60s", "-c", "2"],
        port,
        &json,
    );
    let (slow, slow_thread) = dribbler(port);
    // Stopped once the endpoint shows responses, not after a guessed delay.
    let responding = webtune_testkit::wait_until(Duration::from_secs(20), || {
        scrape(port).is_some_and(|page| {
            page.lines()
                .filter(|l| l.starts_with("webtune_responses_total"))
                .any(|l| !l.ends_with(" 0"))
        })
    });
    assert!(responding, "no responses scraped");
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    let code = wait(&mut child, Duration::from_secs(10), "one SIGTERM");
    slow.store(true, Ordering::SeqCst);
    slow_thread.join().unwrap();
    assert_eq!(code, 130);
    let v = read_json(&json);
    assert_eq!(v["interrupted"], true);
    assert!(v["responses"].as_u64().unwrap() > 0);
}

#[test]
fn open_connections_are_every_worker_threads() {
    let (_server, base) = serve();
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // Each request waits 100 ms at the target: all ten connections stay open.
    let mut child = bench(
        &[
            &format!("{base}sleep/100"),
            "-d",
            "3s",
            "-c",
            "10",
            "-t",
            "2",
            "--interval",
            "200ms",
        ],
        port,
        &json,
    );
    let _ = connect(port);
    let mut seen = Vec::new();
    webtune_testkit::wait_until(Duration::from_secs(3), || {
        let page = scrape(port).unwrap_or_default();
        let open = page
            .lines()
            .find_map(|l| l.strip_prefix("webtune_open_connections "))
            .map(|open| open.trim().parse::<u64>().unwrap());
        seen.extend(open);
        open == Some(10)
    });
    assert!(seen.contains(&10), "open connections scraped: {seen:?}");
    assert_eq!(wait(&mut child, Duration::from_secs(15), "bench -d 3s"), 0);
}
