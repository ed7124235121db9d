//! A journey run's walks in the reports: per journey, walks completed and failed, the step
//! and error kind that ended the failed ones, and the walk-time percentiles — the rows of the
//! text table under the per-request rows (`text` aligns them), and the HTML table and the
//! curves of its percentile chart (`html` draws it). A leaf: it imports neither renderer.

use crate::svg::escape;
use crate::units::ms;
use std::fmt::Write as _;
use webtune_model::{JourneyResult, LatencyHistogram, RunResult};

/// Each failed-walk cause as "step: N kind" lines.
fn causes(j: &JourneyResult) -> Vec<String> {
    j.failed_by
        .iter()
        .flat_map(|(step, kinds)| {
            kinds
                .iter()
                .map(move |(kind, n)| format!("{step}: {n} {}", kind.describe()))
        })
        .collect()
}

/// The text table's rows (header first) and the notes under it; None without journeys.
pub fn text_rows(r: &RunResult) -> Option<(Vec<Vec<String>>, Vec<String>)> {
    if r.by_journey.is_empty() {
        return None;
    }
    let mut rows = vec![[
        "Per journey",
        "completed",
        "failed",
        "walk p50",
        "p90",
        "p99",
        "max",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    let mut notes = Vec::new();
    for (name, j) in &r.by_journey {
        rows.push(vec![
            format!("  {name}"),
            j.completed.to_string(),
            j.failed.to_string(),
            ms(j.latency.p50_us),
            ms(j.latency.p90_us),
            ms(j.latency.p99_us),
            ms(j.latency.max_us),
        ]);
        for cause in causes(j) {
            notes.push(format!("  {name} ended at {cause}"));
        }
    }
    notes.push(
        "  (walk time in ms: a completed walk's first step's start to its last answer)".into(),
    );
    Some((rows, notes))
}

/// The HTML table (empty without journeys); `prefix` keeps ids unique.
pub fn html_table(r: &RunResult, prefix: &str) -> String {
    if r.by_journey.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "<h2>Journeys</h2>\n<table id=\"{prefix}journeys\">\n<tr><th>journey</th><th>completed</th><th>failed</th><th>walk p50 ms</th><th>p90</th><th>p99</th><th>max</th><th>failed at</th></tr>\n"
    );
    for (name, j) in &r.by_journey {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(name),
            j.completed,
            j.failed,
            ms(j.latency.p50_us),
            ms(j.latency.p90_us),
            ms(j.latency.p99_us),
            ms(j.latency.max_us),
            escape(&causes(j).join("; "))
        );
    }
    s.push_str("</table>\n");
    s
}

/// The walk-time histograms of the journeys that completed a walk, for a percentile chart.
pub fn walk_curves(r: &RunResult) -> Vec<(String, &LatencyHistogram)> {
    r.by_journey
        .iter()
        .filter(|(_, j)| j.completed > 0)
        .map(|(name, j)| (name.clone(), &j.histogram))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::ErrorKind;

    #[test]
    fn journeys_show_completed_failed_and_where() {
        let mut r = webtune_testkit::results::synthetic_result(10, &[1000]);
        let mut j = JourneyResult {
            completed: 7,
            ..JourneyResult::default()
        };
        j.histogram.record(12_000);
        j.failed_at("login", ErrorKind::Extract);
        j.finish();
        r.by_journey.insert("posters".into(), j);
        let (rows, notes) = text_rows(&r).expect("rows");
        let text = format!("{rows:?} {notes:?}");
        assert!(text.contains("Per journey"), "{text}");
        assert!(text.contains("posters"), "{text}");
        assert!(
            text.contains("posters ended at login: 1 journey step extracted nothing"),
            "{text}"
        );
        let html = html_table(&r, "");
        assert!(html.contains("<table id=\"journeys\">"), "{html}");
        assert_eq!(walk_curves(&r).len(), 1);
        r.by_journey.clear();
        assert!(html_table(&r, "").is_empty());
        assert!(text_rows(&r).is_none());
    }
}
