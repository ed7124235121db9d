//! What can go wrong before or during an fs run: bad input (refused in one line before
//! anything is created) apart from failures of the file system itself.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// The spec cannot be run as given (nothing was created).
    #[error("{0}")]
    Invalid(String),
    /// Whoever keeps track of pools (the lab's registry) refused this one.
    #[error("cannot register the pool {path}: {message}")]
    Claim { path: PathBuf, message: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl FsError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> FsError {
        FsError::Io {
            context: context.into(),
            source,
        }
    }
}
