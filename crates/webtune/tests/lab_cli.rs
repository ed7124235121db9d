//! `webtune lab` end to end, through the built binary: a run prints the bench report and
//! the server-side summary; a rejected config fails cleanly; SIGINT to webtune stops the
//! stack with nothing left; after SIGKILL to webtune, `lab clean` reaps the stack; a
//! server's main process killed mid-run is reported (text, JSON, exit status 3), and stops a
//! `lab capacity` search at that step; `lab sweep --app site` loads the stack's own default
//! path, `-q` prints no table, and a level with no successful response exits 1. A lab
//! directory that holds other things (a user's files, processes whose command lines name
//! it) keeps them, and its mode, through `webtune fs`, a lab start and `lab clean`; a
//! recorded session whose pid now shows another start time is never signalled.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

mod support;

use support::child::{tcp_established, Watched};
use support::lab::{processes_naming, ready_dir, LabDir, WEBTUNE};

/// webtune with `args` (in `lab_dir`'s lab root when given), stdout to `stdout`; killed and
/// its stack reaped if the test ends early.
fn spawn_to(lab_dir: Option<&LabDir>, args: &[&str], stdout: Stdio) -> Watched {
    let mut command = match lab_dir {
        Some(dir) => dir.command(),
        None => Command::new(WEBTUNE),
    };
    command.args(args).stdout(stdout);
    Watched::spawn(&mut command).reaping(lab_dir.map(|d| d.0.clone()))
}

fn spawn(args: &[&str]) -> Watched {
    spawn_to(None, args, Stdio::null())
}

fn spawn_in(lab_dir: Option<&LabDir>, args: &[&str]) -> Watched {
    spawn_to(lab_dir, args, Stdio::null())
}

/// Wait for the "ready at" line; the stack's private directory.
fn wait_ready(webtune: &mut Watched) -> PathBuf {
    ready_dir(&webtune.wait_for_line(" ready at ", Duration::from_secs(30)))
}

/// Wait until webtune has its `connections` load connections open: the run is loading the
/// stack (what a signal "mid-run" needs).
fn wait_loading(webtune: &mut Watched, connections: usize) {
    let pid = webtune.pid();
    webtune.wait_until("the load's connections", Duration::from_secs(20), || {
        tcp_established(pid) >= connections
    });
}

#[test]
fn lab_run_prints_the_bench_report_and_the_server_side() {
    let json = std::env::temp_dir().join(format!("webtune-lab-cli-{}.json", std::process::id()));
    let output = Command::new(WEBTUNE)
        .args([
            "lab",
            "run",
            "apache-prefork",
            "--set",
            "MaxRequestWorkers=2",
            "--sample-interval",
            "50ms",
            "--",
            "-c",
            "4",
            "-n",
            "40",
            "--json",
        ])
        .arg(&json)
        .arg("/cpu/1000")
        .output()
        .expect("run webtune");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Server side (apache-prefork"), "{stdout}");
    assert!(stdout.contains("context switches"), "{stdout}");
    assert!(stderr.contains("no process of it is left"), "{stderr}");
    let text = std::fs::read_to_string(&json).expect("json written");
    let _ = std::fs::remove_file(&json);
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid json");
    assert_eq!(value["responses"], 40);
    let server = &value["server"];
    assert_eq!(server["target"], "apache-prefork");
    assert_eq!(server["parameters"]["MaxRequestWorkers"], "2");
    assert_eq!(server["parameters"]["KeepAlive"], "on");
    assert_eq!(
        server["parameters_set"],
        serde_json::json!(["MaxRequestWorkers"])
    );
    let samples = server["samples"].as_array().expect("samples");
    assert!(!samples.is_empty());
    // Parent plus two children at most.
    assert!(
        samples.iter().all(|s| s["processes"].as_u64() <= Some(3)),
        "{server}"
    );
}

#[test]
fn a_rejected_config_is_one_line_and_leaves_nothing() {
    let output = Command::new(WEBTUNE)
        .args([
            "lab",
            "run",
            "nginx-php-fpm",
            "--set",
            "pm.start_servers=9",
            "--",
            "-n",
            "1",
        ])
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("php-fpm rejected"), "{stderr}");
    let bad = Command::new(WEBTUNE)
        .args(["lab", "run", "nginx", "--set", "worker_connections=1"])
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr.contains("2..=1048576"), "{stderr}");
    assert!(
        !stderr.contains("starting"),
        "refused before anything starts: {stderr}"
    );
}

#[test]
fn sigint_to_webtune_stops_the_stack_with_nothing_left() {
    let mut webtune = spawn(&["lab", "run", "nginx", "--", "-c", "2", "-d", "60s"]);
    let dir = wait_ready(&mut webtune);
    assert!(!processes_naming(&dir).is_empty(), "nginx runs");
    wait_loading(&mut webtune, 2);
    webtune.signal(libc::SIGINT);
    let code = webtune.wait(Duration::from_secs(20));
    assert_eq!(code, Some(130), "interrupted run exits 128+SIGINT");
    assert!(
        processes_naming(&dir).is_empty(),
        "{:?}",
        processes_naming(&dir)
    );
    assert!(!dir.exists(), "private dir removed");
}

#[test]
fn sighup_to_webtune_stops_nginx_apache_with_nothing_left() {
    // A dropped ssh session: SIGHUP is a stop like SIGTERM, the result is kept, and both
    // servers of the two-tier stack are stopped.
    let json = std::env::temp_dir().join(format!("wt-sighup-{}.json", std::process::id()));
    let json_arg = json.to_string_lossy().into_owned();
    let mut webtune = spawn(&[
        "lab",
        "run",
        "nginx-apache",
        "--",
        "-c",
        "2",
        "-d",
        "60s",
        "--json",
        &json_arg,
    ]);
    let dir = wait_ready(&mut webtune);
    assert!(!processes_naming(&dir).is_empty(), "the stack runs");
    wait_loading(&mut webtune, 2);
    webtune.signal(libc::SIGHUP);
    let code = webtune.wait(Duration::from_secs(30));
    assert_eq!(code, Some(130), "a run stopped by SIGHUP exits 130");
    assert!(
        processes_naming(&dir).is_empty(),
        "{:?}",
        processes_naming(&dir)
    );
    assert!(!dir.exists(), "private dir removed");
    let text = std::fs::read_to_string(&json).expect("the result was written");
    let _ = std::fs::remove_file(&json);
    let v: serde_json::Value = serde_json::from_str(&text).expect("complete JSON");
    assert_eq!(v["interrupted"], true);
    assert!(v["server"].is_object(), "the server section is kept");
}

#[test]
fn after_sigkill_lab_clean_reaps_the_stack() {
    let lab = LabDir::new("clean");
    let mut webtune = spawn_in(
        Some(&lab),
        &["lab", "run", "nginx-php-fpm", "--", "-c", "1", "-d", "60s"],
    );
    let dir = wait_ready(&mut webtune);
    assert!(dir.starts_with(&lab.0), "{dir:?}");
    webtune.signal(libc::SIGKILL);
    assert!(webtune.wait(Duration::from_secs(10)).is_some());
    // The servers run in their own sessions: they outlive a killed webtune...
    assert!(
        !processes_naming(&dir).is_empty(),
        "servers outlive SIGKILL"
    );
    // ...until `lab clean` reaps them.
    lab.clean_reaps(&dir);
    assert!(!dir.exists());
}

#[test]
fn after_sigkill_the_next_start_reaps_the_stack() {
    let lab = LabDir::new("next-start");
    let mut webtune = spawn_in(
        Some(&lab),
        &["lab", "run", "apache-prefork", "--", "-c", "1", "-d", "60s"],
    );
    let dir = wait_ready(&mut webtune);
    webtune.signal(libc::SIGKILL);
    assert!(webtune.wait(Duration::from_secs(10)).is_some());
    assert!(
        !processes_naming(&dir).is_empty(),
        "Apache outlives SIGKILL"
    );
    let output = lab
        .command()
        .args(["lab", "run", "nginx", "--", "-c", "1", "-n", "5"])
        .output()
        .expect("run webtune");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("reaped a stack a killed webtune left"),
        "{stderr}"
    );
    assert!(stderr.contains(&dir.display().to_string()), "{stderr}");
    assert!(
        processes_naming(&dir).is_empty(),
        "{:?}",
        processes_naming(&dir)
    );
}

#[test]
fn sigterm_to_webtune_stops_apache_prefork_with_nothing_left() {
    // Apache prefork signals its whole process group on SIGTERM: in its own session it
    // cannot take webtune down with it, and webtune's SIGTERM stops it cleanly.
    let mut webtune = spawn(&["lab", "run", "apache-prefork", "--", "-c", "2", "-d", "60s"]);
    let dir = wait_ready(&mut webtune);
    wait_loading(&mut webtune, 2);
    webtune.signal(libc::SIGTERM);
    let code = webtune.wait(Duration::from_secs(20));
    assert_eq!(code, Some(130), "interrupted run exits 130");
    assert!(
        processes_naming(&dir).is_empty(),
        "{:?}",
        processes_naming(&dir)
    );
    assert!(!dir.exists(), "private dir removed");
}

#[test]
fn external_stack_loads_a_url_and_samples_named_processes() {
    // A server "somebody else" runs: here an nginx the lab library starts.
    let stack = webtune_lab::StackKind::Nginx;
    let settings = webtune_lab::settings_for(stack, &[]).expect("defaults");
    let running = webtune_lab::RunningStack::start(stack, &settings, Default::default())
        .expect("nginx starts");
    let output = Command::new(WEBTUNE)
        .args(["lab", "run", "external"])
        .arg(running.base_url())
        .args([
            "--process",
            "nginx",
            "--",
            "-c",
            "2",
            "-n",
            "50",
            "--json",
            "-",
        ])
        .arg("/empty.gif")
        .output()
        .expect("run webtune");
    running.stop().expect("clean stop");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let value: serde_json::Value = serde_json::from_str(&stdout).expect("json on stdout");
    assert_eq!(value["responses"], 50);
    assert_eq!(value["first_body_bytes"], 43);
    // The nginx listening on the URL's port, found by its socket: its master and workers.
    let selector = value["server"]["selector"].as_str().unwrap_or_default();
    assert!(
        selector.starts_with("pid ")
            && selector.contains("and its children (nginx, listening on port"),
        "{selector}"
    );
    let samples = value["server"]["samples"].as_array().expect("samples");
    assert!(
        samples.iter().any(|s| s["processes"].as_u64() >= Some(2)),
        "master and worker seen: {samples:?}"
    );
    // No --set for a server the lab does not configure.
    let refused = Command::new(WEBTUNE)
        .args([
            "lab",
            "run",
            "external",
            "http://127.0.0.1:1",
            "--set",
            "KeepAlive=off",
        ])
        .output()
        .expect("run webtune");
    assert_eq!(refused.status.code(), Some(2));
}

#[test]
fn bad_values_and_empty_runs_are_refused_before_a_stack_starts() {
    for (args, expect) in [
        (
            vec!["lab", "config", "nginx", "--set", "worker_processes=abc"],
            "parameter worker_processes: \"abc\" is not a number",
        ),
        (
            vec!["lab", "run", "nginx", "--", "-d", "0s"],
            "-d/--duration must be longer than 0",
        ),
        (
            vec!["lab", "run", "nginx", "--", "-n", "5", "--warmup", "1s"],
            "--warmup needs a timed run",
        ),
        (
            // lab sweep's defaults (--warmup 2s --cooldown 1s) leave nothing of 2 s.
            vec![
                "lab", "sweep", "nginx", "--app", "site", "-c", "2", "-d", "2s",
            ],
            "leave nothing to measure in a 2s run",
        ),
    ] {
        let output = Command::new(WEBTUNE)
            .args(&args)
            .output()
            .expect("run webtune");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

/// The parent pid of a process (field 4 of /proc/PID/stat).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// kill -9 of a stack's main process (a direct child of webtune, the leader of its
/// session) once an 8 s load is running: the run names it with a time in the text report and the
/// JSON, exits 3, and no process of the stack is left. (8 s rather than 3: with the whole
/// workspace's tests on two cores, a 3 s load once ended before the poll saw its connections.)
fn main_process_killed_mid_run_is_reported(stack: &str, process: &str) {
    let lab = LabDir::new(&format!("died-{stack}"));
    let json = std::env::temp_dir().join(format!(
        "webtune-lab-died-{}-{stack}.json",
        std::process::id()
    ));
    let text = std::env::temp_dir().join(format!(
        "webtune-lab-died-{}-{stack}.txt",
        std::process::id()
    ));
    let stdout = std::fs::File::create(&text).expect("stdout file");
    let json_arg = json.display().to_string();
    let args = [
        "lab",
        "run",
        stack,
        "--sample-interval",
        "100ms",
        "--",
        "-c",
        "4",
        "-d",
        "8s",
        "--json",
        &json_arg,
    ];
    let mut webtune = spawn_to(Some(&lab), &args, Stdio::from(stdout));
    let dir = wait_ready(&mut webtune);
    let masters: Vec<i32> = processes_naming(&dir)
        .into_iter()
        .filter(|p| parent_of(*p) == Some(webtune.pid() as i32))
        .collect();
    assert_eq!(
        masters.len(),
        1,
        "one server, started by webtune: {masters:?}"
    );
    let master = masters[0];
    wait_loading(&mut webtune, 4);
    // SAFETY: a signal to the stack's master, a child of our own child.
    unsafe {
        libc::kill(master, libc::SIGKILL);
    }
    let code = webtune.wait(Duration::from_secs(30));
    let report = std::fs::read_to_string(&text).unwrap_or_default();
    let _ = std::fs::remove_file(&text);
    let written = std::fs::read_to_string(&json);
    let _ = std::fs::remove_file(&json);
    assert_eq!(code, Some(3), "a run whose server died exits 3: {report}");
    assert!(
        report.contains(&format!(
            "DIED       {process} main process (pid {master}) killed by SIGKILL, by "
        )),
        "{report}"
    );
    let value: serde_json::Value =
        serde_json::from_str(&written.expect("json written")).expect("valid json");
    let deaths = value["server"]["deaths"].as_array().expect("deaths");
    assert_eq!(deaths.len(), 1, "{deaths:?}");
    assert_eq!(deaths[0]["process"], process);
    assert_eq!(deaths[0]["pid"], master);
    assert_eq!(deaths[0]["how"], "killed by SIGKILL");
    // Seen at a sample after the kill, which came after sampling began: not at 0.
    let t_s = deaths[0]["t_s"].as_f64().expect("t_s");
    assert!(t_s > 0.0, "{t_s}");
    assert!(
        processes_naming(&dir).is_empty(),
        "{:?}",
        processes_naming(&dir)
    );
    assert!(!dir.exists(), "private dir removed");
}

#[test]
fn nginx_master_killed_mid_run_is_reported() {
    main_process_killed_mid_run_is_reported("nginx", "nginx");
}

#[test]
fn apache_prefork_parent_killed_mid_run_is_reported() {
    main_process_killed_mid_run_is_reported("apache-prefork", "apache2");
}

#[test]
fn lab_sweep_of_the_site_loads_the_stacks_own_path_and_a_level_without_success_exits_1() {
    let lab = LabDir::new("sweep-site");
    let json = std::env::temp_dir().join(format!("webtune-lab-sweep-{}.json", std::process::id()));
    let sweep = |extra: &[&str]| {
        let output = lab
            .command()
            .args([
                "lab", "sweep", "nginx", "--app", "site", "-c", "2", "-d", "1s",
            ])
            .args(["--warmup", "0s", "--cooldown", "0s", "--pause", "0s", "-q"])
            .arg("--json")
            .arg(&json)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("run webtune");
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("json written"))
                .expect("valid json");
        let _ = std::fs::remove_file(&json);
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
            value,
        )
    };
    // nginx has no PHP: the empty GIF, as `lab run` loads, not /cpu/2000.
    let (code, stdout, stderr, value) = sweep(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.is_empty(), "-q prints no table: {stdout}");
    let level = &value["levels"][0]["result"];
    assert!(
        level["spec"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/empty.gif"),
        "{}",
        level["spec"]["url"]
    );
    assert!(level["ok"].as_u64().unwrap() > 0);
    // A path the stack does not serve: every response a 404, and that is an error.
    let (code, stdout, stderr, _) = sweep(&["--path", "/cpu/2000"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("webtune: lab sweep: level 2 connections got no successful response"),
        "{stderr}"
    );
}

/// `lab sweep --warmup 0s --cooldown 0s` names no "first 0ns"/"last 0ns" left out.
#[test]
fn lab_sweep_names_only_the_parts_it_leaves_out() {
    let lab = LabDir::new("sweep-left-out");
    let sweep = |warmup: &str, cooldown: &str| {
        let output = lab
            .command()
            .args([
                "lab", "sweep", "nginx", "--app", "site", "-c", "1", "-d", "1s",
            ])
            .args(["--warmup", warmup, "--cooldown", cooldown, "--pause", "0s"])
            .stdin(Stdio::null())
            .output()
            .expect("run webtune");
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        stdout
            .lines()
            .find(|l| l.starts_with("Lab sweep:"))
            .unwrap_or_else(|| panic!("{stdout}"))
            .to_string()
    };
    let line = sweep("0s", "0s");
    assert!(line.ends_with("each level 1s"), "{line}");
    let line = sweep("200ms", "0s");
    assert!(
        line.ends_with("each level 1s, of which the first 200ms is left out"),
        "{line}"
    );
}

/// kill -9 of nginx's master during a `lab capacity` search: the search stops at that step
/// (the orphaned workers would go on answering), says so in the text, exits 3.
#[test]
fn lab_capacity_stops_at_the_step_in_which_the_master_died() {
    let lab = LabDir::new("capacity-died");
    let json = std::env::temp_dir().join(format!(
        "webtune-lab-capacity-died-{}.json",
        std::process::id()
    ));
    let text = std::env::temp_dir().join(format!(
        "webtune-lab-capacity-died-{}.txt",
        std::process::id()
    ));
    let stdout = std::fs::File::create(&text).expect("stdout file");
    let json_arg = json.display().to_string();
    let args = [
        "lab",
        "capacity",
        "nginx",
        "--slo",
        "p99<=1s",
        "--start-rate",
        "20",
        "--max-rate",
        "1000000",
        "-d",
        "1s",
        "--pause",
        "100ms",
        "--sample-interval",
        "100ms",
        "--json",
        &json_arg,
    ];
    let mut webtune = spawn_to(Some(&lab), &args, Stdio::from(stdout));
    let dir = wait_ready(&mut webtune);
    let master = processes_naming(&dir)
        .into_iter()
        .find(|p| parent_of(*p) == Some(webtune.pid() as i32))
        .expect("nginx's master, started by webtune");
    // Killed while a step loads it.
    wait_loading(&mut webtune, 1);
    // SAFETY: a signal to the stack's master, a child of our own child.
    unsafe {
        libc::kill(master, libc::SIGKILL);
    }
    let code = webtune.wait(Duration::from_secs(60));
    let report = std::fs::read_to_string(&text).unwrap_or_default();
    let _ = std::fs::remove_file(&text);
    let written = std::fs::read_to_string(&json);
    let _ = std::fs::remove_file(&json);
    assert_eq!(code, Some(3), "{report}");
    assert!(report.contains("TARGET DOWN"), "{report}");
    assert!(report.contains("Result: target down at step"), "{report}");
    assert!(
        report.contains(&format!("nginx (pid {master})")),
        "{report}"
    );
    assert!(!report.contains("<- capacity"), "{report}");
    let value: serde_json::Value =
        serde_json::from_str(&written.expect("json written")).expect("valid json");
    assert_eq!(value["limit"], "target_down");
    assert!(value["capacity_rps"].is_null());
    let steps = value["steps"].as_array().unwrap();
    assert_eq!(steps.last().unwrap()["outcome"], "target_down");
    assert_eq!(
        steps
            .iter()
            .filter(|s| s["outcome"] == "target_down")
            .count(),
        1,
        "the search stopped at the first: {steps:?}"
    );
    assert!(processes_naming(&dir).is_empty());
}

#[test]
fn a_kept_directory_survives_the_next_start_and_lab_clean() {
    let lab = LabDir::new("keep");
    let run = |extra: &[&str]| {
        let output = lab
            .command()
            .args(["lab", "run", "nginx"])
            .args(extra)
            .args(["--", "-c", "1", "-n", "5", "-q"])
            .output()
            .expect("run webtune");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{stderr}");
    };
    let private_dirs = || -> Vec<PathBuf> {
        std::fs::read_dir(&lab.0)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.is_dir() && !p.ends_with("registry") && !p.to_string_lossy().ends_with(".www")
            })
            .collect()
    };
    run(&["--keep"]);
    let kept = private_dirs();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].join("nginx.conf").exists(), "{kept:?}");
    // The next start reaps leftovers; the kept directory is not one.
    run(&[]);
    assert!(
        kept[0].join("nginx.conf").exists(),
        "the next start removed {kept:?}"
    );
    let clean = lab.command().args(["lab", "clean"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&clean.stdout);
    assert_eq!(clean.status.code(), Some(0));
    assert!(
        kept[0].join("nginx.conf").exists(),
        "lab clean removed {kept:?}"
    );
    assert!(
        stdout.contains(&format!("kept {} (asked with --keep", kept[0].display())),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&lab.0);
}

/// A process of "the user's" in a session of its own whose command line names `path`
/// (`sh -c 'sleep 600; :' PATH`); killed when dropped.
struct Bystander(std::process::Child);

impl Bystander {
    fn naming(path: &std::path::Path) -> Bystander {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new("sh");
        command
            .args(["-c", "sleep 600; :"])
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: setsid is async-signal-safe; it runs in the child before exec.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        Bystander(command.spawn().expect("start sh"))
    }

    fn pid(&self) -> i32 {
        self.0.id() as i32
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().expect("wait on the bystander").is_none()
    }

    /// Field 22 of /proc/PID/stat.
    fn start_ticks(&self) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
        let rest = stat.rsplit_once(") ").unwrap().1;
        rest.split_whitespace().nth(19).unwrap().parse().unwrap()
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn a_lab_dir_holding_other_things_keeps_them_its_mode_and_their_processes() {
    use std::os::unix::fs::PermissionsExt;
    let lab = LabDir::new("foreign");
    let root = lab.0.clone();
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(root.join("notes.txt"), "mine\n").unwrap();
    std::fs::create_dir(root.join("photos")).unwrap();
    std::fs::write(root.join("photos").join("a.jpg"), "jpeg").unwrap();
    let mut users = [
        Bystander::naming(&root),
        Bystander::naming(&root.join("photos")),
    ];
    let users_things = |root: &std::path::Path| {
        assert_eq!(mode_of(root), 0o1777, "the lab directory's mode changed");
        assert_eq!(
            std::fs::read_to_string(root.join("notes.txt")).unwrap(),
            "mine\n"
        );
        assert!(root.join("photos").join("a.jpg").exists(), "photos/ went");
    };

    // `webtune fs` registers its pool in the lab directory.
    let pools = std::env::temp_dir().join(format!("webtune-lab-cli-{}-pools", std::process::id()));
    let _ = std::fs::remove_dir_all(&pools);
    std::fs::create_dir(&pools).unwrap();
    let out = lab
        .command()
        .args(["fs", "--files", "20", "--transactions", "40", "-q", "--dir"])
        .arg(&pools)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    users_things(&root);

    // A pool whose run was killed, and a process of the user's naming it.
    let mut killed = lab
        .command()
        .args(["fs", "--files", "200", "-d", "60s", "-q", "--dir"])
        .arg(&pools)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pool = loop {
        let found = std::fs::read_dir(&pools)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .next();
        if let (Some(pool), false) = (found, lab.registry().is_empty()) {
            break pool;
        }
        assert!(
            killed.try_wait().unwrap().is_none(),
            "webtune fs ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    killed.kill().unwrap();
    killed.wait().unwrap();
    let mut pool_user = Bystander::naming(&pool.join("x"));

    // A start whose owner is gone, recording a session whose leader pid now belongs to
    // another process (another start time): a reused pid.
    let mut reused = Bystander::naming(std::path::Path::new("/nonexistent-webtune-test"));
    let fake_id = format!("nginx-{}-0", reused.pid());
    std::fs::create_dir(root.join(&fake_id)).unwrap();
    let entry = serde_json::json!({
        "id": fake_id,
        "stack": "nginx",
        "owner_pid": reused.pid(),
        "owner_start_ticks": reused.start_ticks() + 1,
        "private_dir": root.join(&fake_id),
        "docroot": root.join(&fake_id),
        "sessions": [{"sid": reused.pid(), "start_ticks": reused.start_ticks() + 1}],
    });
    std::fs::write(
        root.join("registry").join(format!("{fake_id}.json")),
        entry.to_string(),
    )
    .unwrap();

    let out = lab.command().args(["lab", "clean"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!pool.exists(), "the killed run's pool is reaped: {stdout}");
    assert!(!root.join(&fake_id).exists(), "{stdout}");
    assert!(lab.registry().is_empty(), "{stdout}");
    assert_eq!(
        stdout.matches("left alone").count(),
        1,
        "the user's entries are named once: {stdout}"
    );
    assert!(stdout.contains("notes.txt"), "{stdout}");
    assert!(
        pool_user.alive(),
        "a process naming the pool was killed: {stdout}"
    );
    assert!(reused.alive(), "a reused pid was signalled: {stdout}");
    users_things(&root);

    // A lab start (it reaps what it finds first) and its stop.
    let out = lab
        .command()
        .args(["lab", "run", "nginx", "--", "-c", "1", "-n", "5", "-q"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    users_things(&root);
    for user in users.iter_mut() {
        assert!(user.alive(), "a process of the user's was killed");
    }
    let _ = std::fs::remove_dir_all(&pools);
}
