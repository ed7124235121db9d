//! `--help` claims only what the commands do: bench and sweep take https:// (and h2 with
//! --http2), so their URL is not "(http:// only)"; merge has no running test to stop, so its
//! help does not offer --threshold-abort (given anyway, refused in one line, exit 2).

use std::process::{Command, Output};

fn webtune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .output()
        .unwrap()
}

fn help(command: &str) -> String {
    let out = webtune(&[command, "--help"]);
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bench_and_sweep_help_say_https_and_h2_work() {
    for command in ["bench", "sweep"] {
        let text = help(command);
        assert!(!text.contains("http:// only"), "{command}: {text}");
        let url = text
            .split("The URL to load")
            .nth(1)
            .unwrap_or_else(|| panic!("{command}: no URL line"));
        let url = &url[..200.min(url.len())];
        assert!(url.contains("https://"), "{command}: {url}");
        assert!(url.contains("--http2"), "{command}: {url}");
    }
}

#[test]
fn merge_help_does_not_offer_threshold_abort_which_it_refuses() {
    let text = help("merge");
    assert!(text.contains("--threshold <EXPR>"), "{text}");
    assert!(!text.contains("--threshold-abort"), "{text}");

    let dir = tempfile::tempdir().unwrap();
    let shard = dir.path().join("s1.json");
    std::fs::write(&shard, "{}").unwrap();
    let out = webtune(&[
        "merge",
        shard.to_str().unwrap(),
        "--threshold",
        "p99<=1ms",
        "--threshold-abort",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("webtune: --threshold-abort"), "{err}");
}
