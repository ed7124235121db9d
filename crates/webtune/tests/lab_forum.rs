//! `webtune lab … --app forum` end to end, through the built binary: a short forum sweep
//! under Apache prefork + mod_php and under nginx + php-fpm completes with every body check
//! passing and all three pages loaded, the database and the stack are stopped, and no
//! process or directory of the run is left; bad input fails with one line before anything
//! starts; mariadbd killed during a sweep is reported and the sweep exits 3; a forum run
//! names the database's socket, and webtune's own readiness probe leaves no "Aborted
//! connection" warning in MariaDB's log.

mod support;

use std::path::Path;
use std::process::Command;
use support::child::tcp_established;
use support::lab::{leftovers, processes_naming};

const WEBTUNE: &str = env!("CARGO_BIN_EXE_webtune");

/// Wait until webtune (`pid`) has the sweep's first level's two connections open: the
/// forum is being loaded (what a signal or a kill "during a sweep" needs).
fn wait_loading(pid: u32, seen: &str) {
    let loading = webtune_testkit::wait_until(std::time::Duration::from_secs(30), || {
        tcp_established(pid) >= 2
    });
    assert!(loading, "the sweep's load never started: {seen}");
}

/// Which of the forum's requirements this host lacks, as its opt-out's name, if any.
fn missing() -> Option<&'static str> {
    let programs = [
        ("mariadbd", "mariadb"),
        ("mariadb-install-db", "mariadb"),
        ("apache2", "apache2"),
        ("nginx", "nginx"),
    ];
    if support::lab::forum_database_missing() {
        return Some("mariadb");
    }
    programs.iter().find_map(|(p, name)| {
        let found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            .iter()
            .any(|d| Path::new(d).join(p).is_file());
        (!found).then_some(*name)
    })
}

const MISSING: &str = "mariadb-server, php-mysql, apache2 or nginx is not installed";

fn forum_sweep(stack: &str) {
    if let Some(name) = missing() {
        support::opt_out::opt_out(name, MISSING);
        return;
    }
    // A lab root of this test's own, so "nothing left" is exact.
    let root = std::env::temp_dir().join(format!("wt-forum-{stack}-{}", std::process::id()));
    let json = root.with_extension("json");
    let output = Command::new(WEBTUNE)
        .env("WEBTUNE_LAB_DIR", &root)
        .args([
            "lab",
            "sweep",
            stack,
            "--app",
            "forum",
            "--posts",
            "2000",
            "--seed",
            "11",
            "-c",
            "2,6",
            "-d",
            "1500ms",
            "--warmup",
            "300ms",
            "--cooldown",
            "200ms",
            "--pause",
            "0s",
            "--sample-interval",
            "100ms",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("run webtune");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("connections  served"), "{stdout}");
    assert!(stdout.contains("Server side ("), "{stdout}");
    assert!(
        stderr.contains("and its database stopped; no process of them is left"),
        "{stderr}"
    );

    let text = std::fs::read_to_string(&json).expect("json written");
    let _ = std::fs::remove_file(&json);
    let sweep: serde_json::Value = serde_json::from_str(&text).expect("valid json");
    assert_eq!(sweep["schema"], "webtune.sweep/1");
    let levels = sweep["levels"].as_array().expect("levels");
    assert_eq!(levels.len(), 2);
    for level in levels {
        let result = &level["result"];
        let responses = result["responses"].as_u64().unwrap();
        assert!(responses > 0, "{result}");
        assert_eq!(
            result["ok"].as_u64().unwrap(),
            responses,
            "every body check passed"
        );
        for (kind, count) in result["errors"].as_object().unwrap() {
            assert_eq!(count.as_u64(), Some(0), "{kind} errors");
        }
        let names = result["by_name"].as_object().expect("by_name");
        for name in ["forum_list", "topic_list", "thread"] {
            assert!(
                names
                    .get(name)
                    .is_some_and(|n| n["responses"].as_u64() > Some(0)),
                "{name} was loaded: {names:?}"
            );
        }
        // The sampler watched the database too.
        let server = &result["server"];
        assert!(!server["samples"].as_array().unwrap().is_empty());
    }

    // Nothing is left: no process naming the lab root, no directory, no registry entry.
    assert!(processes_naming(&root).is_empty());
    let left = leftovers(&root);
    assert!(left.is_empty(), "left in the lab root: {left:?}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn forum_sweep_under_apache_prefork() {
    forum_sweep("apache-prefork");
}

#[test]
fn forum_sweep_under_nginx_php_fpm() {
    forum_sweep("nginx-php-fpm");
}

#[test]
fn bad_forum_input_fails_with_one_line_before_anything_starts() {
    for (args, expect) in [
        (
            vec!["lab", "sweep", "nginx", "--app", "forum", "-c", "2"],
            "needs a stack with PHP",
        ),
        (
            vec![
                "lab",
                "sweep",
                "apache-prefork",
                "-c",
                "2",
                "--set",
                "db.max_connections=1",
            ],
            "10..=100000",
        ),
        (
            vec![
                "lab",
                "sweep",
                "apache-prefork",
                "-c",
                "2",
                "--set",
                "db.nonsense=1",
            ],
            "lab params mariadb",
        ),
        (
            vec!["lab", "sweep", "apache-prefork", "-c", "0"],
            "at least 1",
        ),
        (vec!["lab", "data", "--posts", "5"], "100..="),
    ] {
        let output = Command::new(WEBTUNE)
            .args(&args)
            .output()
            .expect("run webtune");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn data_checksum_is_deterministic_and_params_list_the_database() {
    let run = |seed: &str| {
        let output = Command::new(WEBTUNE)
            .args([
                "lab",
                "data",
                "--posts",
                "1000",
                "--seed",
                seed,
                "--checksum",
            ])
            .output()
            .expect("run webtune");
        assert_eq!(output.status.code(), Some(0));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    assert_eq!(run("5"), run("5"));
    assert_ne!(run("5"), run("6"));
    let output = Command::new(WEBTUNE)
        .args(["lab", "params", "mariadb"])
        .output()
        .expect("run webtune");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("db.thread_cache_size"), "{stdout}");
    assert!(stdout.contains("db.innodb_buffer_pool_size"), "{stdout}");
}

#[test]
fn data_users_csv_writes_the_accounts_of_the_shipped_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.csv");
    let output = Command::new(WEBTUNE)
        .args(["lab", "data", "--users-csv"])
        .arg(&file)
        .output()
        .expect("run webtune");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("wrote 5000 accounts"));
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/scenarios/forum-users.csv");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(shipped).unwrap(),
        "the defaults (150,000 posts, seed 3) give the shipped accounts"
    );
}

#[test]
fn sighup_during_a_forum_sweep_keeps_what_was_measured_and_leaves_nothing() {
    // SIGHUP (a dropped ssh session) stops like SIGINT and SIGTERM: they share one handler,
    // and lab_cli.rs covers SIGINT and SIGTERM on the web stacks.
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    if let Some(name) = missing() {
        support::opt_out::opt_out(name, MISSING);
        return;
    }
    let root = std::env::temp_dir().join(format!("wt-forum-sigint-{}", std::process::id()));
    let mut child = Command::new(WEBTUNE)
        .env("WEBTUNE_LAB_DIR", &root)
        .args([
            "lab",
            "sweep",
            "apache-event",
            "--app",
            "forum",
            "--posts",
            "2000",
            "--seed",
            "11",
            "-c",
            "2,4",
            "-d",
            "20s",
            "--warmup",
            "0s",
            "--cooldown",
            "0s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run webtune");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    // Wait (bounded by the sweep's own start timeouts) until the stack is ready.
    for line in lines.by_ref().map_while(Result::ok) {
        seen.push_str(&line);
        seen.push('\n');
        if line.contains(" ready at ") {
            break;
        }
    }
    assert!(seen.contains(" ready at "), "{seen}");
    wait_loading(child.id(), &seen);
    // SAFETY: a signal to our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGHUP);
    }
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().expect("wait");
    let rest = rest.join("\n");
    assert_eq!(status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("interrupted"), "{rest}");
    assert!(rest.contains("no process of them is left"), "{rest}");
    assert!(processes_naming(&root).is_empty());
    let left: Vec<String> = leftovers(&root)
        .into_iter()
        .filter(|l| !l.starts_with("registry/"))
        .collect();
    assert!(left.is_empty(), "left in the lab root: {left:?}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn mariadbd_killed_during_a_forum_sweep_is_reported_and_exits_3() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    if let Some(name) = missing() {
        support::opt_out::opt_out(name, MISSING);
        return;
    }
    let root = std::env::temp_dir().join(format!("wt-forum-died-{}", std::process::id()));
    let json = root.with_extension("json");
    let mut child = Command::new(WEBTUNE)
        .env("WEBTUNE_LAB_DIR", &root)
        .args([
            "lab",
            "sweep",
            "nginx-php-fpm",
            "--app",
            "forum",
            "--posts",
            "2000",
            "--seed",
            "11",
            "-c",
            "2,2,2,2,2",
            "-d",
            "2s",
            "--warmup",
            "0s",
            "--cooldown",
            "0s",
            "--pause",
            "0s",
            "--sample-interval",
            "100ms",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run webtune");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    for line in lines.by_ref().map_while(Result::ok) {
        seen.push_str(&line);
        seen.push('\n');
        if line.contains(" ready at ") {
            break;
        }
    }
    assert!(seen.contains(" ready at "), "{seen}");
    // mariadbd: a direct child of webtune, named by its command.
    let webtune = child.id().to_string();
    let mariadbd: Vec<i32> = processes_naming(&root)
        .into_iter()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.contains("(mariadbd)")
                && stat
                    .rsplit_once(") ")
                    .and_then(|(_, r)| r.split_whitespace().nth(1))
                    == Some(webtune.as_str())
        })
        .collect();
    assert_eq!(mariadbd.len(), 1, "{mariadbd:?}");
    wait_loading(child.id(), &seen);
    // SAFETY: a signal to the database server, a child of our own child.
    unsafe {
        libc::kill(mariadbd[0], libc::SIGKILL);
    }
    let stdout = child.stdout.take().expect("stdout");
    let report: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().expect("wait");
    let report = report.join("\n");
    let rest = rest.join("\n");
    let written = std::fs::read_to_string(&json);
    let _ = std::fs::remove_file(&json);
    assert_eq!(status.code(), Some(3), "{report}\n{seen}{rest}");
    assert!(
        report.contains(&format!(
            "DIED       mariadbd main process (pid {}) killed by SIGKILL, by ",
            mariadbd[0]
        )),
        "{report}"
    );
    let value: serde_json::Value =
        serde_json::from_str(&written.expect("json written")).expect("valid json");
    let levels = value["levels"].as_array().expect("levels");
    let deaths = |i: usize| levels[i]["result"]["server"]["deaths"].clone();
    // The kill lands in the first level unless this test was held off the CPU past its 2 s
    // (seen in loaded runs, with the other forum tests starting their stacks beside it:
    // once in the second level, twice in the third). Five levels leave a next one after
    // any of the first four.
    let died = (0..levels.len() - 1)
        .find(|&i| !deaths(i)[0].is_null())
        .unwrap_or_else(|| panic!("no death before the last level: {levels:?}"));
    assert_eq!(deaths(died)[0]["process"], "mariadbd", "{}", deaths(died));
    // Killed under load in the first level: some time into it. In the second, the death
    // may be seen at its start (t_s 0) if the kill fell between the levels.
    let t_s = deaths(died)[0]["t_s"].as_f64();
    let least = if died == 0 {
        t_s > Some(0.0)
    } else {
        t_s >= Some(0.0)
    };
    assert!(least, "{}", deaths(died));
    // The next level loaded the stack without its database from the start.
    let next = deaths(died + 1);
    assert_eq!(next[0]["t_s"].as_f64(), Some(0.0), "{next}");
    assert!(processes_naming(&root).is_empty());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_forum_runs_on_a_private_copy_of_your_my_cnf() {
    let no_my_cnf = (!Path::new("/etc/mysql/my.cnf").exists()).then_some("mariadb");
    if let Some(name) = missing().or(no_my_cnf) {
        support::opt_out::opt_out(name, MISSING);
        return;
    }
    let lab = support::lab::LabDir::new("forum-my-cnf");
    std::fs::create_dir_all(&lab.0).unwrap();
    let json = lab.0.with_extension("json");
    let output = lab
        .command()
        .args([
            "lab",
            "run",
            "nginx-php-fpm",
            "--app",
            "forum",
            "--posts",
            "2000",
        ])
        .args(["--seed", "11", "--mysql-config", "/etc/mysql/my.cnf"])
        .args([
            "--set",
            "db.max_connections=60",
            "--",
            "-c",
            "2",
            "-n",
            "30",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("your my.cnf /etc/mysql/my.cnf"), "{stderr}");
    let text = std::fs::read_to_string(&json).expect("json written");
    let _ = std::fs::remove_file(&json);
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid json");
    assert_eq!(value["ok"].as_u64(), Some(30), "{text}");
    assert_eq!(value["server"]["parameters"]["db.max_connections"], "60");
    assert!(processes_naming(&lab.0).is_empty());
    assert_eq!(support::lab::leftovers(&lab.0), Vec::<String>::new());
    // Only the forum uses the database.
    let output = lab
        .command()
        .args(["lab", "run", "nginx", "--mysql-config", "/etc/mysql/my.cnf"])
        .args(["--", "-n", "1"])
        .output()
        .expect("run webtune");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("goes with --app forum"));
}

/// The forum's run says where the database's socket is (what `advise --live --mysql-socket`
/// needs), and MariaDB logged no aborted connection: the readiness probe logs in and quits.
#[test]
fn a_forum_run_names_the_database_socket_and_the_probe_leaves_no_warning() {
    if let Some(name) = missing() {
        support::opt_out::opt_out(name, MISSING);
        return;
    }
    let lab = support::lab::LabDir::new("forum-socket");
    std::fs::create_dir_all(&lab.0).unwrap();
    let json = lab.0.with_extension("json");
    let output = lab
        .command()
        .args(["lab", "run", "nginx-php-fpm", "--app", "forum"])
        .args([
            "--posts", "2000", "--seed", "11", "--", "-c", "2", "-n", "20",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let ready = stderr
        .lines()
        .find(|l| l.contains(" ready at "))
        .unwrap_or_else(|| panic!("{stderr}"));
    let socket = ready
        .split_once("database socket ")
        .map(|(_, rest)| rest.trim_end_matches(')'))
        .unwrap_or_else(|| panic!("no database socket in {ready}"));
    assert!(
        socket.starts_with('/') && socket.ends_with(".sock"),
        "{ready}"
    );
    let text = std::fs::read_to_string(&json).expect("json written");
    let _ = std::fs::remove_file(&json);
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid json");
    assert_eq!(value["ok"].as_u64(), Some(20), "{text}");
    let logged = value["server"]["log_messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let aborted: Vec<_> = logged
        .iter()
        .filter(|m| {
            m["message"]
                .as_str()
                .is_some_and(|t| t.contains("Aborted connection"))
        })
        .collect();
    assert!(aborted.is_empty(), "{aborted:?}");
    assert!(processes_naming(&lab.0).is_empty());
}
