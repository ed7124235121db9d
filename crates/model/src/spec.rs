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
}
