//! The live-metrics exporter (`bench --metrics-listen ADDR`): the running test's figures
//! in the Prometheus text exposition format (version 0.0.4, which Prometheus, Grafana Agent/Alloy and
//! OpenMetrics scrapers read): requests, responses, errors by kind, open connections and
//! the total latency as a cumulative-bucket histogram, all worker threads together. The
//! endpoint exists for the length of the run and is closed after it.
//!
//! The endpoint is hyper's HTTP/1.1 server on a one-thread tokio runtime of its own:
//! scrapes are served concurrently, each connection has one request and a deadline
//! (`CONNECTION_DEADLINE`, however slowly its client sends), at most `MAX_CONNECTIONS` are
//! open at once (more are closed at once), and closing the endpoint drops every connection
//! without waiting for any: no client can delay the end of the run or starve a real scrape.
//!
//! Our own small encoder rather than the prometheus-client crate: the figures arrive as one
//! snapshot per worker report from the engine (`Progress`), not as instrumented counters, so
//! a registry of atomics would only be copied into; the text format is a dozen lines.

use crate::Progress;
use hyper::body::Incoming;
use hyper::header::{CONNECTION, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::fmt::Write as _;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::{oneshot, Semaphore};
use webtune_model::{ErrorKind, Shard};

/// Upper bounds of the latency buckets, seconds.
const BUCKETS_S: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

/// A scraper has this long from its connect to the end of the answer (Prometheus's own
/// scrape timeout is 10 s; the page is a few kilobytes).
const CONNECTION_DEADLINE: Duration = Duration::from_secs(5);

/// Connections served at once; one more is closed as soon as it is accepted.
const MAX_CONNECTIONS: usize = 256;

/// Why the endpoint could not start: what failed (naming `--metrics-listen`) and the
/// system's error, printed as "what: error".
#[derive(Debug, thiserror::Error)]
#[error("{what}: {error}")]
pub struct MetricsError {
    what: String,
    // Not named `source`: thiserror would chain it, and "{e:#}" would say it twice.
    error: std::io::Error,
}

/// Attach what failed to an io error.
fn failed<T>(r: std::io::Result<T>, what: impl FnOnce() -> String) -> Result<T, MetricsError> {
    r.map_err(|error| MetricsError {
        what: what(),
        error,
    })
}

/// The metrics endpoint: a listener thread serving the latest snapshot.
pub struct MetricsServer {
    page: Arc<Mutex<String>>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    labels: String,
    pub addr: SocketAddr,
}

impl MetricsServer {
    /// Bind `addr` (before any load starts, so a bad address is refused at once) and serve.
    pub fn start(addr: &str, shard: Option<Shard>) -> Result<MetricsServer, MetricsError> {
        let listener = failed(TcpListener::bind(addr), || {
            format!("--metrics-listen {addr}: cannot listen")
        })?;
        failed(listener.set_nonblocking(true), || {
            "--metrics-listen: cannot set the socket non-blocking".into()
        })?;
        let local = failed(listener.local_addr(), || "--metrics-listen".into())?;
        let labels = match shard {
            Some(s) => format!("{{shard=\"{s}\"}}"),
            None => String::new(),
        };
        let page = Arc::new(Mutex::new(render(&Progress::default(), &labels)));
        let runtime = failed(
            tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build(),
            || "--metrics-listen: cannot start its runtime".into(),
        )?;
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let served = Arc::clone(&page);
        let thread = failed(
            std::thread::Builder::new()
                .name("webtune-metrics".into())
                .spawn(move || {
                    runtime.block_on(async move {
                        tokio::select! {
                            _ = stop_rx => {}
                            _ = serve(listener, served) => {}
                        }
                    });
                    // Every connection task still open is dropped here, unanswered: a scraper
                    // never holds the run.
                    runtime.shutdown_background();
                }),
            || "--metrics-listen: cannot start its thread".into(),
        )?;
        Ok(MetricsServer {
            page,
            stop: Some(stop_tx),
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

    /// Close the endpoint (also on drop). Returns at once: open connections are dropped.
    pub fn stop(mut self) {
        self.close();
    }

    fn close(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
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

/// Accept scrapers for ever, each served by a task of its own under its deadline.
async fn serve(listener: TcpListener, page: Arc<Mutex<String>>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut http = hyper::server::conn::http1::Builder::new();
    // One request per connection: the deadline then bounds the whole exchange.
    http.keep_alive(false);
    let http = Arc::new(http);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors, mostly: try again a little later rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            continue; // too many at once: this one is closed unanswered
        };
        let page = Arc::clone(&page);
        let http = Arc::clone(&http);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let answer = answer(&req, &page);
                async move { Ok::<_, std::convert::Infallible>(answer) }
            });
            let connection = http.serve_connection(TokioIo::new(stream), service);
            // Whatever a scraper does (sends slowly, never reads), it is dropped here.
            let _ = tokio::time::timeout(CONNECTION_DEADLINE, connection).await;
            drop(slot);
        });
    }
}

/// The page for GET /metrics, a 404 naming it for anything else.
fn answer(req: &Request<Incoming>, page: &Mutex<String>) -> Response<String> {
    let (status, kind, body) = if req.uri().path() == "/metrics" {
        (
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            page.lock().map(|p| p.clone()).unwrap_or_default(),
        )
    } else {
        (
            StatusCode::NOT_FOUND,
            "text/plain",
            "webtune serves its metrics at /metrics\n".to_string(),
        )
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, hyper::header::HeaderValue::from_static(kind));
    headers.insert(CONNECTION, hyper::header::HeaderValue::from_static("close"));
    response
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
