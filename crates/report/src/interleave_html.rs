//! `--html` of a live comparison: the verdict, each block's figure of the deciding metric for
//! both arms over time (A and B as two series), and the interval of B/A narrowing as the pairs
//! came in (recomputed after each pair, as the stopping rule saw it). Self-contained: SVG
//! drawn by this crate's `svg`, no scripts; the comparison itself (`webtune_search::interleave`)
//! draws nothing.

use crate::html::page;
use crate::svg::{escape, render_chart, Chart, Series};
use webtune_search::interleave::block::Side;
use webtune_search::interleave::judge::{interval, log_ratios};
use webtune_search::interleave::render::Report;

/// The page.
pub fn render(report: &Report) -> String {
    let m = report.settings.decide_on;
    let mut blocks = Chart::new(
        &format!("{} per block", m.name()),
        "seconds",
        if m == webtune_search::interleave::block::Metric::Throughput {
            "responses/s"
        } else {
            "ms"
        },
    );
    for (i, side) in [Side::A, Side::B].into_iter().enumerate() {
        let points = report
            .blocks
            .iter()
            .filter(|b| b.arm == side)
            .filter_map(|b| m.of(b).map(|v| (b.started_s, v)))
            .collect();
        blocks.series.push(Series::new(
            format!(
                "{} ({})",
                side.letter(),
                report.arms[&side.letter().to_lowercase()].name
            ),
            points,
            i,
        ));
    }
    // The interval after each complete pair, as the stopping rule saw it.
    let d = log_ratios(&report.blocks, m);
    let ends: Vec<f64> = {
        let mut by_pair = std::collections::BTreeMap::new();
        for b in &report.blocks {
            let e = by_pair.entry(b.pair).or_insert(0.0f64);
            *e = e.max(b.started_s + b.wall_s);
        }
        by_pair.into_values().collect()
    };
    let (mut lo, mut mid, mut hi) = (Vec::new(), Vec::new(), Vec::new());
    for k in 2..=d.len() {
        let mi = interval(&d[..k], &report.settings);
        let t = ends.get(k - 1).copied().unwrap_or(k as f64);
        if let (Some(l), Some(h)) = (mi.ci_low, mi.ci_high) {
            lo.push((t, l));
            hi.push((t, h));
            mid.push((t, mi.ratio));
        }
    }
    let mut narrowing = Chart::new(
        &format!(
            "{} B/A and its 95% always-valid interval, pair by pair",
            m.name()
        ),
        "seconds",
        "B/A",
    );
    narrowing.series.push(Series::new("interval low", lo, 2));
    narrowing.series.push(Series::new("B/A", mid, 6));
    narrowing.series.push(Series::new("interval high", hi, 2));
    let body = format!(
        "<h1>webtune compare: A vs B</h1>\n<p><strong>{}</strong></p>\n<pre>{}</pre>\n{}\n{}\n",
        escape(&report.headline()),
        escape(&report.text()),
        render_chart("blocks", &blocks),
        render_chart("narrowing", &narrowing),
    );
    page("webtune compare --live", &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_search::interleave::block::{Block, Metric, Settings};
    use webtune_search::interleave::schedule::{Protocol, Step};

    #[test]
    fn the_page_plots_both_arms_and_the_interval() {
        let mut s = Settings::new(Metric::Throughput);
        s.budget_s = 30.0;
        let mut p = Protocol::new(s);
        let mut t = 0.0;
        let mut k = 0u64;
        while let Step::Measure { side, .. } = p.next(t) {
            k += 1;
            let rps = if side == Side::B { 1100.0 } else { 1000.0 } * (1.0 + 0.02 * (k % 4) as f64);
            p.record(Block::from_figures(side, 0.9, rps, [1.0; 3]), t, 1.0);
            t += 1.0;
        }
        let r = Report::new(("http://a/", "http://b/"), &p, t, false);
        let html = render(&r);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("A (http://a/)") && html.contains("B (http://b/)"));
        assert!(html.contains("always-valid interval"));
        assert_eq!(html.matches("<svg").count(), 2);
        assert!(!html.contains("<script"));
    }
}
