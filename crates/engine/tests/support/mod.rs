//! Test servers shared by the engine's integration tests: plain std listeners on loopback,
//! a thread per connection, scripted by a closure. They stop accepting when dropped.
//! And `run`, the engine's own with the I/O backend the test run asks for
//! (`WEBTUNE_TEST_IO`), so every test here runs under each backend (.ci/run does both).

#![allow(dead_code)] // each test file uses part of this

pub mod h2;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use webtune_engine::{EngineError, Progress, RunControl, Workload};
use webtune_model::{IoBackend, IoChoice, RunResult, RunSpec};

/// The backend `WEBTUNE_TEST_IO` names (epoll, uring or auto), if set.
pub fn test_io() -> Option<IoChoice> {
    let name = std::env::var("WEBTUNE_TEST_IO").ok()?;
    Some(match name.as_str() {
        "epoll" => IoChoice::Epoll,
        "uring" => IoChoice::Uring,
        "auto" => IoChoice::Auto,
        other => panic!("WEBTUNE_TEST_IO={other:?}: use epoll, uring or auto"),
    })
}

/// `webtune_engine::run` under the backend `WEBTUNE_TEST_IO` names (else the spec's own),
/// checking that the result says it ran on it. An explicit `uring` where io_uring cannot be
/// had fails the run (never a silent fall back to epoll).
pub fn run(
    spec: &RunSpec,
    workload: &Workload,
    control: &RunControl,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunResult, EngineError> {
    let mut spec = spec.clone();
    let asked = test_io();
    if let Some(io) = asked {
        spec.io = io;
    }
    let r = webtune_engine::run(&spec, workload, control, on_progress)?;
    let want = match spec.io {
        IoChoice::Epoll => Some(IoBackend::Epoll),
        IoChoice::Uring => Some(IoBackend::Uring),
        IoChoice::Auto => None,
    };
    if let Some(want) = want {
        assert_eq!(
            r.io_backend,
            Some(want),
            "the run used the backend asked for"
        );
    }
    Ok(r)
}

/// A running test server; dropping it stops the accept loop.
pub struct TestServer {
    pub addr: SocketAddr,
    /// Connections accepted so far.
    pub accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wake the accept loop
    }
}

/// Accept connections and hand each to `serve` on its own thread.
pub fn serve_connections<F>(serve: F) -> TestServer
where
    F: Fn(TcpStream) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicUsize::new(0));
    let (stop2, accepted2, serve) = (stop.clone(), accepted.clone(), Arc::new(serve));
    thread::spawn(move || {
        for conn in listener.incoming() {
            if stop2.load(Ordering::SeqCst) {
                break;
            }
            let Ok(s) = conn else { continue };
            accepted2.fetch_add(1, Ordering::SeqCst);
            let serve = serve.clone();
            thread::spawn(move || serve(s));
        }
    });
    TestServer {
        addr,
        accepted,
        stop,
    }
}

/// Read one request head (through the blank line); returns its text, None when the client
/// closed. Bytes after the head stay in `pending` for the next call.
pub fn read_head(s: &mut TcpStream, pending: &mut Vec<u8>) -> Option<String> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end + 4]).into_owned();
            pending.drain(..end + 4);
            return Some(head);
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The request target (path and query) of a request head.
pub fn path_of(head: &str) -> String {
    head.split_whitespace().nth(1).unwrap_or("/").to_string()
}

/// A keep-alive HTTP server: for the n-th request (counted over all connections) and its
/// path, `reply` says how long to wait and which body to send with a 200.
pub fn http_server<F>(reply: F) -> TestServer
where
    F: Fn(u64, &str) -> (Duration, Vec<u8>) + Send + Sync + 'static,
{
    let counter = Arc::new(AtomicU64::new(0));
    serve_connections(move |mut s| {
        let _ = s.set_nodelay(true);
        let mut pending = Vec::new();
        while let Some(head) = read_head(&mut s, &mut pending) {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let (delay, body) = reply(n, &path_of(&head));
            thread::sleep(delay);
            let mut out =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
            out.extend_from_slice(&body);
            if s.write_all(&out).is_err() {
                return;
            }
        }
    })
}

/// Tests that compare measured latency with known delays take this lock, so the tests of one
/// binary (which cargo runs in parallel) do not compete for the CPU and distort each other.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
