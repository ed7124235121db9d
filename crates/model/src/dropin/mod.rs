//! Other tools' command lines as webtune runs: what ab's, http_load's and postal's options
//! mean, mapped to a `RunSpec` (and, for http_load, its URL file to a URL mix), so that the
//! binary only parses flags and prints, and a test or another front end can ask the same
//! question without the CLI. No I/O: the caller reads the files (ab's body, http_load's URL
//! file, postal's user list) and hands over their contents or a reader.

/// `return Err(OptionError(format!(…)))`.
macro_rules! bail {
    ($($t:tt)*) => {
        return Err($crate::dropin::OptionError(format!($($t)*)))
    };
}

pub mod ab;
pub mod http_load;
pub mod postal;

/// A refused option or value, in one line naming it (e.g. "-c must be at least 1").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OptionError(pub String);

/// `Err(OptionError(message))`.
pub(crate) fn refuse<T>(message: impl Into<String>) -> Result<T, OptionError> {
    Err(OptionError(message.into()))
}

/// The TLS options every drop-in uses: ab, http_load and postal never check the server's
/// certificate.
pub(crate) fn unchecked_tls() -> crate::TlsOptions {
    crate::TlsOptions {
        insecure: true,
        ..crate::TlsOptions::default()
    }
}
