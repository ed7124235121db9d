//! `webtune tune --budget`: successive halving end to end, on the cheapest subject (`tune
//! external` against `webtune serve`): new candidates run a screening run (half of a 4 s
//! -d here: a third, at least 2 s), the journal keeps each run's fidelity and duration, the
//! report marks the screening runs and says how the search's time was split, only full
//! runs win, and `--show` reads it all back from the journal.

mod support;

use std::process::{Command, Stdio};
use support::embedded::serve_with_workers;
use webtune_search::journal::{Journal, Phase};

const WEBTUNE: &str = env!("CARGO_BIN_EXE_webtune");

#[test]
fn a_time_budget_screens_with_short_runs_and_journals_their_fidelity() {
    let dir = tempfile::tempdir().unwrap();
    let (serve, base) = serve_with_workers(1);
    let url = format!("{}/", base.trim_end_matches('/'));
    let journal = dir.path().join("h.db");
    let json = dir.path().join("h.json");
    let out = Command::new(WEBTUNE)
        .env("WEBTUNE_LAB_DIR", dir.path().join("lab"))
        .args([
            "tune",
            "external",
            "--apply",
            "true",
            "--param",
            "w=1..64",
            "--budget",
            "16s",
            "--confirm",
            "0",
            "--journal",
            journal.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--",
            "-c",
            "2",
            "-d",
            "4s",
            &url,
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    drop(serve);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Under --budget the trial cap is no horizon: no "3/200" (issue 39).
    assert!(stderr.contains("\nscreen 3: "), "{stderr}");
    assert!(!stderr.contains("/200"), "{stderr}");
    assert!(stderr.contains(" of --budget "), "{stderr}");
    assert!(stderr.contains("(screening run of 2s)"), "{stderr}");
    // The journal: the A/A pair in full, new candidates at half the duration.
    let (_j, resumed) = Journal::open(&journal).unwrap();
    let search: Vec<_> = resumed
        .trials
        .iter()
        .filter(|t| t.phase == Phase::Search)
        .collect();
    assert!(search.len() >= 4, "{search:?}");
    for t in &search[..2] {
        assert_eq!(
            (t.why.as_str(), t.fidelity, t.duration_s),
            ("baseline", 1.0, None)
        );
    }
    let screened: Vec<_> = search.iter().filter(|t| t.fidelity < 1.0).collect();
    assert!(screened.len() >= 2, "{search:?}");
    for t in &screened {
        assert_eq!((t.fidelity, t.duration_s), (0.5, Some(2.0)), "{t:?}");
        assert!(t.seconds >= 1.9 && t.seconds < 3.9, "a 2 s run: {t:?}");
    }
    for t in search.iter().filter(|t| t.why == "promote") {
        assert_eq!(t.fidelity, 1.0);
    }
    // The report: each screening run marked, the split of the time, the best a full run.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let halving = &report["time"]["halving"];
    assert_eq!(halving["screen_s"], 2.0, "{report}");
    assert_eq!(halving["full_s"], 4.0, "{report}");
    assert_eq!(halving["screened"], screened.len(), "{report}");
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials[2]["fidelity"], 0.5, "{report}");
    assert!(trials[0].get("fidelity").is_none());
    for n in report["best"]["trials"].as_array().unwrap() {
        let t = &trials[n.as_u64().unwrap() as usize - 1];
        assert!(t.get("fidelity").is_none(), "a screening run won: {t}");
    }
    assert!(stdout.contains(" screening runs of 2s, "), "{stdout}");
    assert!(stdout.contains("  3  "), "{stdout}");
    // --show rebuilds the same from the journal.
    let shown = Command::new(WEBTUNE)
        .args(["tune", "--show", "--journal", journal.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(" screening runs of 2s, "), "{shown}");
    assert!(shown.contains("[screen 50%] w="), "{shown}");
}
