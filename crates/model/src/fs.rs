//! The small-file benchmark's shapes: what a `webtune fs` run was asked to do (`FsSpec`) and
//! what it measured (`FsResult`, versioned as `webtune.fs/1`, documented field by field in
//! `docs/fs-schema.md`). The workload is postmark's: a pool of files, transactions that pair
//! {create, delete} with {read whole file, append}, then the pool deleted. Latencies are the
//! same `LatencyHistogram`s, the time series the same `IntervalSample`s and the stalls the
//! same `Stall`s as an HTTP run's, so the report machinery reads both.

use crate::result::GeneratorUsage;
use crate::{IntervalSample, LatencyHistogram, Percentiles, Stall};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema tag every fs result carries.
pub const FS_SCHEMA: &str = "webtune.fs/1";

/// The operations timed, in report order (`transaction` is a whole transaction).
pub const FS_OPS: [&str; 6] = ["create", "delete", "read", "append", "fsync", "transaction"];

/// How file data moves between the generator and the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMode {
    /// Blocks gathered in a user-space buffer and moved with as few system calls as it
    /// allows (what stdio does, postmark's default).
    #[default]
    Buffered,
    /// One `read`/`write` system call per block (postmark's `set buffering false`).
    Unbuffered,
    /// `O_DIRECT`, bypassing the page cache, where the file system allows it.
    Direct,
}

/// When written data is forced to stable storage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncMode {
    /// Never (postmark).
    #[default]
    None,
    /// After every file written (create, append), before it is closed.
    Write,
    /// At the end of every transaction: the files it wrote, then the directories it
    /// changed (what a mail server does before it acknowledges a message).
    Transaction,
}

/// What a run was asked to do. Defaults are postmark's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsSpec {
    /// The directory the pool is made in (the pool is a fresh subdirectory of it).
    pub location: String,
    /// Files created before the transactions (postmark's `set number`).
    pub files: u64,
    /// Transactions to run; with `duration_s` the run ends at whichever comes first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// Length of the transaction phase, seconds (`-d`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// File sizes, bytes, uniform in `size_min..=size_max`.
    pub size_min: u64,
    pub size_max: u64,
    /// Subdirectories the files are spread over (postmark uses them from 2 on).
    pub subdirs: u32,
    pub read_block: u64,
    pub write_block: u64,
    /// Chance in 10 of read over append; -1 leaves read/append out.
    pub bias_read: i32,
    /// Chance in 10 of create over delete; -1 leaves create/delete out.
    pub bias_create: i32,
    pub io: IoMode,
    pub fsync: FsyncMode,
    /// `fdatasync` instead of `fsync`.
    #[serde(default)]
    pub fdatasync: bool,
    /// Worker threads, each with its own part of the pool (`-c`).
    pub workers: u32,
    /// Seed of postmark's random-number generator (worker `w` uses `seed + w`).
    pub seed: u32,
    /// Length of one time-series interval, seconds.
    pub interval_s: f64,
}

impl Default for FsSpec {
    fn default() -> Self {
        FsSpec {
            location: ".".into(),
            files: 500,
            transactions: Some(500),
            duration_s: None,
            size_min: 500,
            size_max: 10_000,
            subdirs: 0,
            read_block: 512,
            write_block: 512,
            bias_read: 5,
            bias_create: 5,
            io: IoMode::Buffered,
            fsync: FsyncMode::None,
            fdatasync: false,
            workers: 1,
            seed: 42,
            interval_s: 1.0,
        }
    }
}

/// The three phases' lengths, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FsPhases {
    pub create_s: f64,
    pub transactions_s: f64,
    pub delete_s: f64,
}

/// The phases' boundaries as whole Unix seconds, as postmark's `time()` takes them: its
/// report's figures are computed from these.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WholeSecondMarks {
    pub start: u64,
    pub transactions_start: u64,
    pub transactions_end: u64,
    pub end: u64,
}

/// Files touched, counted as postmark counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileCounts {
    /// Every file created (the pool and those of transactions).
    pub created: u64,
    /// Created in the creation phase.
    pub created_alone: u64,
    pub read: u64,
    pub appended: u64,
    /// Every file deleted (by transactions and in the deletion phase).
    pub deleted: u64,
    /// Deleted in the deletion phase.
    pub deleted_alone: u64,
}

/// One operation's count, failures and latency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FsOpResult {
    pub count: u64,
    pub errors: u64,
    pub latency: Percentiles,
    pub histogram: LatencyHistogram,
}

/// Everything one fs run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsResult {
    pub schema: String,
    pub tool: String,
    pub started_at_unix_ms: u64,
    pub spec: FsSpec,
    /// The pool's directory (deleted at the end).
    pub pool_dir: String,
    /// The I/O actually used: `direct` falls back to `unbuffered` where the file system
    /// refuses `O_DIRECT` (tmpfs before Linux 6.6), and says so in `notes`.
    pub io_used: IoMode,
    /// Stopped early (Ctrl-C, SIGTERM, SIGHUP): the pool was still deleted.
    pub interrupted: bool,
    /// postmark's "out of files": every file was deleted before the transactions ended.
    pub out_of_files: bool,
    /// The whole run (creation, transactions, deletion), seconds.
    pub duration_s: f64,
    pub phases: FsPhases,
    pub marks: WholeSecondMarks,
    pub transactions: u64,
    pub files: FileCounts,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Transactions per second of the transaction phase.
    pub transactions_per_s: f64,
    /// Bytes per second over the whole run (postmark's "per second" of data).
    pub read_bytes_per_s: f64,
    pub written_bytes_per_s: f64,
    /// Per operation (`FS_OPS`): count, errors, latency.
    pub ops: BTreeMap<String, FsOpResult>,
    /// Per interval: `responses` are transactions finished, `bytes` read plus written,
    /// latencies those of the transactions, `errors` empty and `open_connections` the
    /// workers still running.
    pub timeline: Vec<IntervalSample>,
    /// Stretches of at least 100 ms in which no worker finished an operation (a writeback
    /// storm or a journal commit: the file system's stall).
    pub stalls: Vec<Stall>,
    pub generator: GeneratorUsage,
    /// Generator CPU (user + system, every phase) per transaction, µs.
    pub cpu_per_transaction_us: f64,
    /// The first failure of each kind, and fallbacks taken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Operations the file system itself refused: out of space, read-only, an I/O error of
    /// its device. Any of them makes the run a failed one (`storage_failure`).
    #[serde(default, skip_serializing_if = "StorageFailures::is_none")]
    pub storage_failures: StorageFailures,
    /// A lab run's file system (`webtune lab run fs`): its parameters and the samples of
    /// its device, page cache and CPU taken during the run; absent for `webtune fs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::ServerSamples>,
}

/// Operations that failed because the file system could not take them, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageFailures {
    /// Out of space or quota: ENOSPC, EDQUOT.
    #[serde(default)]
    pub no_space: u64,
    /// The file system is read-only (EROFS): ext4 remounts itself read-only on an error.
    #[serde(default)]
    pub read_only: u64,
    /// An I/O error of the device (EIO).
    #[serde(default)]
    pub io_error: u64,
    /// A lab file system found mounted read-only after the run (its mount, as the kernel
    /// shows it), whether or not an operation saw it.
    #[serde(default)]
    pub remounted_read_only: bool,
}

impl StorageFailures {
    pub fn is_none(&self) -> bool {
        *self == StorageFailures::default()
    }

    /// Count one failed operation's error by its cause; false when it is none of these.
    pub fn count(&mut self, errno: Option<i32>) -> bool {
        match errno {
            Some(libc_errno::ENOSPC) | Some(libc_errno::EDQUOT) => self.no_space += 1,
            Some(libc_errno::EROFS) => self.read_only += 1,
            Some(libc_errno::EIO) => self.io_error += 1,
            _ => return false,
        }
        true
    }

    pub fn add(&mut self, other: &StorageFailures) {
        self.no_space += other.no_space;
        self.read_only += other.read_only;
        self.io_error += other.io_error;
        self.remounted_read_only |= other.remounted_read_only;
    }
}

/// The Linux error numbers `StorageFailures` tells apart (asm-generic/errno-base.h and
/// errno.h; the model does no I/O and takes no libc).
mod libc_errno {
    pub const EIO: i32 = 5;
    pub const ENOSPC: i32 = 28;
    pub const EROFS: i32 = 30;
    pub const EDQUOT: i32 = 122;
}

impl FsResult {
    /// Failures over every operation.
    pub fn errors(&self) -> u64 {
        self.ops.values().map(|o| o.errors).sum()
    }

    /// When the file system itself failed during the run (ran out of space, turned
    /// read-only, an I/O error), the sentence that says so; the run's figures then describe
    /// a failing file system, not its speed, and the commands exit 1.
    pub fn storage_failure(&self) -> Option<String> {
        let f = &self.storage_failures;
        if f.is_none() {
            return None;
        }
        let ops = |n: u64| format!("{n} operation{}", if n == 1 { "" } else { "s" });
        let mut what = Vec::new();
        if f.no_space > 0 {
            what.push(format!(
                "ran out of space ({} failed: ENOSPC)",
                ops(f.no_space)
            ));
        }
        if f.read_only > 0 || f.remounted_read_only {
            let seen = if f.read_only > 0 {
                format!(" ({} failed: EROFS)", ops(f.read_only))
            } else {
                " (its mount shows ro after the run)".to_string()
            };
            what.push(format!("turned read-only{seen}"));
        }
        if f.io_error > 0 {
            what.push(format!("had I/O errors ({} failed: EIO)", ops(f.io_error)));
        }
        Some(format!(
            "the file system {}: these figures describe a failing file system, not its speed",
            what.join(" and ")
        ))
    }

    /// One operation's results (empty when it never ran).
    pub fn op(&self, name: &str) -> FsOpResult {
        self.ops.get(name).cloned().unwrap_or_default()
    }

    /// Recompute percentiles and rates from the histograms and counts.
    pub fn finish_summaries(&mut self) {
        for op in self.ops.values_mut() {
            op.latency = op.histogram.percentiles();
        }
        let per = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
        self.transactions_per_s = per(self.transactions, self.phases.transactions_s);
        self.read_bytes_per_s = per(self.bytes_read, self.duration_s);
        self.written_bytes_per_s = per(self.bytes_written, self.duration_s);
        let cpu = self.generator.user_cpu_s + self.generator.system_cpu_s;
        self.cpu_per_transaction_us = if self.transactions > 0 {
            cpu * 1e6 / self.transactions as f64
        } else {
            0.0
        };
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("FsResult always serialises")
    }

    /// Parse a saved fs result, refusing other schemas with a clear message.
    pub fn from_json(text: &str) -> Result<FsResult, FsParseError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| FsParseError::Json(e.to_string()))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(FS_SCHEMA) => {}
            Some(other) => return Err(FsParseError::Schema(other.to_string())),
            None => return Err(FsParseError::Schema("(none)".into())),
        }
        serde_json::from_value(value).map_err(|e| FsParseError::Json(e.to_string()))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FsParseError {
    #[error("not a webtune fs result: {0}")]
    Json(String),
    #[error("result schema {0:?} is not an fs result ({FS_SCHEMA:?})")]
    Schema(String),
}

/// The schema tag of `webtune fs --sweep-workers` results.
pub const FS_SWEEP_SCHEMA: &str = "webtune.fs-sweep/1";

/// The same workload at several worker counts, one full result per level, in run order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsSweep {
    pub schema: String,
    pub levels: Vec<FsResult>,
}

/// The schema tag of a saved result's text, if it has one (to tell run and fs results
/// apart before parsing either).
pub fn schema_of(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    value.get("schema")?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_round_trips_and_other_schemas_are_refused() {
        let mut ops = BTreeMap::new();
        let mut h = LatencyHistogram::new();
        h.record(120);
        ops.insert(
            "read".to_string(),
            FsOpResult {
                count: 1,
                errors: 0,
                latency: h.percentiles(),
                histogram: h,
            },
        );
        let mut r = FsResult {
            schema: FS_SCHEMA.into(),
            tool: "webtune test".into(),
            started_at_unix_ms: 1,
            spec: FsSpec::default(),
            pool_dir: "/tmp/x".into(),
            io_used: IoMode::Buffered,
            interrupted: false,
            out_of_files: false,
            duration_s: 2.0,
            phases: FsPhases {
                create_s: 0.5,
                transactions_s: 1.0,
                delete_s: 0.5,
            },
            marks: WholeSecondMarks::default(),
            transactions: 500,
            files: FileCounts::default(),
            bytes_read: 1000,
            bytes_written: 2000,
            transactions_per_s: 0.0,
            read_bytes_per_s: 0.0,
            written_bytes_per_s: 0.0,
            ops,
            timeline: Vec::new(),
            stalls: Vec::new(),
            generator: GeneratorUsage {
                user_cpu_s: 0.01,
                system_cpu_s: 0.04,
                max_rss_kib: 1,
                threads: 1,
            },
            cpu_per_transaction_us: 0.0,
            notes: Vec::new(),
            storage_failures: StorageFailures::default(),
            server: None,
        };
        r.finish_summaries();
        assert_eq!(r.transactions_per_s, 500.0);
        assert!((r.cpu_per_transaction_us - 100.0).abs() < 1e-6);
        let back = FsResult::from_json(&r.to_json_pretty()).unwrap();
        assert_eq!(back, r);
        assert_eq!(schema_of(&r.to_json_pretty()).as_deref(), Some(FS_SCHEMA));
        assert!(FsResult::from_json("{\"schema\":\"webtune.run/1\"}").is_err());
        assert!(!r.to_json_pretty().contains("storage_failures"));
        assert_eq!(r.storage_failure(), None);
        // A file system that failed says so, and the count survives a round trip.
        r.storage_failures.count(Some(28));
        r.storage_failures.count(Some(30));
        r.storage_failures.count(Some(30));
        assert!(
            !r.storage_failures.count(Some(2)),
            "ENOENT is not the file system's"
        );
        let line = r.storage_failure().unwrap();
        assert!(
            line.starts_with(
                "the file system ran out of space (1 operation failed: ENOSPC) and turned \
                 read-only (2 operations failed: EROFS)"
            ),
            "{line}"
        );
        let back = FsResult::from_json(&r.to_json_pretty()).unwrap();
        assert_eq!(back.storage_failures, r.storage_failures);
    }
}
