//! Thresholds on the command line (`--threshold EXPR`, repeatable; `--threshold-abort`): the
//! flags shared by `bench`, `lab run`, `merge` and `compare`, judging a result, the live
//! check that stops a run early, and exit code 99 when one fails (k6's convention). The
//! grammar and the judging are the model's (`webtune_model::threshold`).

use webtune_engine::Progress;
use webtune_model::threshold::{self, LiveFigures};
use webtune_model::{RunResult, StopToken, Threshold, Verdict};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ThresholdArgs {
    /// Pass/fail rule checked after the run, repeatable: p50|p90|p99|p999|pN|mean|max <=
    /// DURATION, errors <= N% (or a count), rps >= N. Every verdict is printed and kept in
    /// the JSON; exit 99 when one fails. E.g. --threshold 'p99<=50ms' --threshold 'errors<=0.1%'.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub threshold: Vec<String>,
    /// Also check the thresholds at every interval (on the figures so far, after any
    /// --warmup) and stop the run as soon as one fails (exit 99).
    #[arg(long = "threshold-abort", requires = "threshold")]
    pub threshold_abort: bool,
}

impl ThresholdArgs {
    /// Parse every `--threshold`; relative ones (`+10%`) only where there is a baseline.
    pub fn parse(&self, baseline: bool) -> anyhow::Result<Vec<Threshold>> {
        let parsed = Threshold::parse_all(&self.threshold)?;
        if !baseline {
            if let Some(t) = parsed.iter().find(|t| t.is_relative()) {
                anyhow::bail!(
                    "--threshold {:?} is relative to a baseline: use it with compare",
                    t.text
                );
            }
        }
        Ok(parsed)
    }
}

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

/// The command's own status: 130 after a stop signal, 99 when a threshold failed, else
/// `otherwise`.
pub fn status(verdicts: &[Verdict], otherwise: i32) -> i32 {
    if crate::signals::first_signal_name().is_some() {
        crate::exit::INTERRUPTED
    } else if !threshold::all_passed(verdicts) {
        crate::exit::THRESHOLD_FAILED
    } else {
        otherwise
    }
}

/// `--threshold-abort`: checks the figures so far at each progress report and asks the run
/// to stop at the first failing threshold.
pub struct AbortCheck<'a> {
    thresholds: &'a [Threshold],
    enabled: bool,
    warmup_s: f64,
    stop: StopToken,
    /// The index of the threshold that stopped the run.
    pub failed: Option<usize>,
}

impl<'a> AbortCheck<'a> {
    pub fn new(thresholds: &'a [Threshold], enabled: bool, warmup_s: f64) -> AbortCheck<'a> {
        AbortCheck {
            thresholds,
            enabled,
            warmup_s,
            stop: crate::signals::stop_token(),
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
