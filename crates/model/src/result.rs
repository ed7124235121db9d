//! What a run measured: `RunResult`, schema `webtune.run/1`, documented field by field in
//! `docs/result-schema.md`.

use crate::{ErrorCounts, LatencyHistogram, Percentiles, RunSpec, ServerSamples};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema tag every result carries; bump the number on an incompatible change.
pub const SCHEMA: &str = "webtune.run/1";

/// Percentile summaries of the three latency histograms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub connect: Percentiles,
    pub first_byte: Percentiles,
    pub total: Percentiles,
}

/// The three histograms, in HdrHistogram's serialised form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// TCP connect time, recorded for requests that opened their connection.
    pub connect: LatencyHistogram,
    /// From the request's start to the first byte of the response.
    pub first_byte: LatencyHistogram,
    /// From the request's start (including connect when it opened one) to the last byte.
    pub total: LatencyHistogram,
}

/// One interval of the time series.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalSample {
    /// Start of the interval, seconds since the run began.
    pub start_s: f64,
    /// Length of the interval in seconds (the last one may be shorter).
    pub length_s: f64,
    /// Complete responses in the interval.
    pub responses: u64,
    pub errors: ErrorCounts,
    /// Bytes received.
    pub bytes: u64,
    /// Connections open at the end of the interval.
    pub open_connections: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// CPU and memory the generator process itself used during the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorUsage {
    pub user_cpu_s: f64,
    pub system_cpu_s: f64,
    /// Peak resident set size of the generator process, KiB.
    pub max_rss_kib: u64,
    pub threads: u32,
}

/// Everything one run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    /// "webtune X.Y.Z".
    pub tool: String,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_at_unix_ms: u64,
    pub spec: RunSpec,
    /// The socket addresses the connections were spread over.
    pub addresses: Vec<String>,
    /// Length of the measurement, seconds.
    pub duration_s: f64,
    /// True when the run was stopped early (Ctrl-C / SIGTERM).
    pub interrupted: bool,
    /// Complete responses, whatever their status.
    pub responses: u64,
    /// Complete responses with an expected status.
    pub ok: u64,
    pub errors: ErrorCounts,
    /// Responses whose body length differed from the first response's (ab's "Length"
    /// failure). Informational: not an error.
    pub length_varies: u64,
    /// Body length of the first complete response, bytes.
    pub first_body_bytes: Option<u64>,
    /// Count per HTTP status code.
    pub status: BTreeMap<u16, u64>,
    /// Bytes received (status line, headers and body).
    pub bytes_received: u64,
    /// Body bytes received.
    pub body_bytes: u64,
    pub bytes_sent: u64,
    pub connections_opened: u64,
    /// Requests sent again because the server closed an idle keep-alive connection before
    /// any byte of their response (not an error: the connection was stale).
    pub stale_reconnects: u64,
    /// Requests still in flight when the run ended (duration over or Ctrl-C, after a 1 s
    /// grace): neither completed nor failed.
    #[serde(default)]
    pub abandoned: u64,
    /// Responses per second over `duration_s`.
    pub requests_per_s: f64,
    /// Bytes received per second.
    pub bytes_per_s: f64,
    pub latency: LatencySummary,
    pub histograms: Histograms,
    pub timeline: Vec<IntervalSample>,
    pub generator: GeneratorUsage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerSamples>,
    /// The `Server` header of the first complete response (ab's "Server Software"); None
    /// when the server sent none or the engine did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_software: Option<String>,
    /// With `bench --repeat N`: one summary per repeat, in run order. The rest of the result
    /// is then all repeats merged. Empty for a single run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RepeatSummary>,
}

/// What one repeat of a repeated run measured: enough to tell whether two configurations
/// differ by more than run-to-run noise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RepeatSummary {
    pub duration_s: f64,
    pub responses: u64,
    /// Every failed request, unexpected statuses included.
    pub errors: u64,
    pub requests_per_s: f64,
    /// Total-latency summary of this repeat.
    pub latency: Percentiles,
}

impl RunResult {
    /// Requests that completed or failed.
    pub fn attempted(&self) -> u64 {
        self.responses + self.errors.total() - self.errors.get(crate::ErrorKind::UnexpectedStatus)
    }

    /// Fraction (0..=1) of attempted requests that failed, counting unexpected statuses.
    pub fn error_ratio(&self) -> f64 {
        let attempted = self.attempted();
        if attempted == 0 {
            0.0
        } else {
            self.errors.total() as f64 / attempted as f64
        }
    }

    /// Recompute the summaries (rates, percentiles) from the raw counts and histograms.
    pub fn finish_summaries(&mut self) {
        let d = if self.duration_s > 0.0 {
            self.duration_s
        } else {
            f64::NAN
        };
        self.requests_per_s = if d.is_nan() {
            0.0
        } else {
            self.responses as f64 / d
        };
        self.bytes_per_s = if d.is_nan() {
            0.0
        } else {
            self.bytes_received as f64 / d
        };
        self.latency = LatencySummary {
            connect: self.histograms.connect.percentiles(),
            first_byte: self.histograms.first_byte.percentiles(),
            total: self.histograms.total.percentiles(),
        };
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("RunResult always serialises")
    }

    /// Parse a saved result, refusing other schemas with a clear message.
    pub fn from_json(text: &str) -> Result<RunResult, ResultParseError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ResultParseError::Json(e.to_string()))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(other) => return Err(ResultParseError::Schema(other.to_string())),
            None => return Err(ResultParseError::Schema("(none)".into())),
        }
        serde_json::from_value(value).map_err(|e| ResultParseError::Json(e.to_string()))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResultParseError {
    #[error("not a webtune result: {0}")]
    Json(String),
    #[error("unsupported result schema {0:?}; this webtune reads {SCHEMA:?}")]
    Schema(String),
}
