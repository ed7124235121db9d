//! Assembling a finished run's `RunResult`: the merged recorder's figures, the time series
//! and stalls, the open-loop schedule, per-name results, the summaries, and the verdict on
//! the generator (was it the limit, and why), asked of the one rule
//! (`webtune_model::validity::judge`) with the figures the generator's threads measured.

use super::{IntervalTotals, Joined, Prepared, RunControl};
use crate::recorder::{FirstLength, OpenGauge, Recorder, SLOT_MS};
use crate::schedule::Ramp;
use crate::Workload;
use std::collections::BTreeMap;
use std::time::Duration;
use webtune_model::result::GeneratorUsage;
use webtune_model::stall;
use webtune_model::validity::{self, GeneratorFigures};
use webtune_model::{
    IntervalSample, LoadMode, RunResult, RunSpec, Schedule, Stall, Validity, SCHEMA,
};

/// Everything a finished run hands to `assemble`.
pub(super) struct Finished<'a> {
    pub(super) spec: &'a RunSpec,
    pub(super) workload: &'a Workload,
    pub(super) control: &'a RunControl,
    pub(super) prepared: Prepared,
    pub(super) started_at_unix_ms: u64,
    pub(super) start_record: Option<webtune_model::StartRecord>,
    pub(super) open_gauge: &'a OpenGauge,
    pub(super) intervals: BTreeMap<u64, IntervalTotals>,
    pub(super) joined: Joined,
    pub(super) elapsed: Duration,
    pub(super) peak_rss_kib: u64,
}

/// The result: the merged recorder's figures, the time series and stalls, the schedule,
/// per-name results, then the summaries and the verdict on the generator.
pub(super) fn assemble(finished: Finished) -> RunResult {
    let Finished {
        spec,
        workload,
        control,
        prepared,
        started_at_unix_ms,
        start_record,
        open_gauge,
        intervals,
        joined:
            Joined {
                mut total,
                used,
                probe: probe_result,
            },
        elapsed,
        peak_rss_kib,
    } = finished;
    let Prepared {
        plan,
        window,
        first_lengths,
        interval,
        starttls,
        io,
        ..
    } = prepared;
    let elapsed_s = elapsed.as_secs_f64();
    let timeline = timeline(intervals, interval.as_secs_f64(), elapsed_s);
    let stalls = stalls(&total);
    let measured_s = (elapsed_s.min(window.1) - window.0).max(1e-9);
    let figures = GeneratorFigures {
        threads: plan.threads as u32,
        elapsed_s,
        cpu_s: used.cpu_s(),
        cpu_wait_s: used.run_delay.map(|d| d.as_secs_f64()),
    };
    let schedule = schedule(spec, &total, measured_s);
    let by_name = if plan.named {
        // Journeys may share a step name: its rows add up.
        let mut by_name: BTreeMap<String, webtune_model::NamedResult> = BTreeMap::new();
        for (r, n) in plan.requests.iter().zip(total.names.iter()) {
            by_name.entry(r.name.clone()).or_default().merge(n);
        }
        by_name
    } else {
        BTreeMap::new()
    };
    let by_journey = match plan.journeys.as_deref() {
        Some(run) => run
            .journeys
            .iter()
            .zip(total.journeys.iter())
            .map(|(j, r)| (j.name.clone(), r.clone()))
            .collect(),
        None => BTreeMap::new(),
    };

    let mut result = RunResult {
        schema: match spec.smtp {
            Some(_) => webtune_model::SMTP_SCHEMA,
            None => SCHEMA,
        }
        .to_string(),
        tool: concat!("webtune ", env!("CARGO_PKG_VERSION")).to_string(),
        started_at_unix_ms,
        spec: {
            let mut recorded = RunSpec {
                threads: plan.threads as u32,
                body_bytes: spec.body.len() as u64,
                ..spec.clone()
            };
            workload.record_in(&mut recorded);
            recorded
        },
        addresses: plan.addresses.iter().map(|a| a.to_string()).collect(),
        skipped_addresses: plan.skipped.iter().map(|a| a.to_string()).collect(),
        duration_s: measured_s,
        interrupted: control.stop_requested(),
        target_down: false,
        responses: total.responses,
        ok: total.ok,
        errors: total.errors,
        length_varies: total.length_varies,
        first_body_bytes: first_lengths.first().and_then(FirstLength::get),
        status: total.status,
        bytes_received: total.bytes_received,
        body_bytes: total.body_bytes,
        bytes_sent: total.bytes_sent,
        connections_opened: total.connections_opened,
        peak_open_connections: open_gauge.peak(),
        keepalive_responses: total.keepalive_responses,
        connect_attempts: total.connect_attempts,
        stale_reconnects: total.stale_reconnects,
        abandoned: total.abandoned,
        requests_per_s: 0.0,
        bytes_per_s: 0.0,
        latency: Default::default(),
        histograms: total.histograms,
        timeline,
        generator: GeneratorUsage {
            user_cpu_s: used.user.as_secs_f64(),
            system_cpu_s: used.system.as_secs_f64(),
            max_rss_kib: peak_rss_kib,
            threads: plan.threads as u32,
        },
        server: None,
        server_software: total.server_software,
        repeats: Vec::new(),
        start: start_record,
        sharding: None,
        thresholds: Vec::new(),
        schedule,
        validity: Validity::default(),
        stalls,
        by_name,
        by_journey,
        probe: probe_result,
        // HTTP/3: quinn does not say whether a handshake resumed (docs/http3.md); its
        // handshakes are in `http3` and `connect` instead of a TLS summary.
        tls: (!spec.http3 && (plan.tls.is_some() || starttls.is_some()))
            .then(|| total.tls.unwrap_or_default()),
        protocol: Some(protocol_name(spec, plan.tls.is_some()).into()),
        h2: total.h2.take(),
        http3: total.h3.take(),
        smtp: total.smtp.take(),
        io_backend: Some(io),
    };
    result.finish_summaries();
    result.validity = validity::judge(&figures, result.schedule.as_ref(), &result.latency.total);
    result
}

/// The time series: one sample per interval, the last one as long as the run went on.
fn timeline(
    intervals: BTreeMap<u64, IntervalTotals>,
    interval_s: f64,
    elapsed_s: f64,
) -> Vec<IntervalSample> {
    intervals
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
        .collect()
}

/// Stretches of slots with requests outstanding and none finished (`model::stall`), in
/// seconds.
fn stalls(total: &Recorder) -> Vec<Stall> {
    let slot_s = SLOT_MS as f64 / 1000.0;
    stall::runs(total.slots.iter().map(|s| (s.busy, u64::from(s.finished))))
        .into_iter()
        .map(|(first, n)| Stall {
            start_s: first as f64 * slot_s,
            length_s: n as f64 * slot_s,
        })
        .collect()
}

/// An open-loop run's schedule: the rate asked of this generator and the one achieved, and
/// how late requests went out (and why).
fn schedule(spec: &RunSpec, total: &Recorder, measured_s: f64) -> Option<Schedule> {
    match spec.load {
        LoadMode::Open { rate, .. } => Some(Schedule {
            requested_rate: if spec.stages.is_empty() {
                rate
            } else {
                Ramp::from_stages(&spec.stages).peak()
            } / f64::from(spec.shard.map_or(1, |s| s.count)),
            achieved_rate: total.sent as f64 / measured_s,
            lag: Default::default(),
            lag_histogram: total.lag.clone(),
            connection_wait: Default::default(),
            connection_wait_histogram: total.connection_wait.clone(),
            generator_lag: Default::default(),
            generator_lag_histogram: total.generator_lag.clone(),
            not_sent: total.not_sent,
        }),
        LoadMode::Closed => None,
    }
}

/// The protocol a run's requests went over, as results name it.
fn protocol_name(spec: &RunSpec, tls: bool) -> &'static str {
    if let Some(s) = &spec.smtp {
        return if s.starttls { "smtp+starttls" } else { "smtp" };
    }
    if spec.http3 {
        return "h3";
    }
    match (spec.http2, tls, spec.http10) {
        (true, true, _) => "h2",
        (true, false, _) => "h2c",
        (false, _, true) => "http/1.0",
        (false, _, false) => "http/1.1",
    }
}
