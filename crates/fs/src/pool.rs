//! The pool's directory: a fresh `webtune-fs-PID-N` under the location (the first such name
//! not taken yet), its `s0..sS-1`
//! subdirectories (from 2 on, as postmark makes them), held open as directory descriptors
//! so that every file operation is an `openat` of a bare name. A `PoolKeeper` hears of the
//! pool before it is created and after it is gone (the binary registers it with the lab, so
//! that `lab clean` removes it after a SIGKILL); `Drop` removes whatever is left.

use crate::FsError;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Told of a pool before it exists and after it is removed.
pub trait PoolKeeper {
    /// The pool will be made at `pool`; an error stops the run before anything is created.
    fn claim(&mut self, pool: &Path) -> Result<(), String>;
    /// The pool is gone.
    fn release(&mut self, pool: &Path);
}

/// Keeps no record (library use, tests).
pub struct NoKeeper;

impl PoolKeeper for NoKeeper {
    fn claim(&mut self, _pool: &Path) -> Result<(), String> {
        Ok(())
    }
    fn release(&mut self, _pool: &Path) {}
}

static POOLS: AtomicU32 = AtomicU32::new(0);

/// The prefix of every pool directory's name.
pub const POOL_PREFIX: &str = "webtune-fs-";

/// Why `Pool::create` made no pool.
enum Taken {
    /// Something is there already under that name.
    Already,
    Failed(FsError),
}

/// A created pool directory and its subdirectories, open.
pub struct Pool {
    root: PathBuf,
    dirs: Vec<OwnedFd>,
    removed: bool,
}

fn open_dir(path: &Path) -> std::io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: open with a valid NUL-terminated path; the descriptor is owned at once.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Pool {
    /// The path the next pool of this process would get under `location`.
    pub fn next_path(location: &Path) -> PathBuf {
        location.join(format!(
            "{POOL_PREFIX}{}-{}",
            std::process::id(),
            POOLS.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// Create a pool under `location` with `subdirs` subdirectories (none below 2, as
    /// postmark), at the first free name from `next_path`: a name already taken (a
    /// leftover of a killed run, a name a reused pid gives again) is passed over, never
    /// entered. `keeper` claims each name before it is made and hears of each one passed
    /// over.
    pub fn create_fresh(
        location: &Path,
        subdirs: u32,
        keeper: &mut dyn PoolKeeper,
    ) -> Result<Pool, FsError> {
        /// Names tried before giving up (each taken one is a leftover in the location).
        const TRIES: u32 = 1000;
        for _ in 0..TRIES {
            let root = Pool::next_path(location);
            keeper.claim(&root).map_err(|message| FsError::Claim {
                path: root.clone(),
                message,
            })?;
            match Pool::create(&root, subdirs) {
                Ok(pool) => return Ok(pool),
                Err(Taken::Already) => keeper.release(&root),
                Err(Taken::Failed(e)) => {
                    keeper.release(&root);
                    return Err(e);
                }
            }
        }
        Err(FsError::Invalid(format!(
            "location {}: {TRIES} names {POOL_PREFIX}{}-N in a row are taken already; \
             remove the leftovers",
            location.display(),
            std::process::id()
        )))
    }

    /// Create the pool at `root` (after the keeper claimed it).
    fn create(root: &Path, subdirs: u32) -> Result<Pool, Taken> {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(root)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    return Taken::Already;
                }
                let parent = root.parent().unwrap_or(root);
                Taken::Failed(FsError::Invalid(format!(
                    "location {} is not writable: {e}",
                    parent.display()
                )))
            })?;
        let mut pool = Pool {
            root: root.to_path_buf(),
            dirs: Vec::new(),
            removed: false,
        };
        let root_fd = open_dir(root)
            .map_err(|e| FsError::io(format!("opening {}", root.display()), e))
            .map_err(Taken::Failed)?;
        pool.dirs.push(root_fd);
        if subdirs > 1 {
            for i in 0..subdirs {
                let path = root.join(format!("s{i}"));
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&path)
                    .map_err(|e| FsError::io(format!("creating {}", path.display()), e))
                    .map_err(Taken::Failed)?;
                let fd = open_dir(&path)
                    .map_err(|e| FsError::io(format!("opening {}", path.display()), e))
                    .map_err(Taken::Failed)?;
                pool.dirs.push(fd);
            }
        }
        Ok(pool)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Number of directories files go to (1: the pool's root only).
    pub fn dir_count(&self) -> u32 {
        if self.dirs.len() == 1 {
            1
        } else {
            (self.dirs.len() - 1) as u32
        }
    }

    /// The descriptor of directory `i` (`0..dir_count()`).
    pub fn dir_fd(&self, i: u32) -> RawFd {
        if self.dirs.len() == 1 {
            self.dirs[0].as_raw_fd()
        } else {
            self.dirs[i as usize + 1].as_raw_fd()
        }
    }

    /// Remove the pool and everything in it.
    pub fn remove(&mut self) -> std::io::Result<()> {
        if self.removed {
            return Ok(());
        }
        self.dirs.clear();
        self.removed = true;
        match std::fs::remove_dir_all(&self.root) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}
