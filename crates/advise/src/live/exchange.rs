//! The live sources' exchanges, each under one wall-clock limit for the whole of it
//! (issue 33, item 9): a GET of a status page (connect, request, every byte of the answer)
//! and a run of the `mariadb` client (connect, login, the queries, every row), so that a
//! server that accepts and then dribbles or never answers costs at most the limit. The
//! client process is killed at the limit. Only reads.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most a status page may be: a scoreboard of 20,000 slots is about 20 KiB.
const MAX_PAGE_BYTES: usize = 1 << 20;

/// "timed out after 10 s" (fractions shown when the limit has them).
pub fn timed_out(limit: Duration) -> String {
    let s = limit.as_secs_f64();
    if s.fract() == 0.0 {
        format!("timed out after {s:.0} s")
    } else {
        format!("timed out after {s:.1} s")
    }
}

/// One limit for one exchange.
struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    fn new(limit: Duration) -> Deadline {
        Deadline {
            at: Instant::now() + limit,
            limit,
        }
    }

    /// What is left, or the timeout's words when nothing is.
    fn left(&self) -> Result<Duration, String> {
        let now = Instant::now();
        if now >= self.at {
            return Err(timed_out(self.limit));
        }
        // A zero timeout means "none" to the socket calls: at least a millisecond.
        Ok((self.at - now).max(Duration::from_millis(1)))
    }
}

/// The address of `host:port`, resolved within the limit (a resolver that hangs is left
/// to finish on its own thread).
fn resolve(hostport: &str, d: &Deadline) -> Result<SocketAddr, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let name = hostport.to_string();
    std::thread::spawn(move || {
        let r = name
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(d.left()?) {
        Ok(r) => r,
        Err(_) => Err(timed_out(d.limit)),
    }
}

/// Is this error a socket timeout (EAGAIN/EWOULDBLOCK from SO_RCVTIMEO, or ETIMEDOUT)?
fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// GET a status page on HTTP/1.0 (plain HTTP) within `limit`: the body of a 200, or why
/// not. A status page on loopback needs no more than this, so no HTTP client crate.
pub fn http_get(url: &str, limit: Duration) -> Result<String, String> {
    let d = Deadline::new(limit);
    let rest = url
        .strip_prefix("http://")
        .ok_or("only http:// URLs are read")?;
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let with_port = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:80")
    };
    let addr = resolve(&with_port, &d)?;
    let io = |e: std::io::Error| {
        if is_timeout(&e) {
            timed_out(d.limit)
        } else {
            e.to_string()
        }
    };
    let mut stream = TcpStream::connect_timeout(&addr, d.left()?).map_err(io)?;
    stream.set_write_timeout(Some(d.left()?)).map_err(io)?;
    // One write: a server that answers after the first bytes and closes must not turn
    // the rest of the request into a broken pipe.
    let request =
        format!("GET {path} HTTP/1.0\r\nHost: {hostport}\r\nUser-Agent: webtune-advise\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(io)?;
    let mut page = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        stream.set_read_timeout(Some(d.left()?)).map_err(io)?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                page.extend_from_slice(&buf[..n]);
                if page.len() > MAX_PAGE_BYTES {
                    return Err(format!(
                        "longer than {} MiB: not a status page",
                        MAX_PAGE_BYTES >> 20
                    ));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        }
    }
    let text = String::from_utf8_lossy(&page).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").ok_or("not an HTTP response")?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!("HTTP {status}"));
    }
    Ok(body.to_string())
}

/// Run `command` within `limit`: its stdout when it exits 0, else its stderr in one line.
/// At the limit the process is killed and reaped.
pub fn run_within(command: Command, limit: Duration) -> Result<String, String> {
    let (ok, stdout, stderr) = run_output(command, limit)?;
    if ok {
        Ok(stdout)
    } else {
        Err(stderr)
    }
}

/// Run `command` within `limit`: (exited 0, stdout, stderr in one line), whatever its
/// status; Err when it could not run or was killed at the limit.
pub fn run_output(mut command: Command, limit: Duration) -> Result<(bool, String, String), String> {
    let d = Deadline::new(limit);
    let name = command.get_program().to_string_lossy().into_owned();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running {name}: {e}"))?;
    // Both pipes are drained on threads, so a chatty client never blocks on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.by_ref().take(64 << 20).read_to_end(&mut out);
            }
            out
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if d.left().is_ok() => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                // The pipes close with the process: the drains end.
                let _ = out.join();
                let _ = err.join();
                return Err(format!("{} ({name} stopped)", timed_out(d.limit)));
            }
            Err(e) => return Err(format!("waiting for {name}: {e}")),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let text = String::from_utf8_lossy(&stderr);
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = if line.is_empty() && !status.success() {
        format!("{name} failed ({status})")
    } else {
        line
    };
    Ok((
        status.success(),
        String::from_utf8_lossy(&stdout).into_owned(),
        line,
    ))
}
