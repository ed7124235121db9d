//! `webtune lab` host knobs through the built binary (issue 13): `lab params` lists the
//! `os.*` parameters; `os.*` network parameters are refused without the privilege a
//! namespace needs (simulated by dropping CAP_SYS_ADMIN with setpriv); `os.nofile` above
//! the hard limit is refused naming it; after SIGKILL to webtune, `lab clean` leaves no
//! process in the run's namespace, so the namespace is gone.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::lab::{namespace_of, privileged, LabDir, WEBTUNE};

/// Live processes in the network namespace with this inode.
fn in_namespace(inode: u64) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .filter(|n| namespace_of(n) == Some(inode))
        .filter(|n| {
            !std::fs::read_to_string(format!("/proc/{n}/stat"))
                .map(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
                .unwrap_or(true)
        })
        .collect()
}

fn one_line_error(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    stderr
}

#[test]
fn lab_params_lists_the_os_parameters() {
    let output = Command::new(WEBTUNE)
        .args(["lab", "params", "nginx"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    for name in ["os.somaxconn", "os.tcp_max_syn_backlog", "os.nofile"] {
        assert!(text.contains(name), "{text}");
    }
    assert!(text.contains("net.core.somaxconn"), "{text}");
}

#[test]
fn os_network_parameters_are_refused_without_the_privilege() {
    if !privileged() {
        support::opt_out::opt_out("root", "dropping CAP_SYS_ADMIN needs root");
        return;
    }
    assert!(
        Command::new("setpriv").arg("--version").output().is_ok(),
        "setpriv (util-linux) is not installed"
    );
    let lab = LabDir::new("unprivileged");
    // Root without CAP_SYS_ADMIN: what a namespace needs is missing.
    let output = lab
        .command_for("setpriv")
        .args([
            "--inh-caps=-sys_admin",
            "--bounding-set=-sys_admin",
            WEBTUNE,
        ])
        .args([
            "lab",
            "run",
            "nginx",
            "--set",
            "os.somaxconn=128",
            "--",
            "-d",
            "1s",
        ])
        .output()
        .unwrap();
    let stderr = one_line_error(&output);
    assert!(
        stderr.contains("os.somaxconn needs a private network namespace")
            && stderr.contains("CAP_SYS_ADMIN"),
        "{stderr}"
    );
    assert!(lab.registry().is_empty(), "nothing started");
    // Everything else works as before without the privilege: os.nofile needs none.
    let output = lab
        .command_for("setpriv")
        .args([
            "--inh-caps=-sys_admin",
            "--bounding-set=-sys_admin",
            WEBTUNE,
        ])
        .args(["lab", "run", "nginx", "--set", "os.nofile=512"])
        .args(["--", "-c", "1", "-n", "5", "/empty.gif"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn os_nofile_above_the_hard_limit_is_refused_naming_it() {
    use std::os::unix::process::CommandExt;
    // webtune runs under a hard limit of its own, below fs.nr_open whatever this host's is.
    const HARD: libc::rlim_t = 4096;
    let lab = LabDir::new("nofile");
    let mut command = lab.command();
    // SAFETY: setrlimit is async-signal-safe; lowering a limit needs no privilege.
    unsafe {
        command.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: HARD,
                rlim_max: HARD,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        })
    };
    let output = command
        .args(["lab", "run", "apache-prefork"])
        .arg("--set")
        .arg(format!("os.nofile={}", HARD + 1))
        .args(["--", "-d", "1s"])
        .output()
        .unwrap();
    let stderr = one_line_error(&output);
    assert!(
        stderr.contains(&format!("hard open-file limit {HARD}")),
        "{stderr}"
    );
    assert!(lab.registry().is_empty(), "nothing started");
}

#[test]
fn after_sigkill_lab_clean_leaves_no_namespace() {
    if !privileged() {
        support::opt_out::opt_out("root", "a network namespace needs CAP_SYS_ADMIN");
        return;
    }
    let lab = LabDir::new("netns");
    let mut child = lab
        .command()
        .args(["lab", "run", "nginx-php-fpm", "--set", "os.somaxconn=256"])
        .args(["--", "-c", "1", "-d", "60s"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let ready = loop {
        match lines.next() {
            Some(Ok(line)) if line.contains(" ready at ") => break true,
            Some(Ok(line)) => seen.push(line),
            _ => break false,
        }
        if Instant::now() > deadline {
            break false;
        }
    };
    if !ready {
        let _ = child.kill();
        let _ = child.wait();
        panic!("never ready: {seen:?}");
    }
    let entries = lab.registry();
    let inode = entries
        .iter()
        .find_map(|e| e["netns"].as_u64())
        .expect("the registry names the namespace");
    assert!(
        in_namespace(inode).len() >= 2,
        "php-fpm and nginx run in the namespace"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // The servers keep the namespace alive after webtune's death...
    assert!(!in_namespace(inode).is_empty(), "servers outlive SIGKILL");
    // ...until `lab clean` ends them: then nothing is left in it, and no entry.
    let output = lab.command().args(["lab", "clean"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(
        in_namespace(inode).is_empty(),
        "left in the namespace: {:?}",
        in_namespace(inode)
    );
    assert!(lab.registry().is_empty());
    let left: Vec<PathBuf> = std::fs::read_dir(&lab.0)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name() != Some(Path::new("registry").as_os_str()))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
