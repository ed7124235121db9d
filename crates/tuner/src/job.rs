//! What a tune is asked to do (`Job`: the subject, the load, the search, the proof and how
//! it measures) and how it tells its caller what happens (`Listener`, with `level_label`
//! naming a load level). A leaf below the driver and both proofs, which all read it.

use crate::subject::Subject;
use std::time::Duration;
use webtune_engine::Workload;
use webtune_lab::trial::{Level, TrialEvents};
use webtune_model::RunSpec;
use webtune_search::interleave::Settings;
use webtune_search::objective::{Objective, Slo};
use webtune_search::space::{Config, Space};
use webtune_search::study::StudySettings;

/// How the proof measures the default against the winner.
#[derive(Debug, Clone, PartialEq)]
pub enum ProofProtocol {
    /// `--confirm` pairs of whole runs, A B B A … (`paired`).
    Sequential,
    /// Both stacks at once, in alternating blocks, with these settings (`decide_on` is set
    /// from the objective).
    Interleaved(Settings),
}

/// How the search measures each candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchProtocol {
    /// Each candidate alone, one lab trial after another.
    Sequential,
    /// Each candidate at once with the incumbent, in alternating blocks for the trial's
    /// duration (`interleaved_search`); these settings' block, discard, margin and α, the
    /// budget and metric set per trial.
    Interleaved(Settings),
}

/// Everything a tune needs: what, the load, the search and the proof.
pub struct Job {
    pub subject: Subject,
    /// The load of every level (its URL a path on the target).
    pub load: RunSpec,
    pub workload: Workload,
    /// Load levels; the worst level's figure counts.
    pub levels: Vec<Level>,
    pub sample_interval: Duration,
    pub space: Space,
    pub objective: Objective,
    pub slos: Vec<Slo>,
    /// Rule-of-thumb configurations measured right after the default (the advised one,
    /// when there is one, among them: see `advice`).
    pub seeds: Vec<Config>,
    /// `--from-advice`: the advisor's configuration for the stack (a seed) with the rules
    /// behind it, journaled with its trials and judged in the report.
    pub advice: Option<webtune_search::advised::Advice>,
    pub settings: StudySettings,
    /// Proof pairs after the search (0: no proof).
    pub confirm: usize,
    /// How the proof measures: sequential pairs, or both stacks interleaved
    /// (`interleaved_proof`; where it cannot run, the sequential pairs are used, said so).
    pub protocol: ProofProtocol,
    /// How the search measures: each candidate alone, or interleaved with the incumbent.
    pub search: SearchProtocol,
    /// Why a lab web stack's search is sequential although interleaved is the default
    /// (several levels, `-n`, an objective the pairs do not decide on); the driver says it.
    pub search_note: Option<String>,
    /// `--maximize capacity`: every trial is a capacity search (open loop, grow then
    /// bisect) under these SLOs, and its figure is the capacity found (req/s); a trial that
    /// finds none is a failed trial. The objective is then `Objective::MaximizeCapacity`.
    pub capacity: Option<CapacityObjective>,
    /// `--budget`: the search starts no trial once its trials (over every run of the tune,
    /// from the journal) have taken this long; `settings.trials` still caps the count.
    pub time_budget: Option<Duration>,
}

/// The SLOs and search settings of `--maximize capacity`.
#[derive(Debug, Clone)]
pub struct CapacityObjective {
    pub slos: Vec<webtune_model::Threshold>,
    pub search: webtune_model::capacity::SearchSettings,
}

/// What the loop tells its caller (progress lines); the trial's own events come through
/// the `TrialEvents` half.
pub trait Listener: TrialEvents {
    /// Measured run `number` (of `of` in the search, or of the proof's runs; `of` 0 under
    /// `--budget`, where the trial cap is no horizon) begins.
    fn trial_starting(&mut self, _phase: &str, _number: usize, _of: usize, _config: &Config) {}
    /// It ended: one line of what it measured (or why it failed) and the best so far.
    fn trial_done(&mut self, _line: &str) {}
}

/// How reports name a level: `c=256`, `rate=1000/s`, or `as given`.
pub fn level_label(level: Level) -> String {
    match level {
        Level::AsSpecified => "as given".into(),
        other => other.label(),
    }
}
