//! Postfix's `smtp-sink` on a free loopback port for end-to-end mail tests, and the count of
//! messages it received (its `-c` counter, read from its output file). A host without it
//! fails the test unless the run opts out of `postfix`.
#![allow(dead_code)] // each test binary uses its own part of it

use super::embedded::KillOnDrop;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A Postfix (or postal) program: /usr/sbin's copy, else the one on PATH.
pub fn program(name: &str) -> Option<PathBuf> {
    let sbin = PathBuf::from("/usr/sbin").join(name);
    if sbin.exists() {
        return Some(sbin);
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| PathBuf::from(dir).join(name))
        .find(|p| p.exists())
}

pub struct Sink {
    pub addr: String,
    out: PathBuf,
    _dir: tempfile::TempDir,
    _child: KillOnDrop,
}

impl Sink {
    /// Start one, or None after the opt-out (the test returns).
    pub fn start() -> Option<Sink> {
        let Some(sink) = program("smtp-sink") else {
            super::opt_out::opt_out("postfix", "smtp-sink (Postfix) is not installed");
            return None;
        };
        let port = webtune_testkit::free_port();
        let addr = format!("127.0.0.1:{port}");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sink.out");
        let mut cmd = Command::new(sink);
        // As root smtp-sink must drop to a user after binding.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.args(["-u", "nobody"]);
        }
        let child = cmd
            .args(["-c", &addr, "256"])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let child = KillOnDrop(child);
        let listening = webtune_testkit::wait_for_port(
            addr.parse().expect("a socket address"),
            Duration::from_secs(10),
        );
        assert!(listening, "smtp-sink did not listen on {addr}");
        Some(Sink {
            addr,
            out,
            _dir: dir,
            _child: child,
        })
    }

    /// Messages received so far (the last "mesg=N" of the counter).
    pub fn messages(&self) -> u64 {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.rsplit("mesg=")
            .next()
            .and_then(|t| {
                t.split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|d| d.parse().ok())
            })
            .unwrap_or(0)
    }

    /// The count once it has stopped changing (the sink writes it as messages end).
    pub fn settled_messages(&self) -> u64 {
        let mut last = self.messages();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = self.messages();
            if now == last {
                return now;
            }
            last = now;
        }
    }
}
