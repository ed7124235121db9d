//! Reading a file a command takes whole (`webtune_report::saved`: capped, one-line errors,
//! what a saved file holds). Commands that only read and report (merge, compare, report,
//! advise) hold `signals::exit_at_once` while they read, so that a read blocked on a FIFO
//! ends at the first Ctrl-C or SIGTERM.

use std::path::Path;
pub use webtune_report::saved::Saved;
use webtune_report::saved::{self};

/// A saved result's text, at most `MAX_SAVED_BYTES`.
pub fn read_saved_text(path: &Path) -> anyhow::Result<String> {
    Ok(saved::read_saved_text(path)?)
}

/// The text of `path`, at most `cap` bytes (`what` names the kind of file in refusals).
pub fn read_capped(path: &Path, cap: u64, what: &str) -> anyhow::Result<String> {
    Ok(saved::read_capped(path, cap, what)?)
}

/// A saved run, sweep, capacity search or tune report.
pub fn read_saved(path: &Path) -> anyhow::Result<Saved> {
    Ok(saved::read_saved(path)?)
}

/// A saved single run (not a sweep).
pub fn read_run(path: &Path) -> anyhow::Result<webtune_model::RunResult> {
    Ok(saved::read_run(path)?)
}
