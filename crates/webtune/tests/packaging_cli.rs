//! What the packages ship, checked through the binary: `--version` names the commit and the
//! features built in; `webtune completions SHELL` writes a script that knows every
//! subcommand; the hidden `webtune man DIR` writes one page for every command that `--help`
//! lists, nested ones included (`lab run` → `webtune-lab-run.1`).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn webtune(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "webtune {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(args: &[&str]) -> String {
    String::from_utf8(webtune(args).stdout).unwrap()
}

/// The commit as the build script sees it: HEAD of the checkout that tracks this crate, or
/// "unknown" outside one.
fn expected_commit() -> String {
    if let Ok(c) = std::env::var("WEBTUNE_COMMIT") {
        return c;
    }
    let dir = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["ls-files", "--error-unmatch", "Cargo.toml"]) {
        Some(_) => git(&["rev-parse", "--short=12", "HEAD"]).unwrap(),
        None => "unknown".to_string(),
    }
}

#[test]
fn version_names_the_commit_and_the_features() {
    let commit = expected_commit();
    let first = format!("webtune {} (commit {commit})", env!("CARGO_PKG_VERSION"));

    let long = stdout(&["--version"]);
    let lines: Vec<&str> = long.lines().collect();
    assert_eq!(lines[0], first, "{long}");
    for feature in [
        "tls: rustls with ring",
        "http: HTTP/1.1, HTTP/2",
        "io: epoll",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(feature)),
            "--version does not say {feature:?}:\n{long}"
        );
    }

    // -V: the one line, commit included.
    assert_eq!(stdout(&["-V"]).trim_end(), first);
}

/// Every subcommand path that `--help` lists, nested ones included (`["lab", "run"]`), but
/// not clap's own `help`.
fn subcommands(prefix: &[&str]) -> Vec<Vec<String>> {
    let mut args: Vec<&str> = prefix.to_vec();
    args.push("--help");
    let help = stdout(&args);
    let mut found = Vec::new();
    let Some(section) = help.split("\nCommands:\n").nth(1) else {
        return found;
    };
    for line in section.lines() {
        if !line.starts_with("  ") || line.starts_with("   ") {
            if line.trim().is_empty() || !line.starts_with(' ') {
                break;
            }
            continue; // a wrapped description
        }
        let name = line.split_whitespace().next().unwrap();
        if name == "help" {
            continue;
        }
        let mut path: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
        path.push(name.to_string());
        let nested: Vec<&str> = path.iter().map(|s| s.as_str()).collect();
        let children = subcommands(&nested);
        found.push(path);
        found.extend(children);
    }
    found
}

#[test]
fn man_writes_one_page_per_command_from_the_help_text() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1"); // made by webtune
    let listed = stdout(&["man", out_dir.to_str().unwrap()]);

    let commands = subcommands(&[]);
    for expected in ["bench", "lab", "tune", "completions"] {
        assert!(
            commands.iter().any(|c| c == &[expected]),
            "--help lists no {expected}: {commands:?}"
        );
    }
    assert!(
        commands.iter().any(|c| c == &["lab", "run"]),
        "{commands:?}"
    );

    let mut expected: BTreeSet<String> = commands
        .iter()
        .map(|c| format!("webtune-{}.1", c.join("-")))
        .collect();
    expected.insert("webtune.1".to_string());
    let written: BTreeSet<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, expected, "one page per command, and no other");
    assert_eq!(listed.lines().count(), expected.len(), "{listed}");

    // Each page is the command's own help: its title and its one-line description.
    for path in &commands {
        let page =
            std::fs::read_to_string(out_dir.join(format!("webtune-{}.1", path.join("-")))).unwrap();
        let name = format!("webtune-{}", path.join("-"));
        assert!(page.contains(&format!(".TH {name} 1")), "{name}: {page}");
        let args: Vec<&str> = path.iter().map(|s| s.as_str()).chain(["--help"]).collect();
        let help = stdout(&args);
        // Its description line, as roff writes it (`-` as `\-`, `'` as `\*(Aq`).
        let about = help.lines().next().unwrap();
        let page = page.replace("\\-", "-").replace("\\*(Aq", "'");
        assert!(page.contains(about), "{name}'s page lacks {about:?}");
        // Its footer names the program and version, not only the subcommand.
        let title = page.lines().find(|l| l.starts_with(".TH")).unwrap();
        assert!(
            title.contains(&format!("webtune {}", env!("CARGO_PKG_VERSION"))),
            "{title}"
        );
    }
    let bench = std::fs::read_to_string(out_dir.join("webtune-bench.1")).unwrap();
    assert!(
        bench.contains("connections"),
        "bench's page has its options"
    );
    // The page of `man` itself is not written: it is for packagers, hidden from --help.
    assert!(!out_dir.join("webtune-man.1").exists());
    assert!(!subcommands(&[]).iter().any(|c| c == &["man"]));
}

#[test]
fn completions_know_every_subcommand_in_bash_zsh_and_fish() {
    let commands: Vec<String> = subcommands(&[])
        .into_iter()
        .filter(|c| c.len() == 1)
        .map(|c| c[0].clone())
        .collect();
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&["completions", shell]);
        for command in &commands {
            assert!(
                script.contains(command.as_str()),
                "{shell} completions lack {command}"
            );
        }
        assert!(script.contains("connections"), "{shell}: bench's flags");
        assert!(script.contains("webtune"));
    }
    // bash parses its script (zsh and fish may not be installed).
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("webtune.bash");
    std::fs::write(&file, stdout(&["completions", "bash"])).unwrap();
    if Path::new("/bin/bash").exists() {
        let check = Command::new("/bin/bash")
            .arg("-n")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
    }

    // An unknown shell is a usage error (2), naming the ones there are.
    let out = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bash") && err.contains("fish"), "{err}");
}
