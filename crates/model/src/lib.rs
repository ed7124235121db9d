//! The data model of webtune: what a run was asked to do (`RunSpec`), what it measured
//! (`RunResult`, versioned as `webtune.run/1`), latency histograms in HdrHistogram's own
//! serialised form, error kinds and per-interval samples — and the one seedable random
//! generator (`rng`) that the engine's hot path and the tuner's search both draw from, so
//! the search needs no engine for it. `dropin` maps ab's, http_load's and postal's
//! command lines to run specs.
//!
//! This crate owns the shapes and their (de)serialisation only. It does no I/O: no sockets,
//! no files, no clocks. Every other crate speaks these types.

pub mod capacity;
pub mod defaults;
pub mod dropin;
pub mod errors;
pub mod flag_values;
pub mod format;
pub mod fs;
pub mod histogram;
pub mod journey;
mod merge;
pub mod result;
pub mod rng;
pub mod run_id;
pub mod server;
pub mod shard;
mod shard_check;
mod shard_merge;
pub mod smtp;
pub mod span;
pub mod spec;
pub mod stall;
pub mod start_at;
pub mod stop;
pub mod sweep;
pub mod threshold;
mod totals;
pub mod units;
pub mod validity;
pub mod verdict;
pub mod window;

pub use errors::{ErrorCounts, ErrorKind};
pub use histogram::{LatencyHistogram, Percentiles};
pub use journey::JourneyResult;
pub use result::{
    H2Summary, H3Summary, IntervalSample, LatencySummary, NamedResult, RepeatSummary, RunResult,
    Schedule, Stall, TlsSummary, Validity, MAX_SAVED_BYTES, SCHEMA,
};
pub use run_id::derived_run_id;
pub use server::ServerSamples;
pub use shard::{
    parse_run_id, RunIdError, Shard, ShardError, ShardSet, ShardSummary, StartRecord, Window,
};
pub use shard_check::{MergeError, MergeOptions};
pub use shard_merge::ShardMerge;
pub use smtp::{SmtpSpec, SmtpSummary, SMTP_SCHEMA};
pub use spec::{
    Arrival, IoBackend, IoChoice, LoadMode, ProbeSpec, RunSpec, SpecError, Stage, StopCondition,
    TlsOptions, MAX_RATE_PER_S,
};
pub use stop::StopToken;
pub use threshold::{Threshold, ThresholdError, Verdict};
pub use units::{parse_duration, DurationError, StatusError, StatusRanges};
