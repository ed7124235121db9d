//! The frictions a new user hit (issue 39), end to end through the built binary: `lab sweep`
//! of a stack without PHP sweeps its own site, and `--app forum` there names `--app site`;
//! `lab run` takes its output flags before `--` as well as after, `tune` after as well as
//! before, and one given on both sides is refused in one line; a `-n` run (smtp, bench)
//! whose every connect is refused ends after `--timeout`, saying so, instead of retrying
//! until its whole count has failed; `webtune ab` prints ab's "Completed N requests" lines
//! as the installed ab does, and sends what ab sends for `-p` (no `Connection: close`);
//! `webtune postal` refuses `-p` in one line, says in `--help` how its pace differs from
//! postal's, and labels its last, partial minute; the completion scripts offer the stacks,
//! the parameters and `--io`'s backends, and a mistyped stack or parameter gets "did you
//! mean …".

mod support;

use std::process::{Command, Output, Stdio};

use support::lab::{LabDir, WEBTUNE};
use support::smtp_sink::Sink;

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

/// `lab run nginx --json F -- …` writes F (the flag was refused before `--`).
#[test]
fn lab_run_takes_output_flags_before_the_separator() {
    let lab = LabDir::new("frictions-run-json");
    let json = temp_file("run.json");
    let output = lab
        .command()
        .args(["lab", "run", "nginx", "--json"])
        .arg(&json)
        .args(["-q", "--", "-c", "1", "-n", "5"])
        .stdin(Stdio::null())
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(output.stdout.is_empty(), "-q before -- is bench's -q");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written")).unwrap();
    let _ = std::fs::remove_file(&json);
    assert_eq!(value["ok"].as_u64(), Some(5), "{value}");
}

/// `tune nginx … -- -c 2 -d 1s --json F` writes the tune's report to F (it was parsed among
/// the bench flags and dropped).
#[test]
fn tune_takes_output_flags_after_the_separator() {
    let lab = LabDir::new("frictions-tune-json");
    let json = temp_file("tune.json");
    let journal = temp_file("tune.db");
    let output = lab
        .command()
        .args(["tune", "nginx", "--param", "worker_processes=1..2"])
        .args(["--trials", "3", "--confirm", "0", "--journal"])
        .arg(&journal)
        .args(["--", "-c", "2", "-d", "1s", "-q", "--json"])
        .arg(&json)
        .stdin(Stdio::null())
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let _ = std::fs::remove_file(&journal);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&json).expect("the tune wrote --json");
    let _ = std::fs::remove_file(&json);
    assert!(text.contains("webtune.tune/1"), "{text}");
}

/// An output flag on both sides of `--`, or one the command has not: one line, exit 2,
/// nothing started.
#[test]
fn an_output_flag_on_both_sides_is_refused_in_one_line() {
    for (args, expect) in [
        (
            vec![
                "lab", "run", "nginx", "--json", "a.json", "--", "--json", "b.json", "-n", "5",
            ],
            "--json is given both before and after --",
        ),
        (
            vec![
                "tune",
                "nginx",
                "--param",
                "worker_processes=1..2",
                "--html",
                "a.html",
                "--",
                "-n",
                "5",
                "--html",
                "b.html",
            ],
            "--html is given both before and after --",
        ),
        (
            vec![
                "tune",
                "nginx",
                "--param",
                "worker_processes=1..2",
                "--",
                "-n",
                "5",
                "--csv",
                "b.csv",
            ],
            "tune has no --csv",
        ),
    ] {
        let output = webtune(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}

/// A port with nothing listening (bound, then closed).
fn closed_port() -> u16 {
    webtune_testkit::free_port()
}

/// `smtp -n` and `bench -n` against a refused port: the run ends once every connect of its
/// first --timeout was refused (`target_down`), long before its count of failures.
#[test]
fn a_count_run_against_a_refused_port_ends_after_its_timeout() {
    let port = closed_port();
    let smtp_target = format!("127.0.0.1:{port}");
    let http_target = format!("http://127.0.0.1:{port}/");
    for (args, what) in [
        (
            vec![
                "smtp",
                "-n",
                "3000",
                "-c",
                "4",
                "--timeout",
                "1s",
                "--json",
                "-",
            ],
            "webtune: smtp: no message got a reply (",
        ),
        (
            vec![
                "bench",
                "-n",
                "3000",
                "-c",
                "4",
                "--timeout",
                "1s",
                "--json",
                "-",
            ],
            "webtune: bench: no request got a response (",
        ),
    ] {
        let mut args = args;
        args.push(if args[0] == "smtp" {
            &smtp_target
        } else {
            &http_target
        });
        let output = webtune(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(what)
                && stderr
                    .contains("every connect was refused for 1s (--timeout), so the run ended"),
            "{stderr}"
        );
        let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(value["target_down"], true, "{value}");
        assert_eq!(value["responses"], 0);
        let refused = value["errors"]["connect_refused"].as_u64().unwrap();
        assert!(refused > 0 && refused < 3000, "{refused}");
    }
}

/// The installed ApacheBench, or None after the opt-out (a missing ab fails the test).
fn real_ab() -> Option<&'static str> {
    let found = Command::new("ab")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        Some("ab")
    } else {
        support::opt_out::opt_out("apache2", "ab (apache2-utils) is not installed");
        None
    }
}

fn ab_output(program: &str, args: &[&str]) -> Output {
    let mut command = if program == "ab" {
        Command::new("ab")
    } else {
        let mut c = Command::new(WEBTUNE);
        c.arg("ab");
        c
    };
    command
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ab runs")
}

/// ab's progress on stderr, line for line as the installed ab prints it: none up to 150
/// requests or with -q, else "Completed N requests" at each tenth (at least each 100).
#[test]
fn ab_progress_lines_are_abs() {
    let Some(ab) = real_ab() else { return };
    let (_server, url) = support::embedded::serve();
    let url = format!("{url}empty.gif");
    for args in [
        vec!["-n", "300", "-c", "2"],
        vec!["-n", "2500", "-c", "4"],
        vec!["-n", "100", "-c", "2"],
        vec!["-q", "-n", "300", "-c", "2"],
    ] {
        let mut args = args;
        args.push(&url);
        let theirs = ab_output(ab, &args);
        let ours = ab_output(WEBTUNE, &args);
        assert_eq!(ours.status.code(), Some(0), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&ours.stderr),
            String::from_utf8_lossy(&theirs.stderr),
            "{args:?}"
        );
        // The "Benchmarking" line: with the dots and "done" exactly when ab prints them.
        let line = |o: &Output| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find(|l| l.starts_with("Benchmarking"))
                .map(str::to_string)
        };
        assert_eq!(line(&ours), line(&theirs), "{args:?}");
    }
}

/// `ab -p`: the same request bytes as the installed ab but for the User-Agent's name (no
/// `Connection: close`, which HTTP/1.0 means without it).
#[test]
fn ab_post_sends_what_ab_sends() {
    let Some(ab) = real_ab() else { return };
    let (_server, url) = support::embedded::serve();
    let url = format!("{url}empty.gif");
    let body = temp_file("post.txt");
    std::fs::write(&body, "a=1&b=2").unwrap();
    let json = temp_file("post.json");
    let body_arg = body.to_str().unwrap();
    let json_arg = json.to_str().unwrap();
    let theirs = ab_output(ab, &["-n", "200", "-c", "4", "-p", body_arg, &url]);
    let sent = String::from_utf8_lossy(&theirs.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("Total body sent:"))
        .map(|v| v.trim().parse::<u64>().unwrap())
        .expect("ab prints Total body sent");
    let ours = ab_output(
        WEBTUNE,
        &[
            "-n", "200", "-c", "4", "-p", body_arg, "--json", json_arg, &url,
        ],
    );
    assert_eq!(ours.status.code(), Some(0));
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(&body);
    let agent_difference = "ApacheBench/2.3".len() as i64
        - format!("webtune/{}", env!("CARGO_PKG_VERSION")).len() as i64;
    assert_eq!(
        value["bytes_sent"].as_i64().unwrap(),
        sent as i64 - 200 * agent_difference,
        "ab sent {sent}"
    );
}

/// ab's options webtune does not have: one line naming the option, exit 2.
#[test]
fn ab_proxy_and_html_tables_are_refused_in_one_line() {
    for (flag, expect) in [
        (
            vec!["-X", "127.0.0.1:3128"],
            "ab option -X (proxy server) is not supported",
        ),
        (
            vec!["-w"],
            "ab option -w (results in HTML tables) is not supported",
        ),
    ] {
        let mut args = vec!["ab"];
        args.extend(flag);
        args.extend(["-n", "1", "http://127.0.0.1:9/"]);
        let output = webtune(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
    }
}

/// postal's `-p`: one line naming it, exit 2; `--help` says what the flags mean for the
/// rate and how to get postal's pace.
#[test]
fn postal_port_flag_is_refused_and_help_names_the_pace() {
    let users = temp_file("postal-users.txt");
    std::fs::write(&users, "a@example.com\n").unwrap();
    let output = webtune(&["postal", "-p", "2525", "127.0.0.1", users.to_str().unwrap()]);
    let _ = std::fs::remove_file(&users);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("-p (the port) is not supported"),
        "{stderr}"
    );
    let help = String::from_utf8_lossy(&webtune(&["postal", "--help"]).stdout).into_owned();
    assert!(help.contains("To load at postal's pace"), "{help}");
    assert!(help.contains("-r MSG/MIN"), "{help}");
}

/// The line printed at the stop covers part of a minute: its time says so.
#[test]
fn postal_labels_its_last_partial_minute() {
    let Some(sink) = Sink::start() else { return };
    let users = temp_file("postal-users2.txt");
    std::fs::write(&users, "a@example.com\nb@example.com\n").unwrap();
    let server = format!("[127.0.0.1]{}", sink.addr.rsplit(':').next().unwrap());
    let output = webtune(&[
        "postal",
        "-t",
        "1",
        "-m",
        "1",
        "--duration",
        "1s",
        &server,
        users.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_file(&users);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let last = text.lines().last().unwrap();
    let time = last.split(',').next().unwrap();
    assert!(
        time.len() > 5 && time[5..].starts_with(" (partial ") && time.ends_with("s)"),
        "{text}"
    );
}

/// `webtune completions bash` offers the stacks after `lab run`, `NAME=` after `--set` and
/// `--io`'s backends (not file names).
#[test]
fn completions_offer_stacks_parameters_and_io_backends() {
    let output = webtune(&["completions", "bash"]);
    assert_eq!(output.status.code(), Some(0));
    let script = String::from_utf8_lossy(&output.stdout);
    assert!(script.contains("apache-prefork"), "stack names");
    assert!(script.contains("nginx-php-fpm"), "stack names");
    assert!(script.contains("worker_processes="), "parameters");
    assert!(
        script.contains("db.max_connections="),
        "the database's parameters"
    );
    assert!(script.contains("epoll uring auto"), "--io's backends");
}

/// A mistyped stack or parameter: one line with the closest name.
#[test]
fn a_mistyped_stack_or_parameter_gets_did_you_mean() {
    for (args, expect) in [
        (
            vec!["lab", "run", "ngnix", "--", "-n", "1"],
            "(did you mean nginx?)",
        ),
        (
            vec!["lab", "config", "nginx", "--set", "worker_proceses=2"],
            "(did you mean worker_processes?)",
        ),
        (
            vec![
                "lab",
                "sweep",
                "nginx-php-fpm",
                "--set",
                "db.max_conections=5",
                "-c",
                "1",
            ],
            "(did you mean db.max_connections?)",
        ),
        (
            vec!["lab", "params", "apache-prefrok"],
            "(did you mean apache-prefork?)",
        ),
    ] {
        let output = webtune(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}
