//! Why a tune stopped short of a report: one leaf that the loop (`driver`) and the two ways
//! of measuring a configuration (`measure`, `interleaved_search`) share, so that neither
//! imports the loop that calls it.

use webtune_lab::LabError;
use webtune_search::journal::JournalError;

/// Why a tune stopped short of a report.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error("{0}")]
    Lab(#[from] LabError),
}
