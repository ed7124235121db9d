//! `webtune lab compare nginx --a … --b …`: two private nginx stacks at once, compared by
//! the decisive protocol over two starts; the JSON's shape and the exit code (0 decided, 1
//! undecided) are checked, never the verdict (this machine's noise decides that). Bad
//! input is refused in one line before any stack starts; no stack is left behind.

mod support;

use std::time::Duration;
use support::child::run_bounded;
use support::lab::{leftovers, LabDir};

fn nginx_missing() -> bool {
    !std::path::Path::new("/usr/sbin/nginx").exists()
}

#[test]
fn two_nginx_stacks_compared_over_two_starts() {
    if nginx_missing() {
        return support::opt_out::opt_out("nginx", "/usr/sbin/nginx is not installed");
    }
    let lab = LabDir::new("compare");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("lab-compare.json");
    let (code, stdout, stderr) = run_bounded(
        lab.command()
            .args(["lab", "compare", "nginx"])
            .args(["--a", "worker_processes=1", "--b", "worker_processes=2"])
            .args(["--block", "500ms", "--budget", "12s", "--json"])
            .arg(&json)
            .args(["--", "-c", "4", "-t", "1", "/empty.gif"]),
        Duration::from_secs(120),
    );
    assert!(
        code == 0 || code == 1,
        "exit {code}\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stderr.contains("two fit"),
        "the memory check is said: {stderr}"
    );
    assert!(stderr.contains("restarting both arms"), "{stderr}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["schema"], "webtune.compare-live/1");
    let verdict = j["verdict"].as_str().unwrap();
    assert!(
        ["b_better", "a_better", "same", "undecided"].contains(&verdict),
        "{verdict}"
    );
    assert_eq!(
        code == 0,
        verdict != "undecided",
        "{verdict} with exit {code}"
    );
    assert_eq!(j["metric"], "throughput");
    assert_eq!(j["starts"], 2);
    for f in ["ratio", "ci_low", "ci_high"] {
        assert!(j["metrics"]["throughput"][f].is_number(), "{f}");
    }
    assert_eq!(j["arms"]["a"]["name"], "nginx worker_processes=1");
    assert_eq!(j["arms"]["b"]["name"], "nginx worker_processes=2");
    let blocks = j["blocks"].as_array().unwrap();
    let starts: Vec<u64> = blocks
        .iter()
        .map(|b| b["start"].as_u64().unwrap())
        .collect();
    assert!(starts.contains(&0) && starts.contains(&1), "{starts:?}");
    assert!(blocks.iter().all(|b| b["responses"].as_u64().unwrap() > 0));
    // The servers are not "other CPU": the interference excludes both stacks.
    assert!(j["interference"]["a"].get("other_cpu_cores").is_some());
    assert!(leftovers(&lab.0).is_empty(), "{:?}", leftovers(&lab.0));
}

#[test]
fn bad_input_is_refused_before_any_stack_starts() {
    let lab = LabDir::new("compare-bad");
    for (args, needle) in [
        (
            vec!["lab", "compare", "nginx", "--a", "worker_processes=zero"],
            "--a",
        ),
        (vec!["lab", "compare", "nginx", "--starts", "0"], "--starts"),
        (vec!["lab", "compare", "nginx", "--block", "0"], "--block"),
        (vec!["lab", "compare", "nosuchstack"], "nosuchstack"),
        (
            vec!["lab", "compare", "nginx", "--app", "forum"],
            "needs a stack with PHP",
        ),
        (
            vec![
                "lab",
                "compare",
                "nginx-php-fpm",
                "--app",
                "forum",
                "--a",
                "db.max_connections=5",
            ],
            "--a",
        ),
    ] {
        let (code, _, stderr) = run_bounded(lab.command().args(&args), Duration::from_secs(20));
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    assert!(lab.registry().is_empty());
}

#[test]
fn two_private_copies_of_the_users_own_nginx_config() {
    let conf = std::path::Path::new("/etc/nginx/nginx.conf");
    if !conf.exists() {
        return support::opt_out::opt_out(
            "nginx",
            "Debian's /etc/nginx/nginx.conf is not installed",
        );
    }
    let lab = LabDir::new("compare-own");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("own.json");
    let (code, stdout, stderr) = run_bounded(
        lab.command()
            .args(["lab", "compare", "--nginx-config"])
            .arg(conf)
            .args(["--b", "worker_processes=1", "--starts", "1"])
            .args(["--block", "500ms", "--budget", "6s", "--json"])
            .arg(&json)
            .args(["--", "-c", "2", "-t", "1"]),
        Duration::from_secs(90),
    );
    assert!(
        code == 0 || code == 1,
        "exit {code}\nstdout: {stdout}\nstderr: {stderr}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        j["arms"]["a"]["name"],
        "--nginx-config /etc/nginx/nginx.conf (as it is)"
    );
    assert_eq!(
        j["arms"]["b"]["name"],
        "--nginx-config /etc/nginx/nginx.conf worker_processes=1"
    );
    assert!(j["blocks"].as_array().unwrap().len() >= 2);
    assert!(leftovers(&lab.0).is_empty(), "{:?}", leftovers(&lab.0));
}

/// `--app forum`: two forums at once, each on its own private MariaDB (a `db.*` setting in
/// one arm goes to that arm's database), loaded with the forum's page mix; nothing is left.
#[test]
fn two_forums_each_on_its_own_database() {
    let php_fpm = std::fs::read_dir("/usr/sbin")
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("php-fpm"))
        })
        .unwrap_or(false);
    if nginx_missing() || !php_fpm || support::lab::forum_database_missing() {
        return support::opt_out::opt_out(
            "mariadb",
            "nginx, php-fpm or mariadb-server is not installed",
        );
    }
    let lab = LabDir::new("compare-forum");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("forum-compare.json");
    let (code, stdout, stderr) = run_bounded(
        lab.command()
            .args(["lab", "compare", "nginx-php-fpm", "--app", "forum"])
            .args(["--posts", "2000", "--forum-seed", "11", "--starts", "1"])
            .args([
                "--a",
                "db.thread_cache_size=0",
                "--b",
                "db.thread_cache_size=64",
            ])
            .args(["--block", "500ms", "--budget", "8s", "--json"])
            .arg(&json)
            .args(["--", "-c", "4"]),
        Duration::from_secs(240),
    );
    assert!(
        code == 0 || code == 1,
        "exit {code}\nstdout: {stdout}\nstderr: {stderr}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        j["arms"]["a"]["name"],
        "nginx-php-fpm db.thread_cache_size=0"
    );
    assert_eq!(
        j["arms"]["b"]["name"],
        "nginx-php-fpm db.thread_cache_size=64"
    );
    let blocks = j["blocks"].as_array().unwrap();
    assert!(blocks.len() >= 2, "{blocks:?}");
    assert!(blocks.iter().all(|b| b["responses"].as_u64().unwrap() > 0));
    assert!(stdout.contains("own private MariaDB"), "{stdout}");
    assert!(leftovers(&lab.0).is_empty(), "{:?}", leftovers(&lab.0));
}
