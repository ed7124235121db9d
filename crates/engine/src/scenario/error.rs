//! A scenario's errors: one line naming the file, the request and the fix (`ScenarioError`),
//! and the `Problem` a check of one value returns before the caller names the file and
//! request.

/// A scenario that cannot be used: one line naming the file, the request and the fix.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read {file}: {reason}; check the path and that the file is readable")]
    Read { file: String, reason: String },
    #[error("{file}: {}{problem}{}", request_label(.request), fix_suffix(.fix))]
    Invalid {
        file: String,
        /// The request's name (or "#N" when it has none); `None` for file-wide problems.
        request: Option<String>,
        problem: String,
        fix: String,
    },
}

fn request_label(request: &Option<String>) -> String {
    match request {
        Some(name) => format!("request {name:?}: "),
        None => String::new(),
    }
}

fn fix_suffix(fix: &str) -> String {
    if fix.is_empty() {
        String::new()
    } else {
        format!("; {fix}")
    }
}

/// Collapse a message onto one line (library messages sometimes span several).
pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A problem found while checking one value; the caller adds the file and request name.
#[derive(Debug)]
pub(super) struct Problem {
    pub(super) problem: String,
    pub(super) fix: String,
}

pub(super) fn problem(problem: impl Into<String>, fix: impl Into<String>) -> Problem {
    Problem {
        problem: problem.into(),
        fix: fix.into(),
    }
}
