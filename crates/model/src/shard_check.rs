//! Which results `RunResult::merge_shards` may merge, and why not: all N shards of one test
//! (one spec, each index once), of one run (one run id), measured together (their windows
//! start within the skew limit). A shard file is only text, and a shard left from an
//! earlier run, or one started late (a Slurm array let through one task at a time), looks
//! like any other: merged, it would describe a test that never ran. So each is refused
//! with one line naming the file at fault, or, for the skew with `--allow-skew`, merged
//! with the result marked invalid.

use crate::result::RunResult;
use crate::shard::{Shard, Window};
use crate::{RunSpec, StopCondition};
use std::collections::BTreeMap;

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
    #[error(
        "{label} is of another run than {first}: run id {} there, {} in {first}{}",
        shown_id(.theirs), shown_id(.mine),
        match .others - 1 { 0 => String::new(), 1 => " and 1 other shard".into(), n => format!(" and {n} other shards") }
    )]
    OtherRun {
        label: String,
        first: String,
        /// How many inputs have `mine`.
        others: usize,
        mine: Option<String>,
        theirs: Option<String>,
    },
    #[error(
        "the shards did not run together: {}; start skew {skew_ms:.0} ms, above the limit of \
         {limit_ms:.0} ms (1 s or 10% of the test's length, whichever is larger); \
         --allow-skew merges them anyway, marked invalid",
        .odd.join(", ")
    )]
    Skewed {
        /// "s3.json (shard 3/3) started 5824 ms late", one per shard outside the group
        /// that ran together (the first few, then how many more).
        odd: Vec<String>,
        skew_ms: f64,
        limit_ms: f64,
    },
}

fn shown_id(id: &Option<String>) -> String {
    match id {
        Some(id) => id.clone(),
        None => "none".into(),
    }
}

/// How `merge_shards_with` treats what it would otherwise refuse.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeOptions {
    /// Merge shards whose starts lie further apart than the limit, and mark the result
    /// invalid (`--allow-skew`) instead of refusing them.
    pub allow_skew: bool,
}

/// What the checks need to know of one input, kept while the others are read.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub label: String,
    pub shard: Shard,
    pub run_id: Option<String>,
    pub window: Window,
}

/// What the merge reports about the shards' timing, once all are in.
#[derive(Debug, Clone)]
pub(crate) struct Timing {
    /// The earliest measured window's start, Unix ms.
    pub t0_unix_ms: f64,
    pub skew_ms: f64,
    pub limit_ms: f64,
    pub run_id: Option<String>,
    /// The skew was above the limit and allowed: the validity reason to record.
    pub skew_reason: Option<String>,
}

impl RunResult {
    /// The stretch this run measured, on the wall clock: as recorded (`start.window`), or,
    /// for results written before it was, from the start (`--start-at` plus the recorded
    /// lateness, which keeps the sub-millisecond part, else `started_at_unix_ms`), the
    /// warm-up and the measured length.
    pub fn measured_window(&self) -> Window {
        if let Some(window) = self.start.as_ref().and_then(|s| s.window) {
            return window;
        }
        let started = match self.start.as_ref() {
            Some(s) => match (s.planned_unix_ms, s.late_ms) {
                (Some(planned), Some(late)) if late.is_finite() => planned as f64 + late,
                _ => self.started_at_unix_ms as f64,
            },
            None => self.started_at_unix_ms as f64,
        };
        let start = started + self.spec.warmup_s.max(0.0) * 1000.0;
        Window {
            start_unix_ms: start,
            end_unix_ms: start + self.duration_s.max(0.0) * 1000.0,
        }
    }
}

/// The most start skew a merge of these shards accepts, ms: 1 s, or 10% of the test's
/// measured length when that is more (the planned length for a timed test; for `-n`, the
/// shortest shard's). A second covers launching processes and clocks kept by NTP on one
/// network; a tenth of a long test lets its ramp-up differ that much at most.
fn skew_limit_ms(spec: &RunSpec, members: &[&Member]) -> f64 {
    let planned_s = if !spec.stages.is_empty() {
        Some(spec.stages_seconds())
    } else {
        match spec.stop {
            StopCondition::Duration { seconds } => Some(seconds),
            StopCondition::Requests { .. } => None,
        }
    }
    .map(|s| s - spec.warmup_s.max(0.0) - spec.cooldown_s.max(0.0));
    let length_ms = planned_s.map(|s| s * 1000.0).unwrap_or_else(|| {
        members
            .iter()
            .map(|m| m.window.end_unix_ms - m.window.start_unix_ms)
            .fold(f64::INFINITY, f64::min)
    });
    let tenth = if length_ms.is_finite() {
        length_ms / 10.0
    } else {
        0.0
    };
    tenth.max(1000.0)
}

/// The first spec field in which two shards' specs differ: (field, first's value, other's
/// value). The shard, the per-machine thread count and the planned start are left out (a
/// relative `--start-at +5s` differs by the shards' launch times; the skew is checked).
fn spec_difference(first: &RunSpec, other: &RunSpec) -> Option<(String, String, String)> {
    let as_map = |spec: &RunSpec| match serde_json::to_value(spec.whole_test()) {
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

/// Check one input against the first (its label and spec; None: this is the first): it
/// must be a shard of the same count and spec. Returns its shard.
pub(crate) fn check_same_test(
    first: Option<(&str, &RunSpec)>,
    label: &str,
    r: &RunResult,
) -> Result<Shard, MergeError> {
    let shard = r.spec.shard.ok_or_else(|| MergeError::NotAShard {
        label: label.to_string(),
    })?;
    let Some((first_label, first_spec)) = first else {
        return Ok(shard);
    };
    let count = first_spec.shard.map_or(shard.count, |s| s.count);
    if shard.count != count {
        return Err(MergeError::OtherCount {
            label: label.to_string(),
            shard,
            first: first_label.to_string(),
            count,
        });
    }
    if let Some((field, mine, theirs)) = spec_difference(first_spec, &r.spec) {
        return Err(MergeError::OtherSpec {
            label: label.to_string(),
            first: first_label.to_string(),
            field,
            mine,
            theirs,
        });
    }
    Ok(shard)
}

/// All inputs must carry one run id. The odd one out is the first input whose id differs
/// from the one most inputs carry (on a tie, the first input's).
fn check_run_ids(members: &[&Member]) -> Result<Option<String>, MergeError> {
    let mut counts: Vec<(Option<&str>, usize, &str)> = Vec::new();
    for m in members {
        let id = m.run_id.as_deref();
        match counts.iter_mut().find(|(seen, _, _)| *seen == id) {
            Some(entry) => entry.1 += 1,
            None => counts.push((id, 1, &m.label)),
        }
    }
    // max_by_key keeps the last of equal maxima: search the reversed list for the first.
    let Some(&(common, others, first)) = counts.iter().rev().max_by_key(|(_, n, _)| *n) else {
        return Err(MergeError::Empty);
    };
    if let Some(m) = members.iter().find(|m| m.run_id.as_deref() != common) {
        return Err(MergeError::OtherRun {
            label: m.label.clone(),
            first: first.to_string(),
            others,
            mine: common.map(str::to_string),
            theirs: m.run_id.clone(),
        });
    }
    Ok(common.map(str::to_string))
}

/// The shards outside the largest group whose starts lie within `limit_ms` of each other
/// (on a tie, the earliest group), each as "FILE (shard I/N) started X ms late/early",
/// the furthest off first; the first eight, then how many more.
fn odd_starts(members: &[&Member], limit_ms: f64) -> Vec<String> {
    let mut order: Vec<&Member> = members.to_vec();
    order.sort_by(|a, b| a.window.start_unix_ms.total_cmp(&b.window.start_unix_ms));
    let start = |k: usize| order[k].window.start_unix_ms;
    let (mut best_from, mut best_to) = (0, 0);
    let mut to = 0;
    for from in 0..order.len() {
        to = to.max(from);
        while to + 1 < order.len() && start(to + 1) - start(from) <= limit_ms {
            to += 1;
        }
        if to - from > best_to - best_from {
            (best_from, best_to) = (from, to);
        }
    }
    let group_start = start(best_from);
    let mut odd: Vec<(f64, String)> = order
        .iter()
        .enumerate()
        .filter(|(k, _)| *k < best_from || *k > best_to)
        .map(|(_, m)| {
            let off = m.window.start_unix_ms - group_start;
            let when = if off >= 0.0 { "late" } else { "early" };
            (
                off.abs(),
                format!(
                    "{} (shard {}) started {:.0} ms {when}",
                    m.label,
                    m.shard,
                    off.abs()
                ),
            )
        })
        .collect();
    odd.sort_by(|a, b| b.0.total_cmp(&a.0));
    let more = odd.len().saturating_sub(8);
    let mut lines: Vec<String> = odd.into_iter().take(8).map(|(_, l)| l).collect();
    if more > 0 {
        lines.push(format!("and {more} more"));
    }
    lines
}

/// Once every input is in: they must be of one run, each shard of `spec`'s count exactly
/// once, and measured together. Returns what the merge reports about their timing.
pub(crate) fn check_members(
    members: &[&Member],
    spec: &RunSpec,
    options: &MergeOptions,
) -> Result<Timing, MergeError> {
    if members.is_empty() {
        return Err(MergeError::Empty);
    }
    // Before the indices: two whole runs given together are two runs, not duplicates.
    let run_id = check_run_ids(members)?;
    let count = members[0].shard.count;
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for m in members {
        if let Some(other) = seen.insert(m.shard.index, &m.label) {
            return Err(MergeError::Duplicate {
                label: m.label.clone(),
                other: other.to_string(),
                shard: m.shard,
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
    let starts = members.iter().map(|m| m.window.start_unix_ms);
    let t0_unix_ms = starts.clone().fold(f64::INFINITY, f64::min);
    let latest = starts.fold(f64::NEG_INFINITY, f64::max);
    let skew_ms = (latest - t0_unix_ms).max(0.0);
    let limit_ms = skew_limit_ms(spec, members);
    let mut skew_reason = None;
    if skew_ms > limit_ms {
        let odd = odd_starts(members, limit_ms);
        if !options.allow_skew {
            return Err(MergeError::Skewed {
                odd,
                skew_ms,
                limit_ms,
            });
        }
        skew_reason = Some(format!(
            "the shards did not run together (start skew {skew_ms:.0} ms, above the limit of \
             {limit_ms:.0} ms; merged with --allow-skew): {}",
            odd.join(", ")
        ));
    }
    Ok(Timing {
        t0_unix_ms,
        skew_ms,
        limit_ms,
        run_id,
        skew_reason,
    })
}
