//! The responsiveness probe: one extra connection, apart from the load, sending one request
//! at a slow steady pace (default 1/s) and recording its latencies on their own. Seed 001's
//! browser got no answer at all while ab reported a fine number; the probe turns that
//! browser into a figure. Plain blocking I/O on its own thread: its pace is slow, and it
//! must not share the workers' event loops. It speaks through the same `Transport` (TCP or
//! TLS) and HTTP/1 parser as the workers, in blocking mode.

use crate::http1::{Progress as ParseProgress, ResponseParser};
use crate::tls::{self, Connector};
use crate::transport::Transport;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use webtune_model::{ErrorKind, NamedResult, RunSpec};

pub struct ProbeConfig {
    pub addrs: Vec<SocketAddr>,
    pub request: Vec<u8>,
    pub rate_per_s: f64,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub start: Instant,
    /// Set when the run is over (or stopped).
    pub done: Arc<AtomicBool>,
    pub expect: RunSpec,
    /// https:// probes: the TLS connector.
    pub tls: Option<Connector>,
}

enum Outcome {
    Response { status: u16, body_bytes: u64 },
    Failed(ErrorKind),
}

/// Sleep until `at`, waking early if `done` is set. Returns false when done.
fn sleep_until(at: Instant, done: &AtomicBool) -> bool {
    loop {
        if done.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= at {
            return true;
        }
        std::thread::sleep((at - now).min(Duration::from_millis(20)));
    }
}

/// Run the probe until `done`; returns its results.
pub fn run_probe(cfg: ProbeConfig) -> NamedResult {
    let mut result = NamedResult::default();
    let gap = Duration::from_secs_f64(1.0 / cfg.rate_per_s.max(0.001));
    let mut conn: Option<Transport<TcpStream>> = None;
    let mut parser = ResponseParser::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut k: u32 = 0;
    while sleep_until(cfg.start + gap * k, &cfg.done) {
        k += 1;
        let began = Instant::now();
        let addr = cfg.addrs[k as usize % cfg.addrs.len()];
        let outcome = probe_once(&cfg, addr, &mut conn, &mut parser, &mut buf);
        match outcome {
            Outcome::Response { status, body_bytes } => {
                result.responses += 1;
                *result.status.entry(status).or_insert(0) += 1;
                result.body_bytes += body_bytes;
                result.histogram.record(began.elapsed().as_micros() as u64);
                if cfg.expect.status_expected(status) {
                    result.ok += 1;
                } else {
                    result.errors.add(ErrorKind::UnexpectedStatus);
                }
            }
            Outcome::Failed(kind) => {
                result.errors.add(kind);
                conn = None;
            }
        }
    }
    result
}

fn probe_once(
    cfg: &ProbeConfig,
    addr: SocketAddr,
    conn: &mut Option<Transport<TcpStream>>,
    parser: &mut ResponseParser,
    buf: &mut [u8],
) -> Outcome {
    for attempt in 0..2 {
        let reused = conn.is_some();
        if conn.is_none() {
            match TcpStream::connect_timeout(&addr, cfg.connect_timeout) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    let _ = s.set_read_timeout(Some(cfg.timeout));
                    let _ = s.set_write_timeout(Some(cfg.timeout));
                    let mut t = match cfg.tls.as_ref().map(Connector::connection) {
                        None => Transport::Tcp(s),
                        Some(Ok(session)) => Transport::tls(s, session, false),
                        Some(Err(_)) => return Outcome::Failed(ErrorKind::TlsHandshake),
                    };
                    match t.handshake() {
                        Ok(true) => {}
                        // Blocking: not done means the read timed out.
                        Ok(false) => return Outcome::Failed(ErrorKind::TlsHandshake),
                        Err(e) => {
                            return Outcome::Failed(
                                tls::failure_kind(&e).unwrap_or(ErrorKind::TlsHandshake),
                            )
                        }
                    }
                    *conn = Some(t);
                }
                Err(e) => {
                    return Outcome::Failed(match e.kind() {
                        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
                        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
                            ErrorKind::ConnectTimeout
                        }
                        io::ErrorKind::AddrNotAvailable => ErrorKind::ConnectNoLocalAddress,
                        _ => ErrorKind::ConnectOther,
                    })
                }
            }
        }
        let Some(stream) = conn.as_mut() else {
            return Outcome::Failed(ErrorKind::ConnectOther);
        };
        parser.reset(false);
        let mut received = 0usize;
        let mut eof = false;
        let sent = write_all(stream, &cfg.request);
        let outcome = match &sent {
            Err(e) => tls::failure_kind(e).map(Outcome::Failed),
            Ok(()) => loop {
                match stream.read(buf) {
                    Ok(0) => {
                        if parser.finish_at_eof() {
                            *conn = None;
                            break Some(done(parser));
                        }
                        eof = true;
                        break None;
                    }
                    Ok(n) => {
                        received += n;
                        match parser.feed(&buf[..n]) {
                            Ok(ParseProgress::NeedMore) => {}
                            Ok(ParseProgress::Complete { consumed }) => {
                                if consumed < n {
                                    break Some(Outcome::Failed(ErrorKind::Malformed));
                                }
                                if !parser.head().is_some_and(|h| h.keep_alive) {
                                    *conn = None;
                                }
                                break Some(done(parser));
                            }
                            Err(e) => break Some(Outcome::Failed(e.kind())),
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                    {
                        break Some(Outcome::Failed(ErrorKind::RequestTimeout))
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => break tls::failure_kind(&e).map(Outcome::Failed),
                }
            },
        };
        match outcome {
            Some(o) => return o,
            // Closed or reset: a stale kept-alive connection gets one retry.
            None if reused && received == 0 && attempt == 0 => *conn = None,
            None if eof => return Outcome::Failed(ErrorKind::ClosedEarly),
            None => return Outcome::Failed(ErrorKind::Reset),
        }
    }
    Outcome::Failed(ErrorKind::ClosedEarly)
}

/// Write the whole request and flush it (blocking sockets: a timeout is an error).
fn write_all(stream: &mut Transport<TcpStream>, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    match stream.flush()? {
        true => Ok(()),
        false => Err(io::ErrorKind::TimedOut.into()),
    }
}

fn done(parser: &ResponseParser) -> Outcome {
    Outcome::Response {
        status: parser.head().map(|h| h.status).unwrap_or(0),
        body_bytes: parser.body_bytes(),
    }
}
