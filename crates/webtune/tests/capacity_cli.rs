//! `webtune capacity` against the embedded target with a known service time: the capacity
//! lies below the theoretical maximum and falls with a tighter SLO, a step the `-c` cap
//! limited never becomes the answer, an SLO that no rate meets exits 5 without hanging, a
//! target that is gone (nothing listens, or killed mid-search) stops the search at once with
//! exit 3, Ctrl-C writes a valid partial JSON and exits 130, and bad input is one line. A
//! sweep of open-loop rates against the same server marks the rate it could not reach and
//! finds the knee below it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn webtune() -> Command {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
}

/// `webtune serve` on a free loopback port with one worker thread.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start() -> Server {
        let mut child = webtune()
            .args(["serve", "--addr", "127.0.0.1:0", "--workers", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("webtune serve runs");
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let start = line.find("http://").expect("the address is printed");
        let url = line[start..].split_whitespace().next().unwrap();
        Server {
            child,
            base: url.trim_end_matches('/').to_string(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_bounded(cmd: &mut Command, limit: Duration) -> (i32, String, String) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("webtune runs");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => {
            let out = out.unwrap();
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
        Err(_) => {
            // SAFETY: killing our own child process.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("webtune capacity did not finish within {limit:?}");
        }
    }
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

/// The child's stderr, read line by line on a thread: `wait_for` blocks until a line
/// containing a text appears (the synchronisation the tests need: a step has been judged),
/// and `rest` returns everything read once the child has exited.
struct StderrLines {
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl StderrLines {
    fn follow(child: &mut Child) -> StderrLines {
        let stderr = child.stderr.take().expect("stderr piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StderrLines {
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits (at most 60 s) for a line containing `text` (a step's line ends in ": held"; on
    /// a loaded machine the first step may be "not counted" instead, and a later one holds).
    fn wait_for(&mut self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.seen.iter().any(|l| l.contains(text)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no line with {text:?} in:\n{}", self.seen.join("\n")),
            }
        }
    }

    /// Every line, once the writer has closed its stderr.
    fn rest(mut self) -> String {
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(60)) {
            self.seen.push(line);
        }
        self.seen.join("\n")
    }
}

#[test]
fn capacity_lies_below_the_theoretical_maximum_and_falls_with_a_tighter_slo() {
    let server = Server::start();
    // One worker, 10 ms of CPU per request: at most 100 requests/s.
    let url = format!("{}/cpu/10000", server.base);
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
    let server = Server::start();
    // /sleep holds no thread: the server takes any rate; one connection takes 20/s at most.
    let url = format!("{}/sleep/50", server.base);
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
    let server = Server::start();
    let url = format!("{}/sleep/5", server.base);
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
    let mut server = Server::start();
    let url = format!("{}/empty.gif", server.base);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cap.json");
    let mut child = webtune()
        .args(["capacity", &url, "--slo", "p99<=1s", "--start-rate", "10"])
        .args(["-d", "1s", "--pause", "100ms", "--max-rate", "100000"])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The server dies once a step has held, not after a guessed delay.
    let mut lines = StderrLines::follow(&mut child);
    lines.wait_for(": held");
    let _ = server.child.kill();
    let _ = server.child.wait();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("capacity went on against a dead target");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = lines.rest();
    assert_eq!(status.code(), Some(3), "{stderr}");
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
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cap.json");
    let mut child = webtune()
        .args(["capacity", &format!("{}/empty.gif", server.base)])
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
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once a step has held, not after a guessed delay.
    let mut lines = StderrLines::follow(&mut child);
    lines.wait_for(": held");
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "webtune ignored SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
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
    let server = Server::start();
    // One worker, 10 ms per request: at most 100/s; 400/s cannot be reached.
    let url = format!("{}/cpu/10000", server.base);
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
