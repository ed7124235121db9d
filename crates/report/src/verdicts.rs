//! Threshold verdict lines (`--threshold`: one line per threshold, pass or FAIL, with the
//! observed figure and the limit) and the shard lines of a merged result (`webtune merge`:
//! each shard's start offset and figures, and the start skew); and the line that says why a
//! run got no response (`no_response_line`, the reason for exit status 1).

use crate::units::{ms_f, percent};
use std::fmt::Write as _;
use webtune_model::{RunResult, Verdict};

/// A figure in a verdict's unit, as people read it.
fn figure(unit: &str, value: f64) -> String {
    match unit {
        "us" => format!("{} ms", ms_f(value)),
        "ratio" => percent(value),
        "count" => count(value),
        _ => format!("{value:.1}/s"),
    }
}

/// A count as written: "2", and a limit such as `errors<=1.5` as "1.5", never rounded to
/// a number the judgement did not use.
fn count(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

/// One line per verdict: "  pass  p99<=50ms: p99 12.3 ms (limit 50.0 ms)".
pub fn render_verdicts(verdicts: &[Verdict]) -> String {
    let mut out = String::new();
    for v in verdicts {
        let word = if v.passed { "pass" } else { "FAIL" };
        let limit = match v.baseline {
            Some(base) => format!(
                "limit {} from baseline {}",
                figure(&v.unit, v.limit),
                figure(&v.unit, base)
            ),
            None => format!("limit {}", figure(&v.unit, v.limit)),
        };
        let aborted = if v.aborted { "; stopped the run" } else { "" };
        let _ = writeln!(
            out,
            "  {word}  {}: {} {} ({limit}){aborted}",
            v.threshold,
            v.metric,
            figure(&v.unit, v.observed)
        );
    }
    out
}

/// The "Thresholds:" section of the text summary (nothing without thresholds).
pub fn write_thresholds(out: &mut String, r: &RunResult) {
    if r.thresholds.is_empty() {
        return;
    }
    let failed = r.thresholds.iter().filter(|v| !v.passed).count();
    let _ = writeln!(
        out,
        "\nThresholds: {}",
        if failed == 0 {
            "all passed".to_string()
        } else {
            format!("{failed} of {} failed", r.thresholds.len())
        }
    );
    out.push_str(&render_verdicts(&r.thresholds));
}

/// The "Shards:" section of a merged result's text summary.
pub fn write_shards(out: &mut String, r: &RunResult) {
    let Some(set) = &r.sharding else { return };
    // Results merged before the limit was recorded have 0 there: no limit shown.
    let limit = if set.start_skew_limit_ms > 0.0 {
        format!(" (limit {} ms)", ms_f(set.start_skew_limit_ms * 1000.0))
    } else {
        String::new()
    };
    let run = set
        .run_id
        .as_ref()
        .map(|id| format!(", run {id}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "\nShards: {} merged{run}, start skew {} ms{limit}",
        set.shards.len(),
        ms_f(set.start_skew_ms * 1000.0)
    );
    for s in &set.shards {
        let late = s
            .start
            .as_ref()
            .and_then(|st| st.late_ms)
            .map(|l| format!(", {} ms after --start-at", ms_f(l * 1000.0)))
            .unwrap_or_default();
        let limited = if s.client_limited {
            ", client-limited"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {:>7}  +{} ms  {} responses  {:.1}/s  {} errors{late}{limited}",
            s.shard.to_string(),
            ms_f(s.start_offset_ms * 1000.0),
            s.responses,
            s.requests_per_s,
            s.errors
        );
    }
}

/// Why a run got no response (`what`: "no request got a response"): its errors, and when
/// every connect was refused for --timeout, that the run was ended for it.
pub fn no_response_line(result: &RunResult, what: &str) -> String {
    let errors = match result.errors.summary() {
        s if s.is_empty() => "none was sent".to_string(),
        s => s,
    };
    if result.target_down {
        format!(
            "{what} ({errors}); every connect was refused for {:?} (--timeout), so the run \
             ended: is the server listening there? Exit status 1",
            std::time::Duration::from_millis(result.spec.timeout_ms)
        )
    } else {
        format!("{what} ({errors}); exit status 1")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_lines_say_pass_or_fail_with_the_figures() {
        let v = |passed, unit: &str, observed, limit, baseline| Verdict {
            threshold: "t".into(),
            metric: "m".into(),
            unit: unit.into(),
            observed,
            limit,
            baseline,
            passed,
            aborted: false,
        };
        let text = render_verdicts(&[
            v(true, "us", 12_300.0, 50_000.0, None),
            v(false, "ratio", 0.025, 0.001, None),
            v(false, "us", 13_100.0, 11_000.0, Some(10_000.0)),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "  pass  t: m 12.30 ms (limit 50.00 ms)");
        assert_eq!(lines[1], "  FAIL  t: m 2.50% (limit 0.10%)");
        assert_eq!(
            lines[2],
            "  FAIL  t: m 13.10 ms (limit 11.00 ms from baseline 10.00 ms)"
        );
    }

    #[test]
    fn a_count_limit_is_printed_as_given() {
        let v = |observed: f64| Verdict {
            threshold: "errors<=1.5".into(),
            metric: "errors".into(),
            unit: "count".into(),
            observed,
            limit: 1.5,
            baseline: None,
            passed: observed <= 1.5,
            aborted: false,
        };
        let text = render_verdicts(&[v(2.0), v(1.0)]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "  FAIL  errors<=1.5: errors 2 (limit 1.5)");
        assert_eq!(lines[1], "  pass  errors<=1.5: errors 1 (limit 1.5)");
    }
}
