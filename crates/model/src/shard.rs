//! Shards: one test split over several generators that never talk to each other (k6's
//! execution-segment idea). `-c`, `--rate`, `-n` and `--stages` describe the whole test;
//! shard i of n takes a deterministic share of each, so n copies of one command line, each
//! with its own `--shard i/n`, together make the test asked for. This module owns the shard
//! notation, the shares, the run a shard belongs to (`--run-id`, or derived), and the
//! records a sharded result keeps (its planned start, the clock it used and its measured
//! window; a merged result's list of shards and their start skew). Which shards may be
//! merged is `shard_check`'s call.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count`, 1-based as written (`--shard 2/8`: the second of eight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--shard {0:?} is not I/N with 1 ≤ I ≤ N (e.g. --shard 2/8)")]
pub struct ShardError(pub String);

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError(text.to_string());
        let (i, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// This shard's part of a whole-test count (connections, requests): the parts of all
    /// shards differ by at most one and add up to `total`; the first shards take the rest.
    pub fn share(self, total: u64) -> u64 {
        let n = u64::from(self.count.max(1));
        let i = u64::from(self.index.saturating_sub(1));
        total / n + u64::from(i < total % n)
    }

    /// This shard's fraction of a whole-test count (to scale a connections ramp by).
    pub fn fraction_of(self, total: u64) -> f64 {
        if total == 0 {
            0.0
        } else {
            self.share(total) as f64 / total as f64
        }
    }

    /// Open loop: the position of this shard's `worker`-th stream (of `threads`) among all
    /// `count × threads` streams of the whole test. Arrival k of the whole schedule (k = 0,
    /// 1, …) belongs to shard `k mod count` (0-based), and within it to worker
    /// `(k div count) mod threads`: shard i owns every n-th scheduled arrival, whatever the
    /// other shards' thread counts, so the merged schedule is the one asked for.
    pub fn stream(self, worker: u32, threads: u32) -> (u64, u64) {
        let n = u64::from(self.count.max(1));
        let i = u64::from(self.index.saturating_sub(1));
        (i + n * u64::from(worker), n * u64::from(threads.max(1)))
    }
}

/// How a sharded (or `--start-at`) run started: when it was asked to, the clock it used,
/// the run it belongs to and the stretch it measured. The actual start is the result's
/// `started_at_unix_ms` (to the millisecond; `window` has the sub-millisecond part).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartRecord {
    /// The `--start-at` time, ms since the Unix epoch (None: started at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_unix_ms: Option<u64>,
    /// Actual start minus planned start, ms (positive: late).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<f64>,
    /// The clock the start was read from ("CLOCK_REALTIME").
    pub clock: String,
    /// The kernel's word on that clock (adjtimex): synchronised to a time source (NTP,
    /// PTP), and its estimated and maximum error in µs. None where it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronised: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_error_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_us: Option<u64>,
    /// The run this shard is part of: `--run-id`, or derived from an absolute `--start-at`
    /// and the spec (`derived_run_id`). `webtune merge` refuses shards of different runs.
    /// None: neither was given (a relative `--start-at`, or none), or a result written
    /// before run ids were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The stretch whose requests make the summary, on the wall clock; None in results
    /// written before it was recorded (the merge then works it out from the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

/// A stretch of wall-clock time: ms since the Unix epoch, with the clock's sub-millisecond
/// part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub start_unix_ms: f64,
    pub end_unix_ms: f64,
}

/// The longest run id (`--run-id`): a job id, a UUID or a date fit many times over.
pub const MAX_RUN_ID_LEN: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--run-id {0:?} is not a run id: give 1 to 128 letters, digits or . _ - : @ + \
     (e.g. --run-id slurm-4242)"
)]
pub struct RunIdError(pub String);

/// Check a `--run-id`: 1 to `MAX_RUN_ID_LEN` ASCII letters, digits and `._-:@+` (what
/// job ids, UUIDs and timestamps are written with; nothing a shell or a file name would
/// mangle).
pub fn parse_run_id(text: &str) -> Result<String, RunIdError> {
    let fits = |b: u8| b.is_ascii_alphanumeric() || b"._-:@+".contains(&b);
    if text.is_empty() || text.len() > MAX_RUN_ID_LEN || !text.bytes().all(fits) {
        return Err(RunIdError(text.to_string()));
    }
    Ok(text.to_string())
}

/// One shard of a merged result, as `webtune merge` found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardSummary {
    pub shard: Shard,
    pub started_at_unix_ms: u64,
    /// The shard's measured window began this long after the earliest shard's, ms (with
    /// the clock's sub-millisecond part).
    pub start_offset_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartRecord>,
    pub duration_s: f64,
    pub responses: u64,
    pub errors: u64,
    pub requests_per_s: f64,
    pub client_limited: bool,
}

/// What a merged result says about its shards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardSet {
    /// The latest shard's start minus the earliest's, ms (measured windows, with the
    /// clock's sub-millisecond part).
    pub start_skew_ms: f64,
    /// The most skew the merge accepts for this test: 1 s or 10% of its length, whichever
    /// is larger. 0 in results merged before it was recorded.
    #[serde(default)]
    pub start_skew_limit_ms: f64,
    /// The shards' common run id, if they had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub shards: Vec<ShardSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation_parses_and_refuses() {
        assert_eq!("2/8".parse(), Ok(Shard { index: 2, count: 8 }));
        assert_eq!(
            " 1 / 1 ".parse::<Shard>().map(|s| s.to_string()),
            Ok("1/1".into())
        );
        for bad in ["0/8", "9/8", "2", "a/8", "2/0", "-1/3", ""] {
            let e = bad.parse::<Shard>().expect_err(bad).to_string();
            assert!(e.contains("is not I/N"), "{e}");
        }
    }

    #[test]
    fn shares_add_up_to_the_whole() {
        for (total, n) in [(10u64, 3u32), (2, 4), (3000, 8), (7, 1)] {
            let parts: Vec<u64> = (1..=n)
                .map(|index| Shard { index, count: n }.share(total))
                .collect();
            assert_eq!(parts.iter().sum::<u64>(), total, "{total}/{n}: {parts:?}");
            assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn streams_cover_every_arrival_once() {
        // Three shards with different thread counts: arrivals 0..60 each owned once.
        let threads = [2u32, 1, 3];
        let mut owners = vec![0u32; 60];
        for (s, &t) in threads.iter().enumerate() {
            let shard = Shard {
                index: s as u32 + 1,
                count: 3,
            };
            for w in 0..t {
                let (first, step) = shard.stream(w, t);
                let mut k = first;
                while k < 60 {
                    owners[k as usize] += 1;
                    assert_eq!(k % 3, s as u64, "shard {shard} owns every 3rd arrival");
                    k += step;
                }
            }
        }
        assert!(owners.iter().all(|&n| n == 1), "{owners:?}");
    }
}
