//! One trial's vocabulary, shared by the study (`study`) and its successive halving
//! (`halving`): why a configuration is measured (`Why`), what a run came to (`Outcome`) and
//! the recorded trial (`Trial`). A leaf below both, so halving reads the trials without
//! importing the study that calls it (issue 36 item 5: that was an import circle).

use crate::objective::{Evaluation, LevelSummary};
use crate::space::Config;
use serde::{Deserialize, Serialize};

/// Why a configuration is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Why {
    /// The default, measured twice: the A/A noise floor.
    Baseline,
    /// A rule-of-thumb configuration given by the caller.
    Seed,
    /// A Latin-hypercube point of the start.
    SpaceFilling,
    /// Re-measured: within noise of the other leader.
    Race,
    /// Proposed by the sampler.
    Model,
    /// Measured in full after a promising screening run (`halving`).
    Promote,
}

impl Why {
    pub fn as_str(self) -> &'static str {
        match self {
            Why::Baseline => "baseline",
            Why::Seed => "seed",
            Why::SpaceFilling => "space-filling",
            Why::Race => "race",
            Why::Model => "model",
            Why::Promote => "promote",
        }
    }

    pub fn parse(s: &str) -> Option<Why> {
        [
            Why::Baseline,
            Why::Seed,
            Why::SpaceFilling,
            Why::Race,
            Why::Model,
            Why::Promote,
        ]
        .into_iter()
        .find(|w| w.as_str() == s)
    }
}

/// What one trial came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Measured: one summary per level.
    Measured(Vec<LevelSummary>),
    /// The stack did not start, or the run failed: counts against the budget, never wins.
    Failed(String),
}

/// A recorded trial.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    /// 1-based, in measurement order.
    pub number: usize,
    pub config: Config,
    pub why: Why,
    pub outcome: Outcome,
    /// None for a failed trial.
    pub evaluation: Option<Evaluation>,
    /// The run's share of the full duration (1: full; less: a screening run, `halving`).
    pub fidelity: f64,
}
