//! `webtune bench` as a user runs it: Ctrl-C, SIGTERM and SIGHUP keep a complete result and
//! exit 130 (a sweep keeps its levels); bad input gets one line that says what to do, never
//! a panic.

mod support;

use support::child::{catches, run_bounded, tcp_established, webtune, Watched};
use support::embedded::serve;

use std::process::{Command, Stdio};
use std::time::Duration;

fn assert_one_line_error(code: i32, stderr: &str, needle: &str) {
    assert_eq!(code, 2, "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(needle), "expected {needle:?} in {stderr}");
}

/// Start a 60 s bench writing JSON; once it catches the signals and loads its target, send
/// it `signals` (0.2 s apart), and check that it stops at once with a complete, interrupted
/// result and exit 130.
fn stops_with_a_complete_result_on(signals: &[i32]) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = Watched::spawn(
        webtune()
            .args(["bench", "-d", "60s", "-c", "4", "-q", "--json"])
            .arg(&json)
            .stdout(Stdio::null()),
    );
    let pid = child.pid();
    // Both ends of the embedded target's connections are in the child: 4 is two of its
    // four client connections, accepted.
    child.wait_until("handlers and load", Duration::from_secs(20), || {
        signals.iter().all(|&s| catches(pid, s)) && tcp_established(pid) >= 4
    });
    for &signal in signals {
        child.signal(signal);
        // The second of a repeated signal comes while the first's stop is under way, as a
        // terminal's hang-up delivers it.
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = child.wait(Duration::from_secs(20));
    assert_eq!(status, Some(130), "after {signals:?}: {}", child.stderr());
    let text = std::fs::read_to_string(&json).expect("result written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("complete JSON");
    assert_eq!(v["schema"], "webtune.run/1");
    assert_eq!(v["interrupted"], true);
    assert!(v["responses"].as_u64().unwrap() > 0);
}

#[test]
fn sigint_keeps_a_complete_result_and_exits_130() {
    stops_with_a_complete_result_on(&[libc::SIGINT]);
}

#[test]
fn sigterm_and_sighup_stop_like_sigint() {
    stops_with_a_complete_result_on(&[libc::SIGTERM]);
    stops_with_a_complete_result_on(&[libc::SIGHUP]);
    // A hang-up often arrives twice (kernel and shell): the second must not cut the
    // result short.
    stops_with_a_complete_result_on(&[libc::SIGHUP, libc::SIGHUP]);
}

#[test]
fn sighup_during_a_sweep_keeps_the_levels_measured() {
    let (_server, url) = serve();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let mut child = Watched::spawn(
        webtune()
            .args([
                "sweep",
                &format!("{url}empty.gif"),
                "-c",
                "1,2,4",
                "-d",
                "20s",
                "--json",
            ])
            .arg(&json)
            .stdout(Stdio::null()),
    );
    let pid = child.pid();
    child.wait_until("the first level's load", Duration::from_secs(20), || {
        catches(pid, libc::SIGHUP) && tcp_established(pid) >= 1
    });
    child.signal(libc::SIGHUP);
    let status = child.wait(Duration::from_secs(20));
    assert_eq!(status, Some(130), "webtune sweep after SIGHUP");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("sweep written")).unwrap();
    assert_eq!(v["interrupted"], true, "{v}");
}

#[test]
fn json_to_stdout_is_the_only_stdout() {
    let (code, out, _) = run_bounded(
        webtune().args(["bench", "-n", "200", "-c", "2", "--json", "-"]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON doc");
    assert_eq!(v["ok"], 200);
}

/// `--io` picks the workers' backend; the result and the text say which one ran (io_uring
/// works on the machines the tests run on: `kernel.io_uring_disabled` is 0).
#[test]
fn io_backend_is_chosen_by_flag_and_recorded() {
    for (flag, backend) in [("epoll", "epoll"), ("uring", "uring")] {
        let (code, out, err) = run_bounded(
            webtune().args(["bench", "-n", "200", "-c", "4", "--io", flag, "--json", "-"]),
            Duration::from_secs(30),
        );
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON doc");
        assert_eq!(v["ok"], 200);
        assert_eq!(v["io_backend"], backend);
    }
    let (code, out, err) = run_bounded(
        webtune().args(["bench", "-n", "100", "-c", "2", "--io", "uring"]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(I/O: uring)"), "{out}");
    let (code, _, err) = run_bounded(
        webtune().args(["bench", "-n", "10", "--io", "kqueue"]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("use epoll, uring or auto"), "{err}");
}

#[test]
fn text_summary_names_the_embedded_target() {
    let (code, out, err) = run_bounded(
        webtune().args(["bench", "-n", "100", "-c", "2"]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("embedded target"), "{err}");
    assert!(out.contains("/empty.gif"), "{out}");
    assert!(out.contains("p99"), "{out}");
}

#[test]
fn bad_input_gets_one_line_that_says_what_to_do() {
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "127.0.0.1:8080"], "expected e.g. http://"),
        (&["bench", "ftp://127.0.0.1/"], "ftp:// is not supported"),
        (
            &[
                "bench",
                "https://127.0.0.1:1/",
                "--cacert",
                "/nonexistent/ca.pem",
            ],
            "--cacert /nonexistent/ca.pem",
        ),
        (
            &["bench", "http://no-such-host.invalid/"],
            "cannot resolve host",
        ),
        (&["bench", "http://127.0.0.1:1/", "-c", "0"], "at least 1"),
        (
            &["bench", "http://127.0.0.1:1/", "-H", "nocolon"],
            "has no ':'",
        ),
        (
            &[
                "bench",
                "http://127.0.0.1:1/",
                "--body-file",
                "/nonexistent/x",
            ],
            "cannot read",
        ),
        (
            &["bench", "http://127.0.0.1:1/", "-d", "ten"],
            "not a duration",
        ),
        (
            &["bench", "http://127.0.0.1:1/", "--expect-status", "9xx"],
            "--expect-status: bad status class \"9xx\"",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, err) = run_bounded(webtune().args(*args), Duration::from_secs(20));
        if args.contains(&"-d") {
            // clap's own usage error: exit 2 with a message naming the value.
            assert_eq!(code, 2, "{err}");
            assert!(err.contains(needle), "{err}");
            continue;
        }
        assert_one_line_error(code, &err, needle);
    }
}

#[test]
fn nothing_listening_is_reported_as_connect_errors() {
    let port = webtune_testkit::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let (code, out, err) = run_bounded(
        webtune().args(["bench", &url, "-n", "20", "-c", "2", "--json", "-"]),
        Duration::from_secs(20),
    );
    // No response at all: exit 1, as ab (docs/exit-codes.md), with the result still written.
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["errors"]["connect_refused"], 20);
}

/// Runs `script` with bash in a private network namespace (`unshare -n`), so it may change
/// that namespace's sysctls without touching the host's; None when that is not permitted.
fn in_private_netns(script: &str, limit: Duration) -> Option<(i32, String, String)> {
    let permitted = Command::new("unshare")
        .args(["-n", "sh", "-c", "ip link set lo up"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !permitted {
        return None;
    }
    let (code, out, err) = run_bounded(
        Command::new("unshare").args(["-n", "bash", "-c", script]),
        limit,
    );
    // 77: the namespace's own setup was refused (e.g. no root for its port range).
    (code != 77).then_some((code, out, err))
}

#[test]
fn no_free_local_port_ends_at_the_duration_with_a_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let bin = env!("CARGO_BIN_EXE_webtune");
    // 100 local ports for 120 connections: 20 of them never get one (EADDRNOTAVAIL at once).
    let script = format!(
        "ip link set lo up && echo '40000 40099' > /proc/sys/net/ipv4/ip_local_port_range || exit 77
         {bin} serve --addr 127.0.0.1:18080 >/dev/null 2>&1 & srv=$!
         for _ in $(seq 100); do (: </dev/tcp/127.0.0.1/18080) 2>/dev/null && break; sleep 0.05; done
         {bin} bench -c 120 -t 2 -d 2s --json {json} http://127.0.0.1:18080/empty.gif
         rc=$?; kill $srv; exit $rc",
        json = json.display()
    );
    let Some((code, out, err)) = in_private_netns(&script, Duration::from_secs(60)) else {
        support::opt_out::opt_out("root", "`unshare -n` (as root) is not permitted here");
        return;
    };
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("no local address/port free (EADDRNOTAVAIL)"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result written")).unwrap();
    assert!(v["errors"]["connect_no_local_address"].as_u64().unwrap() > 0);
    assert_eq!(v["errors"]["connect_other"], 0);
    assert!(v["responses"].as_u64().unwrap() > 0);
    assert_eq!(v["interrupted"], false);
    // It ended at -d (it used to run on until killed): 2 s, plus at most the 1 s drain and
    // some slack for a busy machine.
    assert!(
        v["duration_s"].as_f64().unwrap() < 5.0,
        "{}",
        v["duration_s"]
    );
    let attempts = v["connect_attempts"].as_u64().unwrap();
    assert!(attempts > v["connections_opened"].as_u64().unwrap());
}

#[test]
fn too_many_connections_for_the_file_limit_names_ulimit() {
    let bin = env!("CARGO_BIN_EXE_webtune");
    let script = format!("ulimit -n 64 && exec {bin} bench http://127.0.0.1:1/ -c 500 -n 1");
    let (code, _, err) = run_bounded(
        Command::new("sh").args(["-c", &script]),
        Duration::from_secs(20),
    );
    assert_one_line_error(code, &err, "ulimit -n");
}

/// Runs that would measure nothing are refused the same way by bench and sweep: one line,
/// exit 2, and nothing measured (no stdout, no embedded target started, no file written).
#[test]
fn runs_that_would_measure_nothing_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let json = json.to_str().unwrap();
    let url = "http://127.0.0.1:1/";
    let cases: &[(&[&str], &str)] = &[
        (
            &["bench", "-d", "0s"],
            "-d/--duration must be longer than 0",
        ),
        (
            &["bench", "-d", "1s", "--warmup", "2s"],
            "--warmup 2s would leave nothing to measure in a 1s run",
        ),
        (
            &["bench", "-d", "2s", "--warmup", "1s", "--cooldown", "1s"],
            "leave nothing to measure in a 2s run",
        ),
        (
            &["bench", "-n", "100", "--warmup", "1s"],
            "--warmup needs a timed run",
        ),
        (
            &["bench", "--timeout", "0s"],
            "--timeout must be longer than 0",
        ),
        (
            &["bench", url, "--connect-timeout", "0"],
            "--connect-timeout must be longer than 0",
        ),
        (
            &["bench", "--interval", "0s"],
            "--interval must be longer than 0",
        ),
        (
            &["bench", url, "-n", "0"],
            "-n/--requests must be at least 1",
        ),
        (
            &["sweep", url, "-c", "1,2", "-d", "0s"],
            "-d/--duration must be longer than 0",
        ),
        (
            &["sweep", url, "-c", "1", "-n", "10", "--cooldown", "1s"],
            "--cooldown needs a timed run",
        ),
        (
            &["sweep", url, "-c", "1", "--timeout", "0s"],
            "--timeout must be longer than 0",
        ),
        (
            &["bench", url, "--http2", "--streams", "4294967295"],
            "--streams must be from 1 to 10000",
        ),
        (
            &["sweep", url, "-c", "1", "--http2", "--streams", "10001"],
            "--streams must be from 1 to 10000",
        ),
    ];
    for (args, needle) in cases {
        let (code, out, err) = run_bounded(
            webtune().args(*args).args(["--json", json]),
            Duration::from_secs(20),
        );
        assert_one_line_error(code, &err, needle);
        assert!(out.is_empty(), "{args:?} printed {out}");
        assert!(!err.contains("embedded target"), "{args:?}: {err}");
        assert!(
            !std::path::Path::new(json).exists(),
            "{args:?} wrote a result"
        );
    }
}

#[test]
fn a_rate_no_machine_can_send_is_refused_naming_the_limit() {
    let url = "http://127.0.0.1:1/";
    let limit = "at most 1e9 requests/s";
    let cases: &[&[&str]] = &[
        &["bench", "--rate", "1e308", "-d", "1s"],
        &["bench", url, "--rate", "2e9", "-n", "10"],
        &["bench", url, "--rate", "10", "--stages", "1s:5e9"],
        &["sweep", url, "--rates", "10,1e308", "-d", "1s"],
    ];
    for args in cases {
        let (code, out, err) = run_bounded(webtune().args(*args), Duration::from_secs(20));
        assert_one_line_error(code, &err, limit);
        assert!(err.contains("more than any machine can send"), "{err}");
        assert!(out.is_empty(), "{args:?} printed {out}");
        assert!(!err.contains("embedded target"), "{args:?}: {err}");
    }
}

#[test]
fn an_open_loop_at_a_low_rate_measures_the_whole_duration() {
    // Due at 0, 1 and 2 s: the run lasts the 3 s asked for and reports 1/s, not the 2 s to
    // its last answer and 1.5/s.
    let (code, out, err) = run_bounded(
        webtune().args(["bench", "--rate", "1", "-d", "3s", "-q", "--json", "-"]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON doc");
    assert_eq!(v["responses"], 3, "{out}");
    let measured = v["duration_s"].as_f64().unwrap();
    assert!((2.8..4.5).contains(&measured), "measured {measured} s");
    let achieved = v["schedule"]["achieved_rate"].as_f64().unwrap();
    assert!((0.65..1.1).contains(&achieved), "achieved {achieved}/s");
    let rps = v["requests_per_s"].as_f64().unwrap();
    assert!((0.65..1.1).contains(&rps), "{rps} requests/s");
}

#[test]
fn compound_durations_parse_everywhere() {
    // 1m30s is 90 s: the refusal quotes it back, so it parsed (and nothing ran).
    let (code, _, err) = run_bounded(
        webtune().args(["bench", "-d", "1m30s", "--warmup", "1m30s"]),
        Duration::from_secs(20),
    );
    assert_one_line_error(
        code,
        &err,
        "--warmup 90s would leave nothing to measure in a 90s run",
    );
    let (code, _, err) = run_bounded(
        webtune().args(["bench", "-d", "1m30x"]),
        Duration::from_secs(20),
    );
    assert_eq!(code, 2);
    assert!(err.contains("unknown unit \"x\""), "{err}");
}

#[test]
fn quiet_drops_the_human_summary_but_keeps_the_format_asked_for() {
    let (code, out, err) = run_bounded(
        webtune().args(["bench", "-n", "50", "-c", "2", "-q", "--format", "json"]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is the JSON");
    assert_eq!(v["responses"], 50);
    let (code, out, _) = run_bounded(
        webtune().args(["bench", "-n", "50", "-c", "2", "-q", "-f", "csv"]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.starts_with("url,"), "{out}");
    let (code, out, _) = run_bounded(
        webtune().args(["bench", "-n", "50", "-c", "2", "-q"]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 0);
    assert!(out.is_empty(), "quiet text summary printed: {out}");
}

#[test]
fn bench_writes_csv_like_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("r.csv");
    let (code, out, err) = run_bounded(
        webtune()
            .args(["bench", "-n", "20", "-c", "1", "-q", "--csv"])
            .arg(&csv),
        Duration::from_secs(30),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "{out}");
    let text = std::fs::read_to_string(&csv).expect("CSV written");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("url,method,connections"), "{text}");
    assert!(lines[1].contains(",GET,1,"), "{text}");
}

#[test]
fn too_many_connections_for_the_hard_file_limit_names_it() {
    let bin = env!("CARGO_BIN_EXE_webtune");
    let script = format!("ulimit -n 20000 && exec {bin} bench http://127.0.0.1:1/ -c 40000 -n 1");
    let (code, _, err) = run_bounded(
        Command::new("sh").args(["-c", &script]),
        Duration::from_secs(20),
    );
    assert_one_line_error(code, &err, "the hard limit is 20000");
    assert!(err.contains("40000 connections"), "{err}");
    assert!(err.contains("lower -c to at most"), "{err}");
}
