//! The human summary of an SMTP run (`webtune smtp`, schema `webtune.smtp/1`): messages sent,
//! accepted, deferred (4xx) and rejected (5xx); a latency row per protocol phase; replies by
//! code; errors by kind; sessions and what the generator cost per message. The schedule,
//! validity and threshold sections are the HTTP summary's own.

use crate::text_parts::{latency_row, write_aligned, write_errors, LATENCY_COLUMNS};
use crate::timing;
use crate::units::{bytes, seconds};
use std::fmt::Write as _;
use webtune_model::{RunResult, SmtpSummary, StopCondition};

/// Render an SMTP result as text: its SMTP section `sum` (`r.smtp`) with the run around it.
/// `text::render_text` is the entry point and sends a result with an SMTP section here, so
/// this module does not import `text` back.
pub fn render_smtp_text(r: &RunResult, sum: &SmtpSummary) -> String {
    let mut out = String::new();
    write_header(&mut out, r);
    write_messages(&mut out, r, sum);
    timing::write_schedule(&mut out, r);
    write_phases(&mut out, r, sum);
    write_replies(&mut out, sum);
    write_errors(&mut out, r);
    timing::write_stalls(&mut out, r);
    write_cost(&mut out, r, sum);
    timing::write_validity(&mut out, r);
    crate::verdicts::write_thresholds(&mut out, r);
    out
}

fn write_header(out: &mut String, r: &RunResult) {
    let spec = &r.spec;
    let _ = writeln!(out, "SMTP {}", spec.url);
    let stop = match spec.stop {
        StopCondition::Requests { count } => format!("{count} messages"),
        StopCondition::Duration { seconds: s } => format!("for {}", seconds(s)),
    };
    let load = match spec.load {
        webtune_model::LoadMode::Closed => format!("{} sessions", spec.connections),
        webtune_model::LoadMode::Open { rate, .. } => {
            format!("{rate} messages/s, at most {} sessions", spec.connections)
        }
    };
    let _ = writeln!(out, "  {load}, {} threads, {stop}", spec.threads);
    if let Some(s) = &spec.smtp {
        let per = if s.random_per_connection {
            format!("1..{}", s.per_connection)
        } else {
            s.per_connection.to_string()
        };
        let _ = writeln!(
            out,
            "  messages of {}..{} bytes to 1..{} of {} mailboxes ({:?}), {per} per connection{}",
            s.min_size,
            s.max_size,
            s.max_recipients,
            s.mailboxes,
            s.pick,
            if s.starttls { ", STARTTLS" } else { "" }
        );
    }
    if !r.addresses.is_empty() {
        let _ = writeln!(out, "  target {}", r.addresses.join(", "));
    }
    let _ = writeln!(out, "  measured {}", seconds(r.duration_s));
    if r.interrupted {
        let _ = writeln!(out, "  INTERRUPTED — partial result");
    }
    out.push('\n');
}

fn write_messages(out: &mut String, r: &RunResult, sum: &SmtpSummary) {
    let per_s = |n: f64| {
        if r.duration_s > 0.0 {
            n / r.duration_s
        } else {
            0.0
        }
    };
    let failed = r.attempted().saturating_sub(r.responses);
    let _ = writeln!(out, "Messages");
    let _ = writeln!(
        out,
        "  accepted/s    {:.2} ({:.2} messages/s answered)",
        per_s(sum.accepted as f64),
        r.requests_per_s
    );
    let _ = writeln!(
        out,
        "  messages      {} answered: {} accepted, {} deferred (4xx), {} rejected (5xx); \
         {failed} failed without a reply",
        r.responses, sum.accepted, sum.deferred, sum.rejected
    );
    let _ = writeln!(
        out,
        "  recipients    {} accepted, {} refused",
        sum.recipients_accepted, sum.recipients_refused
    );
    let _ = writeln!(
        out,
        "  data          {} of messages ({}/s)",
        bytes(sum.message_bytes as f64),
        bytes(per_s(sum.message_bytes as f64))
    );
    out.push('\n');
}

fn write_phases(out: &mut String, r: &RunResult, sum: &SmtpSummary) {
    let mut rows = vec![{
        let mut h = vec!["Latency (ms)".to_string()];
        h.extend(LATENCY_COLUMNS.iter().map(|s| s.to_string()));
        h
    }];
    rows.push(latency_row("  connect", &r.latency.connect));
    for (name, phase) in sum.phases() {
        if name == "starttls" && phase.summary.count == 0 {
            continue;
        }
        let label = match name {
            "data" => "  data → final reply".to_string(),
            _ => format!("  {name}"),
        };
        rows.push(latency_row(&label, &phase.summary));
    }
    let total = if r.latency.service.count > 0 {
        "  message (from intended start)"
    } else {
        "  message (whole)"
    };
    rows.push(latency_row(total, &r.latency.total));
    write_aligned(out, &rows);
    out.push('\n');
}

fn write_replies(out: &mut String, sum: &SmtpSummary) {
    if sum.replies.is_empty() {
        return;
    }
    let codes: Vec<String> = sum
        .replies
        .iter()
        .map(|(code, n)| format!("{code} ×{n}"))
        .collect();
    let _ = writeln!(out, "Replies         {}", codes.join(", "));
    out.push('\n');
}

fn write_cost(out: &mut String, r: &RunResult, sum: &SmtpSummary) {
    let sessions_per = if sum.sessions > 0 {
        r.responses as f64 / sum.sessions as f64
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "Sessions        {} ({} pipelined, {} HELO fallbacks), {:.1} messages each; {} \
         connections opened, {} stale reconnects",
        sum.sessions,
        sum.pipelined_sessions,
        sum.helo_fallbacks,
        sessions_per,
        r.connections_opened,
        r.stale_reconnects
    );
    let g = &r.generator;
    let cpu = g.user_cpu_s + g.system_cpu_s;
    let per_message = if r.responses > 0 {
        format!(", {:.1} µs per message", cpu * 1e6 / r.responses as f64)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "Cost            {:.2}s generator CPU ({:.2} user, {:.2} system){per_message}, {} threads",
        cpu, g.user_cpu_s, g.system_cpu_s, g.threads
    );
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_smtp_result_reads_as_mail() {
        let mut r = webtune_testkit::results::synthetic_result(10, &[1000, 2000]);
        let mut sum = SmtpSummary::default();
        sum.mail.record(1500);
        sum.replies.insert(250, 10);
        sum.replies.insert(451, 2);
        sum.accepted = 8;
        sum.deferred = 2;
        sum.sessions = 4;
        r.smtp = Some(sum);
        r.finish_summaries();
        let text = render_smtp_text(&r, r.smtp.as_ref().unwrap());
        assert!(text.starts_with("SMTP "), "{text}");
        assert!(text.contains("8 accepted, 2 deferred (4xx)"), "{text}");
        assert!(text.contains("Replies         250 ×10, 451 ×2"), "{text}");
        assert!(text.contains("  mail "), "{text}");
        assert_eq!(crate::render(&r, crate::Format::Text), text);
    }
}
