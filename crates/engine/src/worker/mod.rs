//! One worker thread: it owns its connections, its event loop (edge-triggered epoll, or
//! io_uring with `--io`: `poller`), its recorder. Nothing is shared on the per-request path: no lock, no atomic write (only
//! opening or closing a socket touches the shared open-connection gauge).
//!
//! The protocols' workers are siblings, each with its own connection I/O (hyper's
//! `proto/h1`, `proto/h2` shape): `h1` (HTTP/1.1, and SMTP on the same pacing), `h2` (many
//! streams per connection; the codec is the crate's `h2`), `h3` (QUIC; its client setup is
//! the crate's `h3`). Below them, shared and knowing none of them: `config` (what a worker
//! is given), `base` (the state and per-request rules), `event_loop` (the loop and the
//! `Driver` seam a protocol fills), `wakeup` (the open loop's timer and the sockets' tokens),
//! `poller` with `uring` and their vocabulary `readiness`, and `backoff`. This file only
//! picks the protocol (`run_worker`); nothing below imports it.
//!
//! Per request on a kept-alive connection the worker makes one `write` and (usually) one
//! `read`; readiness comes from one `epoll_wait` shared by all ready connections. A short
//! read means the socket was drained at that moment, so no extra read is spent to see
//! EAGAIN; a later arrival raises a new edge.
//!
//! Closed loop: each connection sends its next request when the previous answer ends (after
//! an optional think time); a ramp changes how many connections may be busy. Open loop:
//! requests fall due on a schedule; a due request takes an idle connection, or opens one up
//! to the cap, or waits — and its latency counts from when it was due. Waiting requests are
//! not queued: a free connection takes the oldest due arrival from the schedule itself
//! (`Base::take_due`), so a backlog costs no memory however large it grows. How
//! late it was sent is split (`lateness`) into the wait with every connection busy (the
//! server's time) and the generator's own lateness. A
//! timerfd wakes the loop at the next due time with microsecond precision (epoll's own
//! timeout has millisecond steps; under io_uring the wait's own timeout, in nanoseconds, is
//! the timer); one wake-up sends every request due by then or within a
//! small slack (`pacing`), and the timer is re-armed only when its set time no longer serves.
//!
//! SMTP (`webtune smtp`): the same pacing, with a message as the request; a connection
//! carries an SMTP session and `smtp_io` is its exchange (banner, EHLO, MAIL, RCPT, DATA).
//!
//! HTTPS: each connection's bytes go through a `Transport` (plain TCP or rustls over the
//! socket); a new TLS connection goes from connecting through a handshake phase, timed in
//! its own histogram, before its first request is written.

pub(crate) mod backoff;
pub(crate) mod base;
mod buf_ring;
pub(crate) mod config;
pub(crate) mod event_loop;
mod h1;
mod h2;
mod h3;
pub mod poller;
mod readiness;
mod uring;
pub(crate) mod wakeup;

use crate::recorder::Recorder;
pub use config::{Pacing, WorkerConfig};
use std::io;

/// Run one worker to the end, as the protocol its configuration names; returns what it
/// measured.
pub fn run_worker(cfg: WorkerConfig) -> io::Result<Recorder> {
    if cfg.h2.is_some() {
        return h2::run(cfg);
    }
    if cfg.h3.is_some() {
        return h3::run(cfg);
    }
    h1::run(cfg)
}
