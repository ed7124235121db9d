//! `webtune lab run fs` through the built binary (issue 22 item 4): a run reports its
//! device's samples; a host-wide sysctl is refused without --host-sysctl; SIGKILL to webtune
//! in the middle of a run leaves no mount and no loop device (the holder dies with it and
//! the loop device autoclears), and `lab clean` removes the rest and puts a changed host
//! sysctl back. Checked against the host's `losetup -a` and /proc/self/mountinfo before and
//! after. Host sysctls have one writer per host: a second `--host-sysctl` run in another lab
//! directory is refused naming the first, and after the first is killed the next run puts
//! the host's own value back before it records it. A backing file system too small for the
//! image is refused at the start, naming both sizes; a file system that fills up or turns
//! read-only under the workload fails the run (exit 1, its first line says so, failed
//! transactions counted). Needs root; fails without it unless WEBTUNE_SKIP names `root`.

mod support;

use std::path::Path;
use std::process::Stdio;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use support::lab::{leftovers, LabDir};

/// The tests that start a lab file system take turns: the host has one writer of its
/// sysctls at a time, and every start puts back host sysctls a killed run left changed,
/// which the SIGKILL test wants `lab clean` to do.
static TURNS: Mutex<()> = Mutex::new(());

fn turn() -> MutexGuard<'static, ()> {
    TURNS.lock().unwrap_or_else(|e| e.into_inner())
}

fn root_or_opt_out() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        support::opt_out::opt_out(
            "root",
            "a private mount namespace and loop devices need root",
        );
    }
    root
}

/// Lines of the host's loop devices and mounts that name `dir`.
fn host_traces(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let loops = std::process::Command::new("losetup")
        .arg("-a")
        .output()
        .expect("losetup runs");
    let mut lines: Vec<String> = String::from_utf8_lossy(&loops.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.extend(
        std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .map(str::to_string),
    );
    lines.retain(|l| l.contains(&needle));
    lines
}

#[test]
fn a_host_sysctl_is_refused_without_the_flag() {
    let lab = LabDir::new("fs-refuse");
    let out = lab
        .command()
        .args([
            "lab",
            "run",
            "fs",
            "--set",
            "vm.dirty_ratio=5",
            "--",
            "--files",
            "10",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("webtune: vm.dirty_ratio is host-wide"),
        "{stderr}"
    );
    let out = lab
        .command()
        .args(["lab", "run", "fs", "--", "--dir", "/tmp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_run_reports_its_device_and_leaves_nothing() {
    if !root_or_opt_out() {
        return;
    }
    let _turn = turn();
    let lab = LabDir::new("fs-run");
    let out = lab
        .command()
        .args([
            "lab",
            "run",
            "fs",
            "--set",
            "kind=ext4",
            "--set",
            "size_mb=256",
        ])
        .args(["--set", "atime=noatime", "--sample-interval", "100ms"])
        .args([
            "--",
            "--files",
            "200",
            "--transactions",
            "500",
            "--fsync",
            "transaction",
        ])
        .args(["--json", "-", "-q"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["schema"], "webtune.fs/1");
    assert_eq!(r["transactions"], 500);
    assert_eq!(r["server"]["parameters"]["atime"], "noatime");
    let samples = r["server"]["samples"].as_array().unwrap();
    assert!(!samples.is_empty());
    assert!(samples[0]["block"]["device"]
        .as_str()
        .unwrap()
        .starts_with("loop"));
    assert_eq!(host_traces(&lab.0), Vec::<String>::new());
    assert_eq!(leftovers(&lab.0), Vec::<String>::new());
}

#[test]
fn sigkill_leaves_no_mount_no_loop_device_and_lab_clean_restores_the_host() {
    if !root_or_opt_out() {
        return;
    }
    let _turn = turn();
    let lab = LabDir::new("fs-kill");
    let sysctl = "/proc/sys/vm/dirty_expire_centisecs";
    let before = std::fs::read_to_string(sysctl).unwrap().trim().to_string();
    let changed = if before == "2999" { "3001" } else { "2999" };
    assert!(host_traces(&lab.0).is_empty());
    let mut child = lab
        .command()
        .args([
            "lab",
            "run",
            "fs",
            "--set",
            "kind=xfs",
            "--set",
            "size_mb=320",
        ])
        .args(["--host-sysctl", "--set"])
        .arg(format!("vm.dirty_expire_centisecs={changed}"))
        .args([
            "--",
            "--files",
            "300",
            "-d",
            "60s",
            "--fsync",
            "transaction",
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the holder has mounted it (its entry names it, the mount is in its mountinfo).
    let deadline = Instant::now() + Duration::from_secs(60);
    let (holder, device) = loop {
        assert!(Instant::now() < deadline, "the file system never came up");
        assert!(child.try_wait().unwrap().is_none(), "webtune ended early");
        let found = lab.registry().iter().find_map(|e| {
            let pid = e["sessions"].as_array()?.first()?["sid"].as_i64()?;
            let info = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).ok()?;
            let line = info
                .lines()
                .find(|l| l.contains(" - xfs /dev/loop"))?
                .to_string();
            let dev = line
                .split(" - xfs /dev/")
                .nth(1)?
                .split(' ')
                .next()?
                .to_string();
            Some((pid, dev))
        });
        if let Some(f) = found {
            break f;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // While it runs: the host sees no mount of it, and the sysctl is the run's.
    assert!(!host_traces(&lab.0).iter().any(|l| l.contains(" - xfs ")));
    assert_eq!(std::fs::read_to_string(sysctl).unwrap().trim(), changed);
    // The scenario, not a synchronisation: the kill comes while the workload writes.
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    // The holder dies with webtune, its namespace with it, and the loop device detaches.
    let deadline = Instant::now() + Duration::from_secs(15);
    while Path::new(&format!("/proc/{holder}")).exists()
        || Path::new(&format!("/sys/block/{device}/loop/backing_file")).exists()
    {
        assert!(
            Instant::now() < deadline,
            "holder {holder} or /dev/{device} left after SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(host_traces(&lab.0), Vec::<String>::new());
    // lab clean removes the directory and entry, and puts the host's value back.
    let out = lab.command().args(["lab", "clean"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(sysctl).unwrap().trim(),
        before,
        "{stdout}"
    );
    assert!(stdout.contains("restored"), "{stdout}");
    assert_eq!(leftovers(&lab.0), Vec::<String>::new());
    assert_eq!(host_traces(&lab.0), Vec::<String>::new());
}

#[test]
fn host_sysctls_have_one_writer_per_host_whatever_the_lab_directory() {
    if !root_or_opt_out() {
        return;
    }
    let _turn = turn();
    let (a, b) = (LabDir::new("fs-host-a"), LabDir::new("fs-host-b"));
    let sysctl = "/proc/sys/vm/dirty_expire_centisecs";
    let read = || std::fs::read_to_string(sysctl).unwrap().trim().to_string();
    let before = read();
    let [x, y]: [String; 2] = ["2997", "2998"].map(|v| {
        if v == before {
            "2996".to_string()
        } else {
            v.to_string()
        }
    });
    let run = |lab: &LabDir, value: &str, load: &[&str]| {
        let mut command = lab.command();
        command
            .args([
                "lab",
                "run",
                "fs",
                "--set",
                "kind=tmpfs",
                "--host-sysctl",
                "--set",
            ])
            .arg(format!("vm.dirty_expire_centisecs={value}"))
            .args(["--", "--files", "50", "-q"])
            .args(load);
        command
    };
    // The first run (lab directory a) holds the host's sysctls.
    let mut first = run(&a, &x, &["-d", "60s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while read() != x {
        assert!(Instant::now() < deadline, "the first run never set {x}");
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first run ended early"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A second, in lab directory b, is refused in one line naming the first.
    let out = run(&b, &y, &["--transactions", "20"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let holder = format!(
        "webtune pid {} (lab directory {})",
        first.id(),
        a.0.display()
    );
    assert!(
        stderr.starts_with("webtune: the host's sysctls are held by") && stderr.contains(&holder),
        "{stderr}"
    );
    assert_eq!(read(), x, "the refused run changed the host");
    // The first dies without putting the value back; the next run restores the host's own
    // value before it records it as the one to restore.
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(read(), x);
    let out = run(&b, &y, &["--transactions", "20"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("vm.dirty_expire_centisecs restored to {before}")),
        "{stderr}"
    );
    assert_eq!(read(), before, "{stderr}");
    // Nothing is left to put back, from either lab directory.
    for lab in [&a, &b] {
        let out = lab.command().args(["lab", "clean"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(read(), before);
    }
}

/// webtune with `args` in a private mount namespace whose lab root (`lab`) is a tmpfs of
/// `backing_mb` MiB; `then` runs in the namespace's shell after webtune started (`$LAB` is
/// the root, `$pid` webtune's), before waiting for it. Nothing reaches the host's mounts.
fn on_small_backing(
    lab: &LabDir,
    backing_mb: u32,
    args: &[&str],
    then: &str,
) -> std::process::Output {
    std::fs::create_dir_all(&lab.0).unwrap();
    let script = format!(
        "mount -t tmpfs -o size={backing_mb}m webtune-test \"$LAB\" || exit 97\n\
         \"$@\" &\npid=$!\n{then}\nwait $pid"
    );
    lab.command_for("unshare")
        .args(["-m", "sh", "-c", &script, "sh", support::lab::WEBTUNE])
        .args(args)
        .env("LAB", &lab.0)
        .output()
        .unwrap()
}

#[test]
fn a_backing_file_system_too_small_for_the_image_is_refused_at_the_start() {
    if !root_or_opt_out() {
        return;
    }
    let _turn = turn();
    let lab = LabDir::new("fs-small-backing");
    let out = on_small_backing(
        &lab,
        64,
        &[
            "lab",
            "run",
            "fs",
            "--set",
            "kind=ext4",
            "--set",
            "size_mb=128",
        ],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("webtune: size_mb=128: the image needs 128 MiB in"),
        "{stderr}"
    );
    let free: u64 = stderr
        .split("whose file system has ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the free MiB are named: {stderr}"));
    assert!(free <= 64, "{stderr}");
}

/// The JSON result written to `path`.
fn result_at(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("the result was written");
    let _ = std::fs::remove_file(path);
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_file_system_that_fills_up_under_the_workload_fails_the_run() {
    if !root_or_opt_out() {
        return;
    }
    let _turn = turn();
    let lab = LabDir::new("fs-fills");
    let json = std::env::temp_dir().join(format!("webtune-fs-fills-{}.json", std::process::id()));
    // 200 files of 256 KiB (50 MiB) fit the 64 MiB tmpfs; creating as many again does not.
    let out = lab
        .command()
        .args([
            "lab",
            "run",
            "fs",
            "--set",
            "kind=tmpfs",
            "--set",
            "size_mb=64",
        ])
        .args([
            "--",
            "--files",
            "200",
            "--size",
            "256k",
            "--bias-read",
            "-1",
        ])
        .args(["--bias-create", "10", "--transactions", "1000", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("FAILED: the file system ran out of space ("),
        "{stdout}"
    );
    assert!(
        stderr.contains("webtune: the file system ran out of space"),
        "{stderr}"
    );
    let r = result_at(&json);
    let failed = r["ops"]["transaction"]["errors"].as_u64().unwrap();
    assert!(
        failed > 0,
        "a transaction with a failed operation failed: {r}"
    );
    assert!(
        r["storage_failures"]["no_space"].as_u64().unwrap() > 0,
        "{r}"
    );
    assert!(
        stdout.contains(&format!("transactions ({failed} failed)")),
        "{stdout}"
    );
    assert_eq!(leftovers(&lab.0), Vec::<String>::new());
}

#[test]
fn an_image_whose_backing_fills_up_during_the_run_fails_it() {
    if !root_or_opt_out() {
        return;
    }
    let _turn = turn();
    let lab = LabDir::new("fs-backing-fills");
    let json = std::env::temp_dir().join(format!("webtune-fs-backing-{}.json", std::process::id()));
    let json_arg = json.display().to_string();
    // The image fits the backing's free space at the start (80 of 96 MiB); once the holder
    // is up, the backing is filled, so the image's blocks not written yet have nowhere to go.
    let fill = "i=0\n\
                until grep -qsE '\"sessions\": \\[$' \"$LAB\"/registry/fs-ext4-*.json; do\n\
                  i=$((i + 1)); [ $i -gt 3000 ] && break; sleep 0.02\n\
                done\n\
                dd if=/dev/zero of=\"$LAB/filler\" bs=1M 2>/dev/null";
    let out = on_small_backing(
        &lab,
        96,
        &[
            "lab",
            "run",
            "fs",
            "--set",
            "kind=ext4",
            "--set",
            "size_mb=80",
            "--",
            "--files",
            "800",
            "--size",
            "64k",
            "--bias-read",
            "-1",
            "--bias-create",
            "10",
            "--transactions",
            "2000",
            "--fsync",
            "transaction",
            "--json",
            &json_arg,
        ],
        fill,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let first = stdout.lines().next().unwrap_or_default();
    assert!(first.starts_with("FAILED: the file system "), "{stdout}");
    let r = result_at(&json);
    assert!(r["storage_failures"].is_object(), "{r}");
    assert!(
        r["ops"]["transaction"]["errors"].as_u64().unwrap() > 0,
        "{r}"
    );
    assert_eq!(host_traces(&lab.0), Vec::<String>::new());
}

#[test]
fn tune_fs_searches_mount_options_under_an_fsync_slo_and_leaves_nothing() {
    if !root_or_opt_out() {
        return;
    }
    let _turn = turn();
    let lab = LabDir::new("fs-tune");
    let out = lab
        .command()
        .args(["tune", "fs", "--set", "kind=ext4", "--set", "size_mb=128"])
        .args([
            "--param",
            "atime=relatime,noatime",
            "--param",
            "ext4.data=ordered,writeback",
        ])
        .args([
            "--trials",
            "3",
            "--confirm",
            "0",
            "--slo",
            "p99<=10s",
            "--json",
            "-",
            "-q",
        ])
        .args([
            "--",
            "--files",
            "100",
            "--transactions",
            "300",
            "--fsync",
            "transaction",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let trials = r["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 3, "{r}");
    assert!(r["best"]["params"]["atime"].is_string(), "{r}");
    assert_eq!(r["slos"][0], "p99<=10s");
    assert_eq!(host_traces(&lab.0), Vec::<String>::new());
    assert_eq!(leftovers(&lab.0), Vec::<String>::new());
    // A combination ext4 refuses is refused before anything is made, in one line.
    let out = lab
        .command()
        .args([
            "lab",
            "run",
            "fs",
            "--set",
            "ext4.journal_async_commit=on",
            "--",
            "--files",
            "10",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("data=ordered"), "{stderr}");
}

#[test]
fn lab_sweep_fs_runs_one_level_per_worker_count_on_one_file_system() {
    if !root_or_opt_out() {
        return;
    }
    let _turn = turn();
    let lab = LabDir::new("fs-sweep");
    let out = lab
        .command()
        .args(["lab", "sweep", "fs", "-c", "1,2", "--set", "kind=tmpfs"])
        .args([
            "--",
            "--files",
            "100",
            "--transactions",
            "400",
            "--json",
            "-",
            "-q",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["schema"], "webtune.fs-sweep/1");
    let levels = r["levels"].as_array().unwrap();
    let workers: Vec<u64> = levels
        .iter()
        .map(|l| l["spec"]["workers"].as_u64().unwrap())
        .collect();
    assert_eq!(workers, [1, 2]);
    assert!(levels
        .iter()
        .all(|l| l["server"]["parameters"]["kind"] == "tmpfs"));
    assert_eq!(host_traces(&lab.0), Vec::<String>::new());
    assert_eq!(leftovers(&lab.0), Vec::<String>::new());
}
