//! One worker thread: it owns its connections, its event loop (edge-triggered epoll, or
//! io_uring with `--io`: `poller`), its recorder. Nothing is shared on the per-request
//! path: no lock, no atomic write (only opening or closing a socket touches the shared
//! open-connection gauge).
//!
//! The protocols' workers are siblings, each with its own connection I/O (hyper's
//! `proto/h1`, `proto/h2` shape): `h1` (HTTP/1.1, and SMTP on the same pacing), `h2` (many
//! streams per connection; the codec is the crate's `h2`), `h3` (QUIC; its client setup is
//! the crate's `h3`). Below them, shared and knowing none of them: `config` (what a worker
//! is given), `base` (the state and per-request rules), `event_loop` (the loop and the
//! `Driver` seam a protocol fills), `wakeup` (the open loop's timer and the sockets' tokens),
//! `poller` with `uring` and their vocabulary `readiness`, `rx_stamp` (when an answer
//! arrived, by the kernel's clock), and `backoff`. This file only
//! picks the protocol (`run_worker`); nothing below imports it.
//!
//! When a request is due is the pacer's (`crate::pacer`, one per worker, owned by `base`);
//! which connection or stream takes it, and the exchange, are the protocol's.

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
pub(crate) mod rx_stamp;
mod uring;
pub(crate) mod wakeup;

use crate::recorder::Recorder;
pub use config::WorkerConfig;
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
