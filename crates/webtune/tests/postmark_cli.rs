//! `webtune postmark` against the real postmark (Debian's 1.53, "PostMark v1.51"): the same
//! command file run by both in temporary directories. The counts agree exactly (webtune
//! reproduces postmark's random-number generator, so it makes the same choices for a seed)
//! and the output matches line for line once the figures are masked; webtune adds only a
//! suffix to the banner and a percentile table after the report. A command file that loads
//! itself (directly or through another) ends with one `webtune:` line and exit 2, and a
//! command file over the cap is refused in its own words.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::lab::LabDir;
use support::opt_out::opt_out;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("webtune-pm-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Figures → "#": numbers, and a number with its unit word.
fn mask(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || *n == '.')
            {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    for unit in ["# megabytes", "# kilobytes", "# bytes"] {
        out = out.replace(unit, "#");
    }
    out
}

/// Run `program` in `dir` on the command file, which both read by the same relative name.
fn run_in(program: &mut Command, dir: &Path, commands: &str) -> String {
    std::fs::write(dir.join("pm.cfg"), commands).unwrap();
    let out = program.arg("pm.cfg").current_dir(dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "only the command file is left: {left:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The first number on the first line holding `label`.
fn figure(text: &str, label: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.contains(label))
        .unwrap_or_else(|| panic!("no {label:?} in\n{text}"));
    let digits: String = line
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())
        .unwrap()
        .to_string();
    digits.parse().unwrap()
}

fn compare(name: &str, commands: &str) -> (String, String) {
    let (pm_dir, wt_dir) = (temp(&format!("{name}-pm")), temp(&format!("{name}-wt")));
    let postmark = run_in(&mut Command::new("postmark"), &pm_dir, commands);
    let lab = LabDir::new(&format!("pm-{name}"));
    let mut webtune = lab.command();
    webtune.arg("postmark");
    let ours = run_in(&mut webtune, &wt_dir, commands);
    let (theirs_lines, our_lines): (Vec<&str>, Vec<&str>) =
        (postmark.lines().collect(), ours.lines().collect());
    assert!(
        our_lines[0].starts_with(theirs_lines[0]),
        "{}",
        our_lines[0]
    );
    for (i, theirs) in theirs_lines.iter().enumerate().skip(1) {
        assert_eq!(
            mask(our_lines[i]),
            mask(theirs),
            "line {} differs:\npostmark:\n{postmark}\nwebtune:\n{ours}",
            i + 1
        );
    }
    assert_eq!(our_lines[theirs_lines.len()], "", "{ours}");
    assert!(
        our_lines[theirs_lines.len() + 2].starts_with("latency (ms)"),
        "{ours}"
    );
    let _ = (
        std::fs::remove_dir_all(&pm_dir),
        std::fs::remove_dir_all(&wt_dir),
    );
    (postmark, ours)
}

fn have_postmark() -> bool {
    let found = Command::new("postmark")
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok();
    if !found {
        opt_out("postmark", "postmark is not installed");
    }
    found
}

#[test]
fn counts_and_layout_match_postmark() {
    if !have_postmark() {
        return;
    }
    let commands = "set location .\nset number 150\nset transactions 2000\n\
        set subdirectories 4\nset size 200 5000\nset read 1024\nset write 2048\n\
        set buffering false\nset bias read 3\nset bias create 6\nset seed 7\nshow\nrun\nquit\n";
    let (postmark, ours) = compare("verbose", commands);
    for label in [
        " created (",
        "Creation alone",
        " read (",
        " appended (",
        " deleted (",
        "Deletion alone",
    ] {
        assert_eq!(figure(&ours, label), figure(&postmark, label), "{label}");
    }
    // Transactions: postmark finished all it was asked for ("Done"); so did webtune.
    assert!(postmark.contains("Performing transactions..........Done"));
    assert_eq!(figure(&ours, "transaction  "), 2000, "{ours}");
}

#[test]
fn terse_and_defaults_match_postmark() {
    if !have_postmark() {
        return;
    }
    let (_, ours) = compare("terse", "set location .\nset report terse\nrun\nquit\n");
    assert_eq!(figure(&ours, "transaction  "), 500, "{ours}");
}

#[test]
fn a_command_file_that_loads_itself_ends_in_one_line() {
    let lab = LabDir::new("pm-loop");
    let dir = temp("loop");
    let cases: [(&[(&str, &str)], &str); 2] = [
        (
            &[("self.cfg", "set number 10\nload self.cfg\nrun\n")],
            "self.cfg",
        ),
        (
            &[
                ("a.cfg", "set number 10\nload b.cfg\nrun\n"),
                ("b.cfg", "set transactions 10\nload ./a.cfg\n"),
            ],
            "a.cfg",
        ),
    ];
    for (files, first) in cases {
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let out = lab
            .command()
            .args(["postmark", first])
            .current_dir(&dir)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{stderr}\n{stdout}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("webtune: postmark: ") && stderr.contains("loads itself"),
            "{stderr}"
        );
        assert!(!stdout.contains("Creating files"), "nothing ran: {stdout}");
        assert!(
            !stdout.contains("pm>"),
            "standard input is not read: {stdout}"
        );
        for (name, _) in files {
            std::fs::remove_file(dir.join(name)).unwrap();
        }
        assert!(
            std::fs::read_dir(&dir).unwrap().next().is_none(),
            "no pool is left"
        );
    }
    // Over the cap: said in a command file's words, not a saved result's.
    let big = dir.join("big.cfg");
    std::fs::write(&big, "#".repeat((1 << 20) + 1)).unwrap();
    let out = lab.command().arg("postmark").arg(&big).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("over 1 MiB, the most a postmark command file may be"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
