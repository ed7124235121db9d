//! Combining results, the one place that does it. Two rules for time, one for counts:
//! - `RunResult::merge` folds a later run of the same spec into an earlier one (the repeats
//!   of `bench --repeat`, a tuner's re-measurements): time series, stalls and server
//!   samples follow one another.
//! - `RunResult::merge_shards` combines the shards of one test, measured at the same time
//!   by several generators (`webtune merge`): time series are aligned on the earliest
//!   shard's start, rates add, and results of different specs are refused.
//!
//! Either way counts add, histograms merge bucket by bucket (`fold_counts`), and the
//! summaries are recomputed from the merged raw data: percentiles are never averaged.
//! Shards are read from files, so their sums are checked first (`totals`): a total past
//! `u64::MAX` is refused, never wrapped.

use crate::result::{IntervalSample, NamedResult, RepeatSummary, RunResult, Schedule, Validity};
use crate::server::{LogMessage, ServerSamples};
use crate::shard::{Shard, ShardSet, ShardSummary};
use crate::window::Window;
use crate::{ErrorKind, RunSpec};
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
    /// (runs measured here, as repeats, never come near `u64::MAX`).
    fn fold_counts(&mut self, other: &RunResult) {
        self.interrupted |= other.interrupted;
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
        let h = &mut self.histograms;
        h.connect.merge(&other.histograms.connect);
        h.first_byte.merge(&other.histograms.first_byte);
        h.total.merge(&other.histograms.total);
        h.service.merge(&other.histograms.service);
        h.tls_handshake.merge(&other.histograms.tls_handshake);
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

/// Why results cannot be merged as the shards of one test. `label` names an input (its
/// file, as the user gave it).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge")]
    Empty,
    #[error("{label} is not a shard (it was run without --shard i/n)")]
    NotAShard { label: String },
    #[error("{label} is shard {shard} but {first} is of {count} shards")]
    OtherCount {
        label: String,
        shard: Shard,
        first: String,
        count: u32,
    },
    #[error("{label} and {other} are both shard {shard}")]
    Duplicate {
        label: String,
        other: String,
        shard: Shard,
    },
    #[error("shard{} {} of {count} missing", if .missing.len() > 1 { "s" } else { "" }, .missing.join(", "))]
    Missing { missing: Vec<String>, count: u32 },
    #[error(
        "{label}: {field} cannot be added to the other shards' (the sum passes 2^64 - 1): no run measured that much"
    )]
    Overflow { label: String, field: String },
    #[error(
        "{label} is of another test than {first}: {field} is {theirs} there, {mine} in {first}"
    )]
    OtherSpec {
        label: String,
        first: String,
        field: String,
        mine: String,
        theirs: String,
    },
}

/// The first spec field in which two results differ: (field, first's value, other's
/// value). The shard, the per-machine thread count and the planned start are left out (a
/// relative `--start-at +5s` differs by the shards' launch times; the skew is reported).
fn spec_difference(first: &RunResult, other: &RunResult) -> Option<(String, String, String)> {
    let as_map = |r: &RunResult| match serde_json::to_value(r.spec.whole_test()) {
        Ok(serde_json::Value::Object(mut m)) => {
            m.remove("threads");
            m.remove("start_at_unix_ms");
            m
        }
        _ => serde_json::Map::new(),
    };
    let (a, b) = (as_map(first), as_map(other));
    let null = serde_json::Value::Null;
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.dedup();
    keys.into_iter().find_map(|k| {
        let (x, y) = (a.get(k).unwrap_or(&null), b.get(k).unwrap_or(&null));
        (x != y).then(|| (k.clone(), x.to_string(), y.to_string()))
    })
}

/// Check that `inputs` are the complete, distinct shards of one test; return them in shard
/// order.
fn check_shards(
    mut inputs: Vec<(String, RunResult)>,
) -> Result<Vec<(String, RunResult)>, MergeError> {
    let (first_label, first) = inputs.first().ok_or(MergeError::Empty)?;
    let count = first
        .spec
        .shard
        .ok_or_else(|| MergeError::NotAShard {
            label: first_label.clone(),
        })?
        .count;
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for (label, r) in &inputs {
        let shard = r.spec.shard.ok_or_else(|| MergeError::NotAShard {
            label: label.clone(),
        })?;
        if shard.count != count {
            return Err(MergeError::OtherCount {
                label: label.clone(),
                shard,
                first: first_label.clone(),
                count,
            });
        }
        if let Some(other) = seen.insert(shard.index, label) {
            return Err(MergeError::Duplicate {
                label: label.clone(),
                other: other.to_string(),
                shard,
            });
        }
        if let Some((field, mine, theirs)) = spec_difference(first, r) {
            return Err(MergeError::OtherSpec {
                label: label.clone(),
                first: first_label.clone(),
                field,
                mine,
                theirs,
            });
        }
    }
    let missing: Vec<String> = (1..=count)
        .filter(|i| !seen.contains_key(i))
        .map(|index| Shard { index, count }.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing { missing, count });
    }
    inputs.sort_by_key(|(_, r)| r.spec.shard.map(|s| s.index));
    Ok(inputs)
}

impl RunResult {
    /// Merge the shards of one test, measured at the same time by several generators, into
    /// the result of the whole test. Refuses inputs that are not all the shards of one spec.
    /// Time series are aligned on the earliest shard's start (to the nearest interval); an
    /// interval's percentiles are the highest shard's (the histograms of the whole run, and
    /// so its summary percentiles, are exact). The peak of open connections is the sum of
    /// the shards' peaks (an upper bound: they need not coincide).
    pub fn merge_shards(inputs: Vec<(String, RunResult)>) -> Result<RunResult, MergeError> {
        let inputs = check_shards(inputs)?;
        crate::totals::check(&inputs).map_err(|(label, o)| MergeError::Overflow {
            label,
            field: o.field,
        })?;
        let overflow = |label: &String, field: &str| MergeError::Overflow {
            label: label.clone(),
            field: field.to_string(),
        };
        let mut threads: u32 = 0;
        for (label, r) in &inputs {
            threads = threads
                .checked_add(r.spec.threads)
                .ok_or_else(|| overflow(label, "spec.threads"))?;
        }
        let t0 = inputs
            .iter()
            .map(|(_, r)| r.started_at_unix_ms)
            .min()
            .unwrap_or(0);
        let offset_s = |r: &RunResult| (r.started_at_unix_ms - t0) as f64 / 1000.0;
        // The first shard's record (spec, addresses, first body length, ...) with nothing
        // counted yet: every shard, the first included, is folded in below.
        let first = &inputs[0].1;
        let mut merged = RunResult {
            spec: RunSpec {
                threads,
                ..first.spec.whole_test()
            },
            duration_s: 0.0,
            responses: 0,
            ok: 0,
            errors: Default::default(),
            length_varies: 0,
            status: BTreeMap::new(),
            bytes_received: 0,
            body_bytes: 0,
            bytes_sent: 0,
            connections_opened: 0,
            peak_open_connections: 0,
            keepalive_responses: 0,
            connect_attempts: 0,
            stale_reconnects: 0,
            abandoned: 0,
            histograms: Default::default(),
            timeline: Vec::new(),
            generator: Default::default(),
            server: None,
            schedule: None,
            validity: Validity::default(),
            stalls: Vec::new(),
            by_name: BTreeMap::new(),
            probe: None,
            repeats: Vec::new(),
            start: None,
            sharding: None,
            thresholds: Vec::new(),
            tls: None,
            h2: None,
            smtp: None,
            ..first.clone()
        };
        let interval_s = merged.spec.interval_ms.max(1) as f64 / 1000.0;
        let mut intervals: BTreeMap<u64, IntervalSample> = BTreeMap::new();
        let mut sent = 0.0;
        let mut shards = Vec::with_capacity(inputs.len());
        for (label, r) in &inputs {
            let offset = offset_s(r);
            let shard = r.spec.shard.unwrap_or(Shard { index: 1, count: 1 });
            merged.fold_counts(r);
            merged.duration_s = merged.duration_s.max(offset + r.duration_s);
            merged.peak_open_connections = merged
                .peak_open_connections
                .checked_add(r.peak_open_connections)
                .ok_or_else(|| overflow(label, "peak_open_connections"))?;
            merged.generator.threads = merged
                .generator
                .threads
                .checked_add(r.generator.threads)
                .ok_or_else(|| overflow(label, "generator.threads"))?;
            for sample in &r.timeline {
                let index = ((sample.start_s + offset) / interval_s).round().max(0.0) as u64;
                add_interval(intervals.entry(index).or_default(), sample)
                    .map_err(|field| overflow(label, &format!("timeline.{field}")))?;
            }
            merged.stalls.extend(r.stalls.iter().map(|stall| {
                let mut stall = *stall;
                stall.start_s += offset;
                stall
            }));
            if let Some(theirs) = &r.schedule {
                sent += theirs.achieved_rate * r.duration_s;
                let mine = merged.schedule.get_or_insert_with(Schedule::default);
                mine.requested_rate += theirs.requested_rate;
                mine.lag_histogram.merge(&theirs.lag_histogram);
                mine.connection_wait_histogram
                    .merge(&theirs.connection_wait_histogram);
                mine.generator_lag_histogram
                    .merge(&theirs.generator_lag_histogram);
                mine.not_sent += theirs.not_sent;
            }
            let mut validity = r.validity.clone();
            for reason in &mut validity.reasons {
                *reason = format!("shard {shard}: {reason}");
            }
            merge_validity(&mut merged.validity, &validity);
            if merged.server.is_none() {
                merged.server = r.server.clone();
            }
            shards.push(ShardSummary {
                shard,
                started_at_unix_ms: r.started_at_unix_ms,
                start_offset_ms: offset * 1000.0,
                start: r.start.clone(),
                duration_s: r.duration_s,
                responses: r.responses,
                errors: r.errors.total(),
                requests_per_s: r.requests_per_s,
                client_limited: r.validity.client_limited,
            });
        }
        if let Some(s) = merged.schedule.as_mut() {
            s.achieved_rate = if merged.duration_s > 0.0 {
                sent / merged.duration_s
            } else {
                0.0
            };
        }
        merged.timeline = intervals
            .into_iter()
            .map(|(index, mut sample)| {
                sample.start_s = index as f64 * interval_s;
                sample
            })
            .collect();
        merged
            .stalls
            .sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        let skew = shards.iter().map(|s| s.start_offset_ms).fold(0.0, f64::max);
        merged.sharding = Some(ShardSet {
            start_skew_ms: skew,
            shards,
        });
        merged.finish_summaries();
        Ok(merged)
    }
}

/// Add one shard's interval to the merged one: counts add (checked: Err names the one
/// that passes `u64::MAX`), the percentiles are the highest shard's (an upper bound;
/// per-interval histograms are not kept).
fn add_interval(into: &mut IntervalSample, s: &IntervalSample) -> Result<(), &'static str> {
    into.length_s = into.length_s.max(s.length_s);
    for (field, mine, theirs) in [
        ("responses", &mut into.responses, s.responses),
        ("bytes", &mut into.bytes, s.bytes),
        (
            "open_connections",
            &mut into.open_connections,
            s.open_connections,
        ),
    ] {
        *mine = mine.checked_add(theirs).ok_or(field)?;
    }
    // Each kind, and all kinds together (the errors' total every report prints), must fit.
    ErrorKind::ALL
        .into_iter()
        .map(|k| into.errors.get(k).checked_add(s.errors.get(k)))
        .try_fold(0u64, |sum, n| sum.checked_add(n?))
        .ok_or("errors")?;
    into.errors.merge(&s.errors);
    into.p50_us = into.p50_us.max(s.p50_us);
    into.p90_us = into.p90_us.max(s.p90_us);
    into.p99_us = into.p99_us.max(s.p99_us);
    into.max_us = into.max_us.max(s.max_us);
    Ok(())
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

impl NamedResult {
    /// Add another measurement of the same request name.
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
    mine.lag_histogram.merge(&theirs.lag_histogram);
    mine.connection_wait_histogram
        .merge(&theirs.connection_wait_histogram);
    mine.generator_lag_histogram
        .merge(&theirs.generator_lag_histogram);
    mine.not_sent += theirs.not_sent;
}

/// The merged run was client-limited when any of its runs was; every distinct reason is
/// kept, and the CPU figures are the busiest run's.
fn merge_validity(mine: &mut Validity, theirs: &Validity) {
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
