//! What a run was asked to do. A `RunSpec` is pure data: the engine turns it into a plan
//! (resolved addresses, pre-encoded request bytes), and the result carries it as a record.
//! `RunSpec::validate` is the one place that decides whether a spec can measure anything;
//! every command and the engine ask it, so they refuse the same specs with the same words.

use crate::Shard;
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

/// The highest open-loop rate a run may ask for, requests/s (all shards together): one
/// request a nanosecond, the resolution of the clock the schedule runs on. No machine sends
/// HTTP requests that fast; a rate above it is a typo or a test of the tool, refused before
/// anything starts.
pub const MAX_RATE_PER_S: f64 = 1e9;

/// The most connections an open-loop run opens to keep its schedule when the user names
/// none (bench `--rate`, sweep `--rates`, capacity, a tune's capacity trials, http_load
/// `-rate`): enough for a high rate on slow responses, few enough for one generator's file
/// descriptors. A request due while all are busy waits, and the wait counts.
pub const OPEN_LOOP_CONNECTIONS: u32 = 1000;

/// Connections of a closed-loop run when `-c` is not given (wrk's default too). The one
/// home of the number: `RunSpec::default`, bench's and smtp's flags refer to it.
pub const DEFAULT_CONNECTIONS: u32 = 10;

/// How long a run sends when neither `-n` nor `-d` is given, in seconds (also a capacity
/// step's length without `--step-duration`).
pub const DEFAULT_DURATION_S: f64 = 10.0;

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

/// HTTPS settings (ignored for http:// URLs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsOptions {
    /// `--insecure`: accept any server certificate (signatures are still checked).
    #[serde(default)]
    pub insecure: bool,
    /// `--cacert FILE`: trust the PEM certificates in this file instead of the system's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<String>,
    /// `--no-tls-resume`: a full handshake on every new connection.
    #[serde(default)]
    pub no_resume: bool,
}

impl TlsOptions {
    pub fn is_default(&self) -> bool {
        *self == TlsOptions::default()
    }
}

fn one() -> u32 {
    1
}

/// `--io`: how the engine's workers wait for their sockets. `Auto` takes io_uring when the
/// kernel allows it and epoll otherwise (saying why); the result records which one ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoChoice {
    #[default]
    Epoll,
    Uring,
    Auto,
}

impl IoChoice {
    pub fn is_default(&self) -> bool {
        *self == IoChoice::default()
    }
}

/// The I/O backend a run's workers used (`RunResult::io_backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoBackend {
    Epoll,
    Uring,
}

impl IoBackend {
    /// The name `--io` and the result use: "epoll" or "uring".
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Epoll => "epoll",
            IoBackend::Uring => "uring",
        }
    }
}

fn is_one(n: &u32) -> bool {
    *n == 1
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
    /// Per connection: the TCP connect, and then the TLS handshake (https://), each.
    pub connect_timeout_ms: u64,
    /// Per request: from sending it to its last byte (never the connect or handshake).
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
    /// The scenario the requests came from, if any: its file path or the name its caller
    /// gave it (a record; the engine is handed the parsed scenario, and `url` is its base URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// SHA-256 (hex) of the scenario's text, so a result says exactly what was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_sha256: Option<String>,
    /// HTTPS: certificate checks and session resumption.
    #[serde(default, skip_serializing_if = "TlsOptions::is_default")]
    pub tls: TlsOptions,
    /// `--http2`: h2 over TLS (ALPN), h2c with prior knowledge for http://.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http2: bool,
    /// `--http3`: HTTP/3 over QUIC (UDP), https:// only (see docs/http3.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub http3: bool,
    /// `--0rtt` (with `--http3`): resumed connections send their first request in 0-RTT.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zero_rtt: bool,
    /// `--count journeys`: `-n` counts journeys' walks begun, not requests (scenarios with
    /// journeys; an open loop's arrivals are walks either way).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub count_journeys: bool,
    /// `--streams N`: HTTP/2 or HTTP/3 streams kept busy at once per connection (h2load's
    /// `-m`).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub streams: u32,
    /// `--shard i/n`: this run is shard i of a test whose `-c`, `--rate`, `-n` and
    /// `--stages` above are the whole test's (see `shard.rs` for the shares).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// `--start-at`: the run waited for this wall-clock time, ms since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_ms: Option<u64>,
    /// `webtune smtp`: the run speaks SMTP to an smtp:// URL and its requests are messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smtp: Option<crate::SmtpSpec>,
    /// `--io`: epoll, io_uring, or io_uring where the kernel allows it.
    #[serde(default, skip_serializing_if = "IoChoice::is_default")]
    pub io: IoChoice,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            url: String::new(),
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            body_bytes: 0,
            connections: DEFAULT_CONNECTIONS,
            threads: 1,
            stop: StopCondition::Duration {
                seconds: DEFAULT_DURATION_S,
            },
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
            scenario_sha256: None,
            tls: TlsOptions::default(),
            http2: false,
            http3: false,
            zero_rtt: false,
            count_journeys: false,
            streams: 1,
            shard: None,
            start_at_unix_ms: None,
            smtp: None,
            io: IoChoice::Epoll,
        }
    }
}

/// The most `--streams` a run may ask for: far above what servers allow (nginx 128, Apache
/// and h2o 100 by default), and low enough that `-c × --streams` users stay cheap.
pub const MAX_STREAMS: u32 = 10_000;

/// Why a spec cannot run (or could run but would measure nothing). Messages name the
/// command-line flags, as the user gave them there.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("{0}")]
    Smtp(String),
    #[error("{flag} must be at least 1")]
    Zero { flag: &'static str },
    #[error("{flag} must be longer than 0 (e.g. {example})")]
    ZeroDuration {
        flag: &'static str,
        example: &'static str,
    },
    #[error("{flag} needs a timed run (-d or --stages), not -n")]
    NeedsTimedRun { flag: &'static str },
    #[error("{} leave nothing to measure in a {length}s run", window_flags(*.warmup, *.cooldown))]
    NothingToMeasure {
        warmup: f64,
        cooldown: f64,
        length: f64,
    },
    #[error("{flag} must be a positive number, not {value}")]
    NotPositive { flag: &'static str, value: f64 },
    #[error(
        "{flag} {} is more than any machine can send: at most {} requests/s \
         (one a nanosecond, the resolution of the schedule's clock)",
        short_number(*.value),
        short_number(MAX_RATE_PER_S)
    )]
    RateTooHigh { flag: &'static str, value: f64 },
    #[error("--stages: {0}")]
    BadStages(String),
    #[error("{0}")]
    Http2(&'static str),
    #[error("--streams must be from 1 to {MAX_STREAMS} (HTTP/2 streams per connection), not {0}")]
    TooManyStreams(u32),
    #[error("{flag} {total} leaves shard {shard} nothing: it must be at least the shard count {}", .shard.count)]
    ShardTooSmall {
        flag: &'static str,
        total: u64,
        shard: Shard,
    },
}

/// A number as a person would write it: 1e308 and 1e9, not 309 digits.
fn short_number(v: f64) -> String {
    if v.abs() >= 1e7 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// "--warmup 2s", "--cooldown 1s" or both, as a refusal names them.
fn window_flags(warmup: f64, cooldown: f64) -> String {
    match (warmup > 0.0, cooldown > 0.0) {
        (true, false) => format!("--warmup {warmup}s would"),
        (false, true) => format!("--cooldown {cooldown}s would"),
        _ => format!("--warmup {warmup}s and --cooldown {cooldown}s"),
    }
}

impl RunSpec {
    /// Can this spec measure anything? Refuses zero counts and lengths, zero timeouts and
    /// intervals, a warm-up or cool-down on a `-n` run, and a warm-up plus cool-down that
    /// leave nothing of the run. Touches no network: the engine checks the URL.
    pub fn validate(&self) -> Result<(), SpecError> {
        let zero = |flag| Err(SpecError::Zero { flag });
        let zero_duration = |flag, example| Err(SpecError::ZeroDuration { flag, example });
        if self.connections == 0 {
            return zero("-c/--connections");
        }
        if self.threads == 0 {
            return zero("-t/--threads");
        }
        if self.max_requests_per_conn == Some(0) {
            return zero("--max-requests-per-conn");
        }
        if self.streams == 0 {
            return zero("--streams");
        }
        if self.streams > MAX_STREAMS {
            return Err(SpecError::TooManyStreams(self.streams));
        }
        self.validate_http2()?;
        if let Some(smtp) = &self.smtp {
            smtp.check().map_err(SpecError::Smtp)?;
        }
        if self.connect_timeout_ms == 0 {
            return zero_duration("--connect-timeout", "--connect-timeout 5s");
        }
        if self.timeout_ms == 0 {
            return zero_duration("--timeout", "--timeout 30s");
        }
        if self.interval_ms == 0 {
            return zero_duration("--interval", "--interval 1s");
        }
        if let LoadMode::Open { rate, .. } = self.load {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(SpecError::NotPositive {
                    flag: "--rate",
                    value: rate,
                });
            }
            if rate > MAX_RATE_PER_S {
                return Err(SpecError::RateTooHigh {
                    flag: "--rate",
                    value: rate,
                });
            }
            // Open-loop stages ramp the rate: their targets are rates too.
            // (A target that is no number at all is `BadStages`, below.)
            let peak = self
                .stages
                .iter()
                .map(|s| s.target)
                .filter(|t| t.is_finite())
                .fold(0.0, f64::max);
            if peak > MAX_RATE_PER_S {
                return Err(SpecError::RateTooHigh {
                    flag: "--stages target",
                    value: peak,
                });
            }
        }
        if let Some(probe) = &self.probe {
            if !(probe.rate_per_s.is_finite() && probe.rate_per_s > 0.0) {
                return Err(SpecError::NotPositive {
                    flag: "--probe-rate",
                    value: probe.rate_per_s,
                });
            }
        }
        for (flag, seconds) in [("--warmup", self.warmup_s), ("--cooldown", self.cooldown_s)] {
            if !(seconds.is_finite() && seconds >= 0.0) {
                return Err(SpecError::NotPositive {
                    flag,
                    value: seconds,
                });
            }
        }
        self.validate_shard()?;
        let length = self.run_seconds()?;
        let (warmup, cooldown) = (self.warmup_s, self.cooldown_s);
        match length {
            None if warmup > 0.0 => Err(SpecError::NeedsTimedRun { flag: "--warmup" }),
            None if cooldown > 0.0 => Err(SpecError::NeedsTimedRun { flag: "--cooldown" }),
            Some(length) if warmup + cooldown >= length && warmup + cooldown > 0.0 => {
                Err(SpecError::NothingToMeasure {
                    warmup,
                    cooldown,
                    length,
                })
            }
            _ => Ok(()),
        }
    }

    /// `--http2` and `--streams`: what HTTP/2 runs do not combine with (see docs/http2.md).
    fn validate_http2(&self) -> Result<(), SpecError> {
        let refuse = |why| Err(SpecError::Http2(why));
        if self.http3 {
            return self.validate_http3();
        }
        if self.zero_rtt {
            return refuse("--0rtt needs --http3");
        }
        if !self.http2 {
            return if self.streams > 1 {
                refuse("--streams needs --http2 or --http3 (HTTP/1.1 sends one request at a time)")
            } else {
                Ok(())
            };
        }
        if self.http10 {
            return refuse("--http2 and --http1.0 ask for two protocols: give one");
        }
        if !self.keepalive {
            return refuse(
                "--http2 with --no-keepalive is not supported: h2 streams share a connection",
            );
        }
        if self.max_requests_per_conn.is_some() {
            return refuse("--http2 with --max-requests-per-conn is not supported");
        }
        if !self.stages.is_empty() && self.load == LoadMode::Closed {
            return refuse(
                "--http2 with --stages needs --rate (closed-loop ramps are HTTP/1 only)",
            );
        }
        Ok(())
    }

    /// `--http3`: what HTTP/3 runs do not combine with (see docs/http3.md).
    fn validate_http3(&self) -> Result<(), SpecError> {
        let refuse = |why| Err(SpecError::Http2(why));
        if self.http2 {
            return refuse("--http2 and --http3 ask for two protocols: give one");
        }
        if self.http10 {
            return refuse("--http3 and --http1.0 ask for two protocols: give one");
        }
        if !self.keepalive {
            return refuse(
                "--http3 with --no-keepalive is not supported: h3 streams share a connection",
            );
        }
        if !self.stages.is_empty() {
            return refuse("--http3 with --stages is not supported yet");
        }
        if self.smtp.is_some() || self.probe.is_some() {
            return refuse("--http3 loads HTTP only, without --probe");
        }
        if self.zero_rtt && self.tls.no_resume {
            return refuse("--0rtt needs session resumption: drop --no-tls-resume");
        }
        Ok(())
    }

    /// Every shard must get at least one connection and, with `-n`, one request.
    fn validate_shard(&self) -> Result<(), SpecError> {
        let Some(shard) = self.shard else {
            return Ok(());
        };
        let too_small = |flag, total| Err(SpecError::ShardTooSmall { flag, total, shard });
        if shard.share(u64::from(self.connections)) == 0 {
            return too_small("-c/--connections", u64::from(self.connections));
        }
        match self.stop {
            StopCondition::Requests { count }
                if self.stages.is_empty() && shard.share(count) == 0 =>
            {
                too_small("-n/--requests", count)
            }
            _ => Ok(()),
        }
    }

    /// The same test with no shard: what every shard of one test has in common (threads,
    /// a per-machine choice, are left as they are).
    pub fn whole_test(&self) -> RunSpec {
        RunSpec {
            shard: None,
            ..self.clone()
        }
    }

    /// How long the run sends, in seconds (None: until `-n` requests are done), checked to
    /// be a positive length.
    fn run_seconds(&self) -> Result<Option<f64>, SpecError> {
        if !self.stages.is_empty() {
            for stage in &self.stages {
                if !(stage.seconds.is_finite() && stage.seconds >= 0.0) {
                    return Err(SpecError::BadStages(format!(
                        "a stage lasts {}s; write e.g. 10s:50",
                        stage.seconds
                    )));
                }
                if !(stage.target.is_finite() && stage.target >= 0.0) {
                    return Err(SpecError::BadStages(format!(
                        "the target must be a number ≥ 0, not {}",
                        stage.target
                    )));
                }
            }
            let total = self.stages_seconds();
            if total <= 0.0 {
                return Err(SpecError::BadStages(
                    "the stages last no time at all".into(),
                ));
            }
            return Ok(Some(total));
        }
        match self.stop {
            StopCondition::Requests { count: 0 } => Err(SpecError::Zero {
                flag: "-n/--requests",
            }),
            StopCondition::Requests { .. } => Ok(None),
            StopCondition::Duration { seconds } if seconds.is_finite() && seconds > 0.0 => {
                Ok(Some(seconds))
            }
            StopCondition::Duration { .. } => Err(SpecError::ZeroDuration {
                flag: "-d/--duration",
                example: "-d 10s",
            }),
        }
    }

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

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
