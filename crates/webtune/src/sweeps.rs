//! What every sweeping command (sweep, smtp -c A,B,…, lab sweep, lab run postfix) makes of
//! a trial's levels: the sweep (`TrialOutcome::into_sweep`, the lab's) with its knee (the
//! rule is `webtune_report::knee`'s), and the lines that say which levels nothing answered.
//! No command owns it.

use crate::output;
use webtune_lab::trial::TrialOutcome;
use webtune_model::sweep::{SweepResult, SweepVariable};
use webtune_report::knee::knee_level;
use webtune_report::sweep::unanswered;

/// One `webtune: WHO: …` line on stderr per level without a successful response; true when
/// there was one.
pub fn warn_unanswered(sweep: &SweepResult, who: &str) -> bool {
    let lines = unanswered(sweep);
    for line in &lines {
        output::warn(&format!("{who}: {line}"));
    }
    !lines.is_empty()
}

/// A sweep's result from the trial that ran its levels, with its knee (the rule, and which
/// levels it leaves out, are `webtune_report::knee`'s); `who` names the command in the
/// interrupted line.
pub fn sweep_of(outcome: TrialOutcome, variable: SweepVariable, who: &str) -> SweepResult {
    let mut sweep = outcome.into_sweep(&format!("webtune {}", env!("CARGO_PKG_VERSION")), variable);
    if sweep.interrupted {
        eprintln!(
            "{who}: interrupted: keeping the {} level(s) measured",
            sweep.levels.len()
        );
    }
    sweep.knee = knee_level(&sweep);
    sweep
}
