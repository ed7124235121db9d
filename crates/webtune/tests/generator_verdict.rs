//! The verdict on the generator against a real nginx (issue 33, item 6): it blames the
//! generator only when the generator measurably was the limit, with the figure that decided.
//! A stopped nginx worker under `--rate 1000 -c 200` is a stall of the server, reported as
//! one; a rate well within capacity is not client-limited; a generator starved of CPU by a
//! neighbour on its core is, with its CPU figures in the reason.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::child::{finish, signal, tcp_established, webtune};
use webtune_testkit::free_port;
use webtune_testkit::servers::{self, Server};

/// One test at a time: the starved generator's neighbour would starve the others' too.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn nginx() -> Server {
    let port = free_port();
    servers::start_nginx(
        tempfile::tempdir().unwrap(),
        port,
        &[("empty.gif", &[0u8; 43])],
        &format!("server {{ listen 127.0.0.1:{port}; root {{d}}/www; }}"),
    )
}

/// The children of `pid` (nginx's workers under its master).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|stat| {
                    let after = stat.get(stat.rfind(')')? + 2..)?.to_string();
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

/// A process the test stopped with SIGSTOP: continued when dropped, so a failing test
/// leaves no stopped worker behind (its master could not stop it).
struct Stopped(u32);

impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.0, libc::SIGCONT);
    }
}

/// A process the test started, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bench(args: &[&str], json: &std::path::Path, url: &str) -> Child {
    webtune()
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(json)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("webtune bench runs")
}

fn read(json: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(json).expect("the result was written"))
        .expect("JSON")
}

#[test]
fn a_stopped_nginx_worker_is_a_stall_of_the_server_not_the_generators_fault() {
    let _serial = one_at_a_time();
    let server = nginx();
    let workers = children_of(server.child.id());
    assert_eq!(workers.len(), 1, "one worker: {workers:?}");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("http://127.0.0.1:{}/empty.gif", server.port);
    let run = bench(&["--rate", "1000", "-c", "200", "-d", "5s"], &json, &url);
    // The load flows before the worker is stopped (the run's own connections are up).
    assert!(
        webtune_testkit::wait_until(Duration::from_secs(20), || tcp_established(run.id()) > 0),
        "the load never connected"
    );
    // The scenario, not a synchronisation: the only worker frozen for 2 s mid-run.
    let stopped = Stopped(workers[0]);
    signal(stopped.0, libc::SIGSTOP);
    std::thread::sleep(Duration::from_secs(2));
    drop(stopped);
    let (code, text, stderr) = finish(run, Duration::from_secs(60));
    assert_eq!(code, 0, "{text}{stderr}");
    let v = read(&json);
    // The stall is reported, in the result and the text...
    let stalls = v["stalls"].as_array().unwrap();
    let stalled: f64 = stalls.iter().filter_map(|s| s["length_s"].as_f64()).sum();
    assert!(stalled >= 1.0, "{stalls:?}\n{text}");
    assert!(text.contains("Stalls          1"), "{text}");
    // ...and it waited on the server, with every connection busy...
    assert!(
        v["schedule"]["connection_wait"]["max_us"].as_u64() >= Some(1_000_000),
        "{text}"
    );
    // ...so the generator is not blamed, whatever its own late tail on this machine.
    assert_eq!(v["validity"]["client_limited"], false, "{text}");
    assert!(v["validity"]["limited_by"].is_null(), "{}", v["validity"]);
    assert!(!text.contains("the generator was the limit"), "{text}");
    assert!(text.contains("Generator       kept up"), "{text}");
}

#[test]
fn a_rate_well_within_capacity_is_not_client_limited() {
    let _serial = one_at_a_time();
    let server = nginx();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("http://127.0.0.1:{}/empty.gif", server.port);
    let run = bench(&["--rate", "1000", "-c", "20", "-d", "3s"], &json, &url);
    let (code, text, stderr) = finish(run, Duration::from_secs(60));
    assert_eq!(code, 0, "{text}{stderr}");
    let v = read(&json);
    assert!(
        v["schedule"]["achieved_rate"].as_f64() > Some(950.0),
        "{text}"
    );
    assert_eq!(v["validity"]["client_limited"], false, "{text}");
    assert_eq!(v["validity"]["reasons"], serde_json::json!([]), "{text}");
    // The figures behind "kept up" are shown: CPU, the wait for a core, the lag.
    let kept = text
        .lines()
        .find(|l| l.starts_with("Generator       kept up"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(kept.contains("generator lag p50"), "{kept}");
}

#[test]
fn a_generator_starved_of_cpu_is_the_limit_and_says_by_which_figure() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return support::opt_out::opt_out(
            "root",
            "starving the generator needs a nice -20 neighbour on its CPU",
        );
    }
    let _serial = one_at_a_time();
    let server = nginx();
    // A busy loop at nice -20 on CPU 0 (in this test's session, where nice weighs): a
    // generator pinned there gets about 1% of it.
    let neighbour = Killed(
        Command::new("nice")
            .args([
                "-n",
                "-20",
                "taskset",
                "-c",
                "0",
                "sh",
                "-c",
                "while :; do :; done",
            ])
            .spawn()
            .expect("nice and taskset run"),
    );
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let url = format!("http://127.0.0.1:{}/empty.gif", server.port);
    let run = Command::new("taskset")
        .args(["-c", "0", support::lab::WEBTUNE, "bench", "-t", "1"])
        .args(["--rate", "2000", "-c", "50", "-d", "2s", "--json"])
        .arg(&json)
        .arg(&url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("taskset runs webtune");
    let (code, text, stderr) = finish(run, Duration::from_secs(120));
    drop(neighbour);
    assert_eq!(code, 0, "{text}{stderr}");
    let v = read(&json);
    let validity = &v["validity"];
    assert_eq!(validity["client_limited"], true, "{text}");
    assert_eq!(validity["limited_by"], "rate_short", "{validity}");
    let (busy, wait) = (
        validity["cpu_busy"].as_f64().unwrap(),
        validity["cpu_wait"]
            .as_f64()
            .expect("the kernel's run-queue wait"),
    );
    assert!(wait > busy, "{validity}");
    let reason = validity["reasons"][0].as_str().unwrap_or_default();
    assert!(
        reason.contains("was starved of CPU") || reason.contains("had no idle time"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("waiting for one {:.0}% of the run", wait * 100.0)),
        "{reason}"
    );
    assert!(
        text.contains("WARNING: the generator was the limit"),
        "{text}"
    );
}
