//! The words the lab's servers and the modules that assemble them share, at the bottom of
//! the lab's module graph: each server module (`servers`) renders its config into a
//! `Layout` with `fill`, offers `Tunable`s and completes dependent limits through a
//! `Completion`, and spells TLS the same way. `render`, `tuning`, `tls` and `stacks` put
//! servers together and re-export what their callers name; this module imports nothing of
//! the lab but `params` and `LabError`, so that `servers` is a leaf (see
//! docs/architecture.md, "The lab's module graph").

use crate::params::{ParamSpec, Value};
use crate::LabError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

// --- Rendering: where one start's files go, and templates.

/// Where one start's files live and which ports its servers listen on.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Private directory (mode 0700): configs, pids, logs, temp files.
    pub dir: PathBuf,
    /// World-readable document root (workers that run as www-data must read it).
    pub docroot: PathBuf,
    /// One loopback port per component, in the stack's component order.
    pub ports: Vec<u16>,
    /// True when the lab runs as root: workers then need an account to run as.
    pub privileged: bool,
    /// Loopback addresses the front server listens on: 127.0.0.1 … 127.0.0.N (N ≥ 1).
    pub addresses: u32,
}

/// Refuse a path that holds anything but letters, digits and `/._-+` (it goes into config
/// files, some of them unquoted).
pub(crate) fn check_path_is_plain(path: &Path) -> Result<(), LabError> {
    let text = path.to_string_lossy();
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c));
    if plain && text.starts_with('/') {
        Ok(())
    } else {
        Err(LabError::Directory {
            path: path.to_path_buf(),
            message: "must be an absolute path of letters, digits and /._-+ only \
                      (set WEBTUNE_LAB_DIR to such a directory)"
                .to_string(),
        })
    }
}

/// Replace every `{{name}}`; a placeholder without a value is an internal error.
pub(crate) fn fill(template: &str, vars: &BTreeMap<String, String>) -> Result<String, LabError> {
    let mut out = String::with_capacity(template.len() + 512);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| {
            LabError::Inconsistent("internal: unterminated placeholder in a template".into())
        })?;
        let key = &after[..end];
        let value = vars.get(key).ok_or_else(|| {
            LabError::Inconsistent(format!("internal: template placeholder {key} has no value"))
        })?;
        out.push_str(value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

// --- Tuning: a server's part of a search space and of `tuning::complete`.

/// The range a search covers for one parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum TuneRange {
    /// Whole numbers in `lo..=hi`, searched on a log scale when `log`.
    Int { lo: i64, hi: i64, log: bool },
    /// One of these words.
    Choice(Vec<String>),
}

/// One parameter of a default search space.
#[derive(Debug, Clone, PartialEq)]
pub struct Tunable {
    pub name: String,
    pub range: TuneRange,
    /// Why it is in the space: what it changes and which seed or lab note says it matters.
    pub why: &'static str,
}

impl Tunable {
    /// Whole numbers in `lo..=hi`, on a log scale when `log`.
    pub fn int(name: String, lo: i64, hi: i64, log: bool, why: &'static str) -> Tunable {
        Tunable {
            name,
            range: TuneRange::Int { lo, hi, log },
            why,
        }
    }

    /// `on` or `off`.
    pub fn switch(name: String, why: &'static str) -> Tunable {
        Tunable {
            name,
            range: TuneRange::Choice(vec!["on".into(), "off".into()]),
            why,
        }
    }
}

/// Why a listen queue is worth tuning, for every server that has one.
pub(crate) const WHY_BACKLOG: &str = "the listen queue that absorbs bursts of connects; \
    overflows are dropped SYNs and resets (seed 004: somaxconn 4096)";

/// The assignments being completed: what the caller set (never overridden), what is added,
/// and the defaults to start from.
pub struct Completion<'a> {
    given: &'a [(String, String)],
    out: Vec<(String, String)>,
    defaults: Vec<ParamSpec>,
}

impl<'a> Completion<'a> {
    /// Start from what the caller set, with `defaults` to read unset values from.
    pub(crate) fn new(given: &'a [(String, String)], defaults: Vec<ParamSpec>) -> Completion<'a> {
        Completion {
            given,
            out: given.to_vec(),
            defaults,
        }
    }

    /// What the caller set and what was added.
    pub(crate) fn into_assignments(self) -> Vec<(String, String)> {
        self.out
    }

    /// The whole-number value assigned so far.
    pub fn value(&self, name: &str) -> Option<i64> {
        self.out
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.parse().ok())
    }

    /// The parameter's default.
    pub fn default_of(&self, name: &str) -> Option<i64> {
        self.defaults
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.default.as_int())
    }

    /// Assign `value`, unless the caller set this parameter itself.
    pub fn set_default(&mut self, name: String, value: i64) {
        if !self.given.iter().any(|(n, _)| *n == name) {
            self.out.retain(|(n, _)| *n != name);
            self.out.push((name, value.to_string()));
        }
    }
}

/// The prefix of the forum database's parameters (`db.max_connections`): a `--set` with it
/// goes to the database instead of the web stack (`forum::dbparams`, `import`).
pub const DB_PREFIX: &str = "db.";

// --- TLS: the files and protocol sets every TLS front server uses.

/// The file names of the certificate and key inside the stack's private directory.
pub const CERT_FILE: &str = "cert.pem";
pub const KEY_FILE: &str = "key.pem";

/// Protocol sets offered: both, or one of them.
pub const PROTOCOLS: &[&str] = &["TLSv1.2+TLSv1.3", "TLSv1.3", "TLSv1.2"];

/// The protocols of a `PROTOCOLS` value as the servers list them ("TLSv1.2 TLSv1.3").
pub fn protocol_words(value: Option<Value>) -> String {
    match value {
        Some(Value::Word(w)) => w.replace('+', " "),
        _ => "TLSv1.2 TLSv1.3".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_paths_only() {
        assert!(check_path_is_plain(Path::new("/tmp/a b")).is_err());
        assert!(check_path_is_plain(Path::new("/tmp/a;b")).is_err());
        assert!(check_path_is_plain(Path::new("relative")).is_err());
        assert!(check_path_is_plain(Path::new("/tmp/webtune-lab-0/x.www")).is_ok());
    }
}
