//! Host-wide sysctls (`vm.dirty_*`, changed by a lab file system run only with
//! `--host-sysctl`): one writer per host, whatever the lab directory. A run that changes
//! them holds an exclusive `flock(2)` on `/run/webtune/host-sysctls` for as long as they
//! are changed; the file names the holder (pid, start time, lab directory) and the values
//! the sysctls had before, written before the first change. A second run is refused with
//! the holder named. The kernel drops the lock when its holder dies, SIGKILL included;
//! whoever takes it next — the next `--host-sysctl` run, `lab clean` or any lab start, in
//! any lab directory — finds the values the dead holder left and puts them back first, so
//! no run ever records another run's value as the host's own. The file is never removed
//! (an empty record means nothing is changed), so a taker cannot lock a file that a
//! leaver unlinks meanwhile.

use crate::LabError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use webtune_conf::procfs;

/// Where the lock lives: host-wide (one per boot: /run is a tmpfs), root's.
pub const LOCK_DIR: &str = "/run/webtune";
const LOCK_NAME: &str = "host-sysctls";

/// The file under /proc/sys of a sysctl name (`vm.dirty_ratio` → /proc/sys/vm/dirty_ratio).
pub fn sysctl_path(name: &str) -> PathBuf {
    Path::new("/proc/sys").join(name.replace('.', "/"))
}

/// The lock file's content: who changed the host's sysctls, and what they were before.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Record {
    pid: i32,
    start_ticks: u64,
    lab_dir: PathBuf,
    /// NAME → the value before the change; empty when nothing is changed.
    originals: BTreeMap<String, String>,
}

impl Record {
    fn read(file: &mut File) -> Record {
        let mut text = String::new();
        if file.rewind().is_err() || file.take(1 << 16).read_to_string(&mut text).is_err() {
            return Record::default();
        }
        serde_json::from_str(&text).unwrap_or_default()
    }

    fn write(&self, file: &mut File) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        file.set_len(0)?;
        file.rewind()?;
        file.write_all(text.as_bytes())?;
        file.sync_data()
    }

    /// "webtune pid 4242 (lab directory /tmp/x)".
    fn holder(&self) -> String {
        if self.pid == 0 {
            return "another webtune".to_string();
        }
        format!(
            "webtune pid {} (lab directory {})",
            self.pid,
            self.lab_dir.display()
        )
    }
}

/// Put sysctls back; one line per value ("restored", or "NOT restored" with the reason).
fn restore(values: &BTreeMap<String, String>, why: &str) -> (Vec<String>, bool) {
    let mut all = true;
    let lines = values
        .iter()
        .map(
            |(name, value)| match std::fs::write(sysctl_path(name), value) {
                Ok(()) => format!("host sysctl {name} restored to {value}{why}"),
                Err(e) => {
                    all = false;
                    format!("host sysctl {name} NOT restored to {value}: {e}")
                }
            },
        )
        .collect();
    (lines, all)
}

fn lock_path() -> PathBuf {
    Path::new(LOCK_DIR).join(LOCK_NAME)
}

/// Open the lock file (making its directory, root's, when missing); never through a link.
fn open_lock(create: bool) -> std::io::Result<File> {
    if create {
        match std::fs::DirBuilder::new().mode(0o755).create(LOCK_DIR) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        let meta = std::fs::symlink_metadata(LOCK_DIR)?;
        // SAFETY: geteuid has no preconditions.
        if !meta.is_dir() || meta.uid() != unsafe { libc::geteuid() } {
            return Err(std::io::Error::other(format!(
                "{LOCK_DIR} is not a directory of yours"
            )));
        }
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(lock_path())
}

/// The host's sysctls, held by this run: changed only through `set`, put back by `restore`
/// (or on drop), the lock let go then.
#[derive(Debug)]
pub struct HostSysctls {
    file: File,
    record: Record,
    restored: bool,
}

impl HostSysctls {
    /// Take the host's sysctls for a run in `lab_dir` that will change `names`: refused in
    /// one line naming the holder while another run holds them. Values a dead holder left
    /// changed are put back first (the lines say so); then the values now are recorded as
    /// the ones to restore.
    pub fn take(lab_dir: &Path, names: &[&str]) -> Result<(HostSysctls, Vec<String>), LabError> {
        let io = |e: std::io::Error| {
            LabError::io(format!("the host-wide lock {}", lock_path().display()), e)
        };
        let mut file = open_lock(true).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = Record::read(&mut file);
                return Err(LabError::Host(format!(
                    "the host's sysctls are held by {}: one --host-sysctl run at a time per \
                     host, whatever the lab directory; wait for it to end",
                    holder.holder()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let left = Record::read(&mut file);
        let mut lines = Vec::new();
        if !left.originals.is_empty() {
            let why = format!(" (left changed by {}, which ended)", left.holder());
            let (restored, all) = restore(&left.originals, &why);
            if !all {
                return Err(LabError::Host(restored.join("; ")));
            }
            lines = restored;
        }
        let me = std::process::id() as i32;
        let mut record = Record {
            pid: me,
            start_ticks: procfs::read_stat(me).map_or(0, |s| s.start_ticks),
            lab_dir: lab_dir.to_path_buf(),
            originals: BTreeMap::new(),
        };
        for name in names {
            let now = std::fs::read_to_string(sysctl_path(name))
                .map_err(|e| LabError::io(format!("reading {name}"), e))?;
            record
                .originals
                .insert(name.to_string(), now.trim().to_string());
        }
        // On disk before the first change, so a SIGKILL at any later point leaves the
        // originals for the next taker.
        record.write(&mut file).map_err(io)?;
        Ok((
            HostSysctls {
                file,
                record,
                restored: false,
            },
            lines,
        ))
    }

    /// Set one of the names taken; the kernel's value is read back and must be `value`.
    pub fn set(&self, name: &str, value: &str) -> Result<(), LabError> {
        if !self.record.originals.contains_key(name) {
            return Err(LabError::Inconsistent(format!(
                "internal: host sysctl {name} was not taken"
            )));
        }
        let path = sysctl_path(name);
        std::fs::write(&path, value).map_err(|e| LabError::io(format!("setting {name}"), e))?;
        let back = std::fs::read_to_string(&path).unwrap_or_default();
        if back.trim() != value {
            return Err(LabError::Host(format!(
                "{name}={value}: the kernel kept {}",
                back.trim()
            )));
        }
        Ok(())
    }

    /// Put every value back and let go. One line per value; an error when one could not
    /// be restored (the record stays, so `lab clean` tries again).
    pub fn restore(mut self) -> Result<Vec<String>, LabError> {
        self.restore_now()
    }

    fn restore_now(&mut self) -> Result<Vec<String>, LabError> {
        if self.restored {
            return Ok(Vec::new());
        }
        self.restored = true;
        let (lines, all) = restore(&self.record.originals, "");
        if !all {
            return Err(LabError::Host(lines.join("; ")));
        }
        let _ = Record::default().write(&mut self.file);
        let _ = self.file.unlock();
        Ok(lines)
    }
}

impl Drop for HostSysctls {
    fn drop(&mut self) {
        let _ = self.restore_now();
    }
}

/// Put back host sysctls that a run which ended without restoring them (SIGKILL) left
/// changed, unless a live run holds them now. One line per value; none when there is
/// nothing to do or no lock file to read (a user who is not root).
pub fn restore_abandoned() -> Vec<String> {
    let Ok(mut file) = open_lock(false) else {
        return Vec::new();
    };
    if file.try_lock().is_err() {
        return Vec::new();
    }
    let left = Record::read(&mut file);
    let mut lines = Vec::new();
    if !left.originals.is_empty() {
        let why = format!(" (left changed by {}, which ended)", left.holder());
        let (restored, all) = restore(&left.originals, &why);
        if all {
            let _ = Record::default().write(&mut file);
        }
        lines = restored;
    }
    let _ = file.unlock();
    lines
}
