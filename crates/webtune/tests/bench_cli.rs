//! `webtune bench` as a user runs it: Ctrl-C keeps a complete result and exits 130; bad input
//! gets one line that says what to do, never a panic.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn webtune() -> Command {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
}

/// Run to completion with a deadline; returns (status code, stdout, stderr).
fn run_bounded(cmd: &mut Command, limit: Duration) -> (i32, String, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("webtune runs");
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (
                status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("webtune did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_one_line_error(code: i32, stderr: &str, needle: &str) {
    assert_eq!(code, 2, "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(needle), "expected {needle:?} in {stderr}");
}

#[test]
fn sigint_keeps_a_complete_result_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = webtune()
        .args(["bench", "-d", "60s", "-c", "4", "-q", "--json"])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: sending a signal to our own child process.
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
    let text = std::fs::read_to_string(&json).expect("result written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("complete JSON");
    assert_eq!(v["schema"], "webtune.run/1");
    assert_eq!(v["interrupted"], true);
    assert!(v["responses"].as_u64().unwrap() > 0);
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
        (
            &["bench", "https://127.0.0.1/"],
            "https:// is not supported yet",
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
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let (code, out, err) = run_bounded(
        webtune().args(["bench", &url, "-n", "20", "-c", "2", "--json", "-"]),
        Duration::from_secs(20),
    );
    assert_eq!(code, 0, "{err}");
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
        eprintln!("skipped: `unshare -n` (as root) is not permitted here");
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
