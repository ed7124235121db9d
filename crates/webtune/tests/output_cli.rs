//! Where results go, as a user sees it: a full or closed stdout never loses the files asked
//! for and never panics; an unwritable path is refused before any load; a device, a FIFO or
//! a symlink at an output path is written through, never replaced. Exit codes as in
//! docs/exit-codes.md: 4 when an output failed, 141 when stdout's reader went away.

mod support;

use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::child::{run_bounded, webtune};

const EXIT_OUTPUT_FAILED: i32 = 4;
const EXIT_BROKEN_PIPE: i32 = 141;

/// Wait for a spawned child with a hang guard; returns (status code, stderr).
fn finish(child: Child, limit: Duration) -> (i32, String) {
    let (code, _, err) = support::child::finish(child, limit);
    (code, err)
}

/// Run with stdout going to `/dev/full` (every write fails with ENOSPC).
fn run_into_dev_full(cmd: &mut Command) -> (i32, String) {
    assert!(
        is_char_device(Path::new("/dev/full")),
        "/dev/full is not a device here"
    );
    let full = File::options().write(true).open("/dev/full").unwrap();
    let child = cmd
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child, Duration::from_secs(60))
}

/// Run with stdout a pipe whose reading end is closed before webtune starts (as `| head -0`
/// once head has exited).
fn run_into_closed_pipe(cmd: &mut Command) -> (i32, String) {
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two descriptors it is given.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just opened and are owned here alone.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let child = cmd
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    finish(child, Duration::from_secs(60))
}

/// Run with stdout and stderr captured; returns (status code, stdout, stderr).
fn run(cmd: &mut Command) -> (i32, String, String) {
    run_bounded(cmd, Duration::from_secs(60))
}

fn assert_no_panic(stderr: &str) {
    assert!(!stderr.contains("panicked"), "{stderr}");
}

fn assert_run_json(path: &Path) {
    let text = std::fs::read_to_string(path).expect("the JSON file is written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("complete JSON");
    assert_eq!(v["schema"], "webtune.run/1");
}

fn c_path(path: &Path) -> std::ffi::CString {
    std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap()
}

/// A character device like /dev/null at `path`; false when this user may not make one and
/// the run opts out of `root`.
fn make_null_device(path: &Path) -> bool {
    make_char_device(path, 3)
}

/// A character device like /dev/full (every write fails with ENOSPC) at `path`. Tests never
/// name the system's own /dev/full as an output: a webtune without the fix would replace it.
fn make_full_device(path: &Path) -> bool {
    make_char_device(path, 7)
}

/// The memory device of minor number `minor` (3 null, 7 full) at `path`.
fn make_char_device(path: &Path, minor: u32) -> bool {
    // SAFETY: a valid NUL-terminated path; mknod has no other preconditions.
    let rc = unsafe {
        libc::mknod(
            c_path(path).as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(1, minor),
        )
    };
    if rc != 0 {
        let why = format!("cannot mknod ({})", std::io::Error::last_os_error());
        support::opt_out::opt_out("root", &why);
    }
    rc == 0
}

fn is_char_device(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .map(|m| m.file_type().is_char_device())
        .unwrap_or(false)
}

/// A saved result to feed `report` and `compare`.
fn saved_result(dir: &Path) -> PathBuf {
    let json = dir.join("saved.json");
    let (code, _, err) = run(webtune()
        .args(["bench", "-n", "20", "-c", "2", "-q", "--json"])
        .arg(&json));
    assert_eq!(code, 0, "{err}");
    json
}

#[test]
fn a_full_stdout_still_writes_the_json_and_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (code, err) = run_into_dev_full(
        webtune()
            .args(["bench", "-n", "50", "-c", "2", "--json"])
            .arg(&json),
    );
    assert_no_panic(&err);
    assert_eq!(code, EXIT_OUTPUT_FAILED, "{err}");
    assert!(
        err.contains("cannot write to standard output: No space left on device"),
        "{err}"
    );
    assert_run_json(&json);
}

#[test]
fn a_closed_pipe_exits_141_quietly_and_still_writes_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (code, err) = run_into_closed_pipe(
        webtune()
            .args(["bench", "-n", "50", "-c", "2", "--json"])
            .arg(&json),
    );
    assert_no_panic(&err);
    assert_eq!(code, EXIT_BROKEN_PIPE, "{err}");
    assert!(!err.contains("standard output"), "{err}");
    assert_run_json(&json);
}

#[test]
fn ab_report_compare_and_lab_stacks_survive_a_broken_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let saved = saved_result(dir.path());
    let server = webtune_serve::EmbeddedServer::start(webtune_serve::ServeOptions::default())
        .expect("embedded target");
    let url = format!("http://{}/empty.gif", server.local_addr());
    let csv = dir.path().join("pct.csv");
    let (code, err) = run_into_dev_full(
        webtune()
            .args(["ab", "-n", "20", "-c", "2", "-e"])
            .arg(&csv)
            .arg(&url),
    );
    assert_no_panic(&err);
    assert_eq!(code, EXIT_OUTPUT_FAILED, "{err}");
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .contains("Percentage"));
    let (code, err) = run_into_closed_pipe(webtune().args(["ab", "-n", "20", "-c", "2", &url]));
    assert_no_panic(&err);
    assert_eq!(code, EXIT_BROKEN_PIPE, "{err}");
    server.shutdown();

    let html = dir.path().join("report.html");
    let (code, err) =
        run_into_dev_full(webtune().arg("report").arg(&saved).arg("--html").arg(&html));
    assert_no_panic(&err);
    assert_eq!(code, EXIT_OUTPUT_FAILED, "{err}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));
    let (code, err) = run_into_closed_pipe(webtune().arg("compare").arg(&saved).arg(&saved));
    assert_no_panic(&err);
    assert_eq!(code, EXIT_BROKEN_PIPE, "{err}");
    let (code, err) = run_into_dev_full(webtune().args(["lab", "stacks"]));
    assert_no_panic(&err);
    assert_eq!(code, EXIT_OUTPUT_FAILED, "{err}");
    let (code, err) = run_into_closed_pipe(webtune().args(["lab", "stacks"]));
    assert_no_panic(&err);
    assert_eq!(code, EXIT_BROKEN_PIPE, "{err}");
}

#[test]
fn an_unwritable_path_is_refused_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    // -d 30s: the 10 s bound only guards against a hang; what shows that no load ran is
    // that the embedded target was never started.
    let started = Instant::now();
    let (code, _, err) = run(webtune()
        .args([
            "bench",
            "-d",
            "30s",
            "-q",
            "--json",
            "/proc/x.json",
            "--html",
        ])
        .arg(&html));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(code, 2, "{err}");
    assert_no_panic(&err);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("cannot write --json /proc/x.json"), "{err}");
    assert!(!err.contains("webtune-partial"), "{err}");
    assert!(!err.contains("embedded target"), "a load started: {err}");
    assert!(!html.exists());

    let (code, _, err) = run(webtune().args([
        "ab",
        "-t",
        "30",
        "-g",
        "/nonexistent-dir/plot.tsv",
        "http://127.0.0.1:1/",
    ]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot write -g /nonexistent-dir/plot.tsv"),
        "{err}"
    );
    let (code, _, err) = run(webtune()
        .args([
            "sweep",
            "http://127.0.0.1:1/",
            "-c",
            "1,2",
            "-d",
            "30s",
            "--csv",
        ])
        .arg(dir.path()));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("it is a directory"), "{err}");
    assert!(!err.contains("level 1/2"), "a load started: {err}");
}

#[test]
fn lab_run_refuses_an_unwritable_output_before_starting_the_stack() {
    let (code, _, err) = run(webtune().args([
        "lab",
        "run",
        "nginx",
        "--",
        "-c",
        "1",
        "-d",
        "5s",
        "--html",
        "/proc/x.html",
    ]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot write --html /proc/x.html"), "{err}");
    assert!(
        !err.contains("lab: starting"),
        "the stack was started: {err}"
    );
}

#[test]
fn a_char_device_at_an_output_path_stays_a_char_device() {
    let dir = tempfile::tempdir().unwrap();
    let node = dir.path().join("n");
    if !make_null_device(&node) {
        return;
    }
    let (code, _, err) = run(webtune()
        .args(["bench", "-n", "10", "-q", "--json"])
        .arg(&node));
    assert_eq!(code, 0, "{err}");
    assert!(is_char_device(&node), "bench --json replaced the device");
    // The other commands' output flags too.
    let saved = saved_result(dir.path());
    for flag in ["-o", "--html"] {
        let (code, _, err) = run(webtune().arg("report").arg(&saved).arg(flag).arg(&node));
        assert_eq!(code, 0, "{err}");
        assert!(is_char_device(&node), "report {flag} replaced the device");
    }
    let (code, _, err) = run(webtune()
        .arg("compare")
        .arg(&saved)
        .arg(&saved)
        .arg("--html")
        .arg(&node));
    assert_eq!(code, 0, "{err}");
    assert!(is_char_device(&node), "compare --html replaced the device");
    let server = webtune_serve::EmbeddedServer::start(webtune_serve::ServeOptions::default())
        .expect("embedded target");
    let url = format!("http://{}/empty.gif", server.local_addr());
    for flag in ["-e", "-g"] {
        let (code, _, err) = run(webtune()
            .args(["ab", "-n", "10", flag])
            .arg(&node)
            .arg(&url));
        assert_eq!(code, 0, "{err}");
        assert!(is_char_device(&node), "ab {flag} replaced the device");
    }
    let (code, _, err) = run(webtune()
        .args(["sweep", &url, "-c", "1", "-n", "10", "--csv"])
        .arg(&node));
    assert_eq!(code, 0, "{err}");
    assert!(is_char_device(&node), "sweep --csv replaced the device");
    let urls = dir.path().join("urls.txt");
    std::fs::write(&urls, format!("{url}\n")).unwrap();
    let (code, _, err) = run(webtune()
        .args(["http_load", "-parallel", "1", "-fetches", "10", "-json"])
        .arg(&node)
        .arg(&urls));
    assert_eq!(code, 0, "{err}");
    assert!(is_char_device(&node), "http_load -json replaced the device");
    server.shutdown();
}

#[test]
fn a_fifo_is_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("result.fifo");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path(&fifo).as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        // Opening blocks until webtune opens the FIFO for writing; EOF when it closes it.
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let (code, _, err) = run(webtune()
        .args(["bench", "-n", "10", "-q", "--json"])
        .arg(&fifo));
    assert_eq!(code, 0, "{err}");
    // Checked first: had the FIFO been replaced, the reader would wait forever.
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "the FIFO was replaced");
    let text = reader.join().unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).expect("the JSON came through");
    assert_eq!(v["schema"], "webtune.run/1");
}

#[test]
fn a_symlink_stays_a_symlink_and_its_target_gets_the_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("results")).unwrap();
    let link = dir.path().join("latest.json");
    std::os::unix::fs::symlink("results/run1.json", &link).unwrap();
    // A dangling link: the target is created. Then a second run replaces it in place.
    for _ in 0..2 {
        let (code, _, err) = run(webtune()
            .args(["bench", "-n", "10", "-q", "--json"])
            .arg(&link));
        assert_eq!(code, 0, "{err}");
        let meta = std::fs::symlink_metadata(&link).unwrap();
        assert!(meta.file_type().is_symlink(), "the symlink was replaced");
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new("results/run1.json")
        );
        assert_run_json(&dir.path().join("results/run1.json"));
    }
    // No temporary file is left beside the link or the target.
    let names = |d: &Path| std::fs::read_dir(d).unwrap().count();
    assert_eq!(names(dir.path()), 2);
    assert_eq!(names(&dir.path().join("results")), 1);
}

#[test]
fn a_failing_json_still_writes_the_html_and_names_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let full = dir.path().join("full");
    if !make_full_device(&full) {
        return;
    }
    // A full device passes the check (it may be written) and fails at the write.
    let (code, _, err) = run(webtune()
        .args(["bench", "-n", "10", "-q", "--json"])
        .arg(&full)
        .arg("--html")
        .arg(&html));
    assert_no_panic(&err);
    assert_eq!(code, EXIT_OUTPUT_FAILED, "{err}");
    assert!(
        err.contains(&format!(
            "cannot write --json {}: No space left on device",
            full.display()
        )),
        "{err}"
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("<html"));
    assert!(is_char_device(&full));
}

/// The output flags are declared once (crates/cli/src/output_flags.rs) and flattened into every command
/// that writes results: each command keeps its flags, `--repeat`'s default and its own help
/// wording, and has no flag it did not have (`tune --csv` stays an error).
#[test]
fn every_command_keeps_its_output_flags_and_their_help() {
    const ALL: [&str; 5] = [
        "--json <FILE>",
        "--html <FILE>",
        "--csv <FILE>",
        "--repeat <N>",
        "-q, --quiet",
    ];
    let cases: [(&[&str], usize, &str); 8] = [
        (&["bench"], 0b11111, "(schema webtune.run/1)"),
        (
            &["lab", "run", "nginx", "--"],
            0b11111,
            "(schema webtune.run/1)",
        ),
        (&["sweep"], 0b11111, "schema webtune.sweep/1"),
        (&["lab", "sweep"], 0b10111, "server samples included"),
        (&["capacity"], 0b10011, "webtune.capacity/1"),
        (&["lab", "capacity"], 0b10011, "webtune.capacity/1"),
        (&["tune"], 0b10011, "(webtune.tune/1)"),
        (&["merge"], 0b10011, "merged result as JSON"),
    ];
    for (words, has, wording) in cases {
        let out = webtune().args(words).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{words:?}");
        for (i, flag) in ALL.iter().enumerate() {
            let present = has & (1 << i) != 0;
            assert_eq!(help.contains(flag), present, "{words:?} {flag}:\n{help}");
        }
        assert!(help.contains(wording), "{words:?}:\n{help}");
        if has & 0b1000 != 0 {
            assert!(
                help.contains("[default: 1]"),
                "{words:?}: --repeat's default"
            );
        }
    }
    let out = webtune()
        .args(["tune", "--csv", "x.csv", "nginx"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
