//! webtune-serve: the embedded HTTP/1.1 target, so that webtune runs on a bare machine and its
//! tests need nothing installed. `webtune bench` with no URL starts it in-process on a free
//! loopback port; `webtune serve` runs it standalone.
//!
//! It owns the server (hyper 1.x on tokio, HTTP/1.1 only) and its pages; it must never be
//! the reason a benchmark is slow, so responses are cut from static buffers and nothing is
//! logged per request. It does not measure anything and does not print.
//!
//! Routes: `/empty.gif` (43 bytes, image/gif), `/bytes/N` (N bytes with Content-Length, N at
//! most 1 GiB), `/chunked/N` (N bytes, chunked), `/cpu/MICROS` (CPU busy-work on the serving
//! thread, at most 10 s), `/sleep/MILLIS` (a timer, no thread held, at most 60 s),
//! `/status/CODE` (200–599), `/` (the list). Unknown path → 404, bad or too large number →
//! 400, methods other than GET/HEAD → 405. For journeys, pages with a session (`session`):
//! `/login` (GET a form with a CSRF token, POST it to get a `sid` cookie), `/account`,
//! `POST /reply` and `/api/me` (JSON), each 403 without a valid session. Every response carries `Server: webtune/VERSION`
//! and, except `/chunked`, `Content-Length`; there is no `Date` header.
//!
//! Connections: keep-alive as HTTP/1.1 defines it (HTTP/1.0 when the client sends
//! `Connection: keep-alive`), closed after `keepalive_timeout` without traffic (checked by one
//! coarse timer per connection, not per request); TCP_NODELAY on every
//! accepted socket. At `max_connections` open connections the server stops calling accept:
//! further clients complete the TCP handshake into the listen backlog and wait there, unserved,
//! until a connection closes.

mod body;
mod idle;
mod routes;
mod server;
mod session;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

pub use routes::{EMPTY_GIF, MAX_BODY_BYTES, MAX_CPU_MICROS, MAX_SLEEP_MILLIS};
pub use server::EmbeddedServer;
pub use session::SessionStats;

/// How the embedded server listens and how many connections and threads it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeOptions {
    /// Where to listen; port 0 picks a free port (see [`EmbeddedServer::local_addr`]).
    pub addr: SocketAddr,
    /// Tokio worker threads serving connections (at least 1).
    pub workers: usize,
    /// Listen backlog, set before `listen` (the kernel caps it at `net.core.somaxconn`).
    pub backlog: u32,
    /// A connection with no traffic and no answer pending for this long is closed: an idle
    /// keep-alive connection, a client that sends nothing, or one that stops reading its
    /// response. It is checked every quarter of the timeout, so the close comes between 1
    /// and 1.25 times it. Zero turns keep-alive off (one request per connection; a silent
    /// client is then closed after 10 s).
    pub keepalive_timeout: Duration,
    /// At most this many connections are open at once; at the limit the server stops
    /// accepting (new clients wait in the backlog) until one closes.
    pub max_connections: usize,
}

impl Default for ServeOptions {
    /// 127.0.0.1 on a free port, one worker per available core, backlog 1024, keep-alive
    /// timeout 5 s, at most 10 000 connections.
    fn default() -> Self {
        ServeOptions {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            workers: available_cores(),
            backlog: 1024,
            keepalive_timeout: Duration::from_secs(5),
            max_connections: 10_000,
        }
    }
}

/// The cores this process may run on (1 when that cannot be told).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Why the embedded server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{addr} is in use: pick another --addr")]
    AddrInUse { addr: SocketAddr },
    #[error("{addr} is not an address of this machine: pick another --addr (e.g. 127.0.0.1:8080)")]
    AddrNotAvailable { addr: SocketAddr },
    #[error(
        "{addr}: permission denied (ports below 1024 need privileges): pick a port from 1024 up"
    )]
    PermissionDenied { addr: SocketAddr },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid server option: {0}")]
    InvalidOption(String),
    #[error("cannot start the server's threads: {0}")]
    Runtime(#[source] std::io::Error),
}
