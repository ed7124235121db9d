//! Pieces several text layouts share (issue 36 item 5): the latency table's columns and
//! rows, the aligned-columns writer and the errors section. A leaf below the run's summary
//! (`text`), the mail summary (`smtp`) and the schedule/validity sections (`timing`), which
//! used to reach them through `text` and so import each other in a circle.

use crate::units::{ms, ms_f, percent};
use std::fmt::Write as _;
use webtune_model::{Percentiles, RunResult};

/// Column headers of the latency table, in order.
pub const LATENCY_COLUMNS: [&str; 9] = [
    "mean", "p50", "p75", "p90", "p95", "p99", "p99.9", "max", "count",
];

pub(crate) fn latency_row(label: &str, p: &Percentiles) -> Vec<String> {
    let mut row = vec![label.to_string()];
    if p.count == 0 {
        row.extend(std::iter::repeat_n(
            "-".to_string(),
            LATENCY_COLUMNS.len() - 1,
        ));
    } else {
        row.push(ms_f(p.mean_us));
        for v in [
            p.p50_us, p.p75_us, p.p90_us, p.p95_us, p.p99_us, p.p999_us, p.max_us,
        ] {
            row.push(ms(v));
        }
    }
    row.push(p.count.to_string());
    row
}

/// Write rows with the first column left-aligned and the others right-aligned.
pub(crate) fn write_aligned(out: &mut String, rows: &[Vec<String>]) {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                let _ = write!(line, "{cell:<w$}", w = widths[0]);
            } else {
                let _ = write!(line, "  {cell:>w$}", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

pub(crate) fn write_errors(out: &mut String, r: &RunResult) {
    let total = r.errors.total();
    if total == 0 {
        let _ = writeln!(out, "Errors          none");
    } else {
        let _ = writeln!(
            out,
            "Errors          {total} ({} of attempted requests)",
            percent(r.error_ratio())
        );
        let width = r
            .errors
            .nonzero()
            .map(|(k, _)| k.describe().len())
            .max()
            .unwrap_or(0);
        for (kind, n) in r.errors.nonzero() {
            let _ = writeln!(out, "  {:<width$}  {n:>8}", kind.describe());
            if let Some(hint) = kind.hint() {
                let _ = writeln!(out, "    {hint}");
            }
        }
    }
    if r.length_varies > 0 {
        // a scenario compares each request name with its own first response
        let first = if !r.by_name.is_empty() {
            // the names whose lengths varied, with their counts (also in the table above)
            let names: Vec<String> = r
                .by_name
                .iter()
                .filter(|(_, n)| n.length_varies > 0)
                .map(|(name, n)| format!("{name} {}", n.length_varies))
                .collect();
            match names.is_empty() {
                true => " response of their request name".to_string(),
                false => format!(" response of their request name ({})", names.join(", ")),
            }
        } else {
            r.first_body_bytes
                .map(|b| format!(" ({b} bytes)"))
                .unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "Length varies   {} responses differed in body length from the first{first}\n  \
             not an error: dynamic pages vary (ab counts these as \"Failed requests (Length)\")",
            r.length_varies
        );
    }
    out.push('\n');
}
