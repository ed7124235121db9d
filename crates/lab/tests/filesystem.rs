//! Lab file systems for real, as root (issue 22 item 4): each kind runs a small workload and
//! samples its device; the mount options asked for are in the holder's own
//! /proc/PID/mountinfo (and never in the host's); the loop device's queue settings and
//! direct I/O are applied; the stop leaves no mount, no loop device and no image. Needs
//! root (a mount namespace, loop devices) and xfsprogs; fails without them unless
//! WEBTUNE_SKIP names `root`.

mod support;

use std::path::Path;
use std::time::Duration;
use webtune_lab::filesystem::{self, RunningFs};
use webtune_model::fs::{FsSpec, FsyncMode};
use webtune_model::StopToken;

fn root_or_opt_out() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        support::opt_out::opt_out(
            "root",
            "a private mount namespace and loop devices need root",
        );
        return false;
    }
    // One lab root of this test binary's own, so no other lab user reaps its file systems.
    let dir = std::env::temp_dir().join(format!("webtune-lab-filesystem-{}", std::process::id()));
    std::env::set_var("WEBTUNE_LAB_DIR", &dir);
    true
}

fn host_mounts_naming(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(&needle))
        .map(str::to_string)
        .collect()
}

fn loops_naming(dir: &Path) -> Vec<String> {
    let out = std::process::Command::new("losetup")
        .arg("-a")
        .output()
        .expect("losetup runs");
    let needle = dir.to_string_lossy().into_owned();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(&needle))
        .map(str::to_string)
        .collect()
}

fn queue(device: &str, file: &str) -> String {
    std::fs::read_to_string(format!("/sys/block/{device}/queue/{file}"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn each_kind_mounts_privately_runs_a_workload_and_leaves_nothing() {
    if !root_or_opt_out() {
        return;
    }
    let lab = webtune_lab::registry::lab_root().unwrap();
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &["kind=tmpfs", "atime=noatime", "size_mb=128"],
            &["noatime"],
        ),
        (
            &[
                "kind=ext4",
                "size_mb=256",
                "atime=noatime",
                "ext4.data=writeback",
                "ext4.commit=30",
                "queue.scheduler=mq-deadline",
                "queue.nr_requests=64",
                "queue.read_ahead_kb=512",
                "loop.direct_io=on",
            ],
            &["noatime", "data=writeback", "commit=30"],
        ),
        (
            &[
                "kind=xfs",
                "size_mb=320",
                "xfs.logbufs=4",
                "xfs.logbsize=64k",
                "queue.read_ahead_kb=256",
            ],
            &["logbufs=4", "logbsize=64k"],
        ),
    ];
    for (sets, options) in cases {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let settings = filesystem::settings_for(&sets, false).unwrap();
        let fs = RunningFs::start(&settings, false, false).unwrap();
        let kind = filesystem::kind(&settings);
        let line = fs
            .mountinfo_line()
            .expect("the mount is in the holder's mountinfo");
        for option in options {
            assert!(line.contains(option), "{kind}: {option} not in {line}");
        }
        assert!(line.contains(&format!(" - {kind} ")), "{line}");
        // The host's mount table never sees it.
        assert_eq!(host_mounts_naming(&lab), Vec::<String>::new());
        let device = fs.device().to_string();
        if kind == "tmpfs" {
            assert!(device.is_empty());
        } else {
            assert!(device.starts_with("loop"), "{device}");
            // The image is deleted once mounted: the loop device holds it open.
            assert!(!fs.path().join("../image").exists());
            let ra = if kind == "ext4" { "512" } else { "256" };
            assert_eq!(queue(&device, "read_ahead_kb"), ra);
            if kind == "ext4" {
                assert!(queue(&device, "scheduler").contains("[mq-deadline]"));
                assert_eq!(queue(&device, "nr_requests"), "64");
                let dio = std::fs::read_to_string(format!("/sys/block/{device}/loop/dio"));
                assert_eq!(dio.unwrap().trim(), "1");
            }
        }
        let spec = FsSpec {
            files: 100,
            transactions: Some(300),
            fsync: FsyncMode::Transaction,
            interval_s: 0.25,
            ..FsSpec::default()
        };
        let r = filesystem::run_workload(&fs, &spec, &StopToken::new(), Duration::from_millis(100))
            .unwrap();
        assert_eq!(r.transactions, 300, "{kind}");
        assert_eq!(r.errors(), 0, "{kind}: {:?}", r.notes);
        let server = r.server.as_ref().expect("server samples");
        assert!(!server.samples.is_empty());
        assert_eq!(
            server.parameters.get("kind").map(String::as_str),
            Some(kind)
        );
        let blocks: Vec<_> = server
            .samples
            .iter()
            .filter_map(|s| s.block.as_ref())
            .collect();
        assert_eq!(blocks.len(), server.samples.len());
        if kind != "tmpfs" {
            assert!(blocks.iter().all(|b| b.device == device));
            assert!(
                blocks.iter().map(|b| b.writes).sum::<u64>() > 0,
                "{kind}: no writes seen"
            );
        }
        let private = fs.path();
        fs.stop().unwrap();
        assert!(!private.exists());
        if !device.is_empty() {
            assert!(!Path::new(&format!("/sys/block/{device}/loop/backing_file")).exists());
        }
        assert_eq!(loops_naming(&lab), Vec::<String>::new(), "{kind}");
        assert_eq!(host_mounts_naming(&lab), Vec::<String>::new(), "{kind}");
    }
    let left: Vec<_> = std::fs::read_dir(&lab)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "registry")
        .collect();
    assert_eq!(left, Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&lab);
}

#[test]
fn host_wide_sysctls_are_refused_without_the_flag_and_xfs_needs_300_mib() {
    let e = filesystem::settings_for(&["vm.dirty_ratio=5".into()], false).unwrap_err();
    assert!(e.to_string().contains("host-wide"), "{e}");
    assert!(e.to_string().contains("--host-sysctl"), "{e}");
    assert!(filesystem::settings_for(&["vm.dirty_ratio=5".into()], true).is_ok());
    let e =
        filesystem::settings_for(&["kind=xfs".into(), "size_mb=100".into()], false).unwrap_err();
    assert!(e.to_string().contains("300 MiB"), "{e}");
    // An ext4 option on xfs is accepted and left out (inert), as the lab's rules say.
    let s =
        filesystem::settings_for(&["kind=xfs".into(), "ext4.data=journal".into()], false).unwrap();
    let recipe = filesystem::recipe(&s);
    assert!(
        !recipe.mount.iter().any(|o| o.starts_with("data=")),
        "{recipe:?}"
    );
    assert!(filesystem::params::inert_rules()
        .iter()
        .any(|r| r.param == "ext4.data" && r.when == "kind" && r.applies("xfs")));
}
