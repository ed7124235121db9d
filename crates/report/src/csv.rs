//! CSV: one header line and one line per result, the figures a spreadsheet wants (counts,
//! rates, errors by kind, and mean / percentiles / max of the three latencies in ms).

use std::fmt::Write as _;
use webtune_model::{ErrorKind, Percentiles, RunResult};

const LATENCY_FIELDS: [&str; 8] = ["mean", "p50", "p75", "p90", "p95", "p99", "p999", "max"];

/// The CSV header line (without newline).
pub fn csv_header() -> String {
    let mut cols: Vec<String> = [
        "url",
        "method",
        "connections",
        "threads",
        "keepalive",
        "duration_s",
        "interrupted",
        "responses",
        "ok",
        "errors",
        "error_ratio",
        "length_varies",
        "requests_per_s",
        "bytes_per_s",
        "bytes_received",
        "connections_opened",
        "stale_reconnects",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    cols.extend(
        ErrorKind::ALL
            .iter()
            .map(|k| format!("errors_{}", k.name())),
    );
    for which in ["connect", "first_byte", "total"] {
        cols.extend(LATENCY_FIELDS.iter().map(|f| format!("{which}_{f}_ms")));
    }
    cols.join(",")
}

/// Quote a field when it holds a comma, quote or line break (RFC 4180).
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn latency_fields(p: &Percentiles) -> Vec<String> {
    let ms = |us: f64| format!("{:.3}", us / 1000.0);
    let mut v = vec![ms(p.mean_us)];
    v.extend(
        [
            p.p50_us, p.p75_us, p.p90_us, p.p95_us, p.p99_us, p.p999_us, p.max_us,
        ]
        .iter()
        .map(|&u| ms(u as f64)),
    );
    v
}

/// One CSV line (without newline) for a result.
pub fn csv_row(r: &RunResult) -> String {
    let mut cols = vec![
        field(&r.spec.url),
        field(&r.spec.method),
        r.spec.connections.to_string(),
        r.spec.threads.to_string(),
        r.spec.keepalive.to_string(),
        format!("{:.3}", r.duration_s),
        r.interrupted.to_string(),
        r.responses.to_string(),
        r.ok.to_string(),
        r.errors.total().to_string(),
        format!("{:.6}", r.error_ratio()),
        r.length_varies.to_string(),
        format!("{:.2}", r.requests_per_s),
        format!("{:.0}", r.bytes_per_s),
        r.bytes_received.to_string(),
        r.connections_opened.to_string(),
        r.stale_reconnects.to_string(),
    ];
    cols.extend(ErrorKind::ALL.iter().map(|&k| r.errors.get(k).to_string()));
    for p in [&r.latency.connect, &r.latency.first_byte, &r.latency.total] {
        cols.extend(latency_fields(p));
    }
    cols.join(",")
}

/// Header and one line per result.
pub fn render_csv(results: &[&RunResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", csv_header());
    for r in results {
        let _ = writeln!(out, "{}", csv_row(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_testkit::results::synthetic_result;

    #[test]
    fn header_and_row_line_up() {
        let mut r = synthetic_result(100, &[1_000]);
        r.spec.url = "http://h/a,b".into();
        let csv = render_csv(&[&r]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 2);
        let header: Vec<&str> = lines[0].split(',').collect();
        assert!(lines[1].starts_with("\"http://h/a,b\",GET,10,2,true,10.000,false,100,"));
        let row_fields = lines[1]
            .trim_start_matches("\"http://h/a,b\",")
            .split(',')
            .count()
            + 1;
        assert_eq!(header.len(), row_fields);
        let p50 = header.iter().position(|h| *h == "total_p50_ms").unwrap();
        let row: Vec<&str> = lines[1]
            .trim_start_matches("\"http://h/a,b\"")
            .split(',')
            .collect();
        assert_eq!(row[p50], "1.000");
    }
}
