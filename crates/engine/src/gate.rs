//! Thresholds against a run (`--threshold`, `--threshold-abort`): a finished result judged
//! and its verdicts kept in it (`judge`), and the live check that asks a run to stop at
//! the first failing threshold on the figures so far (`AbortCheck`, fed each `Progress`).
//! The grammar and the judging are the model's (`webtune_model::threshold`); the exit code
//! a failure means is the caller's.

use crate::Progress;
use webtune_model::threshold::LiveFigures;
use webtune_model::{RunResult, StopToken, Threshold, Verdict};

/// Judge `result` against absolute thresholds and keep the verdicts in it. `aborted_by`:
/// the threshold that stopped the run early, which fails whatever the final figures say.
pub fn judge(result: &mut RunResult, thresholds: &[Threshold], aborted_by: Option<usize>) {
    let mut verdicts: Vec<Verdict> = thresholds
        .iter()
        .filter_map(|t| t.judge(&*result, None).ok())
        .collect();
    if let Some(v) = aborted_by.and_then(|i| verdicts.get_mut(i)) {
        v.aborted = true;
        v.passed = false;
    }
    result.thresholds = verdicts;
}

/// `--threshold-abort`: checks the figures so far at each progress report (after the
/// warm-up) and asks `stop` at the first failing threshold.
pub struct AbortCheck<'a> {
    thresholds: &'a [Threshold],
    enabled: bool,
    warmup_s: f64,
    stop: StopToken,
    /// The index of the threshold that stopped the run.
    pub failed: Option<usize>,
}

impl<'a> AbortCheck<'a> {
    pub fn new(
        thresholds: &'a [Threshold],
        enabled: bool,
        warmup_s: f64,
        stop: StopToken,
    ) -> AbortCheck<'a> {
        AbortCheck {
            thresholds,
            enabled,
            warmup_s,
            stop,
            failed: None,
        }
    }

    pub fn check(&mut self, p: &Progress) {
        let elapsed_s = p.elapsed.as_secs_f64();
        if !self.enabled || self.failed.is_some() || p.attempted == 0 || elapsed_s < self.warmup_s {
            return;
        }
        let live = LiveFigures {
            latency: &p.latency,
            responses: p.responses,
            errors: p.errors,
            attempted: p.attempted,
            elapsed_s,
        };
        self.failed = self
            .thresholds
            .iter()
            .position(|t| t.judge(&live, None).is_ok_and(|v| !v.passed));
        if self.failed.is_some() {
            self.stop.request_stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_first_failing_threshold_stops_the_run_after_the_warmup() {
        let thresholds =
            Threshold::parse_all(&["errors<=0".to_string(), "p99<=1s".to_string()]).unwrap();
        let stop = StopToken::new();
        let mut check = AbortCheck::new(&thresholds, true, 2.0, stop.clone());
        let mut p = Progress {
            attempted: 10,
            responses: 9,
            errors: 1,
            elapsed: Duration::from_secs(1),
            ..Progress::default()
        };
        check.check(&p);
        assert_eq!(check.failed, None, "still in the warm-up");
        p.elapsed = Duration::from_secs(3);
        check.check(&p);
        assert_eq!(check.failed, Some(0));
        assert!(stop.stop_requested());
    }
}
