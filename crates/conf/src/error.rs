//! The readers' errors: every one names the file (and line, for syntax) it is about and
//! reads as one line.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A file could not be read (missing, unreadable).
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A config file is malformed.
    #[error("{path}:{line}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// An input passes one of the readers' caps (`limits`): the message names the cap.
    #[error("{at}: {message}")]
    Cap { at: String, message: String },
}

impl ReadError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> ReadError {
        ReadError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn syntax(
        path: impl Into<PathBuf>,
        line: usize,
        message: impl Into<String>,
    ) -> ReadError {
        ReadError::Syntax {
            path: path.into(),
            line,
            message: message.into(),
        }
    }
}

/// Expand a glob pattern into the files it matches, sorted (as Apache, nginx and php-fpm
/// do). A pattern without wildcard characters is returned as is.
pub(crate) fn expand_glob(
    pattern: &std::path::Path,
    at: (&std::path::Path, usize),
) -> Result<Vec<PathBuf>, ReadError> {
    let text = pattern.display().to_string();
    if !text.contains(['*', '?', '[']) {
        return Ok(vec![pattern.to_path_buf()]);
    }
    let paths = glob::glob(&text)
        .map_err(|e| ReadError::syntax(at.0, at.1, format!("bad wildcard {text:?}: {e}")))?;
    let mut out: Vec<PathBuf> = paths
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    Ok(out)
}
