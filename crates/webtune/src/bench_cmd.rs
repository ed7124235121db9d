//! `webtune bench`: one load test. Parses the flags into a `RunSpec`, starts the embedded
//! target when no URL is given, shows a progress line on a terminal, turns Ctrl-C into a
//! clean stop that keeps what was measured, and writes the reports.

use anyhow::{bail, Context};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;
use webtune_engine::{Progress, RunControl};
use webtune_model::units::parse_duration;
use webtune_model::{RunResult, RunSpec, StopCondition};

/// Exit status after an interrupted run (128 + SIGINT), as shells expect.
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:\n  \
    webtune bench http://127.0.0.1:8080/empty.gif -c 100 -d 10s\n  \
    webtune bench http://127.0.0.1:8080/ -n 100000 -c 10 --no-keepalive --json result.json\n  \
    webtune bench            (no URL: benchmarks the embedded target in this process)")]
pub struct BenchArgs {
    /// The URL to load (http:// only). Without one, the embedded target is started on a free
    /// loopback port and /empty.gif is benchmarked.
    pub url: Option<String>,
    /// Concurrent connections (closed loop: each sends its next request when the previous
    /// answer ends).
    #[arg(short = 'c', long = "connections", default_value_t = 10)]
    pub connections: u32,
    /// Stop after exactly this many requests have completed or failed.
    #[arg(short = 'n', long = "requests", conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// Stop sending after this long (e.g. 10s, 500ms, 2m). Default 10s unless -n is given.
    #[arg(short = 'd', long = "duration", value_parser = parse_duration)]
    pub duration: Option<Duration>,
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
    /// Give up connecting after this long.
    #[arg(long = "connect-timeout", default_value = "5s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// Give up on a response this long after its request was sent.
    #[arg(long = "timeout", default_value = "30s", value_parser = parse_duration)]
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
    #[arg(long = "interval", default_value = "1s", value_parser = parse_duration)]
    pub interval: Duration,
    /// Write the full result as JSON (schema webtune.run/1) to FILE, or "-" for stdout.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// No progress line and no text summary (errors still go to stderr).
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// Parse "2xx,3xx", "200-299", "404" into inclusive ranges.
pub fn parse_status_list(text: &str) -> anyhow::Result<Vec<(u16, u16)>> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let lower = part.to_ascii_lowercase();
        let range = if let Some(class) = lower.strip_suffix("xx") {
            let c: u16 = class
                .parse()
                .ok()
                .filter(|c| (1..=5).contains(c))
                .with_context(|| {
                    format!("bad status class {part:?} in --expect-status (use 1xx … 5xx)")
                })?;
            (c * 100, c * 100 + 99)
        } else if let Some((a, b)) = lower.split_once('-') {
            let a: u16 = a
                .trim()
                .parse()
                .with_context(|| format!("bad status {part:?}"))?;
            let b: u16 = b
                .trim()
                .parse()
                .with_context(|| format!("bad status {part:?}"))?;
            (a, b)
        } else {
            let s: u16 = lower.parse().with_context(|| {
                format!("bad status {part:?} in --expect-status (e.g. 200, 2xx, 200-299)")
            })?;
            (s, s)
        };
        if range.0 < 100 || range.1 > 999 || range.0 > range.1 {
            bail!("status range {part:?} is outside 100-999");
        }
        out.push(range);
    }
    if out.is_empty() {
        bail!("--expect-status is empty (e.g. 2xx,3xx)");
    }
    Ok(out)
}

fn parse_header(text: &str) -> anyhow::Result<(String, String)> {
    let (name, value) = text
        .split_once(':')
        .with_context(|| format!("header {text:?} has no ':' (use -H 'Name: value')"))?;
    Ok((name.trim().to_string(), value.trim().to_string()))
}

/// Cores this process may use.
pub fn available_cores() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

impl BenchArgs {
    /// The run these flags describe, against `url`.
    pub fn to_spec(&self, url: &str) -> anyhow::Result<RunSpec> {
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => std::fs::read(path)
                .with_context(|| format!("cannot read --body-file {}", path.display()))?,
            (None, None) => Vec::new(),
        };
        let stop = match (self.requests, self.duration) {
            (Some(count), _) => StopCondition::Requests { count },
            (None, Some(d)) => StopCondition::Duration {
                seconds: d.as_secs_f64(),
            },
            (None, None) => StopCondition::Duration { seconds: 10.0 },
        };
        Ok(RunSpec {
            url: url.to_string(),
            method: self.method.clone(),
            headers: self
                .headers
                .iter()
                .map(|h| parse_header(h))
                .collect::<anyhow::Result<_>>()?,
            body_bytes: body.len() as u64,
            body,
            connections: self.connections,
            threads: self.threads.unwrap_or_else(available_cores),
            stop,
            keepalive: !self.no_keepalive,
            http10: self.http10,
            max_requests_per_conn: self.max_requests_per_conn,
            connect_timeout_ms: self.connect_timeout.as_millis() as u64,
            timeout_ms: self.timeout.as_millis() as u64,
            connect_to: self.connect_to.clone(),
            expect_status: parse_status_list(&self.expect_status)?,
            interval_ms: self.interval.as_millis() as u64,
            ..RunSpec::default()
        })
    }
}

/// Install Ctrl-C / SIGTERM handling for one run: the first signal asks the run to stop
/// (in-flight requests get a second, then the result is kept); a second one exits at once.
fn install_signal_handlers(control: &RunControl) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_INTERRUPTED, control.flag())
            .context("cannot install a signal handler")?;
        signal_hook::flag::register(sig, control.flag())
            .context("cannot install a signal handler")?;
    }
    Ok(())
}

/// A one-line live view on stderr, redrawn in place; only when stderr is a terminal.
pub struct ProgressLine {
    enabled: bool,
    label: String,
}

impl ProgressLine {
    pub fn new(label: &str, quiet: bool) -> ProgressLine {
        ProgressLine {
            enabled: !quiet && std::io::stderr().is_terminal(),
            label: label.to_string(),
        }
    }

    pub fn update(&mut self, p: &Progress) {
        if !self.enabled {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{}[{:>6.1}s] {} responses  {:.0}/s  {} errors  {} open",
            self.label,
            p.elapsed.as_secs_f64(),
            p.responses,
            p.rate_per_s,
            p.errors,
            p.open_connections
        );
        let _ = err.flush();
    }

    pub fn finish(&mut self) {
        if self.enabled {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// Run one spec with a progress line and Ctrl-C handling. Returns the result and whether
/// the run was interrupted.
pub fn run_spec(spec: &RunSpec, label: &str) -> anyhow::Result<(RunResult, bool)> {
    run_spec_quiet(spec, label, false)
}

/// As `run_spec`, without the progress line when `quiet`.
pub fn run_spec_quiet(
    spec: &RunSpec,
    label: &str,
    quiet: bool,
) -> anyhow::Result<(RunResult, bool)> {
    let control = RunControl::new();
    install_signal_handlers(&control)?;
    let mut line = ProgressLine::new(label, quiet);
    let result = webtune_engine::run(spec, &control, &mut |p| line.update(p));
    line.finish();
    let result = result?;
    let interrupted = result.interrupted;
    Ok((result, interrupted))
}

/// Write `text` to FILE atomically (temp file, then rename) or to stdout for "-".
pub fn write_output(dest: &str, text: &str) -> anyhow::Result<()> {
    if dest == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        return Ok(());
    }
    let path = std::path::Path::new(dest);
    let tmp = path.with_extension("webtune-partial");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {dest}"))?;
    Ok(())
}

pub fn run(args: BenchArgs) -> anyhow::Result<i32> {
    // With no URL, serve the embedded target in this process and benchmark it.
    let mut embedded = None;
    let url = match &args.url {
        Some(u) => u.clone(),
        None => {
            let server =
                webtune_serve::EmbeddedServer::start(webtune_serve::ServeOptions::default())
                    .context("cannot start the embedded target")?;
            let url = format!("http://{}/empty.gif", server.local_addr());
            eprintln!(
                "webtune: no URL given: benchmarking the embedded target at {url} \
                 (it runs in this process and shares the CPU with the generator)"
            );
            embedded = Some(server);
            url
        }
    };
    let spec = args.to_spec(&url)?;
    let (result, interrupted) = run_spec_quiet(&spec, "", args.quiet)?;
    if let Some(server) = embedded {
        server.shutdown();
    }
    emit(&result, &args)?;
    Ok(if interrupted { EXIT_INTERRUPTED } else { 0 })
}

/// Print the summary and write the requested files.
fn emit(result: &RunResult, args: &BenchArgs) -> anyhow::Result<()> {
    let json_to_stdout = args.json.as_deref() == Some("-");
    if !args.quiet && !json_to_stdout {
        print!("{}", webtune_report::render_text(result));
    }
    if let Some(dest) = &args.json {
        write_output(dest, &(result.to_json_pretty() + "\n"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lists() {
        assert_eq!(
            parse_status_list("2xx,3xx").unwrap(),
            vec![(200, 299), (300, 399)]
        );
        assert_eq!(
            parse_status_list("200-204, 404").unwrap(),
            vec![(200, 204), (404, 404)]
        );
        assert!(parse_status_list("9xx").is_err());
        assert!(parse_status_list("abc").is_err());
        assert!(parse_status_list("").is_err());
    }

    #[test]
    fn headers_need_a_colon() {
        assert_eq!(
            parse_header("X-A:  b c").unwrap(),
            ("X-A".to_string(), "b c".to_string())
        );
        assert!(parse_header("nocolon").is_err());
    }
}
