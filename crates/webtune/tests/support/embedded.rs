//! The binary's own processes in end-to-end tests: a child killed and reaped when dropped,
//! and `webtune serve` (the embedded target) on a free loopback port.
#![allow(dead_code)] // each test binary uses its own part of it

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A child process, killed and reaped when dropped (a failing test leaves none behind).
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `webtune serve` on a free loopback port; its base URL ("http://127.0.0.1:PORT/").
pub fn serve() -> (KillOnDrop, String) {
    serve_with_workers(2)
}

/// `webtune serve` with `workers` worker threads (one gives a known capacity for `/cpu/N`).
pub fn serve_with_workers(workers: u32) -> (KillOnDrop, String) {
    let workers = workers.to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(["serve", "--addr", "127.0.0.1:0", "--workers", &workers])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut banner = String::new();
    BufReader::new(stderr).read_line(&mut banner).unwrap();
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("the banner names the URL")
        .to_string();
    (KillOnDrop(child), url)
}
