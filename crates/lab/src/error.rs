//! The lab's error type: every failure a user can meet, as one line that says what to do.

use std::path::PathBuf;

/// Everything that can go wrong in the lab.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// `suggestion`: " (did you mean nginx?)" when a stack's name is close, else empty.
    #[error("unknown stack {name:?}{suggestion}; `webtune lab stacks` lists them")]
    UnknownStack { name: String, suggestion: String },
    #[error(
        "unknown parameter {name:?} for stack {stack}{suggestion}; `webtune lab params {stack}` lists them"
    )]
    UnknownParameter {
        stack: String,
        name: String,
        suggestion: String,
    },
    #[error("parameter {name}: {value:?} is out of range; allowed: {allowed}")]
    OutOfRange {
        name: String,
        value: String,
        allowed: String,
    },
    #[error("parameter {name}: {value:?} is not {expected}; allowed: {allowed}")]
    NotAllowed {
        name: String,
        value: String,
        /// "a number", "a whole number", "on or off", "one of the choices".
        expected: &'static str,
        allowed: String,
    },
    #[error("bad --set {0:?}: write NAME=VALUE")]
    BadAssignment(String),
    #[error("parameter {0} was set twice")]
    DuplicateParameter(String),
    #[error("{0}")]
    Inconsistent(String),
    #[error("{program} is not installed ({hint})")]
    MissingProgram { program: String, hint: String },
    #[error("{server} rejected the rendered config {config}: {message}")]
    ConfigRejected {
        server: String,
        config: PathBuf,
        message: String,
    },
    /// The server's own check refused a user's imported config (paths are the user's).
    #[error("{server} rejects {config}: {message}")]
    ImportRejected {
        server: String,
        config: PathBuf,
        message: String,
    },
    #[error("{server} did not start: {message}")]
    StartFailed { server: String, message: String },
    #[error("{server} left process(es) {pids:?} running after a forced stop")]
    Survivors { server: String, pids: Vec<i32> },
    #[error("lab directory {path}: {message}")]
    Directory { path: PathBuf, message: String },
    #[error("no free loopback port: {0}")]
    NoPort(std::io::Error),
    /// A host knob (`os.*`, CPU sets, addresses) refused or failed, in one line.
    #[error("{0}")]
    Host(String),
    #[error("interrupted before the stack was ready")]
    Interrupted,
    #[error(transparent)]
    Engine(#[from] webtune_engine::EngineError),
    #[error("{0}")]
    Hook(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl LabError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> LabError {
        LabError::Io {
            context: context.into(),
            source,
        }
    }
}

/// " (did you mean X?)" for the candidate closest to a mistyped `name` (case ignored), when
/// one is close enough to be the one meant: a Jaro–Winkler similarity of 0.8 or more (the
/// threshold clap uses for its own "a similar argument exists"), else "".
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    let typed = name.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(&typed, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or(String::new(), |(_, c)| format!(" (did you mean {c}?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_name_is_suggested_and_a_far_one_is_not() {
        let stacks = ["nginx", "apache-prefork", "nginx-php-fpm"];
        assert_eq!(did_you_mean("ngnix", stacks), " (did you mean nginx?)");
        assert_eq!(
            did_you_mean("apache-prefrok", stacks),
            " (did you mean apache-prefork?)"
        );
        assert_eq!(did_you_mean("postgres", stacks), "");
    }
}
