//! The registry of running stacks: one JSON file per start under
//! `$WEBTUNE_LAB_DIR/registry/` (default `/tmp/webtune-lab-UID/`), written *before* the
//! first server starts, naming the owner (webtune's pid and start time), the private
//! directory and each server's session id. A stack whose owner is gone — webtune was
//! killed with SIGKILL — is reaped by `lab clean` and at every start.

use crate::LabError;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use webtune_conf::procfs;

/// One started stack, as recorded on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    pub stack: String,
    pub owner_pid: i32,
    pub owner_start_ticks: u64,
    pub private_dir: PathBuf,
    pub docroot: PathBuf,
    /// Session ids (= pids of the masters) of the servers started so far.
    pub sessions: Vec<i32>,
    /// Inode of the run's private network namespace (`os.*` network parameters): every
    /// process left in it is the stack's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<u64>,
    /// Host-wide sysctls a lab file system run changed (`--host-sysctl`), with the values
    /// they had before, written before the change: `lab clean` puts them back.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub host_sysctls: std::collections::BTreeMap<String, String>,
}

/// Numbers the entries one process makes.
static ENTRY_COUNTER: AtomicU32 = AtomicU32::new(0);

impl Entry {
    /// A new entry owned by this process, `NAME-PID-N`, whose private directory (and,
    /// until the caller says otherwise, document root) `dir_for` places from that id.
    pub fn new(name: &str, dir_for: &dyn Fn(&str) -> PathBuf) -> Entry {
        let me = std::process::id() as i32;
        let my_start = procfs::read_stat(me).map(|s| s.start_ticks).unwrap_or(0);
        let id = format!(
            "{name}-{me}-{}",
            ENTRY_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let dir = dir_for(&id);
        Entry {
            id,
            stack: name.to_string(),
            owner_pid: me,
            owner_start_ticks: my_start,
            private_dir: dir.clone(),
            docroot: dir,
            sessions: Vec::new(),
            netns: None,
            host_sysctls: Default::default(),
        }
    }

    pub fn owner_alive(&self) -> bool {
        procfs::is_alive(self.owner_pid, self.owner_start_ticks)
    }
}

/// The lab's root directory: `$WEBTUNE_LAB_DIR`, else `/tmp/webtune-lab-UID`. Created
/// mode 0711 (others may pass through to the world-readable document roots but not list
/// it); refused when it is a symlink or belongs to another user.
pub fn lab_root() -> Result<PathBuf, LabError> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let root = match std::env::var_os("WEBTUNE_LAB_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(format!("/tmp/webtune-lab-{uid}")),
    };
    ensure_dir(&root, 0o711, uid)?;
    ensure_dir(&root.join("registry"), 0o700, uid)?;
    Ok(root)
}

fn ensure_dir(path: &Path, mode: u32, uid: u32) -> Result<(), LabError> {
    let bad = |message: String| LabError::Directory {
        path: path.to_path_buf(),
        message,
    };
    match std::fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(bad(format!("cannot create it: {e}"))),
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.file_type().is_dir() {
        return Err(bad(
            "is not a directory (remove it or set WEBTUNE_LAB_DIR)".into()
        ));
    }
    if meta.uid() != uid {
        return Err(bad(format!(
            "belongs to uid {}, not to you (uid {uid}); set WEBTUNE_LAB_DIR to a directory of yours",
            meta.uid()
        )));
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| bad(format!("cannot set mode {mode:o}: {e}")))?;
    Ok(())
}

fn entry_path(root: &Path, id: &str) -> PathBuf {
    root.join("registry").join(format!("{id}.json"))
}

/// Write (or rewrite) an entry atomically.
pub fn write_entry(root: &Path, entry: &Entry) -> Result<(), LabError> {
    let path = entry_path(root, &entry.id);
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(entry)
        .map_err(|e| LabError::Inconsistent(format!("internal: registry entry: {e}")))?;
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| LabError::io(format!("writing {}", path.display()), e))
}

pub fn remove_entry(root: &Path, id: &str) {
    let _ = std::fs::remove_file(entry_path(root, id));
}

/// Every readable entry.
pub fn entries(root: &Path) -> Vec<Entry> {
    let Ok(dir) = std::fs::read_dir(root.join("registry")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect()
}

/// What a clean-up found and did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanReport {
    /// One line per stale stack reaped.
    pub reaped: Vec<String>,
    /// Processes signalled.
    pub killed: Vec<i32>,
    /// Processes that survived SIGKILL (should stay empty).
    pub survivors: Vec<i32>,
    /// Private directories a stop kept because the user asked (`--keep`): never reaped.
    pub kept: Vec<PathBuf>,
}

impl CleanReport {
    pub fn is_empty(&self) -> bool {
        self.reaped.is_empty() && self.killed.is_empty()
    }
}

/// The processes that belong to a start: members of its recorded sessions (checked to be
/// ours when the session leader still runs) and anything naming its private directory.
pub fn processes_of(entry: &Entry) -> Vec<i32> {
    let dir_text = entry.private_dir.to_string_lossy().into_owned();
    let mut sessions = Vec::new();
    for &sid in &entry.sessions {
        // A leader that runs but does not name our directory is a reused pid: not ours.
        // (A session id cannot be reused while any member of the old session lives.)
        let leader_is_foreign = procfs::read_stat(sid).is_some_and(|s| s.session == sid)
            && !procfs::cmdline(sid).is_some_and(|c| c.contains(&dir_text));
        if !leader_is_foreign {
            sessions.push(sid);
        }
    }
    let mut pids: Vec<i32> = procfs::session_members(&sessions)
        .into_iter()
        .map(|s| s.pid)
        .collect();
    for pid in procfs::processes_mentioning(&entry.private_dir) {
        if !pids.contains(&pid) {
            pids.push(pid);
        }
    }
    // Whatever else lives in the run's namespace — but only once a process known to be
    // the stack's shows the namespace is still ours (a freed namespace's inode is reused).
    if let Some(ns) = entry.netns {
        if pids
            .iter()
            .any(|&p| crate::netns::namespace_of(p) == Some(ns))
        {
            for pid in procfs::all_pids() {
                if !pids.contains(&pid) && crate::netns::namespace_of(pid) == Some(ns) {
                    pids.push(pid);
                }
            }
        }
    }
    pids.retain(|p| *p != std::process::id() as i32);
    pids
}

/// Signal a set of processes: `first` (e.g. SIGTERM), wait up to `grace`, then SIGKILL
/// whatever is left and wait up to 3 s more. Returns the pids still alive at the end.
pub fn terminate(find: &dyn Fn() -> Vec<i32>, first: i32, grace: Duration) -> Vec<i32> {
    let send = |pids: &[i32], signal: i32| {
        for &pid in pids {
            // SAFETY: kill only sends a signal; a vanished pid yields ESRCH, ignored.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    };
    let wait_until_gone = |limit: Duration| -> Vec<i32> {
        let deadline = Instant::now() + limit;
        loop {
            let left = find();
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let pids = find();
    if pids.is_empty() {
        return pids;
    }
    send(&pids, first);
    let left = wait_until_gone(grace);
    if left.is_empty() {
        return left;
    }
    send(&left, libc::SIGKILL);
    wait_until_gone(Duration::from_secs(3))
}

/// Reap every stack whose owner is gone: stop its processes (SIGTERM, then SIGKILL after
/// 2 s), remove its directories and its entry. Stacks of running webtune processes are
/// left alone. Directories in the root with no entry at all are leftovers too.
pub fn clean_stale(root: &Path) -> CleanReport {
    let mut report = CleanReport::default();
    for entry in &entries(root) {
        if entry.owner_alive() {
            continue;
        }
        let found = processes_of(entry);
        report.killed.extend(&found);
        let survivors = terminate(
            &|| processes_of(entry),
            libc::SIGTERM,
            Duration::from_secs(2),
        );
        report.survivors.extend(&survivors);
        for line in restore_host_sysctls(&entry.host_sysctls) {
            report.reaped.push(line);
        }
        if survivors.is_empty() {
            remove_dirs(entry);
            remove_entry(root, &entry.id);
        }
        report.reaped.push(format!(
            "{} (dir {}, owner pid {} gone): {} process(es) stopped",
            entry.stack,
            entry.private_dir.display(),
            entry.owner_pid,
            found.len()
        ));
    }
    // Directories without an entry: the entry is written before the directory is made, so
    // a directory whose entry file is missing now was left by a clean-up that could not
    // finish; reap it the same way.
    if let Ok(dir) = std::fs::read_dir(root) {
        for item in dir.flatten() {
            let path = item.path();
            let name = item.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".www").unwrap_or(&name);
            if name == "registry" || entry_path(root, id).exists() {
                continue;
            }
            if root.join(id).join(KEPT_MARKER).exists() {
                if id == name {
                    report.kept.push(path);
                }
                continue;
            }
            let survivors = terminate(
                &|| procfs::processes_mentioning(&path),
                libc::SIGTERM,
                Duration::from_secs(2),
            );
            if survivors.is_empty() {
                let _ = std::fs::remove_dir_all(&path);
                report
                    .reaped
                    .push(format!("leftover directory {}", path.display()));
            } else {
                report.survivors.extend(survivors);
            }
        }
    }
    report
}

/// The file a stop writes into a private directory it keeps (`--keep`), so that later
/// starts and `lab clean` know it is the user's now and not a leftover.
pub const KEPT_MARKER: &str = ".webtune-kept";

/// Keep a start's directories: mark the private one as the user's (its entry goes).
pub fn keep_dirs(entry: &Entry) {
    let _ = std::fs::write(
        entry.private_dir.join(KEPT_MARKER),
        "kept by webtune lab --keep; remove this directory yourself\n",
    );
}

/// The file under /proc/sys of a sysctl name (`vm.dirty_ratio` → /proc/sys/vm/dirty_ratio).
pub fn sysctl_path(name: &str) -> PathBuf {
    Path::new("/proc/sys").join(name.replace('.', "/"))
}

/// Put host-wide sysctls back to the values recorded; one line per value restored (or not).
pub fn restore_host_sysctls(values: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    values
        .iter()
        .map(
            |(name, value)| match std::fs::write(sysctl_path(name), value) {
                Ok(()) => format!("host sysctl {name} restored to {value}"),
                Err(e) => format!("host sysctl {name} NOT restored to {value}: {e}"),
            },
        )
        .collect()
}

/// Remove a start's private directory and document root.
pub fn remove_dirs(entry: &Entry) {
    for dir in [&entry.private_dir, &entry.docroot] {
        if dir.as_os_str().len() > 8 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
