//! `webtune tune --from-advice` (the default for lab stacks) on a real lab stack, seed 000's
//! nginx → Apache prefork: the advisor's configuration for the stack's rendered config is
//! measured as a seed right after the A/A pair, its rule names are in the journal, in the
//! JSON report's trials and in its `advice` section (judged against the default and the
//! winner), and `--no-from-advice` leaves it out.

mod support;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use webtune_search::journal::{Journal, Phase};

const WEBTUNE: &str = env!("CARGO_BIN_EXE_webtune");

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(WEBTUNE)
            .env("WEBTUNE_LAB_DIR", self.path("lab"))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run webtune")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = self.run(&["lab", "clean"]);
    }
}

/// nginx → Apache prefork with mod_php, as the lab finds them.
fn stack_installed() -> bool {
    let found = webtune_lab::servers::Programs::discover();
    if found.nginx.is_none() {
        support::opt_out::opt_out("nginx", "nginx is not installed");
        return false;
    }
    if found.apache2.is_none() || found.mod_php.is_none() {
        support::opt_out::opt_out("apache2", "apache2 or mod_php is not installed");
        return false;
    }
    true
}

fn tune(s: &Scratch, name: &str, trials: &str, extra: &[&str]) -> (Output, PathBuf, PathBuf) {
    let journal = s.path(&format!("{name}.db"));
    let json = s.path(&format!("{name}.json"));
    let mut args = vec![
        "tune",
        "nginx-apache",
        "--param",
        "backend.MaxRequestWorkers=2..32:log",
        "--param",
        "frontend.worker_connections=256..4096:log",
        "--trials",
        trials,
        "--journal",
        journal.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "-c", "4", "-d", "1s", "/cpu/1000"]);
    (s.run(&args), journal, json)
}

#[test]
fn the_advice_is_a_seed_with_its_rules_in_the_journal_and_the_report() {
    if !stack_installed() {
        return;
    }
    let s = Scratch {
        dir: tempfile::tempdir().unwrap(),
    };
    let html = s.path("advised.html");
    let (out, journal, json) = tune(
        &s,
        "advised",
        "3",
        &["--confirm", "1", "--html", html.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The journal: the third search trial is the advice, with its rule names.
    let (_j, resumed) = Journal::open(&journal).expect("the journal opens");
    let search: Vec<_> = resumed
        .trials
        .iter()
        .filter(|t| t.phase == Phase::Search)
        .collect();
    assert_eq!(search.len(), 3, "{:?}", resumed.trials);
    assert!(search[0].rules.is_empty() && search[1].rules.is_empty());
    assert_eq!(search[2].why, "seed");
    assert!(
        search[2]
            .rules
            .contains(&"proxy.backend_per_core".to_string()),
        "{:?}",
        search[2]
    );
    // The JSON report: the trial's rules, and the advice judged.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let trial = &report["trials"][2];
    assert_eq!(trial["why"], "seed", "{report}");
    assert!(
        trial["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "proxy.backend_per_core"),
        "{trial}"
    );
    let advice = &report["advice"]["seeds"][0];
    assert!(advice["rules"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r == "proxy.backend_per_core"));
    assert_eq!(advice["trials"][0], 3, "{advice}");
    assert!(advice["params"]["backend.MaxRequestWorkers"].is_i64());
    assert!(advice["vs_default"].is_number(), "{advice}");
    let outcome = advice["outcome"].as_str().unwrap();
    assert!(
        [
            "right",
            "partly right",
            "no better than the default",
            "wrong"
        ]
        .contains(&outcome),
        "{advice}"
    );
    // A directive the tune does not search is named as dropped.
    assert!(
        report["advice"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("dropped")),
        "{report}"
    );
    // The text report: the trial's rules and the judgement.
    assert!(
        stdout.contains("[advice: proxy.backend_per_core"),
        "{stdout}"
    );
    assert!(
        stdout.contains("advice (webtune advise on the stack's config) against the default and the winner:\n  #3 [proxy.backend_per_core"),
        "{stdout}"
    );

    // The HTML report: the advice's table with its rules and verdict.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2>The advice</h2>"), "{page}");
    assert!(
        page.contains("seed (advice: proxy.backend_per_core"),
        "{page}"
    );

    // --no-from-advice: the third trial is the rule of thumb alone, no advice section.
    let (out, journal, json) = tune(&s, "plain", "3", &["--confirm", "0", "--no-from-advice"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report.get("advice").is_none(), "{report}");
    let (_j, resumed) = Journal::open(&journal).unwrap();
    assert!(resumed.trials.iter().all(|t| t.rules.is_empty()));
}
