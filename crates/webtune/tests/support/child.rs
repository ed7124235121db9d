//! A webtune child under test, and the conditions a test waits on instead of sleeping: the
//! child run to completion with a deadline (`finish`, `run_bounded`); a child whose stderr
//! is read line by line, so the test can wait for a line ("ready at", "waiting until"),
//! signal it and wait for its exit (`Watched`); whether a process catches a signal yet
//! (`catches`, from /proc's `SigCgt`) and how many TCP connections it has open
//! (`tcp_established`), so a signal is sent once the handler is in and the load flows.
#![allow(dead_code)] // each test binary uses its own part of it

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use super::lab::WEBTUNE;

/// webtune, with nothing set up.
pub fn webtune() -> Command {
    Command::new(WEBTUNE)
}

/// Wait for a child with a deadline; (status code, stdout, stderr). Its output is read
/// while it runs (a full pipe cannot stall it); at the deadline it is killed and the test
/// fails.
pub fn finish(child: Child, limit: Duration) -> (i32, String, String) {
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => {
            let out = out.expect("wait for webtune");
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        }
        Err(_) => {
            signal(pid, libc::SIGKILL);
            panic!("webtune did not finish within {limit:?}");
        }
    }
}

/// Run to completion with a deadline, stdout and stderr piped; (status code, stdout,
/// stderr).
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> (i32, String, String) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("webtune runs");
    finish(child, limit)
}

/// Wait for `child` to exit, at most `limit`; its exit code (-1 for a signal), or None
/// when it still runs.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<i32> {
    let mut code = None;
    webtune_testkit::wait_until(limit, || {
        code = child
            .try_wait()
            .ok()
            .flatten()
            .map(|s| s.code().unwrap_or(-1));
        code.is_some()
    });
    code
}

/// Send `signal` to `pid` (a child of the test, or one of its children).
pub fn signal(pid: u32, signal: i32) {
    // SAFETY: kill(2) with a pid the test started.
    unsafe {
        libc::kill(pid as i32, signal);
    }
}

/// Whether `pid` has a handler installed for `signal` (bit `signal - 1` of `SigCgt` in
/// /proc/PID/status). Before that, the signal's default action would kill it.
pub fn catches(pid: u32, signal: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal - 1)) != 0)
}

/// The established TCP connections (IPv4 and IPv6) that `pid` holds open: its socket
/// descriptors matched against its network namespace's tables.
pub fn tcp_established(pid: u32) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let inodes: std::collections::HashSet<String> = fds
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(
                link.strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_string(),
            )
        })
        .collect();
    ["tcp", "tcp6"]
        .iter()
        .filter_map(|t| std::fs::read_to_string(format!("/proc/{pid}/net/{t}")).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .map(|row| {
                    let cols: Vec<&str> = row.split_whitespace().collect();
                    // st 01 is ESTABLISHED; the inode is the tenth column.
                    cols.get(3) == Some(&"01") && cols.get(9).is_some_and(|i| inodes.contains(*i))
                })
                .collect::<Vec<_>>()
        })
        .filter(|&established| established)
        .count()
}

/// A webtune child whose stderr is read line by line; killed (and, with a lab root, its
/// stack reaped by `lab clean`) if the test ends before it does.
pub struct Watched {
    child: Option<Child>,
    stderr: Receiver<String>,
    /// The lines read so far.
    pub seen: Vec<String>,
    /// Run `lab clean` (in this lab root, or the default one) if the child is killed.
    reap: Option<Option<PathBuf>>,
}

impl Watched {
    /// Spawn `command` (stdin from /dev/null, stderr piped; stdout as the command sets it).
    pub fn spawn(command: &mut Command) -> Watched {
        let mut child = command
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run webtune");
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watched {
            child: Some(child),
            stderr: rx,
            seen: Vec::new(),
            reap: None,
        }
    }

    /// Reap the child's lab stack (`lab clean`, in `dir` as `WEBTUNE_LAB_DIR` or else the
    /// default lab root) if the test ends before the child.
    pub fn reaping(mut self, dir: Option<PathBuf>) -> Watched {
        self.reap = Some(dir);
        self
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// The first line (from now on) that contains `needle`; fails the test, with the lines
    /// seen, when none comes within `limit` or stderr closes.
    pub fn wait_for_line(&mut self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            match self.stderr.recv_timeout(Duration::from_millis(200)) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        panic!("webtune never said {needle:?}; stderr: {:?}", self.seen);
    }

    /// Wait until `condition` holds, failing the test (with the lines seen) after `limit`.
    pub fn wait_until(&mut self, what: &str, limit: Duration, condition: impl FnMut() -> bool) {
        if !webtune_testkit::wait_until(limit, condition) {
            self.seen.extend(self.stderr.try_iter());
            panic!("{what}: not within {limit:?}; stderr: {:?}", self.seen);
        }
    }

    pub fn signal(&self, signal: i32) {
        self::signal(self.pid(), signal);
    }

    /// Wait (bounded) for exit; the exit code, or None when it still runs at `limit`.
    pub fn wait(&mut self, limit: Duration) -> Option<i32> {
        let code = wait_exit(self.child.as_mut()?, limit);
        if code.is_some() {
            self.child = None;
        }
        code
    }

    /// Everything on stderr: the lines seen, then the rest until it closes (call after the
    /// child ended; a grandchild holding it open is given 5 s).
    pub fn stderr(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.stderr.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => break,
            }
        }
        self.seen.join("\n")
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            // Its stack now has a dead owner: reap it.
            if let Some(dir) = &self.reap {
                let mut clean = webtune();
                if let Some(dir) = dir {
                    clean.env("WEBTUNE_LAB_DIR", dir);
                }
                let _ = clean.args(["lab", "clean"]).stdout(Stdio::null()).status();
            }
        }
    }
}
