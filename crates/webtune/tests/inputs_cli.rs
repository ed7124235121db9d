//! Inputs a hostile user gives: a FIFO that never writes (the first SIGTERM or Ctrl-C ends
//! merge, compare, report, advise, and a load command still reading its inputs, at once
//! with 130), an endless file (`/dev/zero`,
//! refused at the size cap in one line), and absurd `--start-at` times (refused with the
//! accepted range; a future start says until when it waits, and a signal ends the wait).

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use support::child::{catches, webtune, Watched};

/// A FIFO nobody ever writes to.
fn fifo(dir: &Path) -> PathBuf {
    let path = dir.join("never.json");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    path
}

/// Wait with a deadline; (status code, stderr).
fn finish(mut child: Watched, limit: Duration, what: &str) -> (i32, String) {
    let code = child
        .wait(limit)
        .unwrap_or_else(|| panic!("{what}: still running after {limit:?}"));
    (code, child.stderr())
}

fn spawn(args: &[&str]) -> Watched {
    Watched::spawn(webtune().args(args).stdout(Stdio::null()))
}

fn run(args: &[&str]) -> (i32, String) {
    finish(spawn(args), Duration::from_secs(60), &args.join(" "))
}

#[test]
fn the_first_signal_ends_a_command_blocked_on_reading_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let never = fifo(dir.path());
    let never = never.to_str().unwrap();
    let url = "http://127.0.0.1:9/";
    let commands: [(&[&str], i32); 9] = [
        (&["merge", never], libc::SIGTERM),
        (&["compare", never, never], libc::SIGTERM),
        (&["report", never], libc::SIGINT),
        (
            &["advise", "--no-discover", "--result", never],
            libc::SIGTERM,
        ),
        (&["bench", "--body-file", never, "-d", "1s"], libc::SIGTERM),
        (
            &["sweep", url, "-c", "1,2", "--scenario", never],
            libc::SIGINT,
        ),
        (&["capacity", url, "--body-file", never], libc::SIGTERM),
        (&["ab", "-n", "1", "-p", never, url], libc::SIGTERM),
        (
            &["http_load", "-parallel", "1", "-fetches", "1", never],
            libc::SIGTERM,
        ),
    ];
    for (args, signal) in commands {
        let mut child = spawn(args);
        // A signal before the handler is in would kill it by default: wait for the handler
        // (the command is then reading its input, or about to).
        let pid = child.pid();
        child.wait_until("the signal handler", Duration::from_secs(10), || {
            catches(pid, signal)
        });
        child.signal(signal);
        let (code, err) = finish(child, Duration::from_secs(5), &args.join(" "));
        assert_eq!(code, 130, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("webtune: stopped by SIG"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn an_endless_input_is_refused_at_the_size_cap() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("s.json");
    let (code, err) = run(&[
        "bench",
        "-n",
        "20",
        "-c",
        "1",
        "-q",
        "--json",
        small.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let small = small.to_str().unwrap();
    for args in [
        vec!["merge", small, "/dev/zero", small],
        vec!["compare", "/dev/zero", small],
        vec!["report", "/dev/zero"],
    ] {
        let (code, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(
            err.trim(),
            "webtune: cannot read /dev/zero: it is over 256 MiB, the most a saved result may be",
            "{args:?}"
        );
    }
    let (code, err) = run(&["advise", "--no-discover", "--result", "/dev/zero"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("256 MiB"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn absurd_start_times_are_refused_with_the_range() {
    for at in [
        "18446744073709551615",
        "9999-12-31T23:59:59Z",
        "0001-01-01T00:00:00Z",
        "+1000h",
    ] {
        let (code, err) = run(&["bench", "-d", "1s", "--start-at", at]);
        assert_eq!(code, 2, "{at}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{at}: {err}");
        assert!(
            err.contains("is out of range: give a time from 1 day ago to 7 days ahead ("),
            "{at}: {err}"
        );
    }
    let (code, err) = run(&["bench", "-d", "1s", "--start-at", "0001-01-01"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not a time; write e.g."), "{err}");
}

#[test]
fn a_future_start_says_until_when_and_a_signal_ends_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut child = Watched::spawn(
        webtune()
            .args([
                "bench",
                "-d",
                "1s",
                "-c",
                "1",
                "--start-at",
                "+2h",
                "--json",
            ])
            .arg(&json)
            .stdout(Stdio::null()),
    );
    // The line is printed once the wait has begun.
    child.wait_for_line("webtune: waiting until ", Duration::from_secs(10));
    child.signal(libc::SIGTERM);
    let (code, err) = finish(child, Duration::from_secs(10), "a wait for --start-at");
    assert_eq!(code, 130, "{err}");
    let waiting = err
        .lines()
        .find(|l| l.starts_with("webtune: waiting until "))
        .unwrap_or_else(|| panic!("no waiting line in {err}"));
    assert!(
        waiting.contains("(in 2h 0m 0s)") || waiting.contains("(in 1h 59m 59s)"),
        "{waiting}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("result written")).unwrap();
    assert_eq!(v["interrupted"], true);
}
