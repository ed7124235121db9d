//! The frictions a new user hit (issue 39), end to end through the built binary: `lab sweep`
//! of a stack without PHP sweeps its own site, and `--app forum` there names `--app site`.

mod support;

use std::process::{Command, Output, Stdio};

use support::lab::{LabDir, WEBTUNE};

fn webtune(args: &[&str]) -> Output {
    Command::new(WEBTUNE)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("the webtune binary runs")
}

fn temp_file(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("webtune-frictions-{}-{name}", std::process::id()))
}

/// `lab sweep nginx -c …` with no --app sweeps nginx's own site (as `lab run` loads it).
#[test]
fn lab_sweep_of_a_stack_without_php_defaults_to_its_site() {
    let lab = LabDir::new("frictions-sweep");
    let json = temp_file("sweep.json");
    let output = lab
        .command()
        .args(["lab", "sweep", "nginx", "-c", "1", "-d", "1s", "-q"])
        .args(["--warmup", "0s", "--cooldown", "0s", "--pause", "0s"])
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).unwrap();
    let _ = std::fs::remove_file(&json);
    let url = value["levels"][0]["result"]["spec"]["url"]
        .as_str()
        .unwrap();
    assert!(url.ends_with("/empty.gif"), "{url}");
}

/// Asking for the forum on a stack without PHP: one line that names `--app site`.
#[test]
fn the_forum_on_a_stack_without_php_names_app_site() {
    for args in [
        vec!["lab", "sweep", "nginx", "--app", "forum", "-c", "4,16"],
        vec![
            "lab", "run", "nginx", "--app", "forum", "--", "-c", "1", "-n", "5",
        ],
    ] {
        let output = webtune(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains("--app site"), "{stderr}");
    }
}
