//! `webtune compare --live URL_A URL_B` against two embedded targets: a clearly cheaper B is
//! found better (exit 0, the JSON's contract fields present); identical arms never get a
//! direction; bad input gets exit 2 and one line; Ctrl-C keeps what was measured (130).

mod support;

use std::process::Stdio;
use std::time::Duration;
use support::child::{run_bounded, webtune, Watched};
use support::embedded::serve_with_workers;

fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON was written"))
        .expect("valid JSON")
}

#[test]
fn a_cheaper_b_is_found_better_and_the_json_keeps_every_block() {
    let (_a, url_a) = serve_with_workers(1);
    let (_b, url_b) = serve_with_workers(1);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("live.json");
    let (code, stdout, stderr) = run_bounded(
        webtune()
            .args(["compare", "--live"])
            .arg(format!("{url_a}cpu/2000"))
            .arg(format!("{url_b}cpu/200"))
            .args(["--budget", "40s", "--seed", "3", "--json"])
            .arg(&json)
            .arg("--html")
            .arg(dir.path().join("live.html"))
            .args(["--", "-c", "2", "-t", "1"]),
        Duration::from_secs(90),
    );
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with("B is ") && first.contains("% faster (95% CI "),
        "{first}"
    );
    assert!(first.contains("decided after "), "{first}");
    assert!(
        stdout.contains("interference, mean per block: A "),
        "{stdout}"
    );
    let j = read_json(&json);
    assert_eq!(j["schema"], "webtune.compare-live/1");
    assert_eq!(j["verdict"], "b_better");
    assert_eq!(j["metric"], "throughput");
    for m in ["throughput", "p50", "p90", "p99", "errors"] {
        for f in ["ratio", "ci_low", "ci_high"] {
            assert!(
                j["metrics"][m][f].is_number(),
                "metrics.{m}.{f}: {}",
                j["metrics"]
            );
        }
    }
    assert!(j["metrics"]["throughput"]["ci_low"].as_f64().unwrap() > 1.0);
    assert!(j["decided_after_s"].is_number() && j["elapsed_s"].is_number());
    assert!(j["mde"].is_number());
    assert_eq!(j["starts"], 1);
    for arm in ["a", "b"] {
        let i = &j["interference"][arm];
        for f in ["cpu_pressure_pct", "steal_pct", "other_cpu_cores"] {
            assert!(i.get(f).is_some(), "interference.{arm}.{f}");
        }
    }
    let page = std::fs::read_to_string(dir.path().join("live.html")).unwrap();
    assert!(page.contains("<svg") && page.contains("always-valid interval"));
    // Every block is kept, each pair one A and one B.
    let blocks = j["blocks"].as_array().unwrap();
    assert!(
        blocks.len() >= 10 && blocks.len().is_multiple_of(2),
        "{}",
        blocks.len()
    );
    for pair in blocks.chunks(2) {
        assert_ne!(pair[0]["arm"], pair[1]["arm"]);
        assert_eq!(pair[0]["pair"], pair[1]["pair"]);
    }
}

#[test]
fn identical_arms_never_get_a_direction() {
    let (_a, url) = serve_with_workers(1);
    // `--json -`: the JSON is the whole of stdout.
    let (code, stdout, stderr) = run_bounded(
        webtune()
            .args(["compare", "--live", &url, &url])
            .args(["--block", "500ms", "--budget", "6s", "--json", "-"])
            .args(["--decide-on", "p99"])
            .args(["--", "-c", "2", "-t", "1"]),
        Duration::from_secs(60),
    );
    let j: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is the JSON");
    assert_eq!(j["metric"], "p99", "--decide-on picks the deciding metric");
    let verdict = j["verdict"].as_str().unwrap().to_string();
    assert!(
        verdict == "same" || verdict == "undecided",
        "{verdict}: {stderr}"
    );
    assert_eq!(code, if verdict == "same" { 0 } else { 1 }, "{stderr}");
    if verdict == "undecided" {
        assert!(j["mde"].as_f64().unwrap() > 0.0, "{j}");
    }
}

#[test]
fn bad_input_gets_exit_2_and_one_line() {
    for (args, needle) in [
        (vec!["compare", "--live", "http://127.0.0.1:9/"], "two URLs"),
        (
            vec![
                "compare",
                "--live",
                "http://127.0.0.1:9/",
                "http://127.0.0.1:9/",
                "--block",
                "0",
            ],
            "--block",
        ),
        (
            vec![
                "compare",
                "--live",
                "http://127.0.0.1:9/",
                "http://127.0.0.1:9/",
                "--",
                "-d",
                "5s",
            ],
            "--block and --budget",
        ),
        (
            vec!["compare", "a.json", "b.json", "--budget", "1m"],
            "--live",
        ),
        (
            vec![
                "compare",
                "--live",
                "http://127.0.0.1:9/",
                "http://127.0.0.1:9/",
                "--decide-on",
                "p42",
            ],
            "not a metric",
        ),
    ] {
        let (code, _, stderr) = run_bounded(webtune().args(&args), Duration::from_secs(20));
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: expected {needle:?} in {stderr}"
        );
    }
}

#[test]
fn ctrl_c_keeps_what_was_measured() {
    let (_a, url) = serve_with_workers(1);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stopped.json");
    let mut child = Watched::spawn(
        webtune()
            .args(["compare", "--live", &url, &url])
            .args([
                "--block",
                "300ms",
                "--same-within",
                "0.01%",
                "--budget",
                "60s",
            ])
            .arg("--json")
            .arg(&json)
            .args(["--", "-c", "2", "-t", "1"])
            .stdout(Stdio::null()),
    );
    child.wait_for_line("pairs:", Duration::from_secs(30));
    child.signal(libc::SIGINT);
    assert_eq!(child.wait(Duration::from_secs(20)), Some(130));
    let j = read_json(&json);
    assert_eq!(j["interrupted"], true);
    assert!(j["blocks"].as_array().unwrap().len() >= 10);
}
