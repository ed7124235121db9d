//! What a capacity search measured (`webtune capacity`, `webtune lab capacity`), schema
//! `webtune.capacity/1`: the search's settings, the SLOs, every step (a rate, its verdict and
//! its full `RunResult`) and the conclusion (`capacity_rps`, what bounded it). Documented
//! field by field in `docs/capacity.md`. The search itself is `webtune_search::capacity`.

use crate::{RunResult, Verdict};
use serde::{Deserialize, Serialize};

/// The schema tag of a capacity file.
pub const CAPACITY_SCHEMA: &str = "webtune.capacity/1";

/// How the search moves: exponential growth from `start_rps` until a step breaks an SLO,
/// then bisection down to `precision`, with a repeat of the boundary rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SearchSettings {
    /// The first rate tried, requests/s.
    pub start_rps: f64,
    /// The lowest rate tried when the first step already breaks an SLO.
    pub min_rps: f64,
    /// Never tried above this (None: no ceiling).
    pub max_rps: Option<f64>,
    /// Each growth step multiplies the rate by this (> 1).
    pub growth: f64,
    /// Bisection stops when the bracket (highest held, lowest broken) is narrower than this
    /// share of the held rate, e.g. 0.05.
    pub precision: f64,
    /// Steps at most (the repeat included).
    pub max_steps: u32,
}

impl Default for SearchSettings {
    fn default() -> SearchSettings {
        SearchSettings {
            start_rps: 100.0,
            min_rps: 1.0,
            max_rps: None,
            growth: 2.0,
            precision: 0.05,
            max_steps: 30,
        }
    }
}

/// What one step's measurement says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// Every SLO held, and the generator kept its schedule.
    Held,
    /// An SLO broke, with the generator not to blame.
    Broke,
    /// The generator (its CPU, its timer, or the `-c` connection cap) was the limit: the step
    /// says nothing about the server and can never define the capacity.
    ClientLimited,
    /// Cut short by Ctrl-C: kept in the file, left out of the search.
    Interrupted,
    /// The target was gone: a lab server's main process died during the step, or every
    /// connection the step tried was refused and nothing answered. The search stops here.
    TargetDown,
}

impl StepOutcome {
    pub fn name(self) -> &'static str {
        match self {
            StepOutcome::Held => "held",
            StepOutcome::Broke => "broke",
            StepOutcome::ClientLimited => "client-limited",
            StepOutcome::Interrupted => "interrupted",
            StepOutcome::TargetDown => "target-down",
        }
    }
}

/// One step of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityStep {
    /// The open-loop rate asked for, requests/s.
    pub rate_rps: f64,
    pub outcome: StepOutcome,
    /// Every SLO's verdict at this step, in the order given.
    pub verdicts: Vec<Verdict>,
    /// The SLOs that broke (empty when none did).
    #[serde(default)]
    pub broken: Vec<String>,
    /// Why the generator was the limit (client-limited steps), or why the target is gone
    /// (target-down steps).
    #[serde(default)]
    pub reasons: Vec<String>,
    pub result: RunResult,
}

/// What ended the search, and so what bounds `capacity_rps` from above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityLimit {
    /// An SLO broke just above the capacity: the capacity is the server's (within
    /// `precision`).
    Slo,
    /// The generator was the limit just above: `capacity_rps` is only a lower bound.
    Generator,
    /// `max_rps` held: a lower bound.
    MaxRate,
    /// An SLO broke even at the lowest rate tried: no capacity.
    Unmeetable,
    /// `max_steps` ran out before the bracket was narrow enough.
    StepBudget,
    /// Ctrl-C: the best bounds measured so far.
    Interrupted,
    /// The target went down (a lab server's main process died, or every connect of a step
    /// was refused): the search stopped at that step, with no capacity.
    TargetDown,
}

/// Every step of a capacity search and its conclusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityResult {
    pub schema: String,
    /// "webtune X.Y.Z".
    pub tool: String,
    /// The URL loaded, or the lab stack's name and path.
    pub target: String,
    /// A lab stack's settings ("defaults", or what was set); empty for a URL.
    #[serde(default)]
    pub settings: String,
    /// The SLOs as given (`p99<=100ms`, `errors<=0.1%`).
    pub slos: Vec<String>,
    pub search: SearchSettings,
    /// Seconds each step loads the target.
    pub step_s: f64,
    /// The highest rate at which every SLO held (twice, at the boundary) with the generator
    /// not the limit; None when there is none, and when the target went down.
    pub capacity_rps: Option<f64>,
    pub limit: CapacityLimit,
    /// The lowest rate at which an SLO broke (None when none did).
    pub broke_at_rps: Option<f64>,
    /// The SLOs that broke at `broke_at_rps`: the first to break above the capacity.
    #[serde(default)]
    pub broke_first: Vec<String>,
    /// The lowest rate at which the generator was the limit (None when it never was).
    pub generator_limited_at_rps: Option<f64>,
    /// True when Ctrl-C (SIGTERM, SIGHUP) stopped the search.
    pub interrupted: bool,
    /// Why the search stopped at a target that went down ("nginx (pid 812) died: killed by
    /// SIGKILL"), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_down: Option<String>,
    /// The server changed during the search: the same rate measured again later gave another
    /// verdict or a much worse figure. One line per rate; empty when nothing drifted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<String>,
    /// The conclusion in one sentence, as printed.
    pub summary: String,
    /// Every step, in the order run.
    pub steps: Vec<CapacityStep>,
}

impl CapacityResult {
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}
