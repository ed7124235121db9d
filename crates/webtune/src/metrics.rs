//! `--metrics-listen ADDR`: live metrics of the running test in the Prometheus text
//! exposition format (version 0.0.4, which Prometheus, Grafana Agent/Alloy and
//! OpenMetrics scrapers read): requests, responses, errors by kind, open connections and
//! the total latency as a cumulative-bucket histogram. The endpoint exists for the length of
//! the run and is closed after it.
//!
//! Our own small encoder rather than the prometheus-client crate: the figures arrive as one
//! snapshot per interval from the engine (`Progress`), not as instrumented counters, so a
//! registry of atomics would only be copied into; the text format is a dozen lines.

use anyhow::Context;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use webtune_engine::Progress;
use webtune_model::{ErrorKind, Shard};

/// Upper bounds of the latency buckets, seconds.
const BUCKETS_S: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// The metrics endpoint: a listener thread serving the latest snapshot.
pub struct MetricsServer {
    page: Arc<Mutex<String>>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    labels: String,
    pub addr: SocketAddr,
}

impl MetricsServer {
    /// Bind `addr` (before any load starts, so a bad address is refused at once) and serve.
    pub fn start(addr: &str, shard: Option<Shard>) -> anyhow::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)
            .with_context(|| format!("--metrics-listen {addr}: cannot listen"))?;
        listener
            .set_nonblocking(true)
            .context("--metrics-listen: cannot set the socket non-blocking")?;
        let local = listener.local_addr().context("--metrics-listen")?;
        let labels = match shard {
            Some(s) => format!("{{shard=\"{s}\"}}"),
            None => String::new(),
        };
        let page = Arc::new(Mutex::new(render(&Progress::default(), &labels)));
        let done = Arc::new(AtomicBool::new(false));
        let (p, d) = (Arc::clone(&page), Arc::clone(&done));
        let thread = std::thread::Builder::new()
            .name("webtune-metrics".into())
            .spawn(move || serve(listener, &p, &d))
            .context("--metrics-listen: cannot start its thread")?;
        Ok(MetricsServer {
            page,
            done,
            thread: Some(thread),
            labels,
            addr: local,
        })
    }

    /// Publish the figures so far.
    pub fn update(&self, p: &Progress) {
        let text = render(p, &self.labels);
        if let Ok(mut page) = self.page.lock() {
            *page = text;
        }
    }

    /// Close the endpoint (also on drop).
    pub fn stop(mut self) {
        self.close();
    }

    fn close(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.close();
    }
}

fn serve(listener: TcpListener, page: &Mutex<String>, done: &AtomicBool) {
    while !done.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => answer(stream, page),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// One request, one answer, then close. Whatever goes wrong with a scraper's socket is its
/// problem, never the run's.
fn answer(mut stream: TcpStream, page: &Mutex<String>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&head);
    let path = line.split_whitespace().nth(1).unwrap_or("");
    let response = if path == "/metrics" || path.starts_with("/metrics?") {
        let body = page.lock().map(|p| p.clone()).unwrap_or_default();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    } else {
        let body = "webtune serves its metrics at /metrics\n";
        format!(
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let _ = stream.write_all(response.as_bytes());
}

/// A label set with one more label.
fn with_label(labels: &str, name: &str, value: &str) -> String {
    match labels.strip_suffix('}') {
        Some(open) => format!("{open},{name}=\"{value}\"}}"),
        None => format!("{{{name}=\"{value}\"}}"),
    }
}

/// The exposition text of one snapshot: each metric's HELP and TYPE lines, then its samples.
pub fn render(p: &Progress, labels: &str) -> String {
    let mut out = String::new();
    let head = |out: &mut String, name: &str, kind: &str, help: &str| {
        let _ = writeln!(
            out,
            "# HELP webtune_{name} {help}\n# TYPE webtune_{name} {kind}"
        );
    };
    head(
        &mut out,
        "requests_total",
        "counter",
        "Requests that completed or failed.",
    );
    let _ = writeln!(out, "webtune_requests_total{labels} {}", p.attempted);
    head(
        &mut out,
        "responses_total",
        "counter",
        "Complete responses.",
    );
    let _ = writeln!(out, "webtune_responses_total{labels} {}", p.responses);
    head(
        &mut out,
        "errors_total",
        "counter",
        "Failed requests by kind.",
    );
    for kind in ErrorKind::ALL {
        let _ = writeln!(
            out,
            "webtune_errors_total{} {}",
            with_label(labels, "kind", kind.name()),
            p.error_counts.get(kind)
        );
    }
    head(
        &mut out,
        "open_connections",
        "gauge",
        "Connections open now.",
    );
    let _ = writeln!(
        out,
        "webtune_open_connections{labels} {}",
        p.open_connections
    );
    head(
        &mut out,
        "elapsed_seconds",
        "gauge",
        "Seconds since the run began.",
    );
    let _ = writeln!(
        out,
        "webtune_elapsed_seconds{labels} {}",
        p.elapsed.as_secs_f64()
    );
    head(
        &mut out,
        "latency_seconds",
        "histogram",
        "Total latency of finished requests (from the intended start in open loop).",
    );
    let count = p.latency.count();
    for le in BUCKETS_S {
        let bound_us = (le * 1e6) as u64;
        let below: u64 = p
            .latency
            .iter_recorded()
            .filter(|&(v, _)| v <= bound_us)
            .map(|(_, n)| n)
            .sum();
        let _ = writeln!(
            out,
            "webtune_latency_seconds_bucket{} {below}",
            with_label(labels, "le", &le.to_string())
        );
    }
    let _ = writeln!(
        out,
        "webtune_latency_seconds_bucket{} {count}",
        with_label(labels, "le", "+Inf")
    );
    let _ = writeln!(
        out,
        "webtune_latency_seconds_sum{labels} {}",
        p.latency.mean() * count as f64 / 1e6
    );
    let _ = writeln!(out, "webtune_latency_seconds_count{labels} {count}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_has_every_metric_with_its_type_and_cumulative_buckets() {
        let mut p = Progress {
            responses: 3,
            attempted: 4,
            open_connections: 2,
            ..Progress::default()
        };
        p.error_counts.add(ErrorKind::ConnectRefused);
        for us in [50, 900, 20_000] {
            p.latency.record(us);
        }
        let text = render(&p, "{shard=\"2/8\"}");
        for line in [
            "# TYPE webtune_requests_total counter",
            "webtune_requests_total{shard=\"2/8\"} 4",
            "webtune_responses_total{shard=\"2/8\"} 3",
            "webtune_errors_total{shard=\"2/8\",kind=\"connect_refused\"} 1",
            "webtune_open_connections{shard=\"2/8\"} 2",
            "# TYPE webtune_latency_seconds histogram",
            "webtune_latency_seconds_bucket{shard=\"2/8\",le=\"0.0001\"} 1",
            "webtune_latency_seconds_bucket{shard=\"2/8\",le=\"0.001\"} 2",
            "webtune_latency_seconds_bucket{shard=\"2/8\",le=\"0.025\"} 3",
            "webtune_latency_seconds_bucket{shard=\"2/8\",le=\"+Inf\"} 3",
            "webtune_latency_seconds_count{shard=\"2/8\"} 3",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line:?} missing in\n{text}"
            );
        }
        // Each TYPE line comes right before its own samples.
        let type_at = text.find("# TYPE webtune_responses_total").unwrap();
        let sample_at = text.find("webtune_responses_total{").unwrap();
        let next_help = text[type_at..].find("# HELP webtune_errors_total").unwrap() + type_at;
        assert!(type_at < sample_at && sample_at < next_help, "{text}");
        assert_eq!(with_label("", "le", "1"), "{le=\"1\"}");
    }
}
