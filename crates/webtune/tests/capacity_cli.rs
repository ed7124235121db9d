//! `webtune capacity` against the embedded target with a known service time: the capacity
//! lies below the theoretical maximum and falls with a tighter SLO, a step the `-c` cap
//! limited never becomes the answer, an SLO that no rate meets exits 5 without hanging, a
//! target that is gone (nothing listens, or killed mid-search) stops the search at once with
//! exit 3, Ctrl-C writes a valid partial JSON and exits 130, and bad input is one line. A
//! sweep of open-loop rates against the same server marks the rate it could not reach and
//! finds the knee below it.

mod support;

use std::process::Stdio;
use std::time::Duration;
use support::child::{run_bounded, webtune, Watched};
use support::embedded::{serve_with_workers, KillOnDrop};

/// `webtune serve` on a free loopback port with one worker thread; its base URL without
/// the last '/'.
fn server() -> (KillOnDrop, String) {
    let (child, url) = serve_with_workers(1);
    (child, url.trim_end_matches('/').to_string())
}

/// A search with short steps, its JSON parsed.
fn search(url: &str, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cap.json");
    let (code, _, stderr) = run_bounded(
        webtune()
            .args([
                "capacity",
                url,
                "-d",
                "1s",
                "--pause",
                "200ms",
                "--precision",
                "10%",
            ])
            .args(["-q", "--json"])
            .arg(&json)
            .args(extra),
        Duration::from_secs(120),
    );
    let text = std::fs::read_to_string(&json).unwrap_or_default();
    let v = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    (code, v, stderr)
}

fn capacity(v: &serde_json::Value) -> Option<f64> {
    v["capacity_rps"].as_f64()
}

#[test]
fn capacity_lies_below_the_theoretical_maximum_and_falls_with_a_tighter_slo() {
    let (_server, base) = server();
    // One worker, 10 ms of CPU per request: at most 100 requests/s.
    let url = format!("{}/cpu/10000", base);
    let common = ["--arrival", "poisson", "--start-rate", "10"];
    let (code, loose, stderr) = search(&url, &[&common[..], &["--slo", "p99<=100ms"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(loose["schema"], "webtune.capacity/1");
    let cap = capacity(&loose).expect("a capacity");
    assert!(cap > 0.0 && cap < 100.0, "capacity {cap} of a 100/s server");
    // The SLO held at the capacity, in every step run there.
    let at_cap: Vec<&serde_json::Value> = loose["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["rate_rps"].as_f64() == Some(cap))
        .collect();
    assert!(at_cap.len() >= 2, "the boundary is repeated");
    for s in at_cap {
        assert_eq!(s["outcome"], "held");
        assert!(s["result"]["latency"]["total"]["p99_us"].as_u64().unwrap() <= 100_000);
    }
    let (code, tight, stderr) = search(&url, &[&common[..], &["--slo", "p99<=30ms"]].concat());
    assert_eq!(code, 0, "{stderr}");
    let tight_cap = capacity(&tight).expect("a capacity under the tight SLO");
    assert!(
        tight_cap < cap,
        "tighter SLO: {tight_cap}/s, looser: {cap}/s"
    );
}

#[test]
fn a_step_limited_by_the_connection_cap_never_becomes_the_answer() {
    let (_server, base) = server();
    // /sleep holds no thread: the server takes any rate; one connection takes 20/s at most.
    let url = format!("{}/sleep/50", base);
    let (code, v, stderr) = search(
        &url,
        &["-c", "1", "--start-rate", "10", "--slo", "p99<=300ms"],
    );
    assert_eq!(code, 0, "{stderr}");
    let steps = v["steps"].as_array().unwrap();
    let limited: Vec<f64> = steps
        .iter()
        .filter(|s| s["outcome"] == "client_limited")
        .map(|s| s["rate_rps"].as_f64().unwrap())
        .collect();
    assert!(!limited.is_empty(), "the -c 1 cap limited some step: {v}");
    assert_eq!(v["limit"], "generator");
    let cap = capacity(&v).expect("the rates below the cap held");
    assert!(limited.iter().all(|&r| r > cap), "{cap} vs {limited:?}");
    assert!(v["summary"].as_str().unwrap().contains("-c"), "{v}");
}

#[test]
fn an_slo_no_rate_meets_exits_5_and_says_so() {
    let (_server, base) = server();
    let url = format!("{}/sleep/5", base);
    let (code, v, stderr) = search(
        &url,
        &["--start-rate", "4", "--min-rate", "1", "--slo", "p99<=1ms"],
    );
    assert_eq!(code, 5, "{stderr}");
    assert!(v["capacity_rps"].is_null());
    assert_eq!(v["limit"], "unmeetable");
    assert!(
        stderr.contains("even at 1 req/s, the lowest rate tried"),
        "{stderr}"
    );
}

#[test]
fn a_target_with_nothing_listening_stops_the_search_at_its_first_step() {
    // Port 9 (discard) has no listener on a test machine: every connect is refused.
    let (code, v, stderr) = search(
        "http://127.0.0.1:9/",
        &["--slo", "p99<=100ms", "--start-rate", "20"],
    );
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(v["limit"], "target_down", "{v}");
    assert!(v["capacity_rps"].is_null());
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(
        steps.len(),
        1,
        "one step, not a search down to --min-rate: {v}"
    );
    assert_eq!(steps[0]["outcome"], "target_down");
    assert!(
        v["target_down"]
            .as_str()
            .unwrap()
            .contains("every connect was refused"),
        "{v}"
    );
    assert!(
        stderr.contains("webtune: capacity: target down at step 1 (20 req/s)"),
        "{stderr}"
    );
}

#[test]
fn a_target_killed_mid_search_ends_it_with_target_down() {
    let (mut server, base) = server();
    let url = format!("{}/empty.gif", base);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cap.json");
    let mut child = Watched::spawn(
        webtune()
            .args(["capacity", &url, "--slo", "p99<=1s", "--start-rate", "10"])
            .args(["-d", "1s", "--pause", "100ms", "--max-rate", "100000"])
            .arg("--json")
            .arg(&json)
            .stdout(Stdio::null()),
    );
    // The server dies once a step has held, not after a guessed delay (a step's line ends
    // in ": held"; on a loaded machine the first step may be "not counted" instead, and a
    // later one holds).
    child.wait_for_line(": held", Duration::from_secs(60));
    let _ = server.0.kill();
    let _ = server.0.wait();
    let status = child.wait(Duration::from_secs(60));
    let stderr = child.stderr();
    assert_eq!(status, Some(3), "capacity against a dead target: {stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("written")).unwrap();
    assert_eq!(v["limit"], "target_down", "{v}");
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.last().unwrap()["outcome"], "target_down");
    let last_held = steps
        .iter()
        .rposition(|s| s["outcome"] == "held")
        .unwrap_or_else(|| panic!("the server was up at first: {v}"));
    // At most the step it died in, then the one that found it gone.
    let after = last_held + 1;
    assert!(
        steps.len() - after <= 2,
        "{} steps after the death",
        steps.len() - after
    );
    assert!(stderr.contains("target down at step"), "{stderr}");
}

#[test]
fn ctrl_c_mid_search_writes_a_valid_partial_json_and_exits_130() {
    let (_server, base) = server();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cap.json");
    let mut command = webtune();
    command
        .args(["capacity", &format!("{}/empty.gif", base)])
        .args([
            "--slo",
            "p99<=1s",
            "--start-rate",
            "20",
            "-d",
            "1s",
            "--pause",
            "0s",
        ])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null());
    let mut child = Watched::spawn(&mut command);
    // Interrupted once a step has held, not after a guessed delay.
    child.wait_for_line(": held", Duration::from_secs(60));
    child.signal(libc::SIGINT);
    assert_eq!(
        child.wait(Duration::from_secs(20)),
        Some(130),
        "after SIGINT"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("written")).unwrap();
    assert_eq!(v["schema"], "webtune.capacity/1");
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["limit"], "interrupted");
    let steps = v["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    // The best bound so far: at least the rate of a step that held.
    let held = steps
        .iter()
        .filter(|s| s["outcome"] == "held")
        .filter_map(|s| s["rate_rps"].as_f64())
        .fold(f64::NAN, f64::max);
    assert!(held > 0.0, "a step held: {v}");
    assert!(capacity(&v).unwrap() >= held, "{}", v["summary"]);
}

#[test]
fn bad_input_is_one_line_before_any_load() {
    for (args, needle) in [
        (vec![], "give at least one --slo"),
        (vec!["--slo", "p99 100ms"], "is not METRIC OP VALUE"),
        (vec!["--slo", "p99<=+10%"], "is relative"),
        (
            vec!["--slo", "p99<=1s", "--min-rate", "500"],
            "--min-rate must not be above --start-rate",
        ),
        (
            vec!["--slo", "p99<=1s", "--json", "/nonexistent-dir/c.json"],
            "cannot write --json",
        ),
    ] {
        let (code, _, stderr) = run_bounded(
            webtune()
                .args(["capacity", "http://127.0.0.1:9/"])
                .args(&args),
            Duration::from_secs(20),
        );
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn a_rate_sweep_marks_the_levels_short_of_their_rate_and_finds_the_knee() {
    let (_server, base) = server();
    // One worker, 10 ms per request: at most 100/s; 400/s cannot be reached.
    let url = format!("{}/cpu/10000", base);
    let (code, stdout, stderr) = run_bounded(
        webtune().args(["sweep", &url, "--rates", "20,400", "-d", "1s"]),
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{stderr}");
    let row = |level: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{level} ")))
            .unwrap_or_else(|| panic!("no row {level}: {stdout}"))
            .to_string()
    };
    assert!(row("400").contains("reached "), "{stdout}");
    assert!(row("400").ends_with(" of 400/s"), "{stdout}");
    assert!(row("20").ends_with("<- knee"), "{stdout}");
    assert!(!stdout.contains("No knee"), "{stdout}");
}
