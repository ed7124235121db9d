//! `webtune lab run postfix` end to end, as root with Debian's postfix installed: a run
//! sends to the stack's own mailboxes and reports acceptance and delivery apart; after
//! SIGKILL to webtune the private Postfix (its master and every daemon in its session)
//! outlives it until `lab clean` (with a private lab root) reaps it, and then no process,
//! queue or Maildir is left.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

mod support;

use support::lab::{processes_naming, LabDir};
use webtune_testkit::opt_out::opt_out;

fn runnable() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        opt_out("root", "Postfix's master runs as root only");
        return false;
    }
    if !Path::new("/usr/lib/postfix/sbin/master").exists() {
        opt_out("postfix", "Postfix's master is not installed");
        return false;
    }
    true
}

/// Live, non-zombie processes in session `sid`.
fn session_members(sid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() != Some(&"Z") && fields.get(3).and_then(|s| s.parse().ok()) == Some(sid) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn lab_run_postfix_reports_acceptance_and_delivery() {
    if !runnable() {
        return;
    }
    let lab = LabDir::new("postfix-run");
    let output = lab
        .command()
        .args([
            "lab",
            "run",
            "postfix",
            "--set",
            "mailboxes=100",
            "--",
            "-n",
            "40",
            "-c",
            "4",
        ])
        .output()
        .expect("run webtune");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Lab stack: postfix"), "{stdout}");
    assert!(
        stdout.contains("Mail: accepted 40 (SMTP 250); delivered 40 into the Maildirs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("left incoming 0 active 0 deferred 0"),
        "{stdout}"
    );
}

#[test]
fn after_sigkill_lab_clean_reaps_the_private_postfix() {
    if !runnable() {
        return;
    }
    let lab = LabDir::new("postfix-kill");
    let mut child = lab
        .command()
        .args(["lab", "run", "postfix", "--", "-c", "2", "-d", "60s"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run webtune");
    // "… ready at smtp://… (sessions [..], dir DIR)"
    let mut dir = None;
    let deadline = Instant::now() + Duration::from_secs(60);
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if line.contains(" ready at ") {
            dir = line
                .rsplit_once("dir ")
                .map(|(_, d)| PathBuf::from(d.trim_end_matches(')')));
            break;
        }
    }
    let dir = dir.expect("webtune said ready with its directory");
    // The master starts its daemons (qmgr, pickup) after it is ready: wait for them.
    let daemons_run = || {
        let masters = processes_naming(&dir);
        let daemons: Vec<i32> = masters.iter().flat_map(|&m| session_members(m)).collect();
        !masters.is_empty() && daemons.len() > masters.len()
    };
    webtune_testkit::wait_until(Duration::from_secs(10), daemons_run);
    let masters = processes_naming(&dir);
    assert!(!masters.is_empty(), "the master names its config dir");
    let daemons: Vec<i32> = masters.iter().flat_map(|&m| session_members(m)).collect();
    assert!(daemons.len() > masters.len(), "daemons run: {daemons:?}");
    assert!(dir.join("postfix/queue").is_dir());
    // SAFETY: our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGKILL);
    }
    let _ = child.wait();
    assert!(
        !processes_naming(&dir).is_empty(),
        "Postfix outlives SIGKILL"
    );
    lab.clean_reaps(&dir);
    for &m in &masters {
        assert!(session_members(m).is_empty(), "{:?}", session_members(m));
    }
    assert!(!dir.exists(), "queue and Maildirs removed");
}

#[test]
fn lab_params_postfix_lists_postfix_s_knobs_and_delivered_is_a_mail_objective() {
    let lab = LabDir::new("postfix-params");
    let out = lab
        .command()
        .args(["lab", "params", "postfix"])
        .output()
        .expect("run webtune");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    for name in [
        "default_process_limit",
        "smtpd_client_connection_count_limit",
        "qmgr_message_active_limit",
        "in_flow_delay",
        "map_type",
        "mailboxes",
        "os.somaxconn",
    ] {
        assert!(text.contains(name), "{name}: {text}");
    }
    assert!(!text.contains("--app forum"), "{text}");
    // Deliveries are a mail stack's figure: refused on a web stack before anything starts.
    let out = lab
        .command()
        .args([
            "tune",
            "nginx",
            "--maximize",
            "delivered",
            "--",
            "-c",
            "1",
            "-d",
            "1s",
        ])
        .output()
        .expect("run webtune");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--maximize delivered is a mail stack's figure"),
        "{err}"
    );
    let out = lab
        .command()
        .args(["tune", "postfix", "--slo", "deferred<=x", "--", "-d", "1s"])
        .output()
        .expect("run webtune");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("deferred"), "{err}");
}
