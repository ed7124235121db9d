//! Measured evidence from a saved run (`--result FILE`): what the load was, and what the
//! lab's sampler saw on the server side (log messages, listen overflows, context switches,
//! processes and PSS). Figures weighed against the responses (switches, CPU) cover the
//! measured window only, as the responses do (`ServerSamples::measured`).

use crate::error::AdviseError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use webtune_model::server::LogMessage;
use webtune_model::{RunResult, MAX_SAVED_BYTES};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Evidence {
    pub file: PathBuf,
    /// Concurrent connections of the load.
    pub connections: u32,
    pub keepalive: bool,
    pub responses: u64,
    pub duration_s: f64,
    pub connections_opened: u64,
    /// What the sampler sampled ("nginx-apache-prefork", "external"), empty without one.
    pub target: String,
    pub listen_overflows: u64,
    /// The server's context switches over the run's measured window(s), the time its
    /// `responses` were counted in (warm-up and cool-down left out).
    pub context_switches: u64,
    /// Of those, the involuntary ones (preempted: more runnable tasks than CPUs).
    pub involuntary_switches: u64,
    /// CPU seconds the server's processes used, and all CPUs of the host were busy
    /// (user, system, irq, softirq, steal), over the same measured window(s).
    pub server_cpu_s: f64,
    pub host_busy_cpu_s: f64,
    pub peak_processes: u32,
    pub peak_pss_kib: u64,
    pub log_messages: Vec<LogMessage>,
    pub parameters: BTreeMap<String, String>,
}

impl Evidence {
    pub fn from_file(path: &Path) -> Result<Evidence, AdviseError> {
        let text = webtune_conf::limits::read_capped(path, MAX_SAVED_BYTES, "a --result file")?;
        let result: RunResult =
            serde_json::from_slice(&text).map_err(|e| AdviseError::BadResult {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        Ok(Evidence::from_result(path, &result))
    }

    pub fn from_result(path: &Path, r: &RunResult) -> Evidence {
        let mut e = Evidence {
            file: path.to_path_buf(),
            connections: r.spec.connections,
            keepalive: r.spec.keepalive,
            responses: r.responses,
            duration_s: r.duration_s,
            connections_opened: r.connections_opened,
            ..Evidence::default()
        };
        if let Some(s) = &r.server {
            e.target = s.target.clone();
            e.listen_overflows = s.samples.iter().map(|x| x.listen_overflows).sum();
            // Weighed against the responses, so over the same measured window(s) as they
            // (warm-up and cool-down left out).
            let m = s.measured();
            e.context_switches = m.switches().round() as u64;
            e.involuntary_switches = m.involuntary_ctxt_switches.round() as u64;
            e.server_cpu_s = m.cpu_s();
            e.host_busy_cpu_s = m.host_busy_cpu_s;
            e.peak_processes = s.samples.iter().map(|x| x.processes).max().unwrap_or(0);
            e.peak_pss_kib = s.samples.iter().map(|x| x.pss_kib).max().unwrap_or(0);
            e.log_messages = s.log_messages.clone();
            e.parameters = s.parameters.clone();
        }
        e
    }

    /// Responses per second.
    pub fn rate(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.responses as f64 / self.duration_s
        } else {
            0.0
        }
    }

    /// Log messages whose text contains `needle` (case-insensitive), with their total count.
    pub fn logged(&self, needle: &str) -> Option<(u64, &LogMessage)> {
        let needle = needle.to_ascii_lowercase();
        let hits: Vec<&LogMessage> = self
            .log_messages
            .iter()
            .filter(|m| m.message.to_ascii_lowercase().contains(&needle))
            .collect();
        let first = *hits.first()?;
        Some((hits.iter().map(|m| m.count).sum(), first))
    }

    /// `file (run of N connections)` — how evidence from it is cited.
    pub fn cite(&self) -> String {
        format!(
            "{} ({} connections, {:.0} responses/s)",
            self.file.display(),
            self.connections,
            self.rate()
        )
    }
}
