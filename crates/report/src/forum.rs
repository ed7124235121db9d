//! Seed 003's table for `lab sweep --app forum` (and any lab sweep): per level the
//! requests served, mean response time and error % as the seed reported them, with
//! throughput, p50 and p99 beside them and the knee marked.

use crate::sweep::{find_knee, level_rows};
use webtune_model::sweep::SweepResult;

/// Seed 003's table: per level the requests served, mean response time and error %, with
/// warm-up and cool-down left out, plus throughput and p99.
pub fn seed_003_table(sweep: &SweepResult) -> String {
    let rows = level_rows(sweep);
    let knee = find_knee(&rows);
    let mut table = vec![[
        "connections".to_string(),
        "served".into(),
        "req/s".into(),
        "mean ms".into(),
        "p50 ms".into(),
        "p99 ms".into(),
        "errors %".into(),
        String::new(),
    ]];
    for (i, level) in sweep.levels.iter().enumerate() {
        let r = &level.result;
        table.push([
            format!("{}", level.level),
            r.responses.to_string(),
            format!("{:.1}", r.requests_per_s),
            format!("{:.1}", r.latency.total.mean_us / 1000.0),
            format!("{:.1}", r.latency.total.p50_us as f64 / 1000.0),
            format!("{:.1}", r.latency.total.p99_us as f64 / 1000.0),
            format!("{:.2}", r.error_ratio() * 100.0),
            match (Some(i) == knee, r.ok == 0) {
                (_, true) => "no successful response".into(),
                (true, false) => "<- knee".into(),
                (false, false) => String::new(),
            },
        ]);
    }
    let mut widths = [0usize; 8];
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 7 {
                line.push_str(&format!("  {cell}"));
            } else {
                line.push_str(&format!(
                    "{}{cell:>w$}",
                    if c == 0 { "" } else { "  " },
                    w = widths[c]
                ));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    match knee {
        Some(i) => out.push_str(&format!(
            "Knee: {} connections — beyond it throughput grows by less than 5% while p99 keeps growing.\n",
            rows[i].level
        )),
        None => out.push_str("No knee: throughput grew by 5% or more at every step (or p99 did not grow).\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::sweep::{SweepLevel, SweepVariable};
    use webtune_testkit::results::synthetic_result_without_stall;

    #[test]
    fn the_table_has_the_seeds_columns_and_marks_the_knee() {
        let mut sweep = SweepResult::new("webtune 0.1.0", SweepVariable::Connections);
        for (level, n, lat) in [(8.0, 800, 1_000), (32.0, 1600, 2_000), (64.0, 1610, 8_000)] {
            sweep.levels.push(SweepLevel {
                level,
                result: synthetic_result_without_stall(n, &[lat]),
            });
        }
        let text = seed_003_table(&sweep);
        let head = text.lines().next().unwrap();
        assert_eq!(
            head.split_whitespace().collect::<Vec<_>>(),
            [
                "connections",
                "served",
                "req/s",
                "mean",
                "ms",
                "p50",
                "ms",
                "p99",
                "ms",
                "errors",
                "%"
            ]
        );
        assert!(text.lines().nth(2).unwrap().ends_with("<- knee"), "{text}");
        assert!(text.contains("Knee: 32 connections"), "{text}");
    }
}
