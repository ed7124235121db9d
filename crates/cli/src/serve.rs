//! `webtune serve`'s flags.

use std::net::SocketAddr;
use std::time::Duration;
use webtune_model::parse_duration;

/// Run the embedded HTTP/1.1 target in the foreground (Ctrl-C stops it).
///
/// Pages: /empty.gif (43-byte GIF), /bytes/N (N bytes), /chunked/N (N bytes, chunked),
/// /cpu/US (US microseconds of CPU work), /sleep/MS (answer after MS ms), /status/CODE, /
/// (the list), and for journeys /login, /account, /reply, /api/me (a session: docs/scenarios.md).
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address and port to listen on. Loopback by default; give 0.0.0.0:PORT to let other
    /// machines in. Port 0 picks a free port (printed at start).
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "IP:PORT")]
    pub addr: SocketAddr,

    /// Threads serving connections [default: the number of available cores].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub workers: Option<u32>,

    /// Listen backlog: connections the kernel queues before they are accepted (capped by the
    /// kernel at net.core.somaxconn).
    #[arg(long, default_value_t = 1024, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub backlog: u32,

    /// Close a connection after this long without traffic: an idle keep-alive connection,
    /// or a client that sends nothing, e.g. "5s", "500ms", "1m30s". "0" turns keep-alive off (one
    /// request per connection).
    #[arg(long, default_value = "5s", value_name = "DURATION", value_parser = parse_duration)]
    pub keepalive_timeout: Duration,

    /// At most this many connections open at once; at the limit the server stops accepting
    /// and new clients wait in the listen backlog until a connection closes.
    #[arg(long, default_value_t = 10_000, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub max_connections: u64,
}
