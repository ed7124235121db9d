//! What a run measured: `RunResult`, schema `webtune.run/1`, documented field by field in
//! `docs/result-schema.md`.

use crate::{
    ErrorCounts, LatencyHistogram, Percentiles, RunSpec, ServerSamples, ShardSet, StartRecord,
    Verdict,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema tag every result carries; bump the number on an incompatible change.
pub const SCHEMA: &str = "webtune.run/1";

/// The largest saved result (run, sweep, shard) a command reads: a file over it is refused
/// before it can fill memory (`/dev/zero`, a runaway file). An hour at `--interval 10ms` is
/// about a third of it.
pub const MAX_SAVED_BYTES: u64 = 256 * 1024 * 1024;

/// Percentile summaries of the three latency histograms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub connect: Percentiles,
    pub first_byte: Percentiles,
    pub total: Percentiles,
    /// Open loop only: from the actual send (what the server took), beside `total`, which is
    /// from the intended start. Empty in closed loop, where the two are the same.
    #[serde(default)]
    pub service: Percentiles,
    /// TLS handshake time of new connections (empty for plain HTTP).
    #[serde(default)]
    pub tls_handshake: Percentiles,
}

/// The three histograms, in HdrHistogram's serialised form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// TCP connect time, recorded for requests that opened their connection.
    pub connect: LatencyHistogram,
    /// From the request's start to the first byte of the response.
    pub first_byte: LatencyHistogram,
    /// From the request's start (including connect when it opened one) to the last byte;
    /// in open loop from its intended start (coordinated-omission corrected).
    pub total: LatencyHistogram,
    /// Open loop only: from the actual send to the last byte.
    #[serde(default)]
    pub service: LatencyHistogram,
    /// HTTPS: from the TCP connect to the end of the TLS handshake, recorded like `connect`.
    #[serde(default)]
    pub tls_handshake: LatencyHistogram,
}

/// HTTPS: what the TLS layer did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsSummary {
    /// Handshakes that set up a new session (certificate checked, key exchange).
    pub full_handshakes: u64,
    /// Handshakes that resumed an earlier session (ticket or session id).
    pub resumed_handshakes: u64,
    /// The protocol version the first handshake agreed on, e.g. "TLSv1.3".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The cipher suite the first handshake agreed on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cipher: Option<String>,
    /// The ALPN protocol the server chose, if it chose one ("http/1.1", "h2").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpn: Option<String>,
}

impl TlsSummary {
    /// Add a later run's counts; keep the first-seen version, cipher and ALPN.
    pub fn merge(&mut self, later: &TlsSummary) {
        self.full_handshakes += later.full_handshakes;
        self.resumed_handshakes += later.resumed_handshakes;
        if self.version.is_none() {
            self.version.clone_from(&later.version);
        }
        if self.cipher.is_none() {
            self.cipher.clone_from(&later.cipher);
        }
        if self.alpn.is_none() {
            self.alpn.clone_from(&later.alpn);
        }
    }
}

/// HTTP/2: what the connections did besides answering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct H2Summary {
    /// `--streams`: streams each connection keeps busy at once, as asked.
    pub streams_per_connection: u32,
    /// The lowest SETTINGS_MAX_CONCURRENT_STREAMS a server announced, if any; below
    /// `streams_per_connection` it is the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_max_streams: Option<u32>,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// RST_STREAM frames received (each also counts as an `h2_stream_reset` error).
    pub resets: u64,
    /// Requests a graceful GOAWAY left unprocessed, sent again on a new connection.
    pub goaway_retries: u64,
    /// Requests that waited on the client for a free stream (every stream of every
    /// connection was busy, or a server's stream limit held them back).
    pub queued_for_stream: u64,
    /// Request bodies that waited for the server's flow-control window (each once, however
    /// often it stopped).
    pub flow_control_waits: u64,
}

impl H2Summary {
    /// Add another part's counts (runs merged, workers gathered).
    pub fn merge(&mut self, other: &H2Summary) {
        self.streams_per_connection = self
            .streams_per_connection
            .max(other.streams_per_connection);
        self.server_max_streams = match (self.server_max_streams, other.server_max_streams) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.goaways += other.goaways;
        self.resets += other.resets;
        self.goaway_retries += other.goaway_retries;
        self.queued_for_stream += other.queued_for_stream;
        self.flow_control_waits += other.flow_control_waits;
    }
}

/// HTTP/3 (QUIC): what the connections and their UDP sockets did besides answering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct H3Summary {
    /// `--streams`: request streams each connection keeps busy at once, as asked.
    pub streams_per_connection: u32,
    /// Each worker's UDP socket: receive and send buffer sizes as the kernel granted them
    /// (Linux reports twice what was asked, its bookkeeping included; the largest worker's).
    pub udp_recv_buffer_bytes: u64,
    pub udp_send_buffer_bytes: u64,
    /// UDP segmentation offload: most datagrams one send may carry (1: no GSO), and most
    /// one receive may return (1: no GRO), as the kernel offered them.
    pub gso_segments: u64,
    pub gro_segments: u64,
    /// UDP datagrams and bytes sent and received, all connections together.
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub udp_bytes_sent: u64,
    pub udp_bytes_received: u64,
    /// QUIC packets sent and declared lost (their frames are sent again in new packets:
    /// QUIC retransmits data, never packets), and the bytes lost.
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    /// Congestion events (a loss or ECN mark that cut the window).
    pub congestion_events: u64,
    /// Handshakes that resumed a TLS session, and those whose first request went in 0-RTT
    /// and was accepted (`--0rtt`), or sent in 0-RTT and refused (sent again in 1-RTT).
    pub resumed_handshakes: u64,
    pub zero_rtt_accepted: u64,
    pub zero_rtt_refused: u64,
    /// `--0rtt` connections that went in 1-RTT because no session ticket was there yet (the
    /// server sends its ticket after the handshake, so a connection opened before the last
    /// one's ticket arrived has none to use).
    #[serde(default)]
    pub zero_rtt_without_ticket: u64,
    /// RESET_STREAM codes received, with counts (`h3_stream_reset` errors).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub stream_resets: BTreeMap<u64, u64>,
    /// CONNECTION_CLOSE codes received ("transport:N" or "application:N"), with counts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub connection_closes: BTreeMap<String, u64>,
    /// GOAWAY frames received (the connection is then replaced, as for HTTP/2).
    pub goaways: u64,
}

impl H3Summary {
    /// Add another part's counts (runs merged, workers gathered).
    pub fn merge(&mut self, other: &H3Summary) {
        self.streams_per_connection = self
            .streams_per_connection
            .max(other.streams_per_connection);
        for (mine, theirs) in [
            (&mut self.udp_recv_buffer_bytes, other.udp_recv_buffer_bytes),
            (&mut self.udp_send_buffer_bytes, other.udp_send_buffer_bytes),
            (&mut self.gso_segments, other.gso_segments),
            (&mut self.gro_segments, other.gro_segments),
        ] {
            *mine = (*mine).max(theirs);
        }
        for (mine, theirs) in [
            (&mut self.datagrams_sent, other.datagrams_sent),
            (&mut self.datagrams_received, other.datagrams_received),
            (&mut self.udp_bytes_sent, other.udp_bytes_sent),
            (&mut self.udp_bytes_received, other.udp_bytes_received),
            (&mut self.packets_sent, other.packets_sent),
            (&mut self.packets_lost, other.packets_lost),
            (&mut self.bytes_lost, other.bytes_lost),
            (&mut self.congestion_events, other.congestion_events),
            (&mut self.resumed_handshakes, other.resumed_handshakes),
            (&mut self.zero_rtt_accepted, other.zero_rtt_accepted),
            (&mut self.zero_rtt_refused, other.zero_rtt_refused),
            (
                &mut self.zero_rtt_without_ticket,
                other.zero_rtt_without_ticket,
            ),
            (&mut self.goaways, other.goaways),
        ] {
            *mine += theirs;
        }
        for (code, n) in &other.stream_resets {
            *self.stream_resets.entry(*code).or_insert(0) += n;
        }
        for (code, n) in &other.connection_closes {
            *self.connection_closes.entry(code.clone()).or_insert(0) += n;
        }
    }
}

// What the generator kept to (`Schedule`) and the verdict on it (`Validity`) are
// `validity`'s, with the rule that decides it; re-exported so `result::Schedule` stays.
pub use crate::validity::{Schedule, Validity};

/// A stretch with requests outstanding and none finished (100 ms granularity; the rule is
/// `stall`'s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// Seconds since the run began.
    pub start_s: f64,
    pub length_s: f64,
}

/// One request name of a scenario (or the probe): its own counts and latency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedResult {
    pub responses: u64,
    pub ok: u64,
    pub errors: ErrorCounts,
    pub status: BTreeMap<u16, u64>,
    pub length_varies: u64,
    pub body_bytes: u64,
    /// Total latency (as the run's `total`).
    pub latency: Percentiles,
    pub histogram: LatencyHistogram,
}

impl NamedResult {
    pub fn finish(&mut self) {
        self.latency = self.histogram.percentiles();
    }
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

/// CPU and memory the generator itself used during the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorUsage {
    /// CPU of the generator's own threads (workers and probe), not of the whole process: an
    /// in-process target (`bench` without a URL) is left out.
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
    /// Resolved addresses left out because they refused a test connection while others
    /// accepted it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_addresses: Vec<String>,
    /// Length of the measurement, seconds.
    pub duration_s: f64,
    /// True when the run was stopped early (Ctrl-C / SIGTERM).
    pub interrupted: bool,
    /// True when a run that stops at a count (`-n`) was ended because its target was down:
    /// every connect of its first `--timeout` was refused and none succeeded (a timed run
    /// ends at its duration anyway). Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub target_down: bool,
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
    /// TCP connections established (the connect succeeded).
    pub connections_opened: u64,
    /// The most connections held open at the same moment, across all threads (exact: from
    /// each socket's connect to its close). 0 in results written before it was recorded.
    #[serde(default)]
    pub peak_open_connections: u64,
    /// Complete responses after which the server kept the connection open for another
    /// request (HTTP/1.0: `Connection: keep-alive`; HTTP/1.1: no `Connection: close`), ab's
    /// "Keep-Alive requests". 0 in results written before it was recorded.
    #[serde(default)]
    pub keepalive_responses: u64,
    /// TCP connects started, failed ones included (refused, timed out, no local port).
    #[serde(default)]
    pub connect_attempts: u64,
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
    /// Open loop: the schedule's report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Schedule>,
    /// Whether the generator was the limit.
    #[serde(default)]
    pub validity: Validity,
    /// Stretches with requests outstanding and none finished.
    #[serde(default)]
    pub stalls: Vec<Stall>,
    /// Scenario runs: every figure per request name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_name: BTreeMap<String, NamedResult>,
    /// Scenarios with `[[journey]]`: per journey, walks completed and failed (by the step
    /// and kind that ended them) and the walk time (`docs/result-schema.md`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_journey: BTreeMap<String, crate::journey::JourneyResult>,
    /// The responsiveness probe's own results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<NamedResult>,
    /// HTTPS runs: handshakes full and resumed, the agreed version, cipher and ALPN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSummary>,
    /// The protocol the requests went over: "http/1.1", "http/1.0", "h2" (over TLS) or
    /// "h2c" (cleartext, prior knowledge). Absent in results from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// HTTP/2 runs: streams, GOAWAYs, resets and client-side queueing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2: Option<H2Summary>,
    /// HTTP/3 runs: the UDP socket's buffers and offloads, QUIC's packet counts and losses,
    /// 0-RTT, and the codes of stream resets and connection closes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<H3Summary>,
    /// The `Server` header of the first complete response (ab's "Server Software"); None
    /// when the server sent none or the engine did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_software: Option<String>,
    /// With `bench --repeat N`: one summary per repeat, in run order. The rest of the result
    /// is then all repeats merged. Empty for a single run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<RepeatSummary>,
    /// A sharded or `--start-at` run: its planned start and the clock it used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartRecord>,
    /// A merged result (`webtune merge`): its shards and their start skew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharding: Option<ShardSet>,
    /// `--threshold`: every threshold's verdict, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<Verdict>,
    /// SMTP runs (schema `webtune.smtp/1`): per-phase latencies and replies by code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp: Option<crate::SmtpSummary>,
    /// How the workers waited for their sockets (`--io`); None in results written before
    /// it was recorded, and for runs the engine did not make (`webtune fs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_backend: Option<crate::IoBackend>,
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
        let with_response: u64 = crate::ErrorKind::ALL
            .into_iter()
            .filter(|k| k.has_response())
            .map(|k| self.errors.get(k))
            .sum();
        self.responses + self.errors.total() - with_response
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
            service: self.histograms.service.percentiles(),
            tls_handshake: self.histograms.tls_handshake.percentiles(),
        };
        for named in self.by_name.values_mut() {
            named.finish();
        }
        for journey in self.by_journey.values_mut() {
            journey.finish();
        }
        if let Some(p) = self.probe.as_mut() {
            p.finish();
        }
        if let Some(smtp) = self.smtp.as_mut() {
            smtp.finish();
        }
        if let Some(s) = self.schedule.as_mut() {
            s.lag = s.lag_histogram.percentiles();
            s.connection_wait = s.connection_wait_histogram.percentiles();
            s.generator_lag = s.generator_lag_histogram.percentiles();
        }
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("RunResult always serialises")
    }

    /// Parse a saved result, refusing other schemas with a clear message.
    pub fn from_json(text: &str) -> Result<RunResult, ResultParseError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ResultParseError::Json(e.to_string()))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) | Some(crate::SMTP_SCHEMA) => {}
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

// A finished result is judged by `--threshold` like a live snapshot (`threshold::Measured`);
// the impl lives with the result so `threshold` does not import it (issue 36 item 5).
impl crate::threshold::Measured for RunResult {
    fn latency_us(&self, stat: crate::threshold::LatencyStat) -> f64 {
        crate::threshold::histogram_stat(&self.histograms.total, stat)
    }
    fn error_count(&self) -> u64 {
        self.errors.total()
    }
    fn error_ratio(&self) -> f64 {
        RunResult::error_ratio(self)
    }
    fn rps(&self) -> f64 {
        self.requests_per_s
    }
}
