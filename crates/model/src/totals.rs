//! Checked totals for `webtune merge`. Shards come from files anyone can write, so before
//! `ShardMerge` adds one in, every counter it adds is summed here with checked
//! arithmetic: a total past `u64::MAX` (three shards of `u64::MAX` responses) is no
//! measurement, and is refused naming the file and the field, never wrapped or saturated.
//!
//! The list below names what `fold_counts` (merge.rs) adds: a counter added there is listed
//! here too.

use crate::{ErrorCounts, NamedResult, RunResult};
use std::collections::BTreeMap;

/// A shard whose figures cannot be added to the others'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Overflow {
    /// The counter, as the JSON names it (`responses`, `errors.timeout`, `status.200`,
    /// `histograms.total`).
    pub field: String,
}

/// The running sum of every counter over the shards added so far.
#[derive(Debug, Default)]
pub(crate) struct Totals(BTreeMap<String, u64>);

impl Totals {
    /// Add a shard's counters, or name the first that would pass `u64::MAX` (then nothing
    /// is added).
    pub fn add(&mut self, r: &RunResult) -> Result<(), Overflow> {
        let fail = |field: String| Overflow { field };
        let counters = counters(r).map_err(fail)?;
        let mut sums = Vec::with_capacity(counters.len());
        for (field, n) in counters {
            let total = self.0.get(&field).copied().unwrap_or(0);
            match total.checked_add(n) {
                Some(sum) => sums.push((field, sum)),
                None => return Err(fail(field)),
            }
        }
        self.0.extend(sums);
        Ok(())
    }
}

/// Every counter `fold_counts` adds, by name; Err names one that overflows within this
/// result alone (its error kinds' sum).
fn counters(r: &RunResult) -> Result<Vec<(String, u64)>, String> {
    let mut out: Vec<(String, u64)> = [
        ("responses", r.responses),
        ("ok", r.ok),
        ("length_varies", r.length_varies),
        ("bytes_received", r.bytes_received),
        ("body_bytes", r.body_bytes),
        ("bytes_sent", r.bytes_sent),
        ("connections_opened", r.connections_opened),
        ("connect_attempts", r.connect_attempts),
        ("keepalive_responses", r.keepalive_responses),
        ("stale_reconnects", r.stale_reconnects),
        ("abandoned", r.abandoned),
        ("histograms.connect", r.histograms.connect.count()),
        ("histograms.first_byte", r.histograms.first_byte.count()),
        ("histograms.total", r.histograms.total.count()),
        ("histograms.service", r.histograms.service.count()),
        (
            "histograms.tls_handshake",
            r.histograms.tls_handshake.count(),
        ),
    ]
    .into_iter()
    .map(|(name, n)| (name.to_string(), n))
    .collect();
    errors("errors", &r.errors, &mut out)?;
    status("status", &r.status, &mut out);
    if let Some(tls) = &r.tls {
        out.push(("tls.full_handshakes".into(), tls.full_handshakes));
        out.push(("tls.resumed_handshakes".into(), tls.resumed_handshakes));
    }
    if let Some(h2) = &r.h2 {
        for (name, n) in [
            ("goaways", h2.goaways),
            ("resets", h2.resets),
            ("goaway_retries", h2.goaway_retries),
            ("queued_for_stream", h2.queued_for_stream),
            ("flow_control_waits", h2.flow_control_waits),
        ] {
            out.push((format!("h2.{name}"), n));
        }
    }
    for (name, named) in &r.by_name {
        self::named(&format!("by_name.{name}"), named, &mut out)?;
    }
    if let Some(probe) = &r.probe {
        named("probe", probe, &mut out)?;
    }
    if let Some(s) = &r.schedule {
        out.push(("schedule.not_sent".into(), s.not_sent));
    }
    Ok(out)
}

fn named(prefix: &str, n: &NamedResult, out: &mut Vec<(String, u64)>) -> Result<(), String> {
    for (name, v) in [
        ("responses", n.responses),
        ("ok", n.ok),
        ("length_varies", n.length_varies),
        ("body_bytes", n.body_bytes),
        ("histogram", n.histogram.count()),
    ] {
        out.push((format!("{prefix}.{name}"), v));
    }
    errors(&format!("{prefix}.errors"), &n.errors, out)?;
    status(&format!("{prefix}.status"), &n.status, out);
    Ok(())
}

/// Each error kind, and their sum (what every report prints as the errors' total).
fn errors(prefix: &str, e: &ErrorCounts, out: &mut Vec<(String, u64)>) -> Result<(), String> {
    let mut sum: u64 = 0;
    for (kind, n) in e.nonzero() {
        sum = sum
            .checked_add(n)
            .ok_or_else(|| format!("{prefix} (the sum of its kinds)"))?;
        out.push((format!("{prefix}.{}", kind.name()), n));
    }
    out.push((format!("{prefix} (the sum of its kinds)"), sum));
    Ok(())
}

fn status(prefix: &str, s: &BTreeMap<u16, u64>, out: &mut Vec<(String, u64)>) {
    out.extend(s.iter().map(|(code, n)| (format!("{prefix}.{code}"), *n)));
}
