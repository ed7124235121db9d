//! webtune's load engine: it turns a `RunSpec` into load and a `RunResult`.
//!
//! A thread per core (`-t`), each owning its connections, event loop, histograms and
//! counters (`worker`); an HTTP/1.x response parser that works in place (`http1`); the
//! request prepared once (`plan`); per-worker recorders merged at the end (`recorder`); an
//! open-loop request's send lateness split into server wait and generator lag (`lateness`);
//! when each worker's next request is due (`pacer`, one for every worker and both loops). The
//! coordinator (`coordinator`, behind `run`) splits connections and the request budget among workers, gathers one
//! small report per worker per interval for the time series and progress, and assembles the
//! result. It writes no files and formats nothing but the live metrics page (`metrics`).
//!
//! Its public face is what other crates use: `run` with `Workload`, `Progress`,
//! `RunControl` and `EngineError`; `scenario` (and the `rng` its templates draw from, which
//! the lab's forum generator shares), `clock` and `build_info`; `metrics`, the live
//! Prometheus exporter of `Progress` behind `bench --metrics-listen` (hyper on a runtime of
//! its own, off the load's threads); `gate`, thresholds judged on a result and checked live
//! (`--threshold-abort`); `tls` and `transport` (the lab's HTTPS readiness check) and `http1` (its fuzz test). `plan`, `recorder`, `h2`,
//! `h3`, `pacer`, `schedule` and `lateness` are the engine's own.

pub mod build_info;
pub mod clock;
mod coordinator;
mod error;
pub mod gate;
mod h2;
mod h3;
pub mod http1;
pub mod journey;
mod lateness;
pub mod metrics;
mod pacer;
mod plan;
mod probe;
mod recorder;
pub use webtune_model::rng;
pub mod scenario;
mod schedule;
pub mod show;
pub mod smtp;
pub mod tls;
pub mod transport;
pub mod usage;
mod worker;
mod workload;

pub use coordinator::{run, Progress, RunControl};
pub use error::EngineError;
/// `--io`: the backend a choice runs on, and why `auto` passed io_uring over (`poller`).
pub use worker::poller::resolve as resolve_io;
pub use workload::Workload;

/// The cores this process may run on: the engine's thread count (`-t`) when none is
/// given, and what the tuner's rules of thumb size a server by. 1 when it cannot be read.
pub fn available_cores() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}
