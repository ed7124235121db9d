//! The honest-time sections of the text report: whether the generator was the limit, how
//! well an open-loop schedule was kept, stalls, the per-interval time series, per-name
//! breakdowns of a scenario and the responsiveness probe.

use crate::text_parts::write_aligned;
use crate::units::ms;
use std::fmt::Write as _;
use webtune_model::{NamedResult, RunResult};

/// The verdict on the generator (`validity`, decided by `webtune_model::validity::judge`),
/// first thing a reader should see when it failed; the figures behind it when it did not.
pub fn write_validity(out: &mut String, r: &RunResult) {
    let v = &r.validity;
    if v.client_limited {
        let _ = writeln!(
            out,
            "WARNING: the generator was the limit — these numbers describe the client, not the server."
        );
        for reason in &v.reasons {
            let _ = writeln!(out, "  - {reason}");
        }
    } else {
        let _ = writeln!(
            out,
            "Generator       kept up (CPU {:.0}% of its {} thread(s){}{})",
            v.cpu_busy * 100.0,
            r.generator.threads,
            match v.cpu_wait {
                Some(wait) => format!(", waiting for a core {:.0}%", wait * 100.0),
                None => String::new(),
            },
            match &r.schedule {
                Some(s) => format!(
                    ", generator lag p50 {} ms, p99 {} ms, max {} ms",
                    ms(s.generator_lag.p50_us),
                    ms(s.generator_lag.p99_us),
                    ms(s.generator_lag.max_us)
                ),
                None => String::new(),
            }
        );
    }
}

/// Open loop: asked-for vs achieved rate, lag (split into the wait for a busy connection and
/// the generator's own), requests not sent.
pub fn write_schedule(out: &mut String, r: &RunResult) {
    let Some(s) = &r.schedule else { return };
    let _ = writeln!(
        out,
        "Schedule (open loop, latency from each request's intended start)"
    );
    let _ = writeln!(
        out,
        "  rate          {:.1}/s requested, {:.1}/s sent",
        s.requested_rate, s.achieved_rate
    );
    let _ = writeln!(
        out,
        "  send lag      p50 {} ms, p99 {} ms, max {} ms",
        ms(s.lag.p50_us),
        ms(s.lag.p99_us),
        ms(s.lag.max_us)
    );
    let _ = writeln!(
        out,
        "    conn wait   p50 {} ms, p99 {} ms, max {} ms (every connection busy: server time)",
        ms(s.connection_wait.p50_us),
        ms(s.connection_wait.p99_us),
        ms(s.connection_wait.max_us)
    );
    let _ = writeln!(
        out,
        "    generator   p50 {} ms, p99 {} ms, max {} ms (a connection free, sent late)",
        ms(s.generator_lag.p50_us),
        ms(s.generator_lag.p99_us),
        ms(s.generator_lag.max_us)
    );
    let _ = writeln!(
        out,
        "  not sent      {} (due, but no connection was free before the end)",
        s.not_sent
    );
    out.push('\n');
}

/// Stretches with requests outstanding and nothing finished.
pub fn write_stalls(out: &mut String, r: &RunResult) {
    if r.stalls.is_empty() {
        let _ = writeln!(
            out,
            "Stalls          none (no 100 ms with requests outstanding and none finished)"
        );
        out.push('\n');
        return;
    }
    let total: f64 = r.stalls.iter().map(|s| s.length_s).sum();
    let _ = writeln!(
        out,
        "Stalls          {} ({:.1} s in all): requests outstanding, none finished",
        r.stalls.len(),
        total
    );
    for s in r.stalls.iter().take(20) {
        let _ = writeln!(out, "  at {:>8.1} s  for {:.1} s", s.start_s, s.length_s);
    }
    if r.stalls.len() > 20 {
        let _ = writeln!(out, "  ... {} more in the JSON result", r.stalls.len() - 20);
    }
    out.push('\n');
}

fn named_row(name: &str, n: &NamedResult) -> Vec<String> {
    let attempted = n.responses + n.errors.total()
        - n.errors.get(webtune_model::ErrorKind::UnexpectedStatus)
        - n.errors.get(webtune_model::ErrorKind::BodyCheck)
        - n.errors.get(webtune_model::ErrorKind::Extract);
    vec![
        format!("  {name}"),
        attempted.to_string(),
        n.ok.to_string(),
        n.errors.total().to_string(),
        n.length_varies.to_string(),
        crate::units::ms_f(n.latency.mean_us),
        ms(n.latency.p50_us),
        ms(n.latency.p90_us),
        ms(n.latency.p99_us),
        ms(n.latency.max_us),
    ]
}

/// A scenario's figures per request name.
pub fn write_by_name(out: &mut String, r: &RunResult) {
    if r.by_name.is_empty() {
        return;
    }
    let mut rows = vec![[
        "Per request",
        "sent",
        "ok",
        "errors",
        "len varies",
        "mean",
        "p50",
        "p90",
        "p99",
        "max",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for (name, n) in &r.by_name {
        rows.push(named_row(name, n));
    }
    write_aligned(out, &rows);
    for (name, n) in &r.by_name {
        for (kind, count) in n.errors.nonzero() {
            let _ = writeln!(out, "  {name}: {count} {}", kind.describe());
        }
    }
    let _ = writeln!(out, "  (latency in ms)");
    out.push('\n');
}

/// The probe's own latency, apart from the load.
pub fn write_probe(out: &mut String, r: &RunResult) {
    let (Some(p), Some(spec)) = (&r.probe, &r.spec.probe) else {
        return;
    };
    let _ = writeln!(
        out,
        "Probe           {} at {}/s, one connection beside the load: {} answered, {} failed",
        spec.url,
        spec.rate_per_s,
        p.responses,
        p.errors.total()
    );
    if p.responses > 0 {
        let _ = writeln!(
            out,
            "  latency ms    p50 {}  p90 {}  p99 {}  max {}",
            ms(p.latency.p50_us),
            ms(p.latency.p90_us),
            ms(p.latency.p99_us),
            ms(p.latency.max_us)
        );
    }
    for (kind, count) in p.errors.nonzero() {
        let _ = writeln!(out, "  {count} {}", kind.describe());
    }
    out.push('\n');
}

/// The time series as a table (`bench --timeline`).
pub fn render_timeline(r: &RunResult) -> String {
    let mut out = String::new();
    let warm = r.spec.warmup_s;
    let cool_from = match r.spec.stop {
        webtune_model::StopCondition::Duration { seconds } if r.spec.cooldown_s > 0.0 => {
            seconds - r.spec.cooldown_s
        }
        _ => f64::INFINITY,
    };
    let mut rows = vec![[
        "Timeline (s)",
        "responses",
        "/s",
        "errors",
        "open",
        "p50",
        "p90",
        "p99",
        "max",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for i in &r.timeline {
        let rate = if i.length_s > 0.0 {
            i.responses as f64 / i.length_s
        } else {
            0.0
        };
        let stalled = r
            .stalls
            .iter()
            .any(|s| s.start_s < i.start_s + i.length_s && s.start_s + s.length_s > i.start_s);
        let mut note = Vec::new();
        if i.start_s < warm {
            note.push("warm-up");
        }
        if i.start_s >= cool_from {
            note.push("cool-down");
        }
        if stalled {
            note.push("STALL");
        }
        rows.push(vec![
            format!("  {:.1}", i.start_s),
            i.responses.to_string(),
            format!("{rate:.0}"),
            i.errors.total().to_string(),
            i.open_connections.to_string(),
            ms(i.p50_us),
            ms(i.p90_us),
            ms(i.p99_us),
            ms(i.max_us),
            note.join(", "),
        ]);
    }
    write_aligned(&mut out, &rows);
    let _ = writeln!(out, "  (latency in ms)");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::Schedule;
    use webtune_testkit::results::synthetic_result;

    #[test]
    fn schedule_shows_the_wait_for_a_busy_connection_apart_from_the_generators_lag() {
        let mut r = synthetic_result(1000, &[1_000]);
        let mut s = Schedule {
            requested_rate: 2000.0,
            achieved_rate: 1990.0,
            ..Schedule::default()
        };
        // A stalled server: 1.5 s late, all of it waiting with every connection busy.
        s.lag_histogram.record(1_500_030);
        s.connection_wait_histogram.record(1_500_000);
        s.generator_lag_histogram.record(30);
        r.schedule = Some(s);
        r.finish_summaries();
        let mut out = String::new();
        write_schedule(&mut out, &r);
        assert!(out.contains("    conn wait   p50 1500"), "{out}");
        assert!(out.contains("    generator   p50 0.030 ms"), "{out}");
        let mut verdict = String::new();
        write_validity(&mut verdict, &r);
        assert!(
            verdict.contains("kept up")
                && verdict.contains("generator lag p50 0.030 ms, p99 0.030 ms"),
            "{verdict}"
        );
    }
}
