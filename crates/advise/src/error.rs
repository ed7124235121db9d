//! The advisor's errors: every one names the file (and line, for syntax) it is about and
//! reads as one line.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum AdviseError {
    /// A config file could not be read, is malformed, or passes one of the readers' caps
    /// (`webtune_conf::limits`); also a `--result` file that cannot be read or is too big.
    #[error(transparent)]
    Read(#[from] webtune_conf::ReadError),
    /// A `--result` file is not a webtune result.
    #[error("{path}: not a webtune result: {message}")]
    BadResult { path: PathBuf, message: String },
    /// A value given to the advisor is not one it can use (`--mysql-version 1x`).
    #[error("{0}")]
    Input(String),
    /// Writing the suggested files failed.
    #[error("{path}: cannot write: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}
