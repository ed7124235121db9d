//! Merging the shards of one test, measured at the same time by several generators, into
//! the result of the whole test (`webtune merge`, `lab run`'s shard processes), one shard
//! at a time: `ShardMerge::add` checks a shard against the first and folds its counts and
//! histograms in, keeping only what needs every shard's start to place (its time series,
//! stalls and summary); `finish` checks the run, the indices and the skew (`shard_check`)
//! and lines the time series up. So a merge holds one shard and the sum, not every shard:
//! 1,000 shards of a 60 s test once took 1.5 GiB held all at once (bench/merge-scale.sh).

use crate::merge::merge_validity;
use crate::result::{IntervalSample, RunResult, Schedule, Stall, Validity};
use crate::shard::{ShardSet, ShardSummary};
use crate::shard_check::{check_members, check_same_test, Member, MergeError, MergeOptions};
use crate::totals::Totals;
use crate::{ErrorKind, RunSpec};
use std::collections::BTreeMap;

/// What a shard leaves for `finish`: what has to wait for the common start.
struct Part {
    member: Member,
    timeline: Vec<IntervalSample>,
    stalls: Vec<Stall>,
    validity: Validity,
    /// The summary, its offset filled in by `finish`.
    summary: ShardSummary,
}

/// A merge in progress: `add` each shard (any order), then `finish`.
pub struct ShardMerge {
    options: MergeOptions,
    /// The first input's label and spec, which every other must match.
    first: Option<(String, RunSpec)>,
    /// Counts and histograms so far; the test's record (spec, tool, protocol, …) from the
    /// lowest shard index added so far.
    merged: Option<RunResult>,
    record_index: u32,
    totals: Totals,
    threads: u32,
    /// Requests sent, summed over the shards (rate × length).
    sent: f64,
    parts: Vec<Part>,
}

fn overflow(label: &str, field: &str) -> MergeError {
    MergeError::Overflow {
        label: label.to_string(),
        field: field.to_string(),
    }
}

/// `r` with nothing counted: the record every shard, `r` included, is folded into (made
/// once, from the first shard added).
fn empty_like(r: &RunResult) -> RunResult {
    RunResult {
        spec: r.spec.whole_test(),
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
        by_journey: BTreeMap::new(),
        probe: None,
        repeats: Vec::new(),
        start: None,
        sharding: None,
        thresholds: Vec::new(),
        tls: None,
        h2: None,
        http3: None,
        smtp: None,
        ..r.clone()
    }
}

impl ShardMerge {
    pub fn new(options: MergeOptions) -> ShardMerge {
        ShardMerge {
            options,
            first: None,
            merged: None,
            record_index: u32::MAX,
            totals: Totals::default(),
            threads: 0,
            sent: 0.0,
            parts: Vec::new(),
        }
    }

    /// Add one shard (`label` names its file): refused when it is not a shard of the
    /// first's test or when its counts cannot be added to the others'.
    pub fn add(&mut self, label: String, r: RunResult) -> Result<(), MergeError> {
        let first = self.first.as_ref().map(|(l, s)| (l.as_str(), s));
        let shard = check_same_test(first, &label, &r)?;
        self.totals
            .add(&r)
            .map_err(|o| overflow(&label, &o.field))?;
        self.threads = self
            .threads
            .checked_add(r.spec.threads)
            .ok_or_else(|| overflow(&label, "spec.threads"))?;
        if self.first.is_none() {
            self.first = Some((label.clone(), r.spec.clone()));
        }
        let merged = self.merged.get_or_insert_with(|| empty_like(&r));
        merged.fold_counts(&r);
        merged.peak_open_connections = merged
            .peak_open_connections
            .checked_add(r.peak_open_connections)
            .ok_or_else(|| overflow(&label, "peak_open_connections"))?;
        merged.generator.threads = merged
            .generator
            .threads
            .checked_add(r.generator.threads)
            .ok_or_else(|| overflow(&label, "generator.threads"))?;
        if let Some(theirs) = &r.schedule {
            self.sent += theirs.achieved_rate * r.duration_s;
            let mine = merged.schedule.get_or_insert_with(Schedule::default);
            mine.requested_rate += theirs.requested_rate;
            mine.fold_lateness(theirs);
        }
        // The test's record comes from its lowest shard, whatever order the files came in.
        if shard.index < self.record_index {
            self.record_index = shard.index;
            merged.schema.clone_from(&r.schema);
            merged.tool.clone_from(&r.tool);
            merged.spec = r.spec.whole_test();
            merged.protocol.clone_from(&r.protocol);
            merged.io_backend = r.io_backend;
            if r.first_body_bytes.is_some() {
                merged.first_body_bytes = r.first_body_bytes;
            }
            if r.server_software.is_some() {
                merged.server_software.clone_from(&r.server_software);
            }
            if r.server.is_some() {
                merged.server.clone_from(&r.server);
            }
        } else if merged.server.is_none() {
            merged.server.clone_from(&r.server);
        }
        let window = r.measured_window();
        let run_id = r.start.as_ref().and_then(|s| s.run_id.clone());
        self.parts.push(Part {
            summary: ShardSummary {
                shard,
                started_at_unix_ms: r.started_at_unix_ms,
                start_offset_ms: 0.0,
                start: r.start,
                duration_s: r.duration_s,
                responses: r.responses,
                errors: r.errors.total(),
                requests_per_s: r.requests_per_s,
                client_limited: r.validity.client_limited,
            },
            member: Member {
                label,
                shard,
                run_id,
                window,
            },
            timeline: r.timeline,
            stalls: r.stalls,
            validity: r.validity,
        });
        Ok(())
    }

    /// The merged result of the whole test, once every shard is in: refused when they are
    /// not all the shards of one run, measured together (`shard_check::check_members`).
    pub fn finish(self) -> Result<RunResult, MergeError> {
        let ShardMerge {
            options,
            merged,
            threads,
            sent,
            mut parts,
            ..
        } = self;
        let mut merged = merged.ok_or(MergeError::Empty)?;
        let members: Vec<&Member> = parts.iter().map(|p| &p.member).collect();
        let timing = check_members(&members, &merged.spec, &options)?;
        parts.sort_by_key(|p| p.member.shard.index);
        merged.spec.threads = threads;
        let interval_s = merged.spec.interval_ms.max(1) as f64 / 1000.0;
        let mut intervals: BTreeMap<u64, IntervalSample> = BTreeMap::new();
        let mut shards = Vec::with_capacity(parts.len());
        for part in parts {
            let Part {
                member,
                timeline,
                stalls,
                validity,
                mut summary,
            } = part;
            // Offsets from the earliest measured window, with the clock's sub-ms part.
            let offset = (member.window.start_unix_ms - timing.t0_unix_ms).max(0.0) / 1000.0;
            merged.duration_s = merged.duration_s.max(offset + summary.duration_s);
            for sample in &timeline {
                let index = ((sample.start_s + offset) / interval_s).round().max(0.0) as u64;
                add_interval(intervals.entry(index).or_default(), sample)
                    .map_err(|field| overflow(&member.label, &format!("timeline.{field}")))?;
            }
            merged.stalls.extend(stalls.into_iter().map(|mut stall| {
                stall.start_s += offset;
                stall
            }));
            let mut validity = validity;
            for reason in &mut validity.reasons {
                *reason = format!("shard {}: {reason}", member.shard);
            }
            merge_validity(&mut merged.validity, &validity);
            summary.start_offset_ms = offset * 1000.0;
            shards.push(summary);
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
        if let Some(reason) = timing.skew_reason {
            // Not one test: as unusable as a client-limited one, and said why.
            merged.validity.client_limited = true;
            merged.validity.reasons.push(reason);
        }
        merged.sharding = Some(ShardSet {
            start_skew_ms: timing.skew_ms,
            start_skew_limit_ms: timing.limit_ms,
            run_id: timing.run_id,
            shards,
        });
        merged.finish_summaries();
        Ok(merged)
    }
}

impl RunResult {
    /// Merge the shards of one test, measured at the same time by several generators, into
    /// the result of the whole test. Refuses inputs that are not all the shards of one spec
    /// and one run, measured together (`shard_check`). Time series are aligned on the
    /// earliest shard's start (to the nearest interval); an interval's percentiles are the
    /// highest shard's (the histograms of the whole run, and so its summary percentiles, are
    /// exact). The peak of open connections is the sum of the shards' peaks (an upper
    /// bound: they need not coincide). `ShardMerge` does the same one shard at a time.
    pub fn merge_shards(inputs: Vec<(String, RunResult)>) -> Result<RunResult, MergeError> {
        RunResult::merge_shards_with(inputs, &MergeOptions::default())
    }

    /// `merge_shards`, with `options` saying what to let through (`--allow-skew`: shards
    /// that did not start together are merged, and the result marked invalid).
    pub fn merge_shards_with(
        inputs: Vec<(String, RunResult)>,
        options: &MergeOptions,
    ) -> Result<RunResult, MergeError> {
        let mut merge = ShardMerge::new(*options);
        for (label, r) in inputs {
            merge.add(label, r)?;
        }
        merge.finish()
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
