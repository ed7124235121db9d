//! `webtune tune`'s journal and its `--apply` hook, end to end, on the cheapest subject (`tune
//! external` against `webtune serve`, or against nothing with an --apply that fails): one
//! writer per journal (a second tune or --resume is refused naming the holder's pid; a
//! SIGKILLed tune's lock is no lock), a resume from another directory runs the command as
//! it ran, a resume refuses flags that change the tune and honours a larger --trials, an
//! --apply that floods its output or hangs is bounded, and a tune where every trial failed
//! says so and why.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::embedded::serve_with_workers;

const WEBTUNE: &str = env!("CARGO_BIN_EXE_webtune");

/// webtune in `dir` with a private lab root, stdin closed.
fn webtune(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(WEBTUNE);
    c.current_dir(dir)
        .env("WEBTUNE_LAB_DIR", dir.join("lab"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Run it to the end, or kill it after `limit` (a test that would hang fails instead).
fn run_within(mut command: Command, limit: Duration) -> Output {
    let mut child = command.spawn().expect("run webtune");
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Until `path` exists; fails the test after `limit`.
fn wait_for(path: &Path, limit: Duration) {
    let appeared = webtune_testkit::wait_until(limit, || path.exists());
    assert!(appeared, "{} never appeared", path.display());
}

fn report(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn one_tune_per_journal_a_killed_ones_lock_is_no_lock_and_resume_runs_where_it_ran() {
    let (_server, server_url) = serve_with_workers(1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The apply script, named relative to the tune's directory; while `hold` exists it
    // stays in its first trial, writing its pid.
    std::fs::write(
        d.join("apply.sh"),
        "if [ -f hold ]; then echo $$ > apply.pid; exec sleep 60; fi\necho \"$1\" >> applied.log\n",
    )
    .unwrap();
    std::fs::write(d.join("hold"), "").unwrap();
    let tune = [
        "tune",
        "external",
        "--apply",
        "sh apply.sh {w}",
        "--param",
        "w=1..2",
        "--trials",
        "3",
        "--confirm",
        "0",
        "--journal",
        "t.db",
        "--json",
        "out.json",
        "--",
        "-d",
        "200ms",
        &server_url,
    ];
    let mut first = webtune(d, &tune)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&d.join("apply.pid"), Duration::from_secs(30));
    let pid = format!("pid {}", first.id());

    // While it runs: a --resume, and a second tune on the same journal, are refused with
    // one line naming the holder.
    for args in [&["tune", "--resume", "--journal", "t.db"][..], &tune[..]] {
        let out = run_within(webtune(d, args), Duration::from_secs(30));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&pid), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    // --show reads it meanwhile, and marks nothing lost.
    let out = run_within(
        webtune(
            d,
            &[
                "tune",
                "--show",
                "--journal",
                "t.db",
                "--json",
                "shown.json",
            ],
        ),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&pid), "{}", text(&out.stdout));

    // SIGKILL: the lock goes with the process.
    first.kill().unwrap();
    first.wait().unwrap();
    let sleeper = std::fs::read_to_string(d.join("apply.pid")).unwrap();
    let _ = Command::new("kill")
        .args(["-KILL", sleeper.trim()])
        .status();
    std::fs::remove_file(d.join("hold")).unwrap();

    // Resumed from another directory: the relative --apply and --json mean what they did.
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let out = run_within(
        webtune(&elsewhere, &["tune", "--resume", "--journal", "../t.db"]),
        Duration::from_secs(60),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("in flight"), "{stderr}");
    let r = report(&d.join("out.json"));
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 3, "{r}");
    assert!(
        trials.iter().all(|t| t["error"].is_null()),
        "every trial ran: {r}"
    );
    let applied = std::fs::read_to_string(d.join("applied.log")).unwrap();
    assert_eq!(applied.lines().count(), 3, "{applied}");
    assert!(!elsewhere.join("out.json").exists());
    assert!(
        !d.join("t.db.lock").exists(),
        "the lock file goes with its holder"
    );
}

/// A finished tune whose every trial failed at once (its --apply exits 3), in `d`.
fn failed_tune(d: &Path, apply: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "tune",
        "external",
        "--apply",
        apply,
        "--param",
        "w=1..2",
        "--trials",
        "3",
        "--confirm",
        "0",
        "--journal",
        "t.db",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "-d", "1s", "http://127.0.0.1:1/"]);
    run_within(webtune(d, &args), Duration::from_secs(60))
}

#[test]
fn resume_refuses_a_changed_tune_honours_more_trials_and_every_failure_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = failed_tune(d, "echo cannot reach the pool >&2; exit 3", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // Every trial failed: said plainly, with the reasons, and no empty effects.
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("no trial succeeded (3 of 3 failed)")
            && stdout.contains("3× --apply `echo cannot reach the pool >&2; exit 3` exited with status 3: cannot reach the pool"),
        "{stdout}"
    );
    assert!(!stdout.contains("effects:"), "{stdout}");

    for (flag, needle) in [
        (&["--slo", "p99<=5ms"][..], "--slo"),
        (&["--minimize", "p99"][..], "--minimize"),
        (&["--trials", "2"][..], "fewer"),
    ] {
        let mut args = vec!["tune", "--resume", "--journal", "t.db"];
        args.extend_from_slice(flag);
        let out = run_within(webtune(d, &args), Duration::from_secs(30));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {stderr}");
        assert!(stderr.contains(needle), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    let out = run_within(
        webtune(
            d,
            &[
                "tune",
                "--resume",
                "--journal",
                "t.db",
                "--trials",
                "5",
                "--json",
                "-",
            ],
        ),
        Duration::from_secs(60),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("5 trials (was 3)"), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["budget"], 5);
    assert_eq!(r["trials"].as_array().unwrap().len(), 5, "{r}");
    // Recorded: the journal now says 5.
    let out = run_within(
        webtune(d, &["tune", "--show", "--journal", "t.db"]),
        Duration::from_secs(30),
    );
    assert!(
        text(&out.stdout).contains("5 of 5 runs"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn an_apply_that_floods_its_output_leaves_a_small_journal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = failed_tune(
        d,
        "head -c 20000000 /dev/zero | tr '\\0' x >&2; exit 3",
        &["--json", "out.json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let size = |name: &str| std::fs::metadata(d.join(name)).map_or(0, |m| m.len());
    let journal = size("t.db") + size("t.db-wal");
    assert!(journal < 1_000_000, "the journal is {journal} bytes");
    assert!(size("out.json") < 100_000, "{}", size("out.json"));
    assert!(out.stdout.len() + out.stderr.len() < 100_000);
    let r = report(&d.join("out.json"));
    let error = r["trials"][0]["error"].as_str().unwrap();
    assert!(
        error.contains("cut: the command wrote 20000000 bytes"),
        "{error:.300}"
    );
}

/// Processes whose command line is exactly `words`.
fn processes(words: &[&str]) -> Vec<PathBuf> {
    let want: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::read(p.join("cmdline")).is_ok_and(|c| c == want))
        .collect()
}

#[test]
fn an_apply_that_hangs_fails_its_trial_at_the_timeout_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let started = Instant::now();
    let out = failed_tune(
        d,
        "sleep 1717 & sleep 1717",
        &["--apply-timeout", "1s", "--json", "out.json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(30));
    let r = report(&d.join("out.json"));
    for t in r["trials"].as_array().unwrap() {
        let error = t["error"].as_str().unwrap();
        assert!(
            error.contains("did not finish within 1s") && error.contains("process group"),
            "{error}"
        );
    }
    // Killed processes vanish once reaped; ones left alive would sleep for 1717 s.
    let gone = webtune_testkit::wait_until(Duration::from_secs(5), || {
        processes(&["sleep", "1717"]).is_empty()
    });
    assert!(gone, "the apply's process group was killed");
    // Refused before anything starts.
    let other = tempfile::tempdir().unwrap();
    let out = failed_tune(other.path(), "true", &["--apply-timeout", "0s"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--apply-timeout"), "{stderr}");
}

#[test]
fn a_journal_that_holds_the_command_line_words_still_resumes_and_then_holds_the_request() {
    // Journals written before the request was stored keep `{"argv": […], "cwd": …}`.
    let (_server, server_url) = serve_with_workers(1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("apply.sh"), "echo \"$1\" >> applied.log\n").unwrap();
    let argv = [
        "external",
        "--apply",
        "sh apply.sh {w}",
        "--param",
        "w=1..2",
        "--trials",
        "2",
        "--confirm",
        "0",
        "--json",
        "out.json",
        "--",
        "-d",
        "200ms",
        &server_url,
    ];
    let command = serde_json::json!({ "argv": argv, "cwd": d.to_str().unwrap() });
    let journal =
        webtune_search::journal::Journal::create(&d.join("t.db"), &command.to_string(), 0).unwrap();
    drop(journal);
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    // A flag that changes the tune is refused as with a new journal.
    let out = run_within(
        webtune(
            &elsewhere,
            &[
                "tune",
                "--resume",
                "--journal",
                "../t.db",
                "--param",
                "w=1..9",
            ],
        ),
        Duration::from_secs(30),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--param 'w=1..9' differs"), "{stderr}");
    let out = run_within(
        webtune(
            &elsewhere,
            &["tune", "--resume", "--journal", "../t.db", "--trials", "3"],
        ),
        Duration::from_secs(60),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("3 trials (was 2)"), "{stderr}");
    // Run where it ran: the relative --apply and --json.
    let r = report(&d.join("out.json"));
    assert_eq!(r["trials"].as_array().unwrap().len(), 3, "{r}");
    let applied = std::fs::read_to_string(d.join("applied.log")).unwrap();
    assert_eq!(applied.lines().count(), 3, "{applied}");
    // The change was recorded as a request, which a later resume reads without the words.
    let (resumed, _) = webtune_search::journal::Journal::peek(&d.join("t.db")).unwrap();
    let stored: serde_json::Value = serde_json::from_str(&resumed.command).unwrap();
    assert_eq!(stored["request"]["trials"], 3, "{stored}");
    assert!(stored.get("argv").is_none(), "{stored}");
    let out = run_within(
        webtune(&elsewhere, &["tune", "--show", "--journal", "../t.db"]),
        Duration::from_secs(30),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("3 of 3 runs"),
        "{}",
        text(&out.stdout)
    );
}
