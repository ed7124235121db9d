//! The coordinator: one run of a `RunSpec`, as named steps. `Prepared::new` checks the
//! spec and plans this generator's part (its shard), `spawn_workers` starts a thread per
//! worker with its share of connections, `-n` and pacing, `spawn_probe` the `--probe`
//! beside them, `gather` folds their interval reports into progress and the time series
//! until they hang up, `join` merges their recorders, and `assemble` builds the
//! `RunResult` with the verdict on the generator (`webtune_model::validity::judge`, the
//! one rule, asked with the figures measured here).

mod assemble;

use crate::pacer::Pacer;
use crate::plan::{self, PlannedRequest, RunPlan};
use crate::recorder::{FirstLength, IntervalReport, OpenGauge, Recorder};
use crate::scenario::WeightedPicker;
use crate::worker::{run_worker, WorkerConfig};
use crate::{clock, h2, h3, probe, smtp, tls, usage, EngineError, Workload};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use webtune_model::{
    ErrorCounts, ErrorKind, IoBackend, LatencyHistogram, RunResult, RunSpec, Shard, StopCondition,
};

/// A handle to stop a running test from another thread: the one stop token the binary's
/// signal handlers set, shared with the lab (see `webtune_model::StopToken`). Stopping
/// lets in-flight requests finish for up to a second, then the result is returned.
pub type RunControl = webtune_model::StopToken;

/// A live view of a run, all worker threads together, handed to the caller each time a
/// worker reports an interval (so up to `threads` times per interval): the counts include
/// every report received so far.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub elapsed: Duration,
    pub responses: u64,
    pub errors: u64,
    /// Responses per second over the last interval.
    pub rate_per_s: f64,
    /// Connections open now, in all worker threads.
    pub open_connections: u64,
    /// Every report so far: errors by kind, requests that completed or failed, and the
    /// total latency of finished requests (for live thresholds and metrics).
    pub error_counts: ErrorCounts,
    pub attempted: u64,
    pub latency: LatencyHistogram,
    /// Connections opened so far, and SMTP message bytes sent.
    pub connections_opened: u64,
    pub message_bytes: u64,
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

/// Run one load test of `workload` to completion (or until stopped) and return everything
/// measured.
pub fn run(
    spec: &RunSpec,
    workload: &Workload,
    control: &RunControl,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunResult, EngineError> {
    let prepared = Prepared::new(spec, workload)?;
    if let Some(at) = spec.start_at_unix_ms {
        clock::wait_until(at, control);
    }
    let started_ms = clock::now_unix_ms();
    let start_record = (spec.shard.is_some() || spec.start_at_unix_ms.is_some())
        .then(|| clock::start_record(spec.start_at_unix_ms, started_ms));
    let start = Instant::now();
    let (tx, rx) = mpsc::channel::<IntervalReport>();
    let open_gauge = Arc::new(OpenGauge::default());
    // The workers' own stop flag: set when the caller's token is (Ctrl-C), or when the
    // target is down (`Watch`).
    let workers_stop = Arc::new(AtomicBool::new(control.stop_requested()));
    let workers = spawn_workers(spec, &prepared, &workers_stop, start, &open_gauge, tx)?;
    let probe_done = Arc::new(AtomicBool::new(false));
    let probe = spawn_probe(spec, &prepared.plan, start, &probe_done)?;
    let watch = Watch {
        control,
        workers_stop: &workers_stop,
        down_after: prepared
            .end_s
            .is_none()
            .then(|| Duration::from_millis(spec.timeout_ms.max(1))),
        target_down: false,
    };
    let (intervals, target_down) = gather(&rx, start, &open_gauge, watch, on_progress);
    let joined = join(workers, probe, &probe_done)?;
    let elapsed = start.elapsed();
    let window_start_ms = started_ms + prepared.window.0 * 1000.0;
    let mut result = assemble::assemble(assemble::Finished {
        spec,
        workload,
        control,
        prepared,
        started_at_unix_ms: started_ms as u64,
        start_record,
        open_gauge: &open_gauge,
        intervals,
        joined,
        elapsed,
        peak_rss_kib: usage::process_usage().max_rss_kib,
    });
    result.target_down = target_down;
    // The measured stretch on the wall clock, to the clock's sub-millisecond part: what
    // `webtune merge` lines shards up by.
    if let Some(record) = result.start.as_mut() {
        record.window = Some(webtune_model::Window {
            start_unix_ms: window_start_ms,
            end_unix_ms: window_start_ms + result.duration_s * 1000.0,
        });
    }
    Ok(result)
}

/// This generator's part of the test, planned, and what its workers share.
struct Prepared {
    /// The spec this generator runs (`shard_part`).
    part: RunSpec,
    plan: RunPlan,
    /// How long the run sends (None: until `-n` is done).
    end_s: Option<f64>,
    /// The stretch whose finished requests make the summary.
    window: (f64, f64),
    requests: Arc<Vec<PlannedRequest>>,
    picker: Option<Arc<WeightedPicker>>,
    h2_setup: Option<h2::H2Setup>,
    /// `--http3`: the requests as HTTP/3 heads and the QUIC client's TLS.
    h3_setup: Option<h3::H3Setup>,
    /// The first response length of each request, across workers ("length varies").
    first_lengths: Arc<Vec<FirstLength>>,
    host_header: Arc<str>,
    /// An SMTP run's session setup, and its STARTTLS target (`smtp::setup_for`).
    smtp_setup: Option<Arc<smtp::SmtpSetup>>,
    starttls: Option<tls::TlsTarget>,
    interval: Duration,
    /// How the workers wait for their sockets (`--io`, resolved).
    io: IoBackend,
}

impl Prepared {
    /// The whole test is checked (every shard must get a share), then this shard's part is
    /// planned as a test of its own.
    fn new(spec: &RunSpec, workload: &Workload) -> Result<Prepared, EngineError> {
        spec.validate()?;
        let part = shard_part(spec);
        let plan = plan::build(&part, workload)?;
        let end_s = spec.run_length_s();
        let measured = spec.measurement_window();
        let window = (measured.from_s, measured.to_s);
        let requests = Arc::new(plan.requests.clone());
        let picker = plan.picker.clone().map(Arc::new);
        let h2_setup = spec
            .http2
            .then(|| h2_setup(&plan, spec.streams))
            .transpose()?;
        let h3_setup = spec
            .http3
            .then(|| {
                h3::setup(
                    &plan.requests,
                    plan.tls.as_ref(),
                    spec.streams,
                    spec.zero_rtt,
                )
            })
            .transpose()?;
        let first_lengths: Arc<Vec<FirstLength>> = Arc::new(
            (0..plan.requests.len())
                .map(|_| FirstLength::default())
                .collect(),
        );
        let host_header: Arc<str> = Arc::from(plan.host_header.as_str());
        let (smtp_setup, starttls) =
            smtp::setup_for(spec, workload.mailbox_list(), &plan.host_header)?;
        let interval = Duration::from_millis(spec.interval_ms.max(10));
        let (io, _) = crate::worker::poller::resolve(spec.io).map_err(EngineError::IoUring)?;
        Ok(Prepared {
            part,
            plan,
            end_s,
            window,
            requests,
            picker,
            h2_setup,
            h3_setup,
            first_lengths,
            host_header,
            smtp_setup,
            starttls,
            interval,
            io,
        })
    }
}

type WorkerHandle = JoinHandle<(std::io::Result<Recorder>, usage::Usage)>;
type ProbeHandle = JoinHandle<(webtune_model::NamedResult, usage::Usage)>;

/// One thread per worker, each with its share of the connections (spread over the
/// addresses), of `-n` and of the pacing; each reports its intervals into `reports`.
fn spawn_workers(
    spec: &RunSpec,
    prepared: &Prepared,
    stop: &Arc<AtomicBool>,
    start: Instant,
    open_gauge: &Arc<OpenGauge>,
    reports: mpsc::Sender<IntervalReport>,
) -> Result<Vec<WorkerHandle>, EngineError> {
    let Prepared {
        part, plan, end_s, ..
    } = prepared;
    let budgets: Vec<Option<u64>> = match part.stop {
        StopCondition::Requests { count } if spec.stages.is_empty() => {
            split(count, plan.threads).into_iter().map(Some).collect()
        }
        _ => vec![None; plan.threads],
    };
    let conn_shares = split(plan.connections as u64, plan.threads);
    let mut handles = Vec::with_capacity(plan.threads);
    let mut next_conn = 0usize;
    for (w, share) in conn_shares.iter().enumerate() {
        let conn_addrs = (next_conn..next_conn + *share as usize)
            .map(|g| plan.addresses[g % plan.addresses.len()])
            .collect();
        next_conn += *share as usize;
        let cfg = WorkerConfig {
            requests: Arc::clone(&prepared.requests),
            picker: prepared.picker.clone(),
            think: plan.think,
            named: plan.named,
            host_header: Arc::clone(&prepared.host_header),
            http10: spec.http10,
            conn_addrs,
            budget: budgets[w],
            end_s: *end_s,
            pacer: Pacer::for_worker(
                part,
                start,
                *end_s,
                stream_of(spec.shard, w, plan.threads),
                *share,
                plan.connections,
            ),
            window: prepared.window,
            keepalive: spec.keepalive,
            max_requests_per_conn: spec.max_requests_per_conn,
            connect_timeout: Duration::from_millis(spec.connect_timeout_ms.max(1)),
            timeout: Duration::from_millis(spec.timeout_ms.max(1)),
            start,
            interval: prepared.interval,
            stop: Arc::clone(stop),
            first_lengths: Arc::clone(&prepared.first_lengths),
            open_gauge: Arc::clone(open_gauge),
            reports: reports.clone(),
            seed: 0x5eed_0000
                + stream_of(spec.shard, w, plan.threads).0
                + spec
                    .smtp
                    .as_ref()
                    .map_or(0, |s| s.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            tls: plan
                .tls
                .as_ref()
                .map(tls::TlsTarget::connector)
                .transpose()?,
            h2: prepared.h2_setup.clone(),
            h3: prepared.h3_setup.clone(),
            smtp: prepared.smtp_setup.clone(),
            starttls: prepared
                .starttls
                .as_ref()
                .map(tls::TlsTarget::connector)
                .transpose()?,
            io: prepared.io,
            journeys: plan.journeys.clone(),
            first_user: next_conn - *share as usize,
        };
        let handle = std::thread::Builder::new()
            .name(format!("webtune-worker-{w}"))
            .spawn(move || usage::measured(|| run_worker(cfg)))
            .map_err(EngineError::Thread)?;
        handles.push(handle);
    }
    Ok(handles)
}

/// `--probe`: a thread that sends its own request at its own rate beside the load, until
/// `done`.
fn spawn_probe(
    spec: &RunSpec,
    plan: &RunPlan,
    start: Instant,
    done: &Arc<AtomicBool>,
) -> Result<Option<ProbeHandle>, EngineError> {
    Ok(match (&plan.probe, &spec.probe) {
        (Some((addrs, request)), Some(p)) => {
            let cfg = probe::ProbeConfig {
                addrs: addrs.clone(),
                request: request.clone(),
                rate_per_s: p.rate_per_s,
                connect_timeout: Duration::from_millis(spec.connect_timeout_ms.max(1)),
                timeout: Duration::from_millis(spec.timeout_ms.max(1)),
                start,
                done: Arc::clone(done),
                expect: spec.clone(),
                tls: plan.probe_tls.as_ref().map(|t| t.connector()).transpose()?,
            };
            Some(
                std::thread::Builder::new()
                    .name("webtune-probe".into())
                    .spawn(move || usage::measured(|| probe::run_probe(cfg)))
                    .map_err(EngineError::Thread)?,
            )
        }
        _ => None,
    })
}

/// What the gathering thread watches to stop the workers: the caller's token, and (for a
/// run that stops at a count, `-n`) whether the target is down.
struct Watch<'a> {
    control: &'a RunControl,
    workers_stop: &'a AtomicBool,
    /// `--timeout`, for a run without a duration: a count-stopped run against a port that
    /// refuses every connect would otherwise retry until its whole count has failed
    /// (issue 39: `webtune smtp -n` ran 37 s against a closed port). A timed run ends at
    /// its duration anyway, as bench's does.
    down_after: Option<Duration>,
    target_down: bool,
}

impl Watch<'_> {
    /// Stop the workers when the caller asked, or when every connect of the first
    /// `down_after` was refused and none succeeded: nothing listens there.
    fn check(&mut self, elapsed: Duration, so_far: &Progress) {
        if self.control.stop_requested() {
            self.workers_stop.store(true, Ordering::SeqCst);
        }
        let Some(after) = self.down_after else {
            return;
        };
        let refused = so_far.error_counts.get(ErrorKind::ConnectRefused);
        if elapsed >= after
            && refused > 0
            && refused == so_far.error_counts.total()
            && so_far.responses == 0
            && so_far.connections_opened == 0
        {
            self.target_down = true;
            self.down_after = None;
            self.workers_stop.store(true, Ordering::SeqCst);
        }
    }
}

/// Gather interval reports until every worker has hung up: each interval's totals (the
/// time series), and the run so far handed to `on_progress` at every report; whether the
/// run was ended because its target was down.
fn gather(
    rx: &mpsc::Receiver<IntervalReport>,
    start: Instant,
    open_gauge: &OpenGauge,
    mut watch: Watch,
    on_progress: &mut dyn FnMut(&Progress),
) -> (BTreeMap<u64, IntervalTotals>, bool) {
    let mut intervals: BTreeMap<u64, IntervalTotals> = BTreeMap::new();
    let mut responses = 0u64;
    let mut errors = 0u64;
    let mut so_far = Progress::default();
    let mut rate_interval = 0u64;
    let mut last_rate = (start, 0u64);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(report) => {
                responses += report.responses;
                errors += report.errors.total();
                so_far.error_counts.merge(&report.errors);
                so_far.latency.merge(&report.latency);
                so_far.connections_opened += report.connections;
                so_far.message_bytes += report.message_bytes;
                let t = intervals.entry(report.index).or_default();
                t.reports += 1;
                t.responses += report.responses;
                t.errors.merge(&report.errors);
                t.bytes += report.bytes;
                t.open += report.open_connections;
                t.latency.merge(&report.latency);
                // Every worker's report is shown as it comes, so the figures are the whole
                // run's so far (not one worker's); the rate is taken once per interval.
                let now = Instant::now();
                if report.index >= rate_interval {
                    rate_interval = report.index + 1;
                    let dt = now.duration_since(last_rate.0).as_secs_f64();
                    so_far.rate_per_s = if dt > 0.0 {
                        (responses - last_rate.1) as f64 / dt
                    } else {
                        0.0
                    };
                    last_rate = (now, responses);
                }
                so_far.elapsed = now.duration_since(start);
                so_far.responses = responses;
                so_far.errors = errors;
                so_far.open_connections = open_gauge.open();
                so_far.attempted = attempted(responses, &so_far.error_counts);
                on_progress(&so_far);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        watch.check(start.elapsed(), &so_far);
    }
    (intervals, watch.target_down)
}

/// What the threads left: every worker's recorder merged, the generator's CPU, the probe's
/// result.
struct Joined {
    total: Recorder,
    /// The generator's CPU: its own threads', not the process's (an in-process target's
    /// threads are not the generator).
    used: usage::Usage,
    probe: Option<webtune_model::NamedResult>,
}

/// Join the workers, then stop and join the probe; a worker's failure is the run's.
fn join(
    workers: Vec<WorkerHandle>,
    probe: Option<ProbeHandle>,
    probe_done: &AtomicBool,
) -> Result<Joined, EngineError> {
    let mut total = Recorder::default();
    let mut used = usage::Usage::default();
    let mut failure = None;
    for handle in workers {
        match handle.join() {
            Ok((Ok(rec), cpu)) => {
                total.merge(&rec);
                used.add(&cpu);
            }
            Ok((Err(e), _)) => failure = Some(EngineError::Poll(e)),
            Err(_) => {
                failure = Some(EngineError::Thread(std::io::Error::other(
                    "worker panicked",
                )))
            }
        }
    }
    probe_done.store(true, Ordering::Relaxed);
    let probe = probe.and_then(|h| h.join().ok()).map(|(named, cpu)| {
        used.add(&cpu);
        named
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(Joined { total, used, probe }),
    }
}

/// `--http2`: the requests in HTTP/2 form (those that never vary encoded once).
fn h2_setup(plan: &RunPlan, streams: u32) -> Result<h2::H2Setup, EngineError> {
    let tls = plan.tls.is_some();
    let fixed = plan
        .requests
        .iter()
        .map(|r| {
            r.fixed_bytes
                .as_deref()
                .map(|bytes| h2::request::from_http1(bytes, tls))
                .transpose()
                .map_err(|e| EngineError::BadLoad(format!("--http2: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(h2::H2Setup {
        streams: streams.max(1) as usize,
        fixed: Arc::new(fixed),
        tls,
    })
}

/// Requests that completed or failed: responses, plus the errors that got none.
fn attempted(responses: u64, errors: &ErrorCounts) -> u64 {
    let with_response: u64 = webtune_model::ErrorKind::ALL
        .into_iter()
        .filter(|k| k.has_response())
        .map(|k| errors.get(k))
        .sum();
    responses + errors.total() - with_response
}

/// What this generator runs: the whole spec, or with `--shard i/n` shard i's share of the
/// connections (and of a closed-loop ramp of them) and of `-n`, as a spec of its own (no
/// shard). The open-loop rate is shared by interleaving arrivals instead (`stream_of`).
fn shard_part(spec: &RunSpec) -> RunSpec {
    let Some(shard) = spec.shard else {
        return spec.clone();
    };
    let mut part = RunSpec {
        shard: None,
        ..spec.clone()
    };
    let all = u64::from(spec.connections);
    part.connections = shard.share(all) as u32;
    if let StopCondition::Requests { count } = spec.stop {
        part.stop = StopCondition::Requests {
            count: shard.share(count),
        };
    }
    if !spec.is_open_loop() {
        let fraction = shard.fraction_of(all);
        for stage in &mut part.stages {
            stage.target *= fraction;
        }
    }
    part
}

/// Worker `w`'s stream of the open-loop schedule: (its first arrival, the step between its
/// arrivals), counted in arrivals of the whole test (every shard's).
fn stream_of(shard: Option<Shard>, w: usize, threads: usize) -> (u64, u64) {
    match shard {
        Some(shard) => shard.stream(w as u32, threads as u32),
        None => (w as u64, threads as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn a_shard_runs_its_share_of_connections_requests_and_a_closed_ramp() {
        use webtune_model::{RunSpec, Shard, Stage, StopCondition};
        let whole = RunSpec {
            connections: 10,
            stop: StopCondition::Requests { count: 100 },
            stages: vec![Stage {
                seconds: 1.0,
                target: 10.0,
            }],
            shard: Some(Shard { index: 1, count: 3 }),
            ..RunSpec::default()
        };
        let part = super::shard_part(&whole);
        assert_eq!(part.connections, 4);
        assert_eq!(part.stop, StopCondition::Requests { count: 34 });
        assert!((part.stages[0].target - 4.0).abs() < 1e-9);
        assert_eq!(part.shard, None);
        assert_eq!(part.validate(), Ok(()));
        assert_eq!(super::stream_of(whole.shard, 1, 2), (3, 6));
        let unsharded = RunSpec::default();
        assert_eq!(super::shard_part(&unsharded), unsharded);
        assert_eq!(super::stream_of(None, 1, 2), (1, 2));
    }

    #[test]
    fn split_is_fair_and_exact() {
        assert_eq!(split(10, 3), vec![4, 3, 3]);
        assert_eq!(split(2, 4), vec![1, 1, 0, 0]);
        assert_eq!(split(7, 1), vec![7]);
    }
}
