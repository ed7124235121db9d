//! What a finding asks of a config, before any plan: a line to write (`Change`, placed by
//! `set` at the directive or added to the main file) and a bound on a directive's value
//! (`Constraint`, built with `Constraint::on(…).bound(…)`). A leaf: findings, the plan and
//! the rules all speak it, and it imports none of them (which keeps the crate's modules
//! free of circles, docs/architecture.md).

use serde::Serialize;
use std::path::{Path, PathBuf};
use webtune_conf::config::Directive;

/// A suggested line for a config file: it replaces `line` when the directive is there,
/// or is added to the file (inside `section`, when the file has sections) when not.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Change {
    pub file: PathBuf,
    pub line: Option<usize>,
    /// The block or section it belongs in when added (e.g. `mysqld`, `events`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// The directive as it should read, in the file's own syntax.
    pub text: String,
}

/// Replace `d` when it is there, else add `text` to `main` (inside `section`).
pub(crate) fn set(
    d: Option<&Directive>,
    main: &std::path::Path,
    section: Option<&str>,
    text: String,
) -> Change {
    match d {
        Some(d) => Change {
            file: d.file.clone(),
            line: Some(d.line),
            section: None,
            text,
        },
        None => Change {
            file: main.to_path_buf(),
            line: None,
            section: section.map(str::to_string),
            text,
        },
    }
}

/// One bound on a directive's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    AtLeast(i64),
    AtMost(i64),
    Exactly(i64),
    MultipleOf(i64),
    /// The value the rule would choose: a soft target, kept within the hard bounds.
    Prefer(i64),
}

impl Bound {
    pub fn describe(self) -> String {
        match self {
            Bound::AtLeast(v) => format!("≥ {v}"),
            Bound::AtMost(v) => format!("≤ {v}"),
            Bound::Exactly(v) => format!("= {v}"),
            Bound::MultipleOf(v) => format!("a multiple of {v}"),
            Bound::Prefer(v) => format!("preferably {v}"),
        }
    }
}

/// A constraint a finding states on one directive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Constraint {
    /// "apache2", "nginx", "php-fpm", "mariadb".
    pub server: String,
    /// The directive as it is written in this config (MaxClients where the tree says so).
    pub directive: String,
    pub bound: Bound,
    /// One line: what the bound comes from, with its figures.
    pub reason: String,
    pub source: String,
    /// The finding that states it (filled in when the plan is made).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub finding: String,
    /// The unit values are counted in, written after the value ("M": MiB in my.cnf).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub unit: String,
    /// A bound of the server itself (MaxRequestWorkers ≥ ThreadsPerChild, ≤ fs.nr_open):
    /// it joins a directive's plan only when a finding plans that directive.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub structural: bool,
    /// The value in effect now (the default when not set).
    #[serde(skip)]
    pub current: i64,
    /// Where a new value is written: the directive's line, else the main file (+ section).
    #[serde(skip)]
    pub place: Change,
}

impl Constraint {
    /// A constraint on `directive` (at `d`, else added to `main` in `section`).
    pub(crate) fn on(
        server: &str,
        directive: &str,
        current: i64,
        d: Option<&Directive>,
        main: &Path,
        section: Option<&str>,
    ) -> ConstraintBuilder {
        ConstraintBuilder {
            server: server.into(),
            directive: directive.into(),
            current,
            place: set(d, main, section, String::new()),
            unit: String::new(),
        }
    }

    /// One knob: a directive of a server at one place (two pools' pm.max_children are two).
    pub(crate) fn key(&self) -> (String, String, PathBuf, Option<usize>) {
        (
            self.server.clone(),
            key_name(&self.directive),
            self.place.file.clone(),
            self.place.line,
        )
    }
}

/// `Constraint::on(…).bound(Bound::AtMost(8), "why", "source")`.
#[derive(Debug, Clone)]
pub(crate) struct ConstraintBuilder {
    server: String,
    directive: String,
    current: i64,
    place: Change,
    unit: String,
}

impl ConstraintBuilder {
    /// Values counted in `unit` ("M").
    pub fn unit(mut self, unit: &str) -> ConstraintBuilder {
        self.unit = unit.into();
        self
    }

    /// A bound the server itself imposes (see `Constraint::structural`).
    pub fn structural(&self, bound: Bound, reason: impl Into<String>, source: &str) -> Constraint {
        Constraint {
            structural: true,
            ..self.bound(bound, reason, source)
        }
    }

    pub fn bound(&self, bound: Bound, reason: impl Into<String>, source: &str) -> Constraint {
        Constraint {
            server: self.server.clone(),
            directive: self.directive.clone(),
            bound,
            reason: reason.into(),
            source: source.into(),
            finding: String::new(),
            unit: self.unit.clone(),
            structural: false,
            current: self.current,
            place: self.place.clone(),
        }
    }
}

/// my.cnf writes `-` for `_`; Apache's names are case-insensitive, and 2.2's MaxClients is
/// 2.4's MaxRequestWorkers.
pub(crate) fn key_name(name: &str) -> String {
    let lower = name.to_ascii_lowercase().replace('-', "_");
    match lower.as_str() {
        "maxclients" => "maxrequestworkers".into(),
        "maxrequestsperchild" => "maxconnectionsperchild".into(),
        _ => lower,
    }
}
