//! `webtune fs` end to end: bad input refused in one line with nothing created, the pool
//! deleted on SIGINT, SIGTERM and SIGHUP, and after a SIGKILL deleted by `lab clean`; the
//! JSON, CSV and HTML outputs, and `compare` on two fs results.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::child::wait_exit;
use support::lab::{LabDir, WEBTUNE};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("webtune-fs-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn listing(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn bad_input_is_refused_in_one_line_before_anything_is_created() {
    let dir = temp("bad");
    let lab = LabDir::new("fs-bad");
    let missing = dir.join("missing").display().to_string();
    let here = dir.display().to_string();
    let cases: [(&[&str], &str); 5] = [
        (&["--dir", &missing], "does not exist"),
        (&["--dir", &here, "--size", "900..100"], "min > max"),
        (
            &["--dir", &here, "--files", "40000000", "--size", "1g..1g"],
            "larger than the free space",
        ),
        (&["--dir", "/proc/self"], "not writable"),
        (&["--dir", &here, "--bias-read", "12"], "chance in 10"),
    ];
    for (args, want) in cases {
        let out = lab.command().arg("fs").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("webtune: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            listing(&dir).is_empty(),
            "{args:?} left {:?}",
            listing(&dir)
        );
    }
    assert!(lab.registry().is_empty(), "{:?}", lab.registry());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A long run in `dir`, started once its pool exists.
fn start_long(lab: &LabDir, dir: &Path) -> Child {
    let child = lab
        .command()
        .args([
            "fs",
            "--files",
            "4000",
            "--size",
            "100..2000",
            "-d",
            "60s",
            "-q",
        ])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Under way: its pool made and its registry entry (what `lab clean` reaps) written.
    let started = webtune_testkit::wait_until(Duration::from_secs(20), || {
        listing(dir).iter().any(|n| n.starts_with("webtune-fs-")) && !lab.registry().is_empty()
    });
    assert!(started, "no pool or registry entry appeared");
    child
}

fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let code = wait_exit(child, limit);
    if code.is_none() {
        let _ = child.kill();
        panic!("webtune fs did not end within {limit:?}");
    }
    code
}

#[test]
fn a_stop_signal_deletes_the_pool() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let dir = temp(&format!("sig{signal}"));
        let lab = LabDir::new(&format!("fs-sig{signal}"));
        let mut child = start_long(&lab, &dir);
        // SAFETY: signalling the child this test started.
        unsafe { libc::kill(child.id() as i32, signal) };
        assert_eq!(wait(&mut child, Duration::from_secs(30)), Some(130));
        assert!(
            listing(&dir).is_empty(),
            "signal {signal} left {:?}",
            listing(&dir)
        );
        assert!(lab.registry().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn after_sigkill_lab_clean_deletes_the_pool() {
    let dir = temp("kill");
    let lab = LabDir::new("fs-kill");
    let mut child = start_long(&lab, &dir);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(listing(&dir).len(), 1, "the killed run's pool is there");
    assert_eq!(lab.registry().len(), 1);
    let out = lab.command().args(["lab", "clean"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("fs-pool"), "{text}");
    assert!(listing(&dir).is_empty(), "left {:?}", listing(&dir));
    assert!(lab.registry().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn outputs_and_compare() {
    let dir = temp("out");
    let lab = LabDir::new("fs-out");
    let pool = dir.join("pool");
    std::fs::create_dir(&pool).unwrap();
    for (name, fsync) in [("a", "none"), ("b", "write")] {
        let out = lab
            .command()
            .args([
                "fs",
                "--files",
                "200",
                "--transactions",
                "2000",
                "--subdirs",
                "4",
            ])
            .args(["--fsync", fsync, "-c", "2"])
            .arg("--dir")
            .arg(&pool)
            .arg("--json")
            .arg(dir.join(format!("{name}.json")))
            .arg("--csv")
            .arg(dir.join(format!("{name}.csv")))
            .arg("--html")
            .arg(dir.join(format!("{name}.html")))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("2000 transactions"), "{text}");
        assert!(text.contains("transaction "), "{text}");
    }
    assert!(listing(&pool).is_empty());
    let json = std::fs::read_to_string(dir.join("b.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["schema"], "webtune.fs/1");
    assert_eq!(v["transactions"], 2000);
    assert!(v["ops"]["fsync"]["count"].as_u64().unwrap() > 0);
    let csv = std::fs::read_to_string(dir.join("a.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2);
    assert!(std::fs::read_to_string(dir.join("a.html"))
        .unwrap()
        .contains("<svg"));
    let out = Command::new(WEBTUNE)
        .arg("compare")
        .arg(dir.join("a.json"))
        .arg(dir.join("b.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("transactions/s") && text.contains("fsync p99"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_workers_runs_one_level_per_count() {
    let dir = temp("sweep");
    let lab = LabDir::new("fs-sweep");
    let pool = dir.join("pool");
    std::fs::create_dir(&pool).unwrap();
    let out = lab
        .command()
        .args([
            "fs",
            "--files",
            "200",
            "--transactions",
            "1000",
            "--sweep-workers",
            "1,2",
        ])
        .arg("--dir")
        .arg(&pool)
        .arg("--json")
        .arg(dir.join("s.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("trans/s") && text.lines().count() == 4,
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("s.json")).unwrap()).unwrap();
    assert_eq!(v["schema"], "webtune.fs-sweep/1");
    let workers: Vec<u64> = v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["spec"]["workers"].as_u64().unwrap())
        .collect();
    assert_eq!(workers, [1, 2]);
    assert!(v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["transactions"] == 1000));
    assert!(listing(&pool).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
