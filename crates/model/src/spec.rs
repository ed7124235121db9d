//! What a run was asked to do. A `RunSpec` is pure data: the engine turns it into a plan
//! (resolved addresses, pre-encoded request bytes), and the result carries it as a record.

use serde::{Deserialize, Serialize};

/// When a run stops sending.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StopCondition {
    /// Exactly this many requests complete or fail.
    Requests { count: u64 },
    /// Send for this long (seconds).
    Duration { seconds: f64 },
}

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoadMode {
    /// Each connection sends its next request when the previous answer ends.
    Closed,
    /// Requests are due at a rate, whatever the answers do (wrk2's model). Latency is measured
    /// from each request's intended start (coordinated-omission corrected).
    Open {
        /// Requests per second, all threads together (the peak when stages ramp it).
        rate: f64,
        arrival: Arrival,
    },
}

/// How intended start times are spaced in open loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced.
    Uniform,
    /// Exponential gaps (a Poisson process), as independent users arrive.
    Poisson,
}

/// One ramp stage: over `seconds`, move linearly from the previous target to `target`
/// (connections in closed loop, requests/s in open loop). The first stage starts from 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub seconds: f64,
    pub target: f64,
}

/// The responsiveness probe: one extra connection at a slow, steady pace (seed 001's browser).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSpec {
    pub url: String,
    pub rate_per_s: f64,
}

/// One load test, as the user asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub url: String,
    pub method: String,
    /// Extra request headers, in order, as given.
    pub headers: Vec<(String, String)>,
    /// The request body. Not written to JSON (it may be large or binary); its length is.
    #[serde(skip)]
    pub body: Vec<u8>,
    pub body_bytes: u64,
    pub connections: u32,
    pub threads: u32,
    pub stop: StopCondition,
    pub load: LoadMode,
    /// HTTP keep-alive: reuse connections. False opens a new connection per request.
    pub keepalive: bool,
    /// Send HTTP/1.0 requests instead of HTTP/1.1.
    pub http10: bool,
    /// Close and reopen a connection after this many requests on it.
    pub max_requests_per_conn: Option<u64>,
    pub connect_timeout_ms: u64,
    /// Per request: from sending it to its last byte.
    pub timeout_ms: u64,
    /// Addresses to connect to instead of resolving the URL's host ("ip:port").
    pub connect_to: Vec<String>,
    /// Inclusive status ranges counted as success; anything else is "unexpected status".
    pub expect_status: Vec<(u16, u16)>,
    /// Time-series interval in milliseconds.
    pub interval_ms: u64,
    /// Ramp stages (replace the fixed connections or rate; their total length is the run's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
    /// Seconds at the start kept in the time series but left out of the summary.
    #[serde(default)]
    pub warmup_s: f64,
    /// Seconds at the end kept in the time series but left out of the summary.
    #[serde(default)]
    pub cooldown_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeSpec>,
    /// The scenario file the requests came from, if any (a record; `url` is its base URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            url: String::new(),
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            body_bytes: 0,
            connections: 10,
            threads: 1,
            stop: StopCondition::Duration { seconds: 10.0 },
            load: LoadMode::Closed,
            keepalive: true,
            http10: false,
            max_requests_per_conn: None,
            connect_timeout_ms: 5_000,
            timeout_ms: 30_000,
            connect_to: Vec::new(),
            expect_status: vec![(200, 399)],
            interval_ms: 1_000,
            stages: Vec::new(),
            warmup_s: 0.0,
            cooldown_s: 0.0,
            probe: None,
            scenario: None,
        }
    }
}

impl RunSpec {
    /// Is this status among the expected ones?
    pub fn status_expected(&self, status: u16) -> bool {
        self.expect_status
            .iter()
            .any(|&(lo, hi)| status >= lo && status <= hi)
    }

    /// Total length of the ramp stages, seconds (0 without stages).
    pub fn stages_seconds(&self) -> f64 {
        self.stages.iter().map(|s| s.seconds).sum()
    }

    pub fn is_open_loop(&self) -> bool {
        matches!(self.load, LoadMode::Open { .. })
    }
}
