//! Decisive comparisons on a noisy machine (issue 34): two arms, A and B, both live, the load
//! alternating between them in short blocks, each pair of blocks in an order drawn at random;
//! per metric the paired log-ratio B/A of adjacent blocks with an always-valid confidence
//! sequence, so the comparison may be looked at after every pair and stop as soon as the
//! answer is known. This module owns the protocol and its statistics only: `block` (what a
//! block measured, the settings), `schedule` (the
//! block order and the budget, starts included), `sequence` (the confidence sequence),
//! `judge` (per-metric intervals, the stopping rule, the verdict), `render` (its words) and
//! `as_proof` (the comparison as the tuner's proof) and `search` (a search trial measured
//! against its incumbent, told on the incumbent's scale) and `joint` (every paired
//! trial's figures on one scale, by a joint fit of all pairs' ratios); its page is
//! `webtune_report::interleave_html`.
//! It sends no load and reads no clock: the caller measures each block (webtune-tuner's
//! `interleaved` does it with the engine) and hands it back as a `Block`.

pub mod as_proof;
pub mod block;
pub mod joint;
pub mod judge;
pub mod render;
pub mod schedule;
pub mod search;
pub mod sequence;

pub use block::{Block, Interference, Settings, Side};
pub use judge::{judge, Judgement, MetricInterval, Verdict};
pub use schedule::{Protocol, Step};

/// The JSON schema of a live comparison's report.
pub const SCHEMA: &str = "webtune.compare-live/1";
