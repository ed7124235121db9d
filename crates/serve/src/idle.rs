//! Closing idle connections without a timer per request. hyper's own `header_read_timeout`
//! arms (and allocates) a fresh timer for every request head, which cost about a tenth of the
//! server's CPU per request on /empty.gif. Instead each connection counts its socket reads
//! and writes, and one coarse timer per connection looks every quarter of the timeout: a
//! connection with no traffic and no answer pending for the whole timeout is closed — after
//! between 1 and 1.25 times the timeout.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::{Instant, MissedTickBehavior};

/// What the watchdog of one connection looks at. Written only from the connection's own
/// task, so plain loads and stores suffice (no read-modify-write on the hot path).
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Bumped on every socket read or write that made progress.
    events: AtomicU64,
    /// An answer is being waited for (`/sleep`): the connection is not idle.
    answer_pending: AtomicBool,
}

impl Activity {
    fn bump(&self) {
        let next = self.events.load(Ordering::Relaxed).wrapping_add(1);
        self.events.store(next, Ordering::Relaxed);
    }

    pub(crate) fn set_answer_pending(&self, pending: bool) {
        self.answer_pending.store(pending, Ordering::Relaxed);
    }
}

/// The connection's socket, counting progress into its `Activity`.
pub(crate) struct WatchedIo {
    io: TokioIo<TcpStream>,
    activity: Arc<Activity>,
}

impl WatchedIo {
    pub(crate) fn new(stream: TcpStream, activity: Arc<Activity>) -> Self {
        WatchedIo {
            io: TokioIo::new(stream),
            activity,
        }
    }
}

/// Bumps the activity count when an I/O call completed.
fn note<T>(activity: &Activity, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
    if let Poll::Ready(Ok(_)) = &poll {
        activity.bump();
    }
    poll
}

impl Read for WatchedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        note(&this.activity, Pin::new(&mut this.io).poll_read(cx, buf))
    }
}

impl Write for WatchedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        note(&this.activity, Pin::new(&mut this.io).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        note(
            &this.activity,
            Pin::new(&mut this.io).poll_write_vectored(cx, bufs),
        )
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// Drives `connection` to its end, or drops it (closing the socket) once `activity` shows
/// no traffic and no pending answer for `timeout`.
pub(crate) async fn run_until_idle<F: Future>(
    connection: F,
    activity: &Activity,
    timeout: Duration,
) {
    let look_every = (timeout / 4).max(Duration::from_millis(1));
    let mut looks = tokio::time::interval_at(Instant::now() + look_every, look_every);
    looks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut seen = activity.events.load(Ordering::Relaxed);
    let mut quiet_since = Instant::now();
    tokio::pin!(connection);
    loop {
        tokio::select! {
            biased;
            _ = &mut connection => return,
            now = looks.tick() => {
                let events = activity.events.load(Ordering::Relaxed);
                if events != seen || activity.answer_pending.load(Ordering::Relaxed) {
                    seen = events;
                    quiet_since = now;
                } else if now.duration_since(quiet_since) >= timeout {
                    return; // idle for the whole timeout: dropping the connection closes it
                }
            }
        }
    }
}
