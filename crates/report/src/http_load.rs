//! http_load's output layout (fetches, max parallel, bytes, seconds; mean bytes/connection;
//! fetches/sec, bytes/sec; msecs/connect and msecs/first-response mean/max/min; timeouts,
//! bad byte counts; HTTP response codes), numbers printed with C's `%g` as http_load does,
//! followed by webtune's own percentile table and errors by kind.
//!
//! Layout from http_load's documented output (acme.com/software/http_load) and its
//! printf formats, e.g. "74786 fetches, 10 max parallel, 2.76708e+06 bytes, in 10 seconds".

use crate::text::write_latency_table;
use crate::text_parts::write_errors;
use crate::units::c_g;
use std::fmt::Write as _;
use webtune_model::{ErrorKind, LatencyHistogram, RunResult};

/// The most connections open at the same moment (http_load's "max parallel"), as the engine
/// recorded it. Results saved before that was recorded fall back to the timeline's peak (open
/// connections at interval ends), then to the configured connections.
pub fn max_parallel(result: &RunResult) -> u64 {
    if result.peak_open_connections > 0 {
        return result.peak_open_connections;
    }
    result
        .timeline
        .iter()
        .map(|s| s.open_connections)
        .max()
        .filter(|&m| m > 0)
        .unwrap_or(result.spec.connections as u64)
}

fn msecs_line(label: &str, h: &LatencyHistogram) -> Option<String> {
    if h.is_empty() {
        return None;
    }
    Some(format!(
        "msecs/{label}: {} mean, {} max, {} min",
        c_g(h.mean() / 1000.0),
        c_g(h.max() as f64 / 1000.0),
        c_g(h.min() as f64 / 1000.0)
    ))
}

/// Render in http_load's layout, then webtune's percentiles beneath.
pub fn render_http_load(result: &RunResult) -> String {
    let mut out = String::new();
    let fetches = result.attempted();
    let bytes = result.body_bytes as f64;
    let seconds = result.duration_s;
    let _ = writeln!(
        out,
        "{fetches} fetches, {} max parallel, {} bytes, in {} seconds",
        max_parallel(result),
        c_g(bytes),
        c_g(seconds)
    );
    if fetches > 0 {
        let _ = writeln!(out, "{} mean bytes/connection", c_g(bytes / fetches as f64));
    }
    if seconds > 0.0 {
        let _ = writeln!(
            out,
            "{} fetches/sec, {} bytes/sec",
            c_g(fetches as f64 / seconds),
            c_g(bytes / seconds)
        );
    }
    if let Some(line) = msecs_line("connect", &result.histograms.connect) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(line) = msecs_line("first-response", &result.histograms.first_byte) {
        let _ = writeln!(out, "{line}");
    }
    let timeouts =
        result.errors.get(ErrorKind::ConnectTimeout) + result.errors.get(ErrorKind::RequestTimeout);
    if timeouts > 0 {
        let _ = writeln!(out, "{timeouts} timeouts");
    }
    if result.length_varies > 0 {
        let _ = writeln!(out, "{} bad byte counts", result.length_varies);
    }
    if !result.status.is_empty() {
        let _ = writeln!(out, "HTTP response codes:");
        for (code, n) in &result.status {
            let _ = writeln!(out, "  code {code:03} -- {n}");
        }
    }
    out.push('\n');
    let _ = writeln!(out, "webtune:");
    write_latency_table(&mut out, result);
    write_errors(&mut out, result);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_testkit::results::synthetic_result;

    #[test]
    fn layout_lines_and_numbers() {
        let r = synthetic_result(1000, &[1_000, 3_000]);
        let text = render_http_load(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "1005 fetches, 10 max parallel, 1.234e+06 bytes, in 10 seconds"
        );
        assert_eq!(lines[1], "1227.86 mean bytes/connection");
        assert_eq!(lines[2], "100.5 fetches/sec, 123400 bytes/sec");
        assert!(lines[3].starts_with("msecs/connect: 0.1 mean, 0.1 max, 0.1 min"));
        assert!(lines[4].starts_with("msecs/first-response: "));
        assert_eq!(lines[5], "1 timeouts");
        assert_eq!(lines[6], "50 bad byte counts");
        assert_eq!(lines[7], "HTTP response codes:");
        assert_eq!(lines[8], "  code 200 -- 980");
        assert_eq!(lines[9], "  code 404 -- 20");
        assert!(text.contains("\nwebtune:\nLatency (ms)"));
    }

    #[test]
    fn max_parallel_is_the_recorded_peak_not_the_cap() {
        let mut r = synthetic_result(100, &[1_000]);
        r.spec.connections = 1000;
        r.peak_open_connections = 2;
        assert_eq!(max_parallel(&r), 2);
        assert!(render_http_load(&r).starts_with("105 fetches, 2 max parallel, "));
        // results saved before the peak was recorded: the timeline's peak
        r.peak_open_connections = 0;
        assert_eq!(max_parallel(&r), 10);
    }
}
