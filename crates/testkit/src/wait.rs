//! Waiting on a condition instead of on the clock: a test that needs a server listening, a
//! child started, a signal handled or a file written polls for exactly that, with a
//! generous deadline, so a loaded machine makes it slower but never wrong. Also a free
//! loopback port to hand a server.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// How often a condition is polled.
const POLL: Duration = Duration::from_millis(10);

/// Polls `condition` until it holds (`true`) or `limit` has passed (`false`: the caller
/// says what did not happen).
pub fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// Until something accepts a TCP connection at `address`, or `limit` has passed.
pub fn wait_for_port(address: SocketAddr, limit: Duration) -> bool {
    wait_until(limit, || {
        TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok()
    })
}

/// A loopback port free now (bound and released; the server binds it a moment later).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}
