//! The workload as a value: what requests a run sends. Either the spec's own request (its
//! URL, method, headers and body) or a parsed scenario. Callers build it — from a file, from
//! text they generated (http_load's URL mix, the lab's forum) or in code — and hand it to
//! `run`; the engine reads no file. The result records the scenario's name and the SHA-256
//! of its text, so a saved result (or a tuner's journal) says exactly what was sent even when
//! the file is gone.

use crate::scenario::{self, Scenario, ScenarioError};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use webtune_model::RunSpec;

/// What a run sends.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    scenario: Option<Arc<Scenario>>,
    name: Option<String>,
    sha256: Option<String>,
    /// SMTP runs: the mailboxes recipients are drawn from.
    mailboxes: Option<Arc<crate::smtp::Mailboxes>>,
}

impl Workload {
    /// The spec's own request, every time.
    pub fn request() -> Workload {
        Workload::default()
    }

    /// A scenario read from a file (CSV and body files relative to its folder); named by
    /// its path.
    pub fn from_scenario_file(path: &Path) -> Result<Workload, ScenarioError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError::Read {
            file: name.clone(),
            reason: e.to_string(),
        })?;
        let base_dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        Workload::from_scenario_text(&text, base_dir, &name)
    }

    /// A scenario from text (files it names are looked up in `base_dir`), called `name` in
    /// messages and results.
    pub fn from_scenario_text(
        text: &str,
        base_dir: &Path,
        name: &str,
    ) -> Result<Workload, ScenarioError> {
        let parsed = scenario::parse_str(text, base_dir, name)?;
        Ok(Workload {
            scenario: Some(Arc::new(parsed)),
            name: Some(name.to_string()),
            sha256: Some(sha256_hex(text)),
            mailboxes: None,
        })
    }

    /// Equal-weight GETs of literal paths on one server (`scenario::url_mix`), built as a
    /// value; `name` in messages and results, hashed over the base URL and the paths.
    pub fn url_mix(
        base_url: &str,
        paths: &[(String, String)],
        name: &str,
    ) -> Result<Workload, ScenarioError> {
        let parsed = scenario::url_mix(base_url, paths, name)?;
        let listed: String = std::iter::once(base_url)
            .chain(paths.iter().map(|(_, path)| path.as_str()))
            .map(|line| format!("{line}\n"))
            .collect();
        Ok(Workload {
            scenario: Some(Arc::new(parsed)),
            name: Some(name.to_string()),
            sha256: Some(sha256_hex(&listed)),
            mailboxes: None,
        })
    }

    /// SMTP: send to these mailboxes; `name` (the user list's path, or a description) and
    /// the hash of the list are recorded like a scenario's.
    pub fn mailboxes(list: crate::smtp::Mailboxes, name: &str) -> Workload {
        let text = list.0.join("\n");
        Workload {
            scenario: None,
            name: Some(name.to_string()),
            sha256: Some(sha256_hex(&text)),
            mailboxes: Some(Arc::new(list)),
        }
    }

    /// The SMTP mailbox list, if one was given.
    pub fn mailbox_list(&self) -> Option<&crate::smtp::Mailboxes> {
        self.mailboxes.as_deref()
    }

    /// The parsed scenario, if this is one.
    pub fn scenario(&self) -> Option<&Scenario> {
        self.scenario.as_deref()
    }

    /// The scenario's `base_url`, if it has one.
    pub fn base_url(&self) -> Option<&str> {
        self.scenario.as_ref().and_then(|s| s.base_url.as_deref())
    }

    /// Write what this workload is into a spec (its `scenario` name and hash), so the
    /// result records it.
    pub fn record_in(&self, spec: &mut RunSpec) {
        spec.scenario = self.name.clone();
        spec.scenario_sha256 = self.sha256.clone();
        if let (Some(smtp), Some(list)) = (spec.smtp.as_mut(), &self.mailboxes) {
            smtp.mailboxes = list.0.len() as u64;
        }
    }
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "[[request]]\nname = \"home\"\npath = \"/\"\n";

    #[test]
    fn a_scenario_from_text_records_its_name_and_hash() {
        let w = Workload::from_scenario_text(TEXT, Path::new("."), "mix").unwrap();
        assert_eq!(w.scenario().unwrap().requests.len(), 1);
        let mut spec = RunSpec::default();
        w.record_in(&mut spec);
        assert_eq!(spec.scenario.as_deref(), Some("mix"));
        let hash = spec.scenario_sha256.unwrap();
        assert_eq!(hash.len(), 64);
        let other =
            Workload::from_scenario_text(&format!("{TEXT}\n"), Path::new("."), "mix").unwrap();
        let mut spec2 = RunSpec::default();
        other.record_in(&mut spec2);
        assert_ne!(
            spec2.scenario_sha256.unwrap(),
            hash,
            "other text, other hash"
        );
    }

    #[test]
    fn the_plain_request_records_nothing() {
        let mut spec = RunSpec {
            scenario: Some("stale".into()),
            ..RunSpec::default()
        };
        Workload::request().record_in(&mut spec);
        assert!(spec.scenario.is_none());
        assert!(spec.scenario_sha256.is_none());
    }

    #[test]
    fn a_missing_file_names_it() {
        let e = Workload::from_scenario_file(Path::new("/nonexistent/x.toml")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x.toml"), "{e}");
    }
}
