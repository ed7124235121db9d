//! Bench's flags, shared by every command that sends HTTP load (bench, sweep, capacity, lab
//! run, lab compare, compare --live, advise --verify, tune): `BenchArgs` and the parts
//! other front ends reuse (`RequestArgs`), mapped onto a `RunSpec` (`to_spec`; what the
//! values mean is `webtune_model::flag_values`), and the parsers of the bench flags given
//! after `--` (`parse_bench`, `bench_args`).

use crate::output;
use crate::output_flags::{OutputFlags, OutputHelp};
use anyhow::{anyhow, bail, Context};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use webtune_engine::Workload;
use webtune_model::{parse_duration, IoChoice, ProbeSpec, RunSpec, StatusRanges, TlsOptions};

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
    pub format: webtune_report::Format,
    #[command(flatten)]
    pub output: OutputFlags<BenchOutput>,
    #[command(flatten)]
    pub request: RequestArgs,
    #[command(flatten)]
    pub gate: crate::gate::ThresholdArgs,
    #[command(flatten)]
    pub sharding: crate::sharding::ShardArgs,
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

fn parse_io(text: &str) -> Result<IoChoice, String> {
    match text {
        "epoll" => Ok(IoChoice::Epoll),
        "uring" | "io_uring" => Ok(IoChoice::Uring),
        "auto" => Ok(IoChoice::Auto),
        _ => Err(format!(
            "{text:?} is not a backend: use epoll, uring or auto"
        )),
    }
}

pub use webtune_engine::available_cores;
use webtune_model::flag_values::{connections_for, parse_header};
pub use webtune_model::flag_values::{load_mode, parse_stages, stop_condition};

impl RequestArgs {
    /// Fill in everything these flags decide.
    pub fn apply(&self, spec: &mut RunSpec) -> anyhow::Result<()> {
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => std::fs::read(path)
                .with_context(|| format!("cannot read --body-file {}", path.display()))?,
            (None, None) => Vec::new(),
        };
        spec.method = self.method.clone();
        spec.headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<_, _>>()?;
        spec.body_bytes = body.len() as u64;
        spec.body = body;
        spec.threads = self.threads.unwrap_or_else(available_cores);
        spec.keepalive = !self.no_keepalive;
        spec.http10 = self.http10;
        spec.max_requests_per_conn = self.max_requests_per_conn;
        spec.connect_timeout_ms = self.connect_timeout.as_millis() as u64;
        spec.timeout_ms = self.timeout.as_millis() as u64;
        spec.connect_to = self.connect_to.clone();
        spec.expect_status = StatusRanges::parse(&self.expect_status)
            .map_err(|e| anyhow::anyhow!("--expect-status: {e}"))?
            .into_pairs();
        spec.interval_ms = self.interval.as_millis() as u64;
        spec.warmup_s = self.warmup.map(|d| d.as_secs_f64()).unwrap_or(0.0);
        spec.cooldown_s = self.cooldown.map(|d| d.as_secs_f64()).unwrap_or(0.0);
        spec.probe = self.probe.as_ref().map(|url| ProbeSpec {
            url: url.clone(),
            rate_per_s: self.probe_rate,
        });
        spec.tls = TlsOptions {
            insecure: self.insecure,
            cacert: self.cacert.as_ref().map(|p| p.display().to_string()),
            no_resume: self.no_tls_resume,
        };
        spec.http2 = self.http2;
        spec.http3 = self.http3;
        spec.zero_rtt = self.zero_rtt;
        spec.streams = self.streams;
        spec.io = self.io;
        if let Ok((_, Some(why))) = webtune_engine::resolve_io(self.io) {
            eprintln!("webtune: --io auto: io_uring is not available ({why}); using epoll");
        }
        Ok(())
    }

    /// What the run sends: the `--scenario` file, parsed, or the URL's own request.
    pub fn workload(&self) -> anyhow::Result<Workload> {
        match &self.scenario {
            Some(path) => Workload::from_scenario_file(path).map_err(|e| anyhow::anyhow!("{e}")),
            None => Ok(Workload::request()),
        }
    }
}

impl BenchArgs {
    /// The run these flags describe, against `url`, checked by `RunSpec::validate` (a spec
    /// that would measure nothing is refused here, before anything starts).
    pub fn to_spec(&self, url: &str) -> anyhow::Result<RunSpec> {
        let stages = match &self.stages {
            Some(text) => parse_stages(text)?,
            None => Vec::new(),
        };
        let connections = connections_for(self.connections, &stages, self.rate);
        let mut spec = RunSpec {
            url: url.to_string(),
            connections,
            stop: stop_condition(self.requests, self.duration),
            load: load_mode(self.rate, &self.arrival),
            stages,
            count_journeys: self.count == "journeys",
            ..RunSpec::default()
        };
        self.request.apply(&mut spec)?;
        self.sharding.apply(&mut spec)?;
        spec.validate()?;
        Ok(spec)
    }
}

/// Check `--json` and `--html` before any load starts (see `output::check`).
pub fn check_outputs(args: &BenchArgs) -> anyhow::Result<()> {
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
        ("--csv", args.output.csv.as_deref()),
    ])
}

/// The bench flags given after `--`, parsed by bench's own definition.
#[derive(Parser)]
#[command(name = "webtune lab run STACK --", disable_version_flag = true)]
struct BenchLine {
    #[command(flatten)]
    bench: BenchArgs,
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
struct BenchFlags {
    #[command(flatten)]
    bench: BenchArgs,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::compare::ProtocolArgs;
    use webtune_search::interleave::block::Metric;

    #[test]
    fn bench_flags_are_benchs_own_and_lengths_are_refused() {
        let flags = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let b = bench_args(&flags("-c 20 -H X-A:1")).unwrap();
        assert_eq!(b.connections, Some(20));
        let e = bench_args(&flags("-d 10s")).unwrap_err().to_string();
        assert!(e.contains("--block"), "{e}");
        let e = bench_args(&flags("--nonsense")).unwrap_err().to_string();
        assert!(
            e.starts_with("bench flags after --: ") && !e.contains('\n'),
            "{e}"
        );
        let e = bench_args(&flags("http://x/")).unwrap_err().to_string();
        assert!(e.contains("no URL"), "{e}");
        // Open loop decides on p99.
        let b = bench_args(&flags("--rate 100")).unwrap();
        let spec = b.to_spec("http://127.0.0.1:1/").unwrap();
        let s = ProtocolArgs::default().settings(&spec, Some(1)).unwrap();
        assert_eq!((s.decide_on, s.starts), (Metric::P99, 1));
        // Arms that can be restarted: a start per 15 pairs of the budget (3 minutes: 6).
        let s = ProtocolArgs::default().settings(&spec, None).unwrap();
        assert_eq!(s.starts, 6);
        let p = ProtocolArgs {
            block: Some(Duration::ZERO),
            ..ProtocolArgs::default()
        };
        let e = p.settings(&spec, Some(1)).unwrap_err().to_string();
        assert!(e.starts_with("--block: "), "{e}");
    }
}
