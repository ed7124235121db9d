//! The readers' errors: every one names the file (and line, for syntax) it is about and
//! reads as one line (control characters escaped, an OS error said once).

use crate::config::escape;
use std::path::PathBuf;

#[derive(Debug)]
pub enum ReadError {
    /// A file could not be read (missing, unreadable).
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A config file is malformed.
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// An input passes one of the readers' caps (`limits`): the message names the cap.
    Cap { at: String, message: String },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            ReadError::Io { path, error } => format!("{}: {}", path.display(), os_error(error)),
            ReadError::Syntax {
                path,
                line,
                message,
            } => format!("{}:{line}: {message}", path.display()),
            ReadError::Cap { at, message } => format!("{at}: {message}"),
        };
        f.write_str(&escape(&text))
    }
}

/// The error's own text is the whole message: no `source()`, so that a caller printing the
/// chain (`{:#}`) says the OS error once.
impl std::error::Error for ReadError {}

/// An OS error as one short phrase: "symlink loop" for ELOOP (which `Path::exists` would
/// call "no such file"), else the system's text ("Permission denied (os error 13)").
pub fn os_error(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::ELOOP) {
        return "a symlink loop (too many levels of symbolic links)".into();
    }
    e.to_string()
}

impl ReadError {
    pub(crate) fn io(path: impl Into<PathBuf>, error: std::io::Error) -> ReadError {
        ReadError::Io {
            path: path.into(),
            error,
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
