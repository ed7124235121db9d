//! `webtune tune` end to end: short tunes of real lab stacks journal every trial and leave
//! no process; SIGKILL mid-tune then `--resume` finishes without re-running a finished
//! trial; `tune external` drives a server through an --apply script and proves the winner;
//! bad input is one line before anything starts.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::embedded::serve_with_workers;
use support::lab::processes_naming;

const WEBTUNE: &str = env!("CARGO_BIN_EXE_webtune");

/// A private lab root and scratch directory, reaped and removed when the test ends.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn lab_root(&self) -> PathBuf {
        self.path("lab")
    }

    fn webtune(&self, args: &[&str]) -> Command {
        let mut c = Command::new(WEBTUNE);
        c.env("WEBTUNE_LAB_DIR", self.lab_root())
            .args(args)
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.webtune(args).output().expect("run webtune")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = self.run(&["lab", "clean"]);
    }
}

fn journal_states(path: &Path) -> Vec<(String, String)> {
    // The journal is SQLite; read it with the tune crate's own reader.
    let (_, resumed) = webtune_search::journal::Journal::open(path).expect("journal opens");
    let mut states: Vec<(String, String)> = resumed
        .trials
        .iter()
        .map(|t| {
            let state = match t.outcome {
                webtune_search::study::Outcome::Measured(_) => "finished",
                webtune_search::study::Outcome::Failed(_) => "failed",
            };
            (t.why.clone(), state.to_string())
        })
        .collect();
    states.extend(resumed.lost.iter().map(|_| ("?".into(), "lost".into())));
    states
}

/// Whether the lab finds `program` (apache2 with mod_php, nginx, php-fpm of any version).
fn installed(program: &str) -> bool {
    let found = webtune_lab::servers::Programs::discover();
    match program {
        "apache2" => found.apache2.is_some() && found.mod_php.is_some(),
        "nginx" => found.nginx.is_some(),
        "php-fpm" => found.php_fpm.is_some(),
        other => panic!("installed({other:?})"),
    }
}

#[test]
fn a_short_tune_of_apache_prefork_journals_every_trial_and_leaves_nothing() {
    if !installed("apache2") {
        support::opt_out::opt_out("apache2", "apache2 or mod_php is not installed");
        return;
    }
    let s = Scratch::new();
    let journal = s.path("t.db");
    let json = s.path("t.json");
    let html = s.path("t.html");
    let out = s.run(&[
        "tune",
        "apache-prefork",
        "--param",
        "MaxRequestWorkers=2..32:log",
        "--param",
        "KeepAlive=on,off",
        "--trials",
        "4",
        "--confirm",
        "1",
        "--journal",
        journal.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--",
        "-c",
        "4",
        "-d",
        "1s",
        "/cpu/1000",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("trial 1/4"), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["schema"], "webtune.tune/1");
    // No --slo on errors: the tune holds them to 1% and says so.
    assert_eq!(
        report["slos"],
        serde_json::json!(["errors<=1% (default)"]),
        "{report}"
    );
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 4, "the budget is every measured run");
    assert_eq!(trials[0]["why"], "baseline");
    assert_eq!(trials[1]["why"], "baseline");
    for t in trials {
        assert!(t["params"]["MaxRequestWorkers"].is_number(), "{t}");
        assert!(t["feasible"].is_boolean());
    }
    assert!(report["best"]["params"].is_object(), "{report}");
    let states = journal_states(&journal);
    assert!(states.len() >= 4, "{states:?}");
    assert!(
        states.iter().all(|(_, s)| s == "finished"),
        "every trial journaled as finished: {states:?}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("webtune tune"));
    assert!(
        processes_naming(&s.lab_root()).is_empty(),
        "no server of the tune is left"
    );
}

#[test]
fn a_short_tune_of_nginx_php_fpm_completes() {
    for program in ["nginx", "php-fpm"] {
        if !installed(program) {
            support::opt_out::opt_out(program, &format!("{program} is not installed"));
            return;
        }
    }
    let s = Scratch::new();
    let out = s.run(&[
        "tune",
        "nginx-php-fpm",
        "--param",
        "pm.max_children=1..8",
        "--minimize",
        "p99",
        "--slo",
        "errors<=1%",
        "--trials",
        "3",
        "--confirm",
        "0",
        "--json",
        "-",
        "--",
        "-c",
        "4",
        "-d",
        "1s",
        "/cpu/1000",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{stderr}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(report["objective"], "minimize p99");
    assert_eq!(report["trials"].as_array().unwrap().len(), 3);
    assert!(processes_naming(&s.lab_root()).is_empty());
}

#[test]
fn sigkill_mid_tune_then_resume_never_reruns_a_finished_trial() {
    if !installed("nginx") {
        support::opt_out::opt_out("nginx", "nginx is not installed");
        return;
    }
    let s = Scratch::new();
    let journal = s.path("k.db");
    let args = [
        "tune",
        "nginx",
        "--param",
        "worker_processes=1..2",
        "--param",
        "worker_connections=256..4096:log",
        "--trials",
        "5",
        "--confirm",
        "0",
        "--journal",
        journal.to_str().unwrap(),
        "--",
        "-c",
        "4",
        "-d",
        "1s",
    ];
    let mut child = s
        .webtune(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill it while its third trial runs (two are journaled as finished by then).
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) if line.starts_with("trial 3/5") => break,
            Ok(_) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("the tune ended before its third trial")
            }
        }
        assert!(
            Instant::now() < deadline,
            "the tune never reached its third trial"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    let _ = child.wait();
    let before = journal_states(&journal);
    let finished_before = before.iter().filter(|(_, s)| s == "finished").count();
    assert!(finished_before >= 2, "{before:?}");

    let out = s.run(&["tune", "--resume", "--journal", journal.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("resuming"), "{stderr}");
    // The search's budget is met exactly: no finished trial ran twice.
    let (_, resumed) = webtune_search::journal::Journal::open(&journal).unwrap();
    let search = resumed
        .trials
        .iter()
        .filter(|t| t.phase == webtune_search::journal::Phase::Search)
        .count();
    assert_eq!(search, 5, "{:?}", journal_states(&journal));
    let started_after = stderr.lines().filter(|l| l.starts_with("trial ")).count();
    assert_eq!(
        started_after,
        5 - finished_before,
        "only the unfinished trials ran: {stderr}"
    );
    let shown = s.run(&["tune", "--show", "--journal", journal.to_str().unwrap()]);
    assert_eq!(shown.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&shown.stdout).contains("best:"));
    assert!(processes_naming(&s.lab_root()).is_empty());
}

#[test]
fn tune_external_applies_each_configuration_and_proves_the_winner() {
    let s = Scratch::new();
    // The user's "server": webtune serve restarted by apply.sh with {workers} threads;
    // /cpu/20000 burns 20 ms per request, so two workers serve about twice one's rate.
    let port = webtune_testkit::free_port();
    let pidfile = s.path("serve.pid");
    let log = s.path("applied.log");
    let apply = s.path("apply.sh");
    std::fs::write(
        &apply,
        format!(
            "#!/bin/sh\nset -e\n[ -f {pid} ] && kill $(cat {pid}) 2>/dev/null && sleep 0.3 || true\n\
             echo \"$1\" >> {log}\n\
             {webtune} serve --addr 127.0.0.1:{port} --workers \"$1\" >/dev/null 2>&1 &\n\
             echo $! > {pid}\n\
             for i in 1 2 3 4 5 6 7 8 9 10; do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && exit 0; sleep 0.2; done\n\
             exit 1\n",
            pid = pidfile.display(),
            log = log.display(),
            webtune = WEBTUNE,
        ),
    )
    .unwrap();
    let restore = format!(
        "kill $(cat {}) && echo restored >> {}",
        pidfile.display(),
        log.display()
    );
    let json = s.path("x.json");
    let journal = s.path("x.db");
    let url = format!("http://127.0.0.1:{port}/cpu/20000");
    let apply_cmd = format!("bash {} {{workers}}", apply.display());
    let out = s.run(&[
        "tune",
        "external",
        "--apply",
        &apply_cmd,
        "--restore",
        &restore,
        "--param",
        "workers=1..2",
        "--baseline",
        "workers=1",
        "--trials",
        "3",
        "--confirm",
        "2",
        "--json",
        json.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--",
        "-c",
        "4",
        "-d",
        "1s",
        &url,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Two pairs can hardly show anything: said before the first trial.
    let warned = stderr
        .find("webtune: warning: --confirm 2: with 2 pairs")
        .expect(&stderr);
    assert!(warned < stderr.find("trial 1/3").unwrap(), "{stderr}");
    // --show includes the proof's verdict and pairs, as the run's report did.
    let shown = s.run(&["tune", "--show", "--journal", journal.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(shown.contains("\nproof: "), "{shown}");
    assert!(
        shown.contains("  pairs, default → winner (ok/s): "),
        "{shown}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        report["trials"][0]["params"]["workers"], 1,
        "the baseline first"
    );
    assert_eq!(report["best"]["params"]["workers"], 2, "{report}");
    let proof = &report["proof"];
    assert_eq!(proof["pairs"], 2, "{report}");
    assert!(proof["verdict"].is_string());
    let applied = std::fs::read_to_string(&log).unwrap();
    assert!(
        applied.ends_with("restored\n"),
        "restore ran last: {applied}"
    );
    // 3 search runs + 4 proof runs, each applied once.
    assert_eq!(
        applied.lines().filter(|l| *l == "1" || *l == "2").count(),
        7
    );
}

#[test]
fn maximize_capacity_runs_a_capacity_search_per_trial() {
    let s = Scratch::new();
    // The "server": webtune serve with one worker and 10 ms of CPU per request, so its
    // capacity is at most 100/s; the apply command changes nothing.
    let (serve, base) = serve_with_workers(1);
    let base = base.trim_end_matches('/').to_string();
    let url = format!("{base}/cpu/10000");
    let out = s.run(&[
        "tune",
        "external",
        "--apply",
        "true",
        "--param",
        "w=1..2",
        "--maximize",
        "capacity",
        "--slo",
        "p99<=200ms",
        "--trials",
        "3",
        "--confirm",
        "0",
        "--json",
        "-",
        "--",
        "-d",
        "500ms",
        &url,
    ]);
    drop(serve);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("capacity "), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["objective"], "maximize capacity");
    assert_eq!(report["unit"], "req/s");
    let best = report["best"]["objective"]
        .as_f64()
        .expect("a capacity was found");
    // One worker at 10 ms serves ~100/s. Over a 0.5 s step a higher rate only builds a
    // queue of (rate - 100) x 0.5 s requests, 10 ms each, so p99 <= 200 ms still holds up to
    // ~140/s: a short step cannot tell those rates apart, and the bound says so.
    assert!(
        best > 0.0 && best <= 140.0,
        "one worker at 10 ms, 0.5 s steps, p99<=200ms: at most ~140/s, got {best}"
    );
}

#[test]
fn a_time_budget_ends_the_search_and_the_report_gives_the_wall_time() {
    let s = Scratch::new();
    // Each trial loads for 1 s; a 3 s budget leaves room for a handful, not for 50.
    let (serve, base) = serve_with_workers(1);
    let url = format!("{}/", base.trim_end_matches('/'));
    let journal = s.path("b.db");
    let json = s.path("b.json");
    let out = s.run(&[
        "tune",
        "external",
        "--apply",
        "true",
        "--param",
        "w=1..64",
        "--budget",
        "3s",
        "--trials",
        "50",
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
        "1s",
        &url,
    ]);
    drop(serve);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Each trial's progress line says how much of the budget is spent.
    assert!(stderr.contains(" of --budget 3s\n"), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let trials = report["trials"].as_array().unwrap().len();
    assert!((2..50).contains(&trials), "{trials} trials: {report}");
    let time = &report["time"];
    assert_eq!(time["budget_s"], 3.0, "{report}");
    assert_eq!(time["budget_spent"], true, "{report}");
    let search = time["search_s"].as_f64().unwrap();
    assert!(
        search >= 3.0 && time["wall_s"].as_f64().unwrap() >= search,
        "{report}"
    );
    // --show reads the time back from the journal's trial durations.
    let shown = s.run(&["tune", "--show", "--journal", journal.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    assert!(shown.contains("\nwall time: "), "{shown}");
    assert!(shown.contains("; --budget 3s spent\n"), "{shown}");
}

#[test]
fn bad_input_is_one_line_before_anything_starts() {
    let s = Scratch::new();
    for (args, needle) in [
        (
            vec!["tune", "nginx", "--param", "no_such=1..4", "--", "-d", "1s"],
            "no_such",
        ),
        (
            vec![
                "tune",
                "nginx",
                "--param",
                "worker_processes=4..2",
                "--",
                "-d",
                "1s",
            ],
            "worker_processes",
        ),
        (
            vec![
                "tune",
                "nginx",
                "--param",
                "worker_processes=1..9999",
                "--",
                "-d",
                "1s",
            ],
            "1..=256",
        ),
        (
            vec!["tune", "nginx", "--slo", "p99 about 5ms", "--", "-d", "1s"],
            "p99 about 5ms",
        ),
        (
            vec![
                "tune",
                "external",
                "--param",
                "w=1..2",
                "--",
                "http://127.0.0.1:1/",
            ],
            "--apply",
        ),
        (
            vec!["tune", "nginx", "--minimize", "fast", "--", "-d", "1s"],
            "fast",
        ),
    ] {
        let out = s.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
    // An apply command that fails is a failed trial with its words, not a crash; with every
    // trial failed there is no winner (exit 1).
    let out = s.run(&[
        "tune",
        "external",
        "--apply",
        "echo cannot reach the pool >&2; exit 3",
        "--param",
        "w=1..2",
        "--trials",
        "3",
        "--confirm",
        "0",
        "--json",
        "-",
        "--",
        "-d",
        "1s",
        "http://127.0.0.1:1/",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = report["trials"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("cannot reach the pool"), "{report}");
}
