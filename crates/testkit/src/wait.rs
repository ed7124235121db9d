//! Waiting on a condition instead of on the clock: a test that needs a server listening, a
//! child started, a signal handled or a file written polls for exactly that, with a
//! generous deadline, so a loaded machine makes it slower but never wrong. Also a free
//! loopback port to hand a server.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
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

/// A loopback port free now (bound and released; the server binds it a moment later) and
/// never handed out before by this process. Tests run in parallel threads, and the kernel
/// may give a just-released port to the next `bind(0)`: two servers could then be handed
/// one port, the loser fails to bind, and its wait for "listening" sees the winner, whose
/// clients are then not its own (seen in CI: a single-threaded `openssl s_server` hogged by
/// another test's connections timed out this test's handshakes).
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    // Held until a new port is found, so the kernel cannot offer the same one again.
    let mut held = Vec::new();
    for _ in 0..1000 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        if handed_out.insert(port) {
            return port;
        }
        held.push(listener);
    }
    panic!("no loopback port left that this process has not handed out already")
}
