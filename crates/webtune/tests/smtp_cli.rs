//! `webtune smtp` and `webtune postal` end to end against Postfix's `smtp-sink` on loopback:
//! the messages webtune reports match what the sink received, results compare and take
//! thresholds, and `webtune postal` agrees with the real postal on the same sink, in the
//! same layout.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::embedded::KillOnDrop;
use support::smtp_sink::{program, Sink};

fn webtune(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .output()
        .unwrap()
}

fn users(dir: &std::path::Path) -> String {
    let path = dir.join("users.txt");
    let list: Vec<String> = (1..=50).map(|n| format!("user{n}@example.com")).collect();
    std::fs::write(&path, list.join("\n") + "\n").unwrap();
    path.display().to_string()
}

#[test]
fn smtp_counts_agree_with_the_sink_and_results_compare() {
    let Some(sink) = Sink::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let users = users(dir.path());
    let a = dir.path().join("a.json").display().to_string();
    let b = dir.path().join("b.json").display().to_string();
    let before = sink.messages();
    for (json, n) in [(&a, "500"), (&b, "300")] {
        let out = webtune(&[
            "smtp",
            &sink.addr,
            "-n",
            n,
            "-c",
            "4",
            "--users",
            &users,
            "--recipients",
            "3",
            "--per-connection",
            "5",
            "--zipf",
            "--json",
            json,
            "--threshold",
            "rps>=1",
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("accepted"), "{text}");
    }
    assert_eq!(sink.settled_messages() - before, 800);
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    assert_eq!(result["schema"], "webtune.smtp/1");
    assert_eq!(result["smtp"]["accepted"], 500);
    assert_eq!(result["responses"], 500);
    assert_eq!(result["spec"]["smtp"]["mailboxes"], 50);
    assert!(result["smtp"]["mail"]["summary"]["count"].as_u64() == Some(500));
    let cmp = webtune(&["compare", &a, &b]);
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    // Several -c levels: a sweep, each level an SMTP run, every message at the sink.
    let sweep = dir.path().join("sweep.json").display().to_string();
    let before = sink.settled_messages();
    let out = webtune(&[
        "smtp", &sink.addr, "-c", "1,3", "-n", "60", "-q", "--json", &sweep,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sweep).unwrap()).unwrap();
    assert_eq!(sweep["schema"], "webtune.sweep/1");
    let levels = sweep["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    for level in levels {
        assert_eq!(level["result"]["schema"], "webtune.smtp/1");
        assert_eq!(level["result"]["smtp"]["accepted"], 60);
    }
    assert_eq!(sink.settled_messages() - before, 120);
    // capacity over smtp://: an open-loop search whose steps are SMTP runs.
    let cap = dir.path().join("cap.json").display().to_string();
    let url = format!("smtp://{}", sink.addr);
    let out = webtune(&[
        "capacity",
        &url,
        "--slo",
        "errors<=0%",
        "--start-rate",
        "50",
        "--max-rate",
        "100",
        "-d",
        "1s",
        "--pause",
        "0s",
        "-q",
        "--json",
        &cap,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cap: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cap).unwrap()).unwrap();
    let steps = cap["steps"].as_array().unwrap();
    assert!(steps.len() >= 2, "{cap}");
    for step in steps {
        assert_eq!(step["result"]["schema"], "webtune.smtp/1");
        assert!(step["result"]["smtp"]["accepted"].as_u64().unwrap() > 0);
    }
    // A threshold that cannot hold fails the run with 99.
    let out = webtune(&[
        "smtp",
        &sink.addr,
        "-n",
        "20",
        "-c",
        "2",
        "--threshold",
        "p50<=0ms",
        "-q",
    ]);
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn webtune_postal_agrees_with_postal_on_the_same_sink() {
    let Some(sink) = Sink::start() else { return };
    let Some(postal) = program("postal") else {
        support::opt_out::opt_out("postal", "postal is not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let users = users(dir.path());
    let server = format!("[127.0.0.1]{}", sink.addr.rsplit(':').next().unwrap());
    // The real postal prints a line at each minute of the wall clock: run it until its first
    // line, then stop it at once and see what the sink counted.
    let mut child = KillOnDrop(
        Command::new(postal)
            .args(["-t", "2", "-c", "1", "-m", "2", &server, &users])
            // postal writes a postal.log of every message into its working directory.
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let header = lines.next().unwrap().unwrap();
    let started = Instant::now();
    let first = lines.next().unwrap().unwrap();
    drop(child);
    assert!(started.elapsed() < Duration::from_secs(75));
    let postal_counted: u64 = first.split(',').nth(1).unwrap().parse().unwrap();
    let sink_counted = sink.settled_messages();
    assert!(postal_counted > 0, "{first}");
    // postal's line and the kill are a moment apart: at most a few messages in between.
    assert!(
        sink_counted.abs_diff(postal_counted) <= 6,
        "postal said {postal_counted}, the sink got {sink_counted}"
    );

    let out = webtune(&[
        "postal",
        "-t",
        "2",
        "-c",
        "1",
        "-m",
        "2",
        "--duration",
        "2s",
        &server,
        &users,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut ours = text.lines();
    assert_eq!(
        ours.next(),
        Some(header.as_str()),
        "postal's header, word for word"
    );
    let mut sent = 0;
    let lines: Vec<&str> = ours.collect();
    for (i, line) in lines.iter().enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 6, "{line}");
        // Every line a minute's (HH:MM) but the last, which the stop cut short.
        if i + 1 < lines.len() {
            assert_eq!(fields[0].len(), 5, "HH:MM in {line}");
        } else {
            assert!(
                fields[0].len() > 5 && fields[0][5..].starts_with(" (partial "),
                "the last line is labelled partial: {line}"
            );
        }
        assert_eq!(fields[3], "0", "no errors: {line}");
        sent += fields[1].parse::<u64>().unwrap();
    }
    assert!(sent > 0, "{text}");
    assert_eq!(sink.settled_messages() - sink_counted, sent, "{text}");
}
