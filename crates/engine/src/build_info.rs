//! What this build of the engine speaks and runs on, for `webtune --version`: the TLS
//! provider, the HTTP versions and the I/O backend. Each fact names the code that makes it
//! true; change it with that code.

/// The TLS library and its crypto provider (`tls`: `rustls::crypto::ring::default_provider`).
pub const TLS: &str = "rustls with ring (TLS 1.2, 1.3)";

/// The HTTP versions a run can speak (`http1`; `h2`: h2 by ALPN over TLS, h2c with prior
/// knowledge over plain TCP).
pub const HTTP: &str = "HTTP/1.1, HTTP/2 (h2, h2c)";

/// How workers wait for sockets (`worker::poller`: mio's edge-triggered epoll with a timerfd
/// for due times, or io_uring with `--io uring|auto`), the default first.
pub const IO: &str = "epoll, io_uring (--io uring|auto)";

/// The facts as `name: value` lines, in the order `--version` prints them.
pub fn lines() -> [(&'static str, &'static str); 3] {
    [("tls", TLS), ("http", HTTP), ("io", IO)]
}
