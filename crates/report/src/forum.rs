//! Seed 003's table for `lab sweep --app forum` (and any lab sweep): per level the
//! requests served, mean response time and error % as the seed reported them, with
//! throughput, p50 and p99 beside them, the knee marked and each level left out of it
//! marked with the reason (`knee`, as in every sweep table).

use crate::knee::{find_knee, level_rows, no_knee_sentence, note};
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
            note(&rows[i], Some(i) == knee),
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
    if rows.iter().any(|r| r.left_out()) {
        out.push_str(
            "Levels marked \"not in the knee\" are left out of it: stalled in the measured \
             window (a stall in the warm-up or cool-down does not count), cut short, or measured \
             while the generator was the limit.\n",
        );
    }
    match knee {
        Some(i) => out.push_str(&format!(
            "Knee: {} connections — beyond it throughput grows by less than 5% while p99 keeps growing.\n",
            rows[i].level
        )),
        None => {
            out.push_str(&no_knee_sentence(&rows));
            out.push('\n');
        }
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

    /// The sweep: `lab sweep apache-prefork --app forum -c 8,32` with a 0.1 s stall
    /// inside level 8's warm-up (left out of its figures): 608 → 263 req/s, p99 58 → 3,273 ms.
    fn forum_sweep(stall_at_s: f64) -> SweepResult {
        let mut sweep = SweepResult::new("webtune 0.1.0", SweepVariable::Connections);
        for (level, n, lat) in [(8.0, 6080, 58_000), (32.0, 2630, 3_273_000)] {
            let mut result = synthetic_result_without_stall(n, &[lat]);
            result.spec.warmup_s = 2.0;
            result.spec.cooldown_s = 1.0;
            result.spec.stop = webtune_model::StopCondition::Duration { seconds: 13.0 };
            sweep.levels.push(SweepLevel { level, result });
        }
        sweep.levels[0].result.stalls = vec![webtune_model::Stall {
            start_s: stall_at_s,
            length_s: 0.1,
        }];
        sweep
    }

    #[test]
    fn a_stall_in_the_warm_up_does_not_hide_the_knee() {
        let text = seed_003_table(&forum_sweep(0.6));
        assert!(text.lines().nth(1).unwrap().ends_with("<- knee"), "{text}");
        assert!(text.contains("Knee: 8 connections"), "{text}");
        assert!(!text.contains("No knee"), "{text}");
        assert!(!text.contains("stalled"), "{text}");
    }

    #[test]
    fn a_level_left_out_of_the_knee_is_marked_with_the_reason_and_the_rule_stated() {
        // The same stall inside the measured window (2 s to 12 s): level 8 is left out.
        let text = seed_003_table(&forum_sweep(5.0));
        assert!(
            text.lines()
                .nth(1)
                .unwrap()
                .ends_with("stalled 0.1 s (not in the knee)"),
            "{text}"
        );
        assert!(text.contains("Levels marked \"not in the knee\""), "{text}");
        assert!(
            text.contains(&format!("No knee: {}", crate::knee::RULE)),
            "{text}"
        );
        assert!(
            !text.contains("throughput grew by 5% or more at every step"),
            "one level counted: no claim about steps: {text}"
        );
    }
}
