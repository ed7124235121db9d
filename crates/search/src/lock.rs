//! The journal's lock: one tune (or `--resume`) at a time per journal. An exclusive
//! `flock(2)` (std's `File::try_lock`) on `JOURNAL.lock`, which holds the holder's pid so a
//! refusal can name it. The kernel drops the lock when its holder dies, SIGKILL included,
//! so a stale lock file never blocks a later `--resume`: only a live holder does. The file
//! is removed when its holder lets go; a taker checks that the file it locked is still the
//! one at the path (else it lost a race with that removal, and tries again).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why the lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// A live process holds it; its pid when the file names one.
    Held(Option<u32>),
    Io(std::io::Error),
}

/// A held lock; let go (and its file removed) on drop.
#[derive(Debug)]
pub struct JournalLock {
    file: File,
    path: PathBuf,
}

/// `tune.db` → `tune.db.lock`, made absolute (the process may change directory later).
pub fn lock_path(journal: &Path) -> PathBuf {
    let mut name = journal.as_os_str().to_owned();
    name.push(".lock");
    let p = PathBuf::from(name);
    std::path::absolute(&p).unwrap_or(p)
}

/// The pid written in a lock file (None when it is empty or not a number).
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.take(64).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

impl JournalLock {
    /// Take the lock of `journal`, or say who holds it.
    pub fn acquire(journal: &Path) -> Result<JournalLock, LockError> {
        let path = lock_path(journal);
        for _ in 0..10 {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(LockError::Io)?;
            // A few tries: a `--show` peeking at the lock holds it shared for a moment, and
            // a new holder writes its pid just after taking it.
            let mut tries = 0;
            loop {
                match file.try_lock() {
                    Ok(()) => break,
                    Err(std::fs::TryLockError::WouldBlock) if tries < 20 => {
                        tries += 1;
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(std::fs::TryLockError::WouldBlock) => {
                        return Err(LockError::Held(read_pid(&mut file)))
                    }
                    Err(std::fs::TryLockError::Error(e)) => return Err(LockError::Io(e)),
                }
            }
            // Still the file at the path? (A holder that let go removed it before we locked.)
            let same = match (file.metadata(), std::fs::metadata(&path)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            };
            if !same {
                continue;
            }
            file.set_len(0).map_err(LockError::Io)?;
            file.rewind().map_err(LockError::Io)?;
            writeln!(file, "{}", std::process::id()).map_err(LockError::Io)?;
            file.sync_data().map_err(LockError::Io)?;
            return Ok(JournalLock { file, path });
        }
        Err(LockError::Held(None))
    }

    /// Who holds the lock of `journal` now: Some(pid, 0 when unknown) or None when free.
    /// Takes nothing.
    pub fn holder(journal: &Path) -> Option<u32> {
        let path = lock_path(journal);
        let mut file = OpenOptions::new().read(true).open(path).ok()?;
        match file.try_lock_shared() {
            Ok(()) => None,
            Err(std::fs::TryLockError::WouldBlock) => Some(read_pid(&mut file).unwrap_or(0)),
            Err(_) => None,
        }
    }
}

impl Drop for JournalLock {
    fn drop(&mut self) {
        // Removed while still held, so no one can lock this file and then find it gone
        // without noticing (see `acquire`); the lock goes with the descriptor.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_named_by_pid_and_let_go_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("t.db");
        let held = JournalLock::acquire(&journal).unwrap();
        match JournalLock::acquire(&journal) {
            Err(LockError::Held(pid)) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("a second holder: {other:?}"),
        }
        assert_eq!(JournalLock::holder(&journal), Some(std::process::id()));
        drop(held);
        assert!(!lock_path(&journal).exists(), "the file goes with the lock");
        assert_eq!(JournalLock::holder(&journal), None);
        let _again = JournalLock::acquire(&journal).expect("free again");
    }

    #[test]
    fn a_lock_file_left_by_a_dead_process_is_not_a_lock() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("t.db");
        // What a SIGKILLed tune leaves: the file with its pid, no lock on it.
        std::fs::write(lock_path(&journal), "999999\n").unwrap();
        assert_eq!(JournalLock::holder(&journal), None);
        let _lock = JournalLock::acquire(&journal).expect("a stale file is taken over");
        let text = std::fs::read_to_string(lock_path(&journal)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
    }
}
