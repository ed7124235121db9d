//! The registry of what a run leaves on the host: one JSON file per start under
//! `$WEBTUNE_LAB_DIR/registry/` (default `/tmp/webtune-lab-UID/`), written *before* the
//! first server starts, naming the owner (webtune's pid and start time), the private
//! directory and each server's session (its leader's pid and start time). A start whose
//! owner is gone — webtune was killed with SIGKILL — is reaped by `lab clean` and at every
//! start: the processes of its recorded sessions (and of its network namespace) are
//! stopped, and its directories removed. Nothing else is touched: not a process picked by
//! its command line, not an entry of the lab directory the registry does not record (a
//! user may point `WEBTUNE_LAB_DIR` at a directory that holds other things), and not the
//! mode of a directory webtune did not create.

use crate::LabError;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use webtune_conf::procfs::{self, ProcStat};

/// One started stack, as recorded on disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    pub stack: String,
    pub owner_pid: i32,
    pub owner_start_ticks: u64,
    pub private_dir: PathBuf,
    pub docroot: PathBuf,
    /// The sessions of the servers started so far (each server runs in a session of its
    /// own, so its leader is its main process).
    pub sessions: Vec<Session>,
    /// Inode of the run's private network namespace (`os.*` network parameters): every
    /// process left in it is the stack's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<u64>,
}

/// A session the lab made: its leader's pid (= the session id) and the leader's start time
/// (field 22 of /proc/PID/stat), so that a pid the kernel has given to another process
/// since is never taken for the lab's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub sid: i32,
    pub start_ticks: u64,
}

impl Session {
    /// The session led by `pid` now (a process the lab just started with setsid).
    pub fn of(pid: i32) -> Session {
        Session {
            sid: pid,
            start_ticks: procfs::read_stat(pid).map_or(0, |s| s.start_ticks),
        }
    }

    /// Is this still the lab's session? While its leader runs, the pid shows the recorded
    /// start time. Once the leader is gone the session's other members are still the lab's:
    /// the kernel gives a pid to no new process while it is any process's session id, so a
    /// process now holding the pid with another start time means that every member of the
    /// recorded session is gone, and the pid's session is another's.
    ///
    /// The one case this cannot tell apart: every member gone, the pid reused by a process
    /// that made its own session, left members in it and ended itself, all before the reap.
    fn is_ours(&self) -> bool {
        match procfs::read_stat(self.sid) {
            Some(now) => now.start_ticks == self.start_ticks,
            None => true,
        }
    }
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
        }
    }

    pub fn owner_alive(&self) -> bool {
        procfs::is_alive(self.owner_pid, self.owner_start_ticks)
    }

    /// Record the session of a server just started (its leader's pid and start time).
    pub fn record_session(&mut self, leader: i32) {
        self.sessions.push(Session::of(leader));
    }

    /// The recorded session ids.
    pub fn session_ids(&self) -> Vec<i32> {
        self.sessions.iter().map(|s| s.sid).collect()
    }

    /// The directories a reap may remove: the private directory and document root, each
    /// only when its name is one the lab makes, ending in `-OWNERPID-N` (`nginx-4242-0`,
    /// `nginx-4242-0.www`, a pool's `webtune-fs-4242-3`, a dataset build's
    /// `KEY.mariadb-build-4242-0`). An entry naming anything else (a damaged file) has its
    /// directories left alone.
    fn own_dirs(&self) -> Vec<&Path> {
        let mut dirs: Vec<&Path> = Vec::new();
        for dir in [&self.private_dir, &self.docroot] {
            if lab_made_name(dir, self.owner_pid) && !dirs.contains(&dir.as_path()) {
                dirs.push(dir);
            }
        }
        dirs
    }
}

/// Does `dir`'s last component end in `-PID-N` (or `-PID-N.www`), as the lab names what it
/// makes for the process `pid`?
fn lab_made_name(dir: &Path, pid: i32) -> bool {
    if !dir.is_absolute() || dir.components().count() < 3 {
        return false;
    }
    let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let name = name.strip_suffix(".www").unwrap_or(name);
    let Some((head, n)) = name.rsplit_once('-') else {
        return false;
    };
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && head.ends_with(&format!("-{pid}"))
}

/// The lab's root directory: `$WEBTUNE_LAB_DIR`, else `/tmp/webtune-lab-UID`. Created
/// mode 0711 when webtune makes it (others may pass through to the world-readable document
/// roots but not list it); an existing directory keeps its mode. Refused when it is a
/// symlink or belongs to another user; its `registry/` also when others may write to it.
pub fn lab_root() -> Result<PathBuf, LabError> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let root = match std::env::var_os("WEBTUNE_LAB_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(format!("/tmp/webtune-lab-{uid}")),
    };
    ensure_dir(&root, 0o711, uid)?;
    let registry = root.join("registry");
    let mode = ensure_dir(&registry, 0o700, uid)?;
    if mode & 0o022 != 0 {
        // An entry names processes to stop: nobody else may write one.
        return Err(LabError::Directory {
            path: registry,
            message: format!(
                "is mode {:o}: others may write to it; `chmod go-w` it or set WEBTUNE_LAB_DIR",
                mode & 0o7777
            ),
        });
    }
    Ok(root)
}

/// Make `path` with exactly `mode` (whatever the umask) unless it exists; either way it must
/// be a directory of `uid`'s. A directory that was there keeps its mode (returned).
fn ensure_dir(path: &Path, mode: u32, uid: u32) -> Result<u32, LabError> {
    let bad = |message: String| LabError::Directory {
        path: path.to_path_buf(),
        message,
    };
    let made = match std::fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(bad(format!("cannot create it: {e}"))),
    };
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
    if made {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| bad(format!("cannot set mode {mode:o}: {e}")))?;
        return Ok(mode);
    }
    Ok(meta.mode())
}

/// When the lab runs as root its servers' workers run as www-data (or nobody) and must pass
/// through the lab root to the document roots and sockets under it. A root webtune made
/// lets them (0711); one the user chose keeps its mode, so one they cannot pass is refused
/// here, in one line, rather than failing as a server's "permission denied".
pub(crate) fn check_passage(root: &Path) -> Result<(), LabError> {
    if !crate::servers::privileged() {
        return Ok(());
    }
    let meta = std::fs::metadata(root).map_err(|e| LabError::Directory {
        path: root.to_path_buf(),
        message: e.to_string(),
    })?;
    if meta.mode() & 0o001 == 0 {
        let (user, _) = crate::servers::unprivileged_account();
        return Err(LabError::Directory {
            path: root.to_path_buf(),
            message: format!(
                "is mode {:o}: the servers' workers ({user}) cannot pass through it to the \
                 document root; `chmod o+x` it or set WEBTUNE_LAB_DIR to another directory",
                meta.mode() & 0o7777
            ),
        });
    }
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
    /// One line per stale stack reaped (and per host sysctl put back).
    pub reaped: Vec<String>,
    /// Processes signalled.
    pub killed: Vec<i32>,
    /// Processes that survived SIGKILL (should stay empty).
    pub survivors: Vec<i32>,
    /// Private directories a stop kept because the user asked (`--keep`): never reaped.
    pub kept: Vec<PathBuf>,
    /// Everything in the lab root (and its registry) that no entry records: left alone.
    pub foreign: Vec<PathBuf>,
}

impl CleanReport {
    pub fn is_empty(&self) -> bool {
        self.reaped.is_empty() && self.killed.is_empty()
    }
}

/// The live processes of a start: the members of its recorded sessions that are still the
/// lab's (`Session::is_ours`), and whatever lives in its network namespace while a process
/// known to be the start's shows the namespace is still the one recorded.
fn members_of(entry: &Entry) -> Vec<ProcStat> {
    let sessions: Vec<i32> = entry
        .sessions
        .iter()
        .filter(|s| s.is_ours())
        .map(|s| s.sid)
        .collect();
    let mut found = procfs::session_members(&sessions);
    // A freed namespace's inode can be reused: only a known process vouches for it.
    if let Some(ns) = entry.netns {
        if found
            .iter()
            .any(|p| crate::netns::namespace_of(p.pid) == Some(ns))
        {
            for pid in procfs::all_pids() {
                if found.iter().any(|p| p.pid == pid) || crate::netns::namespace_of(pid) != Some(ns)
                {
                    continue;
                }
                if let Some(stat) = procfs::read_stat(pid).filter(|s| s.state != 'Z') {
                    found.push(stat);
                }
            }
        }
    }
    let me = std::process::id() as i32;
    found.retain(|p| p.pid != me);
    found
}

/// The pids of `members_of`.
pub fn processes_of(entry: &Entry) -> Vec<i32> {
    members_of(entry).iter().map(|p| p.pid).collect()
}

/// Send `signal` to the process `stat` describes, and to no other: through a pidfd opened
/// on the pid and checked to be that process (same start time) before the signal goes, so
/// a pid that ended and was reused in between is never hit.
fn signal_exactly(stat: &ProcStat, signal: i32) {
    let same =
        || procfs::read_stat(stat.pid).is_some_and(|now| now.start_ticks == stat.start_ticks);
    // SAFETY: pidfd_open takes a pid and flags; it returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, stat.pid, 0) };
    if fd < 0 {
        // A kernel before 5.3 has no pidfds: check, then signal by pid (a reuse in the
        // microseconds between the two is the one window left there).
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) && same() {
            // SAFETY: kill only sends a signal; a vanished pid yields ESRCH, ignored.
            unsafe {
                libc::kill(stat.pid, signal);
            }
        }
        return;
    }
    let fd = fd as libc::c_int;
    if same() {
        // SAFETY: the descriptor is ours and refers to the process just checked.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd,
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            );
        }
    }
    // SAFETY: closing the descriptor opened above.
    unsafe {
        libc::close(fd);
    }
}

/// Signal a start's processes: `first` (e.g. SIGTERM), wait up to `grace`, then SIGKILL
/// whatever is left and wait up to 3 s more. Returns the pids still alive at the end.
pub fn terminate(entry: &Entry, first: i32, grace: Duration) -> Vec<i32> {
    let wait_until_gone = |limit: Duration| -> Vec<ProcStat> {
        let deadline = Instant::now() + limit;
        loop {
            let left = members_of(entry);
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let found = members_of(entry);
    if found.is_empty() {
        return Vec::new();
    }
    for p in &found {
        signal_exactly(p, first);
    }
    let left = wait_until_gone(grace);
    if left.is_empty() {
        return Vec::new();
    }
    for p in &left {
        signal_exactly(p, libc::SIGKILL);
    }
    wait_until_gone(Duration::from_secs(3))
        .iter()
        .map(|p| p.pid)
        .collect()
}

/// Reap every start whose owner is gone: stop its processes (SIGTERM, then SIGKILL after
/// 2 s), remove its directories, then its entry; and put back host sysctls a dead run left
/// changed (`host_sysctl`). Starts of running webtune processes are left alone, and so is
/// everything in the root that no entry records (listed in `foreign`).
pub fn clean_stale(root: &Path) -> CleanReport {
    let mut report = CleanReport {
        reaped: crate::host_sysctl::restore_abandoned(),
        ..CleanReport::default()
    };
    let all = entries(root);
    for entry in all.iter().filter(|e| !e.owner_alive()) {
        let found = processes_of(entry);
        report.killed.extend(&found);
        let survivors = terminate(entry, libc::SIGTERM, Duration::from_secs(2));
        report.survivors.extend(&survivors);
        let mut line = format!(
            "{} (dir {}, owner pid {} gone): {} process(es) stopped",
            entry.stack,
            entry.private_dir.display(),
            entry.owner_pid,
            found.len()
        );
        if survivors.is_empty() {
            // A directory a live start names too (a pool's name taken again by a reused
            // pid) is that start's now.
            let live_names = |dir: &Path| {
                all.iter().any(|e| {
                    e.id != entry.id
                        && e.owner_alive()
                        && (e.private_dir == dir || e.docroot == dir)
                })
            };
            let dirs: Vec<&Path> = entry
                .own_dirs()
                .into_iter()
                .filter(|d| !live_names(d))
                .collect();
            match remove_dirs_of(&dirs) {
                Ok(()) => remove_entry(root, &entry.id),
                Err(e) => line.push_str(&format!("; {e} (its entry is kept for the next clean)")),
            }
        }
        report.reaped.push(line);
    }
    report.foreign = unrecorded(root, &mut report.kept);
    report
}

/// What is in the root (and in its registry) that no entry records: the user's, left
/// alone. Kept private directories (`--keep`) go to `kept`.
fn unrecorded(root: &Path, kept: &mut Vec<PathBuf>) -> Vec<PathBuf> {
    let mut foreign = Vec::new();
    let Ok(dir) = std::fs::read_dir(root) else {
        return foreign;
    };
    for item in dir.flatten() {
        let path = item.path();
        let name = item.file_name().to_string_lossy().into_owned();
        let id = name.strip_suffix(".www").unwrap_or(&name);
        if name == "registry" || entry_path(root, id).exists() {
            continue;
        }
        if root.join(id).join(KEPT_MARKER).exists() {
            if id == name {
                kept.push(path);
            }
            continue;
        }
        foreign.push(path);
    }
    if let Ok(dir) = std::fs::read_dir(root.join("registry")) {
        for item in dir.flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            // An entry being rewritten (`write_entry`) is the lab's.
            if name.ends_with(".json.tmp") {
                continue;
            }
            let readable = name.ends_with(".json")
                && std::fs::read_to_string(item.path())
                    .ok()
                    .is_some_and(|t| serde_json::from_str::<Entry>(&t).is_ok());
            if !readable {
                foreign.push(item.path());
            }
        }
    }
    foreign.sort();
    foreign
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

/// Remove a start's private directory and document root (those with a name the lab makes);
/// an error names the first that could not go.
pub fn remove_dirs(entry: &Entry) -> Result<(), String> {
    remove_dirs_of(&entry.own_dirs())
}

fn remove_dirs_of(dirs: &[&Path]) -> Result<(), String> {
    for dir in dirs {
        match std::fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot remove {}: {e}", dir.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_the_lab_makes_for_the_owner_are_its_directories() {
        let yes = [
            "/tmp/lab/nginx-4242-0",
            "/tmp/lab/nginx-php-fpm-4242-12.www",
            "/home/u/pool/webtune-fs-4242-3",
            "/var/tmp/cache/forum-v1-p2000.mariadb-build-4242-0",
        ];
        for dir in yes {
            assert!(lab_made_name(Path::new(dir), 4242), "{dir}");
        }
        let no = [
            "/tmp/lab/nginx-4243-0",
            "/tmp/lab/nginx-14242-0",
            "/tmp/lab/nginx-4242-",
            "/tmp/lab/nginx-4242-0x",
            "/home/u",
            "/tmp/lab",
            "lab/nginx-4242-0",
            "/nginx-4242-0",
        ];
        for dir in no {
            assert!(!lab_made_name(Path::new(dir), 4242), "{dir}");
        }
    }

    #[test]
    fn a_session_whose_leader_pid_shows_another_start_time_is_not_ours() {
        let me = std::process::id() as i32;
        let mine = Session::of(me);
        assert!(mine.is_ours());
        let reused = Session {
            sid: me,
            start_ticks: mine.start_ticks + 1,
        };
        assert!(!reused.is_ours());
    }
}
