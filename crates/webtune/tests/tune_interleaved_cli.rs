//! `tune`'s proof by the interleaved protocol (issue 34): on a lab stack, without
//! `--confirm`, the default and the winner run as two stacks at once and the report's proof
//! carries the whole comparison (`webtune.compare-live/1`); `tune external` cannot
//! interleave (one server) and says so in one line.

mod support;

use std::time::Duration;
use support::child::run_bounded;
use support::lab::{leftovers, LabDir};

#[test]
fn a_lab_tune_proves_its_winner_interleaved() {
    if !std::path::Path::new("/usr/sbin/nginx").exists() {
        return support::opt_out::opt_out("nginx", "/usr/sbin/nginx is not installed");
    }
    let lab = LabDir::new("tune-interleaved");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    // The proof runs only when the search's best is not the default: with six candidates
    // over four search seeds one of them beats the default's two runs in almost every try.
    let mut proved = None;
    for seed in ["1", "2", "3", "4"] {
        let journal = dir.path().join(format!("t{seed}.db"));
        let (code, stdout, stderr) = run_bounded(
            lab.command()
                .args(["tune", "nginx", "--param", "worker_processes=1..4"])
                .args(["--param", "multi_accept=on,off", "--trials", "6"])
                .args(["--search-seed", seed, "--proof-budget", "10s", "--journal"])
                .arg(&journal)
                .arg("--json")
                .arg(&json)
                .args(["--", "-c", "4", "-t", "1", "-d", "1s", "/empty.gif"]),
            Duration::from_secs(240),
        );
        assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        if !report["proof"].is_null() {
            proved = Some((report, stdout, stderr, journal));
            break;
        }
    }
    let (report, stdout, stderr, journal) =
        proved.expect("a winner other than the default in 4 tunes");
    let proof = &report["proof"];
    assert!(stderr.contains("proof: memory: "), "{stderr}");
    assert!(
        proof["verdict"].as_str().unwrap().contains("interleaved"),
        "{proof}"
    );
    assert_eq!(proof["interleaved"]["schema"], "webtune.compare-live/1");
    assert_eq!(proof["interleaved"]["metric"], "throughput");
    assert!(proof["interleaved"]["blocks"].as_array().unwrap().len() >= 2);
    assert!(proof["pairs"].as_u64().unwrap() >= 1);
    assert!(stdout.contains("\nproof: "), "{stdout}");
    assert!(leftovers(&lab.0).is_empty(), "{:?}", leftovers(&lab.0));

    // The journal kept the finished proof: a resume reuses it (every block) and starts no
    // stack for it.
    let (code, stdout, stderr) = run_bounded(
        lab.command()
            .args(["tune", "--resume", "--journal"])
            .arg(&journal)
            .arg("--json")
            .arg(&json),
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stderr.contains("is in the journal; not run again"),
        "{stderr}"
    );
    assert!(!stderr.contains("proof: memory: "), "{stderr}");
    let again: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        again["proof"]["interleaved"]["blocks"],
        proof["interleaved"]["blocks"]
    );
}

#[test]
fn tune_external_cannot_interleave() {
    let (code, _, stderr) = run_bounded(
        support::child::webtune()
            .args(["tune", "external", "--apply", "true", "--param", "x=1,2"])
            .args(["--protocol", "interleaved", "--"])
            .args(["-c", "1", "-d", "1s", "http://127.0.0.1:9/"]),
        Duration::from_secs(20),
    );
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("tune external has one"), "{stderr}");
}
