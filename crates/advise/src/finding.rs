//! A finding: one piece of advice, with the calculation behind it, the evidence it rests
//! on (`file:line`, host facts, measured figures), the source of the rule, and the
//! directive lines it would change.

use crate::change::{Change, Constraint};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Critical,
    Warn,
    Info,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Warn => "warn",
            Severity::Info => "info",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub id: String,
    pub severity: Severity,
    /// "apache2", "nginx", "php-fpm", "mariadb", "host", or a chain "nginx → apache2".
    pub component: String,
    /// The directives it is about, by their exact names.
    pub directives: Vec<String>,
    pub current: String,
    pub recommended: String,
    /// One or two sentences with the calculation (inputs and formula).
    pub why: String,
    /// `file:line` of each directive it rests on, host facts, measured figures.
    pub evidence: Vec<String>,
    /// Where the rule comes from (a seed of this project, a manual).
    pub source: String,
    /// The lines it would change (empty when the advice is not a directive).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
    /// The bounds it puts on sizing directives; the plan (`crate::plan`) reconciles them
    /// with every other finding's into one value per directive.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<Constraint>,
    /// Why a change of this finding was not written: the server's own check of the
    /// patched copy refused it, or it could not be checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

impl Finding {
    pub(crate) fn new(id: &str, severity: Severity, component: &str) -> Finding {
        Finding {
            id: id.to_string(),
            severity,
            component: component.to_string(),
            directives: Vec::new(),
            current: String::new(),
            recommended: String::new(),
            why: String::new(),
            evidence: Vec::new(),
            source: String::new(),
            changes: Vec::new(),
            constraints: Vec::new(),
            patch: None,
        }
    }

    pub(crate) fn constrain(mut self, c: Constraint) -> Finding {
        self.constraints.push(c);
        self
    }

    pub(crate) fn directives(mut self, names: &[&str]) -> Finding {
        self.directives = names.iter().map(|s| s.to_string()).collect();
        self
    }

    pub(crate) fn values(
        mut self,
        current: impl Into<String>,
        recommended: impl Into<String>,
    ) -> Finding {
        self.current = current.into();
        self.recommended = recommended.into();
        self
    }

    pub(crate) fn why(mut self, why: impl Into<String>) -> Finding {
        self.why = why.into();
        self
    }

    pub(crate) fn source(mut self, source: &str) -> Finding {
        self.source = source.to_string();
        self
    }

    pub(crate) fn evidence(mut self, e: impl Into<String>) -> Finding {
        let e = e.into();
        if !e.is_empty() && !self.evidence.contains(&e) {
            self.evidence.push(e);
        }
        self
    }

    pub(crate) fn change(mut self, c: Option<Change>) -> Finding {
        if let Some(c) = c {
            self.changes.push(c);
        }
        self
    }
}
