//! Bench's flags, shared by every command that sends HTTP load (bench, sweep, capacity, lab
//! run, lab compare, compare --live, advise --verify, tune): `BenchArgs` and the parts
//! other front ends reuse (`RequestArgs`), and the parsers of the bench flags given after
//! `--` (`parse_bench`, `bench_args`). The binary maps them onto a `RunSpec`.

use crate::output_flags::{OutputFlags, OutputHelp};
use anyhow::{anyhow, bail};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use webtune_model::{parse_duration, IoChoice};

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:\n  \
    webtune bench http://127.0.0.1:8080/empty.gif -c 100 -d 10s\n  \
    webtune bench http://127.0.0.1:8080/ -n 100000 -c 10 --no-keepalive --json result.json\n  \
    webtune bench            # no URL: benchmarks the embedded target in this process")]
pub struct BenchArgs {
    /// The URL to load: http:// or https:// (HTTP/1.1; --http2 for h2, or h2c over http://).
    /// Without one, the embedded target is started on a free loopback port and /empty.gif is
    /// benchmarked.
    pub url: Option<String>,
    /// Concurrent connections. Closed loop (default 10): each sends its next request when the
    /// previous answer ends. Open loop (--rate; default 1000): the most connections opened
    /// to keep the schedule.
    #[arg(short = 'c', long = "connections")]
    pub connections: Option<u32>,
    /// Open loop: send this many requests per second in all, whatever the answers do, and
    /// measure latency from each request's intended start (coordinated-omission corrected).
    #[arg(long = "rate", value_name = "REQ/S")]
    pub rate: Option<f64>,
    /// Open loop: spacing of intended starts, uniform or poisson.
    #[arg(long = "arrival", default_value = "uniform", value_parser = ["uniform", "poisson"])]
    pub arrival: String,
    /// Ramp linearly from 0 through DURATION:TARGET points, e.g. 10s:50,30s:200,10s:0.
    /// TARGET is connections (closed loop) or requests/s (with --rate). Sets the run's length.
    #[arg(long = "stages", value_name = "DUR:TARGET,…", conflicts_with_all = ["duration", "requests"])]
    pub stages: Option<String>,
    /// Print the per-interval time series as a table too.
    #[arg(long = "timeline")]
    pub timeline: bool,
    /// Stop after exactly this many requests have completed or failed.
    #[arg(short = 'n', long = "requests", conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// What -n counts: "requests" (default), or "journeys" (a scenario's journeys: walks
    /// begun; a walk under way when the count is reached goes on to its end).
    #[arg(
        long = "count",
        value_name = "UNIT",
        default_value = "requests",
        value_parser = ["requests", "journeys"]
    )]
    pub count: String,
    /// Stop sending after this long (e.g. 10s, 500ms, 1m30s). Default 10s unless -n is given.
    #[arg(short = 'd', long = "duration", value_parser = parse_duration, value_name = "DURATION")]
    pub duration: Option<Duration>,
    /// Layout of the summary on stdout: text, ab, http_load, json, csv or html.
    #[arg(
        short = 'f',
        long = "format",
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub format: webtune_model::format::Format,
    #[command(flatten)]
    pub output: OutputFlags<BenchOutput>,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub gate: crate::flags::threshold::ThresholdArgs,
    #[command(flatten)]
    pub sharding: crate::flags::shard::ShardArgs,
    /// Serve live metrics (Prometheus text format) at http://ADDR/metrics while the test
    /// runs, e.g. 127.0.0.1:9464; the endpoint closes when the run ends.
    #[arg(long = "metrics-listen", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
}

/// The help of bench's (and `lab run`'s) output flags.
#[derive(Debug, Clone)]
pub struct BenchOutput;

impl OutputHelp for BenchOutput {
    const JSON: &'static str =
        "Write the full result as JSON (schema webtune.run/1) to FILE, or \"-\" for stdout";
    const HTML: &'static str = "Write a self-contained HTML report (SVG plots, no network) to FILE";
    const CSV: Option<&'static str> = Some(
        "Also write the summary as CSV (a header line and one line of figures) to FILE or \"-\"",
    );
    const REPEAT: Option<&'static str> = Some(
        "Run the test N times and keep every run's summary (compare then reports confidence \
         intervals). The result's totals are all runs merged",
    );
    const QUIET: &'static str = "No progress line and no human (text) summary; a --format other \
        than text is still printed, and files are still written. Errors still go to stderr";
}

/// What every command that sends load shares (bench, sweep, lab run): how requests look,
/// how connections behave, timeouts, checks, the window and the probe.
#[derive(clap::Args, Debug, Clone)]
pub struct RequestArgs {
    /// Keep the first stretch in the time series but out of the summary.
    #[arg(long = "warmup", value_parser = parse_duration, value_name = "DURATION")]
    pub warmup: Option<Duration>,
    /// Keep the last stretch in the time series but out of the summary (timed runs only).
    #[arg(long = "cooldown", value_parser = parse_duration, value_name = "DURATION")]
    pub cooldown: Option<Duration>,
    /// A workload file (TOML): named requests with weights, URL templates, checks, think
    /// time. See docs/scenarios.md. The URL argument, if given, is its base URL.
    #[arg(long = "scenario", value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// One extra connection sending requests to this URL at a slow steady pace while the load
    /// runs; its latency is reported apart (how a user's browser fares under the load).
    #[arg(long = "probe", value_name = "URL")]
    pub probe: Option<String>,
    /// Requests per second of the probe.
    #[arg(long = "probe-rate", default_value_t = 1.0, value_name = "REQ/S")]
    pub probe_rate: f64,
    /// Worker threads (default: available cores; never more than connections).
    #[arg(short = 't', long = "threads")]
    pub threads: Option<u32>,
    /// A new connection per request (as ab without -k and http_load do).
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,
    /// Send HTTP/1.0 requests (with "Connection: keep-alive" unless --no-keepalive).
    #[arg(long = "http1.0")]
    pub http10: bool,
    /// Close and reopen a connection after this many requests on it.
    #[arg(long = "max-requests-per-conn", value_name = "N")]
    pub max_requests_per_conn: Option<u64>,
    /// HTTP method.
    #[arg(short = 'm', long = "method", default_value = "GET")]
    pub method: String,
    /// Extra request header "Name: value" (repeatable). A Host header replaces the URL's.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Request body.
    #[arg(short = 'b', long = "body", conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long = "body-file", value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Give up connecting after this long: the TCP connect, then (https://) the TLS
    /// handshake, each. `--timeout` never covers either.
    #[arg(long = "connect-timeout", default_value = "5s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub connect_timeout: Duration,
    /// Give up on a response this long after its request was sent (a stalled TLS handshake
    /// is `--connect-timeout`'s).
    #[arg(long = "timeout", default_value = "30s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub timeout: Duration,
    /// Connect to these addresses instead of resolving the URL's host (IP:PORT[,IP:PORT…]);
    /// connections are spread over them round-robin.
    #[arg(
        long = "connect-to",
        value_name = "ADDR[,ADDR…]",
        value_delimiter = ','
    )]
    pub connect_to: Vec<String>,
    /// Statuses that count as success: codes, ranges or classes, e.g. "2xx,3xx" or "200,404".
    #[arg(long = "expect-status", default_value = "2xx,3xx", value_name = "LIST")]
    pub expect_status: String,
    /// Time-series interval.
    #[arg(long = "interval", default_value = "1s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub interval: Duration,
    /// HTTPS: accept any server certificate (the handshake's signatures are still checked).
    #[arg(long = "insecure", conflicts_with = "cacert")]
    pub insecure: bool,
    /// HTTPS: trust the PEM certificate(s) in FILE instead of the system's roots.
    #[arg(long = "cacert", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// HTTPS: no session resumption; every new connection makes a full handshake.
    #[arg(long = "no-tls-resume")]
    pub no_tls_resume: bool,
    /// Speak HTTP/2: h2 by ALPN over https://, h2c with prior knowledge over http://.
    #[arg(long = "http2", conflicts_with = "http3")]
    pub http2: bool,
    /// Speak HTTP/3 over QUIC (UDP) to an https:// URL, TLS 1.3 with the same --cacert,
    /// --insecure and --no-tls-resume; never falls back to TCP (docs/http3.md).
    #[arg(long = "http3")]
    pub http3: bool,
    /// With --http3: a connection that resumes a session sends its first request in 0-RTT;
    /// accepted and refused 0-RTT are counted apart (http3.zero_rtt_*).
    #[arg(long = "0rtt", requires = "http3")]
    pub zero_rtt: bool,
    /// HTTP/2 or HTTP/3 streams each connection keeps busy at once (h2load's -m).
    #[arg(long = "streams", default_value_t = 1, value_name = "N")]
    pub streams: u32,
    /// How the workers wait for their sockets: epoll, uring (io_uring; an error where the
    /// kernel forbids it) or auto (io_uring where it works, else epoll, saying why).
    #[arg(long = "io", default_value = "epoll", value_name = "BACKEND",
          value_parser = crate::candidates::Candidates::new(
              ["epoll", "uring", "auto"].map(String::from).to_vec(), parse_io))]
    pub io: IoChoice,
}

pub fn parse_io(text: &str) -> Result<IoChoice, String> {
    match text {
        "epoll" => Ok(IoChoice::Epoll),
        "uring" | "io_uring" => Ok(IoChoice::Uring),
        "auto" => Ok(IoChoice::Auto),
        _ => Err(format!(
            "{text:?} is not a backend: use epoll, uring or auto"
        )),
    }
}

/// The bench flags given after `--`, parsed by bench's own definition.
#[derive(Parser)]
#[command(name = "webtune lab run STACK --", disable_version_flag = true)]
pub struct BenchLine {
    #[command(flatten)]
    pub bench: BenchArgs,
}

/// The bench flags given after `--` of a lab command (`lab run`, `tune`, `advise
/// --verify`), in one line when they do not parse.
pub fn parse_bench(words: &[String]) -> anyhow::Result<BenchArgs> {
    let argv = std::iter::once("webtune lab run STACK --".to_string()).chain(words.iter().cloned());
    match BenchLine::try_parse_from(argv) {
        Ok(line) => Ok(line.bench),
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            bail!(
                "bench flags after --: {} (see webtune bench --help)",
                first.trim_start_matches("error: ")
            )
        }
    }
}

/// Bench's own parser, for the flags after `--`.
#[derive(Parser, Debug)]
#[command(name = "webtune compare --live URL_A URL_B --", no_binary_name = true)]
pub struct BenchFlags {
    #[command(flatten)]
    pub bench: BenchArgs,
}

/// The bench flags after `--`, checked: nothing that sets a length, a URL or an output.
pub fn bench_args(flags: &[String]) -> anyhow::Result<BenchArgs> {
    let b = bench_args_with_path(flags)?;
    if b.url.is_some() {
        bail!("bench flags after --: no URL there (the arms are given before --)");
    }
    Ok(b)
}

/// As `bench_args`, a path to load allowed (`lab compare`: `-- -c 20 /cpu/2000`).
pub fn bench_args_with_path(flags: &[String]) -> anyhow::Result<BenchArgs> {
    let parsed = BenchFlags::try_parse_from(flags).map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        anyhow!("bench flags after --: {first}")
    })?;
    let b = parsed.bench;
    if b.duration.is_some() || b.requests.is_some() || b.stages.is_some() {
        bail!("bench flags after --: -d, -n and --stages have no place (--block and --budget set the length)");
    }
    if b.output.json.is_some() || b.output.html.is_some() || b.output.csv.is_some() {
        bail!("bench flags after --: outputs are compare's own (--json before --)");
    }
    if b.output.repeat > 1 {
        bail!("bench flags after --: --repeat has no place (the blocks repeat)");
    }
    Ok(b)
}
