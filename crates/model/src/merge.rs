//! Combining results, the one place that does it. Two rules for time, one for counts:
//! - `RunResult::merge` folds a later run of the same spec into an earlier one (the repeats
//!   of `bench --repeat`, a tuner's re-measurements): time series, stalls and server
//!   samples follow one another.
//! - `RunResult::merge_shards` (`shard_merge`) combines the shards of one test, measured at
//!   the same time by several generators (`webtune merge`): time series are aligned on the
//!   earliest shard's start and rates add; which results may be merged is `shard_check`'s
//!   call.
//!
//! Either way counts add, histograms merge bucket by bucket (`fold_counts`), and the
//! summaries are recomputed from the merged raw data: percentiles are never averaged.
//! Shards are read from files, so their sums are checked first (`totals`): a total past
//! `u64::MAX` is refused, never wrapped.

use crate::result::{Histograms, NamedResult, RepeatSummary, RunResult, Schedule, Validity};
use crate::server::{LogMessage, ServerSamples};
use crate::window::Window;
use std::collections::BTreeMap;

impl RunResult {
    /// Fold `later` (a run of the same spec that began after this one ended) into this
    /// result. Times in `later` (timeline, stalls, server samples) are shifted to follow
    /// this run's measurement. The summaries (rates, percentiles) are recomputed. `repeats`
    /// is left alone: the caller decides whether the runs are listed one by one.
    pub fn merge(&mut self, later: &RunResult) {
        let offset = self.duration_s;
        self.duration_s += later.duration_s;
        self.fold_counts(later);
        self.peak_open_connections = self.peak_open_connections.max(later.peak_open_connections);
        self.timeline
            .extend(later.timeline.iter().cloned().map(|mut sample| {
                sample.start_s += offset;
                sample
            }));
        self.stalls
            .extend(later.stalls.iter().copied().map(|mut stall| {
                stall.start_s += offset;
                stall
            }));

        self.generator.threads = self.generator.threads.max(later.generator.threads);
        merge_schedule(
            &mut self.schedule,
            later.schedule.as_ref(),
            offset,
            later.duration_s,
        );
        merge_validity(&mut self.validity, &later.validity);
        match (&mut self.server, &later.server) {
            (Some(mine), Some(theirs)) => merge_server(mine, theirs),
            (None, Some(theirs)) => self.server = Some(theirs.clone()),
            _ => {}
        }
        self.finish_summaries();
    }

    /// What adds up whatever the timing: counts, bytes, histograms, per-name results, the
    /// probe, the generator's CPU; and the flags and lists that any run sets. A counter
    /// added here is listed in `totals::counters` too, which checks shards' sums first
    /// (runs measured here, as repeats, never come near `u64::MAX`). Shared with
    /// `shard_merge`.
    pub(crate) fn fold_counts(&mut self, other: &RunResult) {
        self.interrupted |= other.interrupted;
        self.target_down |= other.target_down;
        self.started_at_unix_ms = self.started_at_unix_ms.min(other.started_at_unix_ms);
        union_into(&mut self.addresses, &other.addresses);
        union_into(&mut self.skipped_addresses, &other.skipped_addresses);
        self.responses += other.responses;
        self.ok += other.ok;
        self.errors.merge(&other.errors);
        self.length_varies += other.length_varies;
        if self.first_body_bytes.is_none() {
            self.first_body_bytes = other.first_body_bytes;
        }
        add_counts(&mut self.status, &other.status);
        self.bytes_received += other.bytes_received;
        self.body_bytes += other.body_bytes;
        self.bytes_sent += other.bytes_sent;
        self.connections_opened += other.connections_opened;
        self.connect_attempts += other.connect_attempts;
        self.keepalive_responses += other.keepalive_responses;
        self.stale_reconnects += other.stale_reconnects;
        self.abandoned += other.abandoned;
        self.histograms.merge(&other.histograms);
        match (&mut self.tls, &other.tls) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.tls = Some(theirs.clone()),
            _ => {}
        }
        match (&mut self.h2, &other.h2) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.h2 = Some(theirs.clone()),
            _ => {}
        }
        match (&mut self.http3, &other.http3) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.http3 = Some(theirs.clone()),
            _ => {}
        }
        match (&mut self.smtp, &other.smtp) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.smtp = Some(theirs.clone()),
            _ => {}
        }
        let g = &mut self.generator;
        g.user_cpu_s += other.generator.user_cpu_s;
        g.system_cpu_s += other.generator.system_cpu_s;
        g.max_rss_kib = g.max_rss_kib.max(other.generator.max_rss_kib);
        for (name, named) in &other.by_name {
            self.by_name.entry(name.clone()).or_default().merge(named);
        }
        for (name, journey) in &other.by_journey {
            self.by_journey
                .entry(name.clone())
                .or_default()
                .merge(journey);
        }
        match (&mut self.probe, &other.probe) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.probe = Some(theirs.clone()),
            _ => {}
        }
        if self.server_software.is_none() {
            self.server_software = other.server_software.clone();
        }
    }
}

impl RepeatSummary {
    /// What one repeat measured, for the list a repeated result keeps.
    pub fn of(run: &RunResult) -> RepeatSummary {
        RepeatSummary {
            duration_s: run.duration_s,
            responses: run.responses,
            errors: run.errors.total(),
            requests_per_s: run.requests_per_s,
            latency: run.latency.total,
        }
    }
}

impl RunResult {
    /// Merge repeated runs of one spec, in run order, into one result whose `repeats` lists
    /// a summary of each (empty for a single run). None when `runs` is empty.
    pub fn merge_repeats(runs: Vec<RunResult>) -> Option<RunResult> {
        let mut iter = runs.into_iter();
        let mut merged = iter.next()?;
        let mut repeats = vec![RepeatSummary::of(&merged)];
        for run in iter {
            repeats.push(RepeatSummary::of(&run));
            merged.merge(&run);
        }
        merged.repeats = if repeats.len() > 1 {
            repeats
        } else {
            Vec::new()
        };
        Some(merged)
    }
}

impl Histograms {
    /// Add another measurement's histograms, bucket by bucket (exact): the one merge of a
    /// run's latency histograms, for results here and for the engine's per-worker recorders.
    pub fn merge(&mut self, other: &Histograms) {
        self.connect.merge(&other.connect);
        self.first_byte.merge(&other.first_byte);
        self.total.merge(&other.total);
        self.service.merge(&other.service);
        self.tls_handshake.merge(&other.tls_handshake);
    }
}

impl Schedule {
    /// Add another schedule's lateness: its three histograms and its requests not sent (the
    /// rates are the caller's: repeats and shards combine them differently).
    pub(crate) fn fold_lateness(&mut self, theirs: &Schedule) {
        self.lag_histogram.merge(&theirs.lag_histogram);
        self.connection_wait_histogram
            .merge(&theirs.connection_wait_histogram);
        self.generator_lag_histogram
            .merge(&theirs.generator_lag_histogram);
        self.not_sent += theirs.not_sent;
    }
}

impl NamedResult {
    /// Add another measurement of the same request name (the engine's workers' too).
    pub fn merge(&mut self, other: &NamedResult) {
        self.responses += other.responses;
        self.ok += other.ok;
        self.errors.merge(&other.errors);
        add_counts(&mut self.status, &other.status);
        self.length_varies += other.length_varies;
        self.body_bytes += other.body_bytes;
        self.histogram.merge(&other.histogram);
        self.finish();
    }
}

fn union_into(into: &mut Vec<String>, more: &[String]) {
    for item in more {
        if !into.contains(item) {
            into.push(item.clone());
        }
    }
}

fn add_counts<K: Ord + Copy>(into: &mut BTreeMap<K, u64>, more: &BTreeMap<K, u64>) {
    for (key, n) in more {
        *into.entry(*key).or_insert(0) += n;
    }
}

/// Requests sent add up over the runs' combined length; lag histograms merge; the requested
/// rate is the highest asked for.
fn merge_schedule(
    mine: &mut Option<Schedule>,
    theirs: Option<&Schedule>,
    my_duration_s: f64,
    their_duration_s: f64,
) {
    let Some(theirs) = theirs else { return };
    let Some(mine) = mine.as_mut() else {
        *mine = Some(theirs.clone());
        return;
    };
    let total_s = my_duration_s + their_duration_s;
    let sent = mine.achieved_rate * my_duration_s + theirs.achieved_rate * their_duration_s;
    mine.achieved_rate = if total_s > 0.0 { sent / total_s } else { 0.0 };
    mine.requested_rate = mine.requested_rate.max(theirs.requested_rate);
    mine.fold_lateness(theirs);
}

/// The merged run was client-limited when any of its runs was; every distinct reason is
/// kept, and the CPU figures are the busiest run's.
pub(crate) fn merge_validity(mine: &mut Validity, theirs: &Validity) {
    mine.client_limited |= theirs.client_limited;
    union_into(&mut mine.reasons, &theirs.reasons);
    mine.cpu_busy = mine.cpu_busy.max(theirs.cpu_busy);
    mine.cpu_wait = match (mine.cpu_wait, theirs.cpu_wait) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    if mine.limited_by.is_none() {
        mine.limited_by = theirs.limited_by;
    }
}

/// Samples (and their measured windows) follow one another; a process that died is listed
/// once; log messages of the same server, level and text add up.
fn merge_server(mine: &mut ServerSamples, theirs: &ServerSamples) {
    let offset = mine.samples.last().map_or(0.0, |s| s.t_s);
    mine.samples
        .extend(theirs.samples.iter().cloned().map(|mut sample| {
            sample.t_s += offset;
            sample
        }));
    mine.measured.extend(
        theirs
            .measured
            .iter()
            .map(|w| Window::new(w.from_s + offset, w.to_s + offset)),
    );
    mine.sampler_cpu_s += theirs.sampler_cpu_s;
    for death in &theirs.deaths {
        if !mine.deaths.iter().any(|d| d.pid == death.pid) {
            let mut death = death.clone();
            death.t_s += offset;
            mine.deaths.push(death);
        }
    }
    for message in &theirs.log_messages {
        match mine
            .log_messages
            .iter_mut()
            .find(|m| same_message(m, message))
        {
            Some(m) => m.count += message.count,
            None => mine.log_messages.push(message.clone()),
        }
    }
}

fn same_message(a: &LogMessage, b: &LogMessage) -> bool {
    a.server == b.server && a.level == b.level && a.message == b.message
}
