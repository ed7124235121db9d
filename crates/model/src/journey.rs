//! A journey's results (`by_journey` in a run's JSON): how many walks of it a virtual user
//! completed, how many failed and where (the step and the error kind that ended them), and
//! how long a whole walk took. The per-step figures are the run's `by_name` rows.

use crate::errors::ErrorKind;
use crate::histogram::{LatencyHistogram, Percentiles};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One `[[journey]]` of a scenario, all its virtual users together.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JourneyResult {
    /// Walks that ran every step to the end without an error.
    pub completed: u64,
    /// Walks ended by an error in one of their steps.
    pub failed: u64,
    /// The step that ended a failed walk, then the error kind, then how many.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failed_by: BTreeMap<String, BTreeMap<ErrorKind, u64>>,
    /// Time of a completed walk: its first step's start to its last step's answer, think
    /// times between steps included.
    pub latency: Percentiles,
    pub histogram: LatencyHistogram,
}

impl JourneyResult {
    /// A walk ended in `step` with `kind`.
    pub fn failed_at(&mut self, step: &str, kind: ErrorKind) {
        self.failed += 1;
        *self
            .failed_by
            .entry(step.to_string())
            .or_default()
            .entry(kind)
            .or_insert(0) += 1;
    }

    /// Add another part's counts (shards, workers).
    pub fn merge(&mut self, other: &JourneyResult) {
        self.completed += other.completed;
        self.failed += other.failed;
        for (step, kinds) in &other.failed_by {
            let mine = self.failed_by.entry(step.clone()).or_default();
            for (kind, n) in kinds {
                *mine.entry(*kind).or_insert(0) += n;
            }
        }
        self.histogram.merge(&other.histogram);
    }

    /// Compute the percentiles from the histogram.
    pub fn finish(&mut self) {
        self.latency = self.histogram.percentiles();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_kept_by_step_and_kind_and_merge() {
        let mut a = JourneyResult::default();
        a.failed_at("login", ErrorKind::Extract);
        a.completed = 2;
        let mut b = JourneyResult::default();
        b.failed_at("login", ErrorKind::Extract);
        b.failed_at("reply", ErrorKind::UnexpectedStatus);
        a.merge(&b);
        assert_eq!(a.failed, 3);
        assert_eq!(a.completed, 2);
        assert_eq!(a.failed_by["login"][&ErrorKind::Extract], 2);
        let json = serde_json::to_string(&a).unwrap();
        assert!(
            json.contains(r#""failed_by":{"login":{"extract":2},"reply":{"unexpected_status":1}}"#),
            "{json}"
        );
    }
}
