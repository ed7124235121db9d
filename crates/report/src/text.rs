//! The human summary of one run (`--format text`, the default of `webtune bench`): what was
//! run, throughput, the latency table, status codes, errors by kind, "length varies" apart,
//! connections, and what the generator itself cost.

use crate::text_parts::{latency_row, write_aligned, write_errors};
use crate::timing;
use crate::units::{bytes, ms, seconds};
use std::fmt::Write as _;
use webtune_model::{RunResult, StopCondition};

pub use crate::text_parts::LATENCY_COLUMNS;

/// Render one result as the human summary.
pub fn render_text(result: &RunResult) -> String {
    if let Some(sum) = &result.smtp {
        return crate::smtp::render_smtp_text(result, sum);
    }
    let mut out = String::new();
    write_header(&mut out, result);
    write_throughput(&mut out, result);
    write_repeats(&mut out, result);
    timing::write_schedule(&mut out, result);
    write_latency_table(&mut out, result);
    timing::write_by_name(&mut out, result);
    if let Some((rows, notes)) = crate::journeys::text_rows(result) {
        write_aligned(&mut out, &rows);
        for note in notes {
            let _ = writeln!(out, "{note}");
        }
        out.push('\n');
    }
    timing::write_probe(&mut out, result);
    write_status(&mut out, result);
    write_errors(&mut out, result);
    timing::write_stalls(&mut out, result);
    write_connections_and_cost(&mut out, result);
    timing::write_validity(&mut out, result);
    crate::verdicts::write_shards(&mut out, result);
    crate::verdicts::write_thresholds(&mut out, result);
    out
}

/// What was run, in one line: "GET http://host/path", or for a scenario run (whose requests
/// go to several URLs, each with its own method) "scenario forum.toml (3 request names) on
/// http://host".
pub fn headline(r: &RunResult) -> String {
    let spec = &r.spec;
    match &spec.scenario {
        Some(path) => {
            let names = match r.by_name.len() {
                0 => String::new(),
                1 => " (1 request name)".to_string(),
                n => format!(" ({n} request names)"),
            };
            format!("scenario {path}{names} on {}", spec.url)
        }
        None => format!("{} {}", spec.method, spec.url),
    }
}

fn write_header(out: &mut String, r: &RunResult) {
    let spec = &r.spec;
    let _ = writeln!(out, "{}", headline(r));
    let stop = match spec.stop {
        StopCondition::Requests { count } => format!("{count} requests"),
        StopCondition::Duration { seconds: s } => format!("for {}", seconds(s)),
    };
    let keepalive = if spec.keepalive {
        "keep-alive"
    } else {
        "new connection per request"
    };
    let http = match (spec.http2, r.protocol.as_deref()) {
        (true, Some("h2c")) => format!("HTTP/2 (h2c), {} streams per connection", spec.streams),
        (true, _) => format!("HTTP/2, {} streams per connection", spec.streams),
        (false, _) if spec.http3 => format!(
            "HTTP/3 over QUIC, {} streams per connection{}",
            spec.streams,
            if spec.zero_rtt { ", 0-RTT" } else { "" }
        ),
        (false, _) if spec.http10 => "HTTP/1.0".into(),
        (false, _) => "HTTP/1.1".into(),
    };
    let _ = writeln!(
        out,
        "  {} connections, {} threads, {stop}, {keepalive}, {http}",
        spec.connections, spec.threads
    );
    if !r.addresses.is_empty() {
        let _ = writeln!(out, "  target {}", r.addresses.join(", "));
    }
    if !r.skipped_addresses.is_empty() {
        let _ = writeln!(
            out,
            "  skipped {} (resolved, but refused a test connection)",
            r.skipped_addresses.join(", ")
        );
    }
    let _ = writeln!(out, "  measured {}", seconds(r.duration_s));
    if r.interrupted {
        let _ = writeln!(out, "  INTERRUPTED — partial result");
    }
    out.push('\n');
}

fn write_throughput(out: &mut String, r: &RunResult) {
    let _ = writeln!(out, "Throughput");
    let _ = writeln!(out, "  requests/s    {:.2}", r.requests_per_s);
    let _ = writeln!(
        out,
        "  transfer      {}/s received, {}/s sent",
        bytes(r.bytes_per_s),
        bytes(if r.duration_s > 0.0 {
            r.bytes_sent as f64 / r.duration_s
        } else {
            0.0
        })
    );
    let _ = writeln!(
        out,
        "  responses     {} ({} with an expected status), {} received",
        r.responses,
        r.ok,
        bytes(r.bytes_received as f64)
    );
    out.push('\n');
}

pub(crate) fn write_latency_table(out: &mut String, r: &RunResult) {
    let mut rows = vec![{
        let mut h = vec!["Latency (ms)".to_string()];
        h.extend(LATENCY_COLUMNS.iter().map(|s| s.to_string()));
        h
    }];
    rows.push(latency_row("  connect", &r.latency.connect));
    if r.tls.is_some() {
        rows.push(latency_row("  TLS handshake", &r.latency.tls_handshake));
    }
    rows.push(latency_row("  first byte", &r.latency.first_byte));
    if r.latency.service.count > 0 {
        // Open loop: both views side by side, so a reader sees how much queueing hid.
        rows.push(latency_row(
            "  total (from intended start)",
            &r.latency.total,
        ));
        rows.push(latency_row("  service (from send)", &r.latency.service));
    } else {
        rows.push(latency_row("  total", &r.latency.total));
    }
    write_aligned(out, &rows);
    out.push('\n');
}

/// With `bench --repeat N`: one line per repeat and the spread of their throughput, so a
/// reader sees the run-to-run noise before trusting a difference.
fn write_repeats(out: &mut String, r: &RunResult) {
    if r.repeats.len() < 2 {
        return;
    }
    let rates: Vec<f64> = r.repeats.iter().map(|s| s.requests_per_s).collect();
    let mean = crate::stats::mean(&rates);
    let sd = crate::stats::sample_variance(&rates).sqrt();
    let (lo, hi) = rates
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let _ = writeln!(
        out,
        "Repeats         {} runs (figures above are all runs merged): requests/s {mean:.2} ± {sd:.2} (sd), \
         {lo:.2} … {hi:.2}",
        r.repeats.len()
    );
    let mut rows = vec![[
        "  run",
        "requests/s",
        "p50 (ms)",
        "p99 (ms)",
        "max (ms)",
        "errors",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for (i, s) in r.repeats.iter().enumerate() {
        rows.push(vec![
            format!("  {}", i + 1),
            format!("{:.2}", s.requests_per_s),
            ms(s.latency.p50_us),
            ms(s.latency.p99_us),
            ms(s.latency.max_us),
            s.errors.to_string(),
        ]);
    }
    write_aligned(out, &rows);
    out.push('\n');
}

fn write_status(out: &mut String, r: &RunResult) {
    let _ = writeln!(out, "Status codes");
    if r.status.is_empty() {
        let _ = writeln!(out, "  (no complete response)");
    }
    for (code, n) in &r.status {
        let note = if r.spec.status_expected(*code) {
            ""
        } else {
            "  (unexpected)"
        };
        let _ = writeln!(out, "  {code}  {n}{note}");
    }
    out.push('\n');
}

/// `--http3`: the UDP socket, QUIC's packets and losses, 0-RTT, resets and closes.
fn write_http3(out: &mut String, h3: &webtune_model::H3Summary) {
    let lost = if h3.packets_sent > 0 {
        100.0 * h3.packets_lost as f64 / h3.packets_sent as f64
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "QUIC            {} packets sent, {} lost ({lost:.2}%, their data sent again), {} \
         congestion events; {} GOAWAY",
        h3.packets_sent, h3.packets_lost, h3.congestion_events, h3.goaways
    );
    let _ = writeln!(
        out,
        "UDP             buffers {} KiB receive / {} KiB send (as granted), GSO {} and GRO {} \
         segments; {} datagrams sent, {} received",
        h3.udp_recv_buffer_bytes / 1024,
        h3.udp_send_buffer_bytes / 1024,
        h3.gso_segments,
        h3.gro_segments,
        h3.datagrams_sent,
        h3.datagrams_received
    );
    if h3.resumed_handshakes > 0
        || h3.zero_rtt_accepted > 0
        || h3.zero_rtt_refused > 0
        || h3.zero_rtt_without_ticket > 0
    {
        let _ = write!(
            out,
            "0-RTT           {} resumed handshakes: 0-RTT accepted {}, refused {}",
            h3.resumed_handshakes, h3.zero_rtt_accepted, h3.zero_rtt_refused
        );
        if h3.zero_rtt_without_ticket > 0 {
            let _ = write!(
                out,
                "; {} in 1-RTT with no session ticket yet",
                h3.zero_rtt_without_ticket
            );
        }
        let _ = writeln!(out);
    }
    let codes = |m: Vec<String>| m.join(", ");
    if !h3.stream_resets.is_empty() {
        let list = h3
            .stream_resets
            .iter()
            .map(|(code, n)| format!("{n}× 0x{code:x}"))
            .collect();
        let _ = writeln!(
            out,
            "                stream resets by code: {}",
            codes(list)
        );
    }
    if !h3.connection_closes.is_empty() {
        let list = h3
            .connection_closes
            .iter()
            .map(|(code, n)| format!("{n}× {code}"))
            .collect();
        let _ = writeln!(
            out,
            "                CONNECTION_CLOSE by code: {}",
            codes(list)
        );
    }
}

fn write_connections_and_cost(out: &mut String, r: &RunResult) {
    let _ = writeln!(
        out,
        "Connections     {} opened, {} stale keep-alive reconnects",
        r.connections_opened, r.stale_reconnects
    );
    if let Some(h2) = &r.h2 {
        let limit = h2
            .server_max_streams
            .map(|m| format!(", server allows {m} streams"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "HTTP/2          {} GOAWAY ({} requests resent), {} streams reset{limit}",
            h2.goaways, h2.goaway_retries, h2.resets
        );
        if h2.queued_for_stream > 0 || h2.flow_control_waits > 0 {
            let _ = writeln!(
                out,
                "                streams queued on the client: {} requests waited for a free \
                 stream, {} bodies waited for the server's window",
                h2.queued_for_stream, h2.flow_control_waits
            );
        }
    }
    if let Some(h3) = &r.http3 {
        write_http3(out, h3);
    }
    if let Some(tls) = &r.tls {
        let agreed: Vec<&str> = [&tls.version, &tls.cipher, &tls.alpn]
            .into_iter()
            .filter_map(|v| v.as_deref())
            .collect();
        let _ = writeln!(
            out,
            "TLS             {} full handshakes, {} resumed{}",
            tls.full_handshakes,
            tls.resumed_handshakes,
            if agreed.is_empty() {
                String::new()
            } else {
                format!(" ({})", agreed.join(", "))
            }
        );
    }
    let connects_failed: u64 = r
        .errors
        .nonzero()
        .filter(|(k, _)| k.is_connect())
        .map(|(_, n)| n)
        .sum();
    if connects_failed > 0 {
        let _ = writeln!(
            out,
            "Connect tries   {} connects started, {connects_failed} failed",
            r.connect_attempts
        );
    }
    if r.abandoned > 0 {
        let _ = writeln!(
            out,
            "In flight       {} requests still in flight when the run ended (abandoned, not errors)",
            r.abandoned
        );
    }
    let g = &r.generator;
    let cpu = g.user_cpu_s + g.system_cpu_s;
    let attempted = r.attempted();
    let per_request = if attempted > 0 {
        format!("{:.1} µs per request", cpu * 1e6 / attempted as f64)
    } else {
        "no requests".into()
    };
    // The I/O backend the workers waited with (`--io`), where the result records it.
    let io = r
        .io_backend
        .map_or(String::new(), |b| format!(" (I/O: {})", b.name()));
    let _ = writeln!(
        out,
        "Generator CPU   {:.2} s user + {:.2} s sys = {per_request}{io}",
        g.user_cpu_s, g.system_cpu_s
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_testkit::results::{empty_result, synthetic_result};

    #[test]
    fn summary_carries_throughput_setup_and_percentiles() {
        let r = synthetic_result(1000, &[123, 456, 1_000, 2_500, 40_000]);
        let text = render_text(&r);
        assert!(text.contains("GET http://127.0.0.1:8080/forum/index.php?f=2"));
        assert!(text.contains("10 connections, 2 threads, for 10.0 s, keep-alive"));
        assert!(text.contains("requests/s    100.00"), "{text}");
        let total = text
            .lines()
            .find(|l| l.trim_start().starts_with("total"))
            .unwrap();
        let cells: Vec<&str> = total.split_whitespace().collect();
        // label, mean, p50, p75, p90, p95, p99, p99.9, max, count
        assert_eq!(cells.len(), 10, "{total}");
        assert_eq!(cells[2], ms(r.latency.total.p50_us));
        assert_eq!(cells[6], ms(r.latency.total.p99_us));
        assert_eq!(cells[8], ms(r.latency.total.max_us));
        assert_eq!(cells[9], "1000");
        // µs resolution is visible: the smallest latency prints as 0.123 ms somewhere
        let connect = text.lines().find(|l| l.contains("connect  ")).unwrap();
        assert!(connect.contains("0.0"), "{connect}");
    }

    #[test]
    fn errors_are_by_kind_and_length_varies_is_apart() {
        let r = synthetic_result(1000, &[1_000]);
        let text = render_text(&r);
        assert!(text.contains("connect refused"), "{text}");
        assert!(text.contains("connection reset"));
        assert!(text.contains("unexpected status"));
        assert!(text.contains("  404  20  (unexpected)"), "{text}");
        let lv = text.find("Length varies").unwrap();
        let lv = &text[lv..];
        assert!(lv.starts_with("Length varies   50 responses"), "{lv}");
        assert!(lv.lines().nth(1).unwrap().contains("not an error"));
        let errors = text.lines().find(|l| l.starts_with("Errors")).unwrap();
        assert!(errors.contains("25 ("), "{errors}");
        assert!(text.contains("2 stale keep-alive reconnects"));
        assert!(text.contains("100 opened"));
        assert!(
            text.contains("Connect tries   103 connects started, 3 failed\n"),
            "{text}"
        );
        // The kinds' column is as wide as the longest kind shown.
        assert!(text.contains("\n  unexpected status        20\n"), "{text}");
        assert!(!text.contains("In flight"));
        // 1.0 s CPU over 1005 attempted requests
        assert!(text.contains("995.0 µs per request"), "{text}");
        let mut uring = r.clone();
        uring.io_backend = Some(webtune_model::IoBackend::Uring);
        assert!(render_text(&uring).contains("µs per request (I/O: uring)"));
        assert!(!text.contains("INTERRUPTED"));
    }

    #[test]
    fn repeats_are_listed_with_their_spread() {
        let runs = vec![
            synthetic_result(1000, &[1_000]),
            synthetic_result(1200, &[1_000]),
            synthetic_result(1100, &[2_000]),
        ];
        let merged = crate::with_repeats(runs).unwrap();
        let text = render_text(&merged);
        assert!(
            text.contains("Repeats         3 runs (figures above are all runs merged): requests/s 110.00 ± 10.00 (sd), 100.00 … 120.00"),
            "{text}"
        );
        let third = text
            .lines()
            .find(|l| l.trim_start().starts_with("3 "))
            .unwrap();
        assert!(
            third.contains("110.00") && third.contains("2.000"),
            "{third}"
        );
        assert!(!render_text(&synthetic_result(10, &[1])).contains("Repeats"));
    }

    #[test]
    fn interrupted_and_empty_runs_say_so() {
        let mut r = empty_result();
        r.interrupted = true;
        r.abandoned = 7;
        let text = render_text(&r);
        assert!(text.contains("INTERRUPTED — partial result"));
        assert!(text.contains("(no complete response)"));
        assert!(text.contains("Errors          none"));
        assert!(text.contains("no requests"));
        assert!(text.contains("In flight       7 requests still in flight"));
    }

    #[test]
    fn a_scenario_run_is_headlined_as_its_scenario_and_length_is_per_name() {
        let mut r = synthetic_result(100, &[1_000]);
        r.spec.url = "http://127.0.0.1:8080".into();
        r.spec.scenario = Some("forum.toml".into());
        for name in ["topic_list", "post"] {
            r.by_name
                .insert(name.into(), webtune_model::NamedResult::default());
        }
        let text = render_text(&r);
        let first = text.lines().next().unwrap();
        assert_eq!(
            first,
            "scenario forum.toml (2 request names) on http://127.0.0.1:8080"
        );
        assert!(!text.contains("GET http://127.0.0.1:8080"), "{text}");
        assert!(
            text.contains("from the first response of their request name"),
            "{text}"
        );
        assert!(!text.contains("(1234 bytes)"), "{text}");
        let html = crate::html::render_html(&r);
        assert!(html.contains("<title>webtune report — scenario forum.toml"));
        assert!(!html.contains("GET <code>"));
    }

    #[test]
    fn https_runs_show_the_handshake_row_and_counts() {
        let mut r = synthetic_result(100, &[1_000]);
        assert!(!render_text(&r).contains("TLS"));
        for us in [300, 400, 900] {
            r.histograms.tls_handshake.record(us);
        }
        r.tls = Some(webtune_model::TlsSummary {
            full_handshakes: 1,
            resumed_handshakes: 2,
            version: Some("TLSv1.3".into()),
            cipher: None,
            alpn: Some("http/1.1".into()),
        });
        r.finish_summaries();
        let text = render_text(&r);
        let row = text.lines().find(|l| l.contains("TLS handshake")).unwrap();
        assert!(row.trim_end().ends_with(" 3"), "{row}");
        assert!(
            text.contains("TLS             1 full handshakes, 2 resumed (TLSv1.3, http/1.1)"),
            "{text}"
        );
        let e = &mut r.errors;
        e.add(webtune_model::ErrorKind::TlsCertificate);
        assert!(render_text(&r).contains("TLS certificate refused"));
    }

    #[test]
    fn zero_rtt_without_a_ticket_is_said_apart() {
        let mut h3 = webtune_model::H3Summary {
            resumed_handshakes: 3,
            zero_rtt_accepted: 3,
            ..Default::default()
        };
        let mut out = String::new();
        write_http3(&mut out, &h3);
        assert!(
            out.contains("0-RTT           3 resumed handshakes: 0-RTT accepted 3, refused 0\n"),
            "{out}"
        );
        h3.zero_rtt_without_ticket = 1;
        let mut out = String::new();
        write_http3(&mut out, &h3);
        assert!(
            out.contains("refused 0; 1 in 1-RTT with no session ticket yet\n"),
            "{out}"
        );
    }
}
