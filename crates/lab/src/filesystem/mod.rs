//! Lab file systems (`webtune lab run fs`): a tmpfs, or an ext4 / xfs image on a loop
//! device, made and mounted by a holder process in a mount namespace of its own (`holder`),
//! so the host's file systems and mount table never change; its parameters (`params`: kind,
//! size, mount and mkfs options, the loop device's queue and direct I/O — all private — and
//! the host-wide `vm.dirty_*`, changed only when asked and always put back); the samples of
//! its device and the page cache (`sample`); and one run of the fs engine against it
//! (`run_workload`; `FsRequest` is `lab run fs` and `lab sweep fs` as a value). The pools
//! of the workload on the host's own file systems are registered with the lab (`pool`), so
//! `lab clean` deletes one a killed run left. It is not a `servers::ServerType`: a file system has no program to
//! render a config for, no port and no readiness to poll; see docs/architecture.md.

pub(crate) mod holder;
pub mod params;
mod pool;
mod request;
pub(crate) mod sample;

use crate::host_sysctl::HostSysctls;
use crate::params::{parse_assignment, Settings, Value};
use crate::registry::{self, Entry};
use crate::server_sampler::{ProcessSelector, ServerSampler};
use crate::LabError;
use holder::Holder;
pub use holder::Recipe;
pub use pool::{run_registered, RegistryKeeper, POOL_ENTRY};
pub use request::FsRequest;
use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use webtune_model::fs::{FsResult, FsSpec};
use webtune_model::StopToken;

/// The name `lab run`, `lab params` and the tuner know it by.
pub const NAME: &str = "fs";

/// Validate `NAME=VALUE` assignments for a lab file system. Host-wide sysctls are refused
/// unless `host_sysctl` (the `--host-sysctl` flag) says the run may change them.
pub fn settings_for(assignments: &[String], host_sysctl: bool) -> Result<Settings, LabError> {
    let pairs: Vec<(String, String)> = assignments
        .iter()
        .map(|a| parse_assignment(a))
        .collect::<Result<_, _>>()?;
    let settings = Settings::from_assignments(NAME, &params::parameters(), &pairs)?;
    check(&settings, host_sysctl)?;
    Ok(settings)
}

/// Cross-parameter rules, and the host-wide ones' permission.
pub fn check(settings: &Settings, host_sysctl: bool) -> Result<(), LabError> {
    if !host_sysctl {
        if let Some(name) = host_changes(settings).keys().next() {
            return Err(LabError::Host(format!(
                "{name} is host-wide, not private to the run: pass --host-sysctl to change it \
                 for the run (it is put back at the end, and by `webtune lab clean` after a crash)"
            )));
        }
    }
    if kind(settings) == "ext4"
        && on(settings, "mkfs.journal")
        && on(settings, "ext4.journal_async_commit")
        && word(settings, "ext4.data") == "ordered"
    {
        return Err(LabError::Inconsistent(
            "ext4.journal_async_commit=on needs ext4.data=writeback or journal: ext4 refuses \
             it in data=ordered mode"
                .into(),
        ));
    }
    let size = settings
        .get("size_mb")
        .and_then(|v| v.as_int())
        .unwrap_or(0);
    if kind(settings) == "xfs" && size < params::XFS_MIN_MB {
        return Err(LabError::Inconsistent(format!(
            "size_mb={size}: mkfs.xfs makes no file system under {} MiB",
            params::XFS_MIN_MB
        )));
    }
    Ok(())
}

/// The kind set: "tmpfs", "ext4" or "xfs".
pub fn kind(settings: &Settings) -> &'static str {
    match settings.get("kind") {
        Some(Value::Word(w)) => w,
        _ => "ext4",
    }
}

fn word(settings: &Settings, name: &str) -> String {
    settings
        .get(name)
        .map(|v| v.to_string())
        .unwrap_or_default()
}

fn on(settings: &Settings, name: &str) -> bool {
    settings
        .get(name)
        .and_then(|v| v.as_switch())
        .unwrap_or(false)
}

/// The host-wide sysctls set to a value (not `host`), as NAME → VALUE.
pub fn host_changes(settings: &Settings) -> BTreeMap<String, String> {
    params::HOST_SYSCTLS
        .iter()
        .filter_map(|&name| match settings.get(name) {
            Some(Value::Int(n)) => Some((name.to_string(), n.to_string())),
            _ => None,
        })
        .collect()
}

/// `tune fs`'s default space for a kind, as `--param` texts: the options seed 004's gains
/// came from (atime, journaling, the commit interval, read-ahead) and the device's queue.
pub fn tuning_space(kind: &str) -> Vec<String> {
    let mut space = vec!["atime=relatime,noatime".to_string()];
    match kind {
        "tmpfs" => {}
        "xfs" => space.extend(
            [
                "xfs.logbufs=2,4,8",
                "xfs.logbsize=32k,64k,128k,256k",
                "queue.scheduler=none,mq-deadline",
                "queue.read_ahead_kb=16..1024:log",
                "loop.direct_io=on,off",
            ]
            .map(String::from),
        ),
        _ => space.extend(
            [
                "ext4.data=ordered,writeback",
                "ext4.commit=5..60",
                "ext4.barrier=on,off",
                "mkfs.journal=on,off",
                "queue.scheduler=none,mq-deadline",
                "queue.read_ahead_kb=16..1024:log",
                "loop.direct_io=on,off",
            ]
            .map(String::from),
        ),
    }
    space
}

/// What the holder runs for these settings (inert parameters are left out).
pub fn recipe(settings: &Settings) -> Recipe {
    let kind = kind(settings);
    let mut mkfs = Vec::new();
    let mut mount = vec![word(settings, "atime")];
    let inode = word(settings, "mkfs.inode_size");
    let block = word(settings, "mkfs.block_size");
    match kind {
        "ext4" => {
            mkfs.extend(
                ["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"].map(String::from),
            );
            if !on(settings, "mkfs.journal") {
                mkfs.extend(["-O", "^has_journal"].map(String::from));
            }
            if inode != "default" {
                mkfs.extend(["-I".to_string(), inode]);
            }
            if block != "default" {
                mkfs.extend(["-b".to_string(), block]);
            }
            if on(settings, "mkfs.journal") {
                mount.push(format!("data={}", word(settings, "ext4.data")));
                mount.push(format!("commit={}", word(settings, "ext4.commit")));
                if on(settings, "ext4.journal_async_commit") {
                    mount.push("journal_async_commit".into());
                }
            }
            mount.push(
                if on(settings, "ext4.barrier") {
                    "barrier"
                } else {
                    "nobarrier"
                }
                .into(),
            );
        }
        "xfs" => {
            mkfs.extend(["-q", "-f"].map(String::from));
            if inode != "default" {
                mkfs.extend(["-i".to_string(), format!("size={inode}")]);
            }
            if block != "default" {
                mkfs.extend(["-b".to_string(), format!("size={block}")]);
            }
            mount.push(format!("logbufs={}", word(settings, "xfs.logbufs")));
            mount.push(format!("logbsize={}", word(settings, "xfs.logbsize")));
        }
        _ => {}
    }
    Recipe {
        kind,
        size_mb: settings
            .get("size_mb")
            .and_then(|v| v.as_int())
            .unwrap_or(1024),
        mkfs,
        mount,
        direct_io: kind != "tmpfs" && on(settings, "loop.direct_io"),
    }
}

/// The loop device's queue settings (file under queue/, value), in the order written:
/// the scheduler first, since it decides how many requests the queue may hold.
fn queue_settings(settings: &Settings) -> Vec<(&'static str, String)> {
    vec![
        ("scheduler", word(settings, "queue.scheduler")),
        ("nr_requests", word(settings, "queue.nr_requests")),
        // The kernel keeps read-ahead in whole pages: a value is rounded down to 4 KiB.
        (
            "read_ahead_kb",
            settings
                .get("queue.read_ahead_kb")
                .and_then(|v| v.as_int())
                .map(|kb| (kb / 4 * 4).to_string())
                .unwrap_or_default(),
        ),
    ]
}

/// An image file is sparse when made, but a run can fill it: the file system it lies on
/// (the lab root's) must have `size_mb` MiB free, or the image runs out of blocks under the
/// workload and ext4 turns read-only in the middle of the run.
fn check_room(root: &Path, size_mb: i64) -> Result<(), LabError> {
    let free = webtune_fs::check::free_bytes(root)
        .map_err(|e| LabError::io(format!("the free space of {}", root.display()), e))?;
    let free_mb = free / (1 << 20);
    if (free_mb as i128) < i128::from(size_mb) {
        return Err(LabError::Host(format!(
            "size_mb={size_mb}: the image needs {size_mb} MiB in {}, whose file system has \
             {free_mb} MiB free; give a smaller size_mb or set WEBTUNE_LAB_DIR to a file \
             system with room",
            root.display()
        )));
    }
    Ok(())
}

/// The mkfs a kind needs and its Debian package (none for tmpfs).
pub fn requirement(kind: &str) -> Option<(&'static str, &'static str)> {
    match kind {
        "ext4" => Some(("mkfs.ext4", "e2fsprogs")),
        "xfs" => Some(("mkfs.xfs", "xfsprogs")),
        _ => None,
    }
}

/// A mounted lab file system; stopping it (or dropping it) leaves nothing behind.
pub struct RunningFs {
    root: PathBuf,
    entry: Entry,
    holder: Option<Holder>,
    /// The host's sysctls while this run has them changed (`--host-sysctl`).
    host: Option<HostSysctls>,
    /// What the start put right first: starts a killed webtune left (`registry`), host
    /// sysctls a dead run left changed.
    reaped: Vec<String>,
    settings: Settings,
    /// What the kernel shows applied: the loop queue's values, host sysctls.
    pub applied: BTreeMap<String, String>,
    keep: bool,
    stopped: bool,
}

impl RunningFs {
    /// Make and mount the file system (a holder in its own mount namespace). `host_sysctl`:
    /// the run may change host-wide sysctls (recorded first, put back at the stop and by
    /// `lab clean`). `keep`: leave the private directory (the holder's log) after the stop.
    pub fn start(
        settings: &Settings,
        host_sysctl: bool,
        keep: bool,
    ) -> Result<RunningFs, LabError> {
        check(settings, host_sysctl)?;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(LabError::Host(
                "a lab file system is made in a private mount namespace, which needs root (CAP_SYS_ADMIN)".into(),
            ));
        }
        let kind = kind(settings);
        if let Some((program, package)) = requirement(kind) {
            let found = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
                .iter()
                .any(|d| std::path::Path::new(d).join(program).exists());
            if !found {
                return Err(LabError::MissingProgram {
                    program: program.to_string(),
                    hint: format!("apt-get install {package}"),
                });
            }
        }
        let root = registry::lab_root()?;
        let mut reaped = registry::clean_stale(&root).reaped;
        let size_mb = recipe(settings).size_mb;
        if kind != "tmpfs" {
            check_room(&root, size_mb)?;
        }
        let changes = host_changes(settings);
        // One writer of the host's sysctls per host, whatever the lab directory.
        let mut host = None;
        if !changes.is_empty() {
            let names: Vec<&str> = changes.keys().map(String::as_str).collect();
            let (taken, lines) = HostSysctls::take(&root, &names)?;
            host = Some(taken);
            reaped.extend(lines);
        }
        let entry = Entry::new(&format!("fs-{kind}"), &|id| root.join(id));
        registry::write_entry(&root, &entry)?;
        let mut fs = RunningFs {
            root,
            entry,
            holder: None,
            host,
            reaped,
            settings: settings.clone(),
            applied: BTreeMap::new(),
            keep,
            stopped: false,
        };
        fs.start_inner(&changes)?;
        Ok(fs)
    }

    fn start_inner(&mut self, changes: &BTreeMap<String, String>) -> Result<(), LabError> {
        let dir = self.entry.private_dir.clone();
        let mnt = dir.join("mnt");
        for d in [&dir, &mnt] {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(d)
                .map_err(|e| LabError::io(format!("creating {}", d.display()), e))?;
        }
        if let Some(host) = &self.host {
            for (name, value) in changes {
                host.set(name, value)?;
                self.applied.insert(name.clone(), value.clone());
            }
        }
        let recipe = recipe(&self.settings);
        let holder = Holder::start(
            &recipe,
            &dir.join("image"),
            &mnt,
            &dir.join("holder.log"),
            Duration::from_secs(120),
        )?;
        self.entry.sessions.clear();
        self.entry.record_session(holder.pid());
        let device = holder.device.clone();
        self.holder = Some(holder);
        registry::write_entry(&self.root, &self.entry)?;
        if !device.is_empty() {
            for (file, value) in queue_settings(&self.settings) {
                let path = format!("/sys/block/{device}/queue/{file}");
                let written = std::fs::write(&path, &value);
                let back = std::fs::read_to_string(&path).unwrap_or_default();
                let shown = back
                    .split_whitespace()
                    .find(|w| w.starts_with('['))
                    .map(|w| w.trim_matches(['[', ']']).to_string())
                    .unwrap_or_else(|| back.trim().to_string());
                if written.is_err() || shown != value {
                    return Err(LabError::Host(format!(
                        "queue.{file}={value}: the kernel kept {shown:?} for /dev/{device}{}",
                        written.err().map(|e| format!(" ({e})")).unwrap_or_default()
                    )));
                }
                self.applied.insert(format!("queue.{file}"), shown);
            }
        }
        Ok(())
    }

    /// The mount as this process reaches it (`/proc/HOLDER/root/…/mnt`).
    pub fn path(&self) -> PathBuf {
        self.holder.as_ref().map(|h| h.path()).unwrap_or_default()
    }

    /// The holder's pid (its `/proc/PID/mountinfo` shows the mount).
    pub fn holder_pid(&self) -> i32 {
        self.holder.as_ref().map(|h| h.pid()).unwrap_or(0)
    }

    /// The loop device ("loop3"), empty for tmpfs.
    pub fn device(&self) -> &str {
        self.holder
            .as_ref()
            .map(|h| h.device.as_str())
            .unwrap_or("")
    }

    /// The mount's line of the holder's mountinfo.
    pub fn mountinfo_line(&self) -> Option<String> {
        self.holder.as_ref().and_then(|h| h.mountinfo_line())
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What the start put right before it made anything, one line each: starts a killed
    /// webtune left (reaped), host sysctls a run that ended without restoring them had left
    /// changed (put back).
    pub fn reaped(&self) -> &[String] {
        &self.reaped
    }

    /// Unmount, detach, restore host sysctls, remove the private directory and the entry.
    pub fn stop(mut self) -> Result<(), LabError> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<(), LabError> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let mut result = Ok(());
        if let Some(h) = self.holder.take() {
            result = h.stop();
        }
        if let Some(host) = self.host.take() {
            if let Err(e) = host.restore() {
                result = result.and(Err(e));
            }
        }
        if result.is_ok() {
            if !self.keep {
                // A directory that could not go keeps its entry, so `lab clean` tries again.
                registry::remove_dirs(&self.entry).map_err(|message| LabError::Directory {
                    path: self.entry.private_dir.clone(),
                    message,
                })?;
            }
            registry::remove_entry(&self.root, &self.entry.id);
        }
        result
    }
}

impl Drop for RunningFs {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// Run `spec`'s workload on `fs` (its location replaced by the mount), sampling the host's
/// CPU, the device and the page cache every `interval`. The result's `server` section holds
/// the samples and the file system's parameters.
pub fn run_workload(
    fs: &RunningFs,
    spec: &FsSpec,
    stop: &StopToken,
    interval: Duration,
) -> Result<FsResult, LabError> {
    let mut spec = spec.clone();
    spec.location = fs.path().display().to_string();
    let mut watch = sample::BlockWatch::new(fs.device());
    let sampler = ServerSampler::start_with(
        &format!("fs-{}", kind(fs.settings())),
        ProcessSelector::Nothing,
        interval,
        Some(Box::new(move || watch.sample())),
    );
    let outcome = webtune_fs::run(&spec, stop, &mut webtune_fs::NoKeeper);
    let mut samples = sampler.finish();
    let mut result = outcome.map_err(|e| LabError::StartFailed {
        server: "the fs workload".into(),
        message: e.to_string(),
    })?;
    samples.selector = match fs.device() {
        "" => "tmpfs (no device)".to_string(),
        d => format!("device {d}"),
    };
    samples.parameters = fs
        .settings()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    samples.parameters_set = fs.settings().explicitly_set().to_vec();
    result.server = Some(samples);
    // ext4 remounts itself read-only on an error (its image's backing file system full,
    // a device error); the mount shows it even when no operation was refused for it.
    if fs
        .mountinfo_line()
        .as_deref()
        .is_some_and(mounted_read_only)
    {
        result.storage_failures.remounted_read_only = true;
    }
    Ok(result)
}

/// Does a mountinfo line show its mount, or its file system, read-only? (Field 6 holds the
/// mount's options; after " - " come the type, the source and the super block's options.)
fn mounted_read_only(line: &str) -> bool {
    let ro = |options: &str| options.split(',').any(|o| o == "ro");
    let mount = line.split(' ').nth(5).is_some_and(ro);
    let sb = line
        .split_once(" - ")
        .and_then(|(_, rest)| rest.split(' ').nth(2))
        .is_some_and(ro);
    mount || sb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mount_or_a_super_block_shown_ro_is_read_only() {
        let rw = "36 35 7:3 / /tmp/x/mnt rw,noatime - ext4 /dev/loop3 rw,data=ordered";
        assert!(!mounted_read_only(rw));
        let sb = "36 35 7:3 / /tmp/x/mnt rw,noatime - ext4 /dev/loop3 ro,data=ordered";
        assert!(mounted_read_only(sb));
        let mount = "36 35 7:3 / /tmp/x/mnt ro,noatime shared:1 - ext4 /dev/loop3 rw";
        assert!(mounted_read_only(mount));
        assert!(!mounted_read_only(
            "36 35 7:3 / /mnt rw,errors=remount-ro - ext4 /dev/loop3 rw"
        ));
    }
}
