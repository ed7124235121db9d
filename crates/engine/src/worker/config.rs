//! What one worker is given: `WorkerConfig`, built by the coordinator and read by every
//! protocol's worker (`h1`, `h2`, `h3`) and by `base`. A leaf of `worker`: the dispatch in
//! `worker` and the protocols below it import it, it imports none of them.

use crate::pacer::Pacer;
use crate::plan::PlannedRequest;
use crate::recorder::{FirstLength, IntervalReport, OpenGauge};
use crate::scenario::{Think, WeightedPicker};
use crate::tls::Connector;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes a worker reads a socket into at a time.
pub(crate) const READ_BUFFER: usize = 64 * 1024;

/// Everything one worker needs; built by the coordinator.
pub struct WorkerConfig {
    pub requests: Arc<Vec<PlannedRequest>>,
    pub picker: Option<Arc<WeightedPicker>>,
    pub think: Think,
    pub named: bool,
    pub host_header: Arc<str>,
    pub http10: bool,
    /// Socket address for each of this worker's connections (round-robin over addresses).
    pub conn_addrs: Vec<SocketAddr>,
    /// This worker's share of `-n`, if given.
    pub budget: Option<u64>,
    /// Stop sending this long after the start, if the run is timed.
    pub end_s: Option<f64>,
    /// When this worker's requests are due (`pacer`); `Base` takes it.
    pub pacer: Pacer,
    /// The measurement window (seconds since start): summary counts only what finishes in it.
    pub window: (f64, f64),
    pub keepalive: bool,
    pub max_requests_per_conn: Option<u64>,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub start: Instant,
    pub interval: Duration,
    pub stop: Arc<AtomicBool>,
    /// Body length of the first response, per request.
    pub first_lengths: Arc<Vec<FirstLength>>,
    /// Connections open across all workers, and their peak.
    pub open_gauge: Arc<OpenGauge>,
    pub reports: Sender<IntervalReport>,
    pub seed: u64,
    /// HTTPS: this worker's TLS connector (its own session cache); None for http://.
    pub tls: Option<Connector>,
    /// `--http2`: the run speaks HTTP/2 (`worker::h2` runs it).
    pub h2: Option<crate::h2::H2Setup>,
    /// `--http3`: the run speaks HTTP/3 over QUIC (`worker::h3` runs it).
    pub h3: Option<crate::h3::H3Setup>,
    /// `webtune smtp`: the run speaks SMTP (`worker::h1::smtp_io`), its requests are messages.
    pub smtp: Option<Arc<crate::smtp::SmtpSetup>>,
    /// SMTP `--starttls`: the TLS connector the session upgrades with.
    pub starttls: Option<Connector>,
    /// How this worker waits for its sockets (`poller`).
    pub io: webtune_model::IoBackend,
    /// Scenarios with journeys: each connection is a virtual user (`journey`).
    pub journeys: Option<Arc<crate::journey::JourneyRun>>,
    /// The run-wide number of this worker's first connection (its first virtual user).
    pub first_user: usize,
}
