//! webtune's load engine: it turns a `RunSpec` into load and a `RunResult`.
//!
//! A thread per core (`-t`), each owning its connections, event loop, histograms and
//! counters (`worker`); an HTTP/1.x response parser that works in place (`http1`); the
//! request prepared once (`plan`); per-worker recorders merged at the end (`recorder`). The
//! coordinator (`run`) splits connections and the request budget among workers, gathers one
//! small report per worker per interval for the time series and progress, and assembles the
//! result. It does no formatting and writes no files.

mod error;
pub mod http1;
pub mod plan;
pub mod recorder;
mod usage;
mod worker;

pub use error::EngineError;
pub use plan::Plan;

use recorder::{FirstLength, IntervalReport, Recorder};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use webtune_model::result::{GeneratorUsage, Histograms};
use webtune_model::{
    ErrorCounts, IntervalSample, LatencyHistogram, RunResult, RunSpec, StopCondition, SCHEMA,
};
use worker::{run_worker, WorkerConfig};

/// A handle to stop a running test from another thread (or a signal handler's flag).
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    stop: Arc<AtomicBool>,
}

impl RunControl {
    pub fn new() -> RunControl {
        RunControl::default()
    }

    /// Stop sending; in-flight requests get up to a second, then the result is returned.
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The flag itself, for `signal_hook::flag::register`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }
}

/// A live view of a run, handed to the caller about once per interval.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub elapsed: Duration,
    pub responses: u64,
    pub errors: u64,
    /// Responses per second over the last interval.
    pub rate_per_s: f64,
    pub open_connections: u64,
}

/// One interval as merged from every worker's report.
#[derive(Default)]
struct IntervalTotals {
    reports: usize,
    responses: u64,
    errors: ErrorCounts,
    bytes: u64,
    open: u64,
    latency: LatencyHistogram,
}

/// Split `total` into `parts` shares that differ by at most one.
fn split(total: u64, parts: usize) -> Vec<u64> {
    let parts = parts as u64;
    (0..parts)
        .map(|i| total / parts + u64::from(i < total % parts))
        .collect()
}

/// Run one load test to completion (or until stopped) and return everything measured.
pub fn run(
    spec: &RunSpec,
    control: &RunControl,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunResult, EngineError> {
    let plan = plan::build(spec)?;
    let request = Arc::new(plan.request.clone());
    let first_length = Arc::new(FirstLength::default());
    let interval = Duration::from_millis(spec.interval_ms.max(10));
    let usage_before = usage::process_usage();
    let started_at_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let start = Instant::now();
    let (send_until, budgets) = match spec.stop {
        StopCondition::Duration { seconds } => (
            Some(start + Duration::from_secs_f64(seconds.max(0.0))),
            vec![None; plan.threads],
        ),
        StopCondition::Requests { count } => (
            None,
            split(count, plan.threads).into_iter().map(Some).collect(),
        ),
    };
    let conn_shares = split(plan.connections as u64, plan.threads);
    let (tx, rx) = mpsc::channel::<IntervalReport>();
    let mut handles = Vec::with_capacity(plan.threads);
    let mut next_conn = 0usize;
    for (w, share) in conn_shares.iter().enumerate() {
        let conn_addrs = (next_conn..next_conn + *share as usize)
            .map(|g| plan.addresses[g % plan.addresses.len()])
            .collect();
        next_conn += *share as usize;
        let cfg = WorkerConfig {
            request: Arc::clone(&request),
            is_head: plan.is_head,
            conn_addrs,
            budget: budgets[w],
            send_until,
            keepalive: spec.keepalive,
            max_requests_per_conn: spec.max_requests_per_conn,
            connect_timeout: Duration::from_millis(spec.connect_timeout_ms.max(1)),
            timeout: Duration::from_millis(spec.timeout_ms.max(1)),
            expect_status: spec.expect_status.clone(),
            start,
            interval,
            stop: control.flag(),
            first_length: Arc::clone(&first_length),
            reports: tx.clone(),
        };
        let handle = std::thread::Builder::new()
            .name(format!("webtune-worker-{w}"))
            .spawn(move || run_worker(cfg))
            .map_err(EngineError::Thread)?;
        handles.push(handle);
    }
    drop(tx);

    // Gather interval reports until every worker has hung up.
    let mut intervals: BTreeMap<u64, IntervalTotals> = BTreeMap::new();
    let mut responses = 0u64;
    let mut errors = 0u64;
    let mut emitted = 0u64;
    let mut last_emit = (start, 0u64);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(report) => {
                responses += report.responses;
                errors += report.errors.total();
                let t = intervals.entry(report.index).or_default();
                t.reports += 1;
                t.responses += report.responses;
                t.errors.merge(&report.errors);
                t.bytes += report.bytes;
                t.open += report.open_connections;
                t.latency.merge(&report.latency);
                if report.index >= emitted {
                    emitted = report.index + 1;
                    let now = Instant::now();
                    let dt = now.duration_since(last_emit.0).as_secs_f64();
                    let rate = if dt > 0.0 {
                        (responses - last_emit.1) as f64 / dt
                    } else {
                        0.0
                    };
                    last_emit = (now, responses);
                    on_progress(&Progress {
                        elapsed: now.duration_since(start),
                        responses,
                        errors,
                        rate_per_s: rate,
                        open_connections: t.open,
                    });
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let mut total = Recorder::default();
    for handle in handles {
        match handle.join() {
            Ok(Ok(rec)) => total.merge(&rec),
            Ok(Err(e)) => return Err(EngineError::Poll(e)),
            Err(_) => {
                return Err(EngineError::Thread(std::io::Error::other(
                    "worker panicked",
                )))
            }
        }
    }
    let elapsed = start.elapsed();
    let usage_after = usage::process_usage();

    let interval_s = interval.as_secs_f64();
    let elapsed_s = elapsed.as_secs_f64();
    let timeline = intervals
        .into_iter()
        .map(|(index, t)| {
            let start_s = index as f64 * interval_s;
            IntervalSample {
                start_s,
                length_s: (elapsed_s - start_s).clamp(0.0, interval_s),
                responses: t.responses,
                errors: t.errors,
                bytes: t.bytes,
                open_connections: t.open,
                p50_us: t.latency.percentile(50.0),
                p90_us: t.latency.percentile(90.0),
                p99_us: t.latency.percentile(99.0),
                max_us: t.latency.max(),
            }
        })
        .collect();

    let mut result = RunResult {
        schema: SCHEMA.to_string(),
        tool: concat!("webtune ", env!("CARGO_PKG_VERSION")).to_string(),
        started_at_unix_ms,
        spec: RunSpec {
            threads: plan.threads as u32,
            body_bytes: spec.body.len() as u64,
            ..spec.clone()
        },
        addresses: plan.addresses.iter().map(|a| a.to_string()).collect(),
        duration_s: elapsed_s,
        interrupted: control.stop_requested(),
        responses: total.responses,
        ok: total.ok,
        errors: total.errors,
        length_varies: total.length_varies,
        first_body_bytes: first_length.get(),
        status: total.status,
        bytes_received: total.bytes_received,
        body_bytes: total.body_bytes,
        bytes_sent: total.bytes_sent,
        connections_opened: total.connections_opened,
        stale_reconnects: total.stale_reconnects,
        abandoned: total.abandoned,
        requests_per_s: 0.0,
        bytes_per_s: 0.0,
        latency: Default::default(),
        histograms: Histograms {
            connect: total.connect,
            first_byte: total.first_byte,
            total: total.total,
        },
        timeline,
        generator: GeneratorUsage {
            user_cpu_s: usage_after
                .user
                .saturating_sub(usage_before.user)
                .as_secs_f64(),
            system_cpu_s: usage_after
                .system
                .saturating_sub(usage_before.system)
                .as_secs_f64(),
            max_rss_kib: usage_after.max_rss_kib,
            threads: plan.threads as u32,
        },
        server: None,
        server_software: total.server_software,
        repeats: Vec::new(),
    };
    result.finish_summaries();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn split_is_fair_and_exact() {
        assert_eq!(split(10, 3), vec![4, 3, 3]);
        assert_eq!(split(2, 4), vec![1, 1, 0, 0]);
        assert_eq!(split(7, 1), vec![7]);
    }
}
