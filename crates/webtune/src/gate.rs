//! Thresholds on the command line (`--threshold EXPR`, repeatable; `--threshold-abort`): the
//! flags shared by `bench`, `lab run`, `merge` and `compare`, and exit code 99 when one
//! fails (k6's convention). The grammar is the model's (`webtune_model::threshold`),
//! judging a result and the live check the engine's (`webtune_engine::gate`).

use webtune_model::threshold;
use webtune_model::{Threshold, Verdict};

/// What the binary makes of `ThresholdArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait ThresholdArgsExt {
    /// Parse every `--threshold`; relative ones (`+10%`) only where there is a baseline.
    fn parse(&self, baseline: bool) -> anyhow::Result<Vec<Threshold>>;
}

impl ThresholdArgsExt for ThresholdArgs {
    fn parse(&self, baseline: bool) -> anyhow::Result<Vec<Threshold>> {
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

use webtune_cli::flags::threshold::ThresholdArgs;
pub use webtune_engine::gate::judge;

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

/// `--threshold-abort`'s live check (`webtune_engine::gate::AbortCheck`), stopping the run
/// through the process's stop token.
pub fn abort_check(
    thresholds: &[Threshold],
    enabled: bool,
    warmup_s: f64,
) -> webtune_engine::gate::AbortCheck<'_> {
    webtune_engine::gate::AbortCheck::new(
        thresholds,
        enabled,
        warmup_s,
        crate::signals::stop_token(),
    )
}
