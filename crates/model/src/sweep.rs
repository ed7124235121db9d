//! What a sweep measured: the same test at several load levels (`webtune sweep`), schema
//! `webtune.sweep/1`. Every level keeps its full `RunResult`.

use crate::RunResult;
use serde::{Deserialize, Serialize};

/// The schema tag of a sweep file.
pub const SWEEP_SCHEMA: &str = "webtune.sweep/1";

/// What changes from one level to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepVariable {
    /// Closed loop: concurrent connections.
    Connections,
    /// Open loop: target requests per second.
    Rate,
}

impl SweepVariable {
    /// The column label in reports.
    pub fn label(self) -> &'static str {
        match self {
            SweepVariable::Connections => "connections",
            SweepVariable::Rate => "rate (req/s)",
        }
    }
}

/// One level of a sweep and what it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepLevel {
    pub level: f64,
    pub result: RunResult,
}

/// Every run of a sweep, in the order run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    pub schema: String,
    /// "webtune X.Y.Z".
    pub tool: String,
    pub variable: SweepVariable,
    pub levels: Vec<SweepLevel>,
    /// The level after which throughput grows by less than 5% while p99 keeps growing;
    /// None when the sweep never reached it.
    #[serde(default)]
    pub knee: Option<f64>,
    /// True when the sweep was stopped before its last level.
    #[serde(default)]
    pub interrupted: bool,
}

impl SweepResult {
    pub fn new(tool: &str, variable: SweepVariable) -> SweepResult {
        SweepResult {
            schema: SWEEP_SCHEMA.into(),
            tool: tool.into(),
            variable,
            levels: Vec::new(),
            knee: None,
            interrupted: false,
        }
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("SweepResult always serialises")
    }

    /// Parse a saved sweep, refusing other schemas with a clear message.
    pub fn from_json(text: &str) -> Result<SweepResult, SweepParseError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| SweepParseError::Json(e.to_string()))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SWEEP_SCHEMA) => {}
            Some(other) => return Err(SweepParseError::Schema(other.to_string())),
            None => return Err(SweepParseError::Schema("(none)".into())),
        }
        serde_json::from_value(value).map_err(|e| SweepParseError::Json(e.to_string()))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SweepParseError {
    #[error("not a webtune sweep: {0}")]
    Json(String),
    #[error("unsupported sweep schema {0:?}; this webtune reads {SWEEP_SCHEMA:?}")]
    Schema(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_other_schemas() {
        let err = SweepResult::from_json(r#"{"schema":"webtune.run/1"}"#).unwrap_err();
        assert!(err.to_string().contains("webtune.sweep/1"));
        let empty = SweepResult::new("webtune 0", SweepVariable::Connections);
        let back = SweepResult::from_json(&empty.to_json_pretty()).unwrap();
        assert_eq!(back, empty);
    }
}
