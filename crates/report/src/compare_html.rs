//! The comparison's HTML page: each input's change against the baseline as a forest plot
//! (estimate and 95% interval per figure, or the estimate alone for single runs), both
//! latency distributions overlaid (a histogram on a log scale and the percentile curves),
//! throughput over time, and the numbers as HTML tables. The statistics are `compare`'s.

use crate::compare_figures::{change_pct, metrics, verdict, ChangeKind, CONFIDENCE};
use crate::dots::{render_forest, Forest, ForestRow, RowVerdict};
use crate::html::{figure, figure_svg, page, percentile_chart, throughput_chart};
use crate::svg::{escape, tick_label, Chart, Scale, Series};
use crate::verdict_box::VerdictHtml;
use std::fmt::Write as _;
use webtune_model::{LatencyHistogram, RunResult};

/// Histogram bins per decade of latency.
const BINS_PER_DECADE: f64 = 10.0;

/// The share of responses (percent) in each latency bin (log-spaced between `lo_ms` and
/// `hi_ms`), as (bin centre in ms, percent); empty for an empty histogram.
pub fn distribution(h: &LatencyHistogram, lo_ms: f64, hi_ms: f64) -> Vec<(f64, f64)> {
    let total = h.count();
    if total == 0 || !(lo_ms > 0.0 && hi_ms > lo_ms) {
        return Vec::new();
    }
    let (a, b) = (lo_ms.log10(), hi_ms.log10());
    let bins = (((b - a) * BINS_PER_DECADE).ceil() as usize).clamp(1, 400);
    let width = (b - a) / bins as f64;
    let mut counts = vec![0u64; bins];
    for (us, n) in h.iter_recorded() {
        let ms = (us as f64 / 1000.0).max(lo_ms);
        let i = (((ms.log10() - a) / width) as usize).min(bins - 1);
        counts[i] += n;
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let centre = 10f64.powf(a + width * (i as f64 + 0.5));
            (centre, n as f64 * 100.0 / total as f64)
        })
        .collect()
}

/// Both (all) latency distributions on one log-scale chart.
fn distribution_chart(inputs: &[(String, &RunResult)]) -> Chart {
    let mut chart = Chart::new(
        "Latency distribution",
        "latency (ms, log scale)",
        "share of responses (%)",
    );
    chart.x_scale = Scale::Log10;
    let hs: Vec<&LatencyHistogram> = inputs.iter().map(|(_, r)| &r.histograms.total).collect();
    let lo = hs
        .iter()
        .filter(|h| !h.is_empty())
        .map(|h| h.min().max(1) as f64 / 1000.0)
        .fold(f64::INFINITY, f64::min);
    let hi = hs
        .iter()
        .filter(|h| !h.is_empty())
        .map(|h| h.max().max(1) as f64 / 1000.0)
        .fold(0.0f64, f64::max);
    if !lo.is_finite() {
        return chart;
    }
    let (lo, hi) = (lo * 0.9, (hi * 1.1).max(lo * 2.0));
    for (i, ((name, _), h)) in inputs.iter().zip(&hs).enumerate() {
        if !h.is_empty() {
            chart
                .series
                .push(Series::new(name.clone(), distribution(h, lo, hi), i));
        }
    }
    let mut ticks = Vec::new();
    let mut e = lo.log10().floor() as i32;
    while 10f64.powi(e) <= hi * 10.0 && ticks.len() < 40 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(e);
            if v >= lo && v <= hi {
                ticks.push((v, tick_label(v)));
            }
        }
        e += 1;
    }
    chart.x_ticks = Some(ticks);
    chart
}

/// The forest plot of one input against the baseline: every figure measured as a ratio,
/// in percent.
fn change_forest(base: &RunResult, base_name: &str, name: &str, r: &RunResult) -> Forest {
    let mut rows = Vec::new();
    for m in metrics()
        .into_iter()
        .filter(|m| m.change == ChangeKind::Ratio)
    {
        let row = match verdict(&m, &base.repeats, &r.repeats) {
            Some(v) => ForestRow {
                label: m.name.to_string(),
                estimate: v.change,
                interval: Some((v.low, v.high)),
                verdict: if !v.significant {
                    RowVerdict::Unclear
                } else if v.better {
                    RowVerdict::Better
                } else {
                    RowVerdict::Worse
                },
                note: format!(
                    "{} ({} … {}) {}",
                    v.show(v.change),
                    v.show(v.low).trim_end_matches('%'),
                    v.show(v.high).trim_end_matches('%'),
                    if v.significant {
                        v.describe()
                    } else {
                        "no difference".into()
                    }
                ),
            },
            None => {
                let (a, b) = ((m.of_result)(base), (m.of_result)(r));
                if a == 0.0 {
                    continue;
                }
                ForestRow {
                    label: m.name.to_string(),
                    estimate: (b - a) / a * 100.0,
                    interval: None,
                    verdict: RowVerdict::Estimate,
                    note: format!("{} (no interval)", change_pct(a, b)),
                }
            }
        };
        rows.push(row);
    }
    Forest {
        title: format!("{name} against {base_name}: change of each figure"),
        x_label: "change against the baseline (%)".into(),
        rows,
    }
}

/// The figures side by side, a change column per input after the first.
fn values_table(inputs: &[(String, &RunResult)]) -> String {
    let base = inputs[0].1;
    let mut s = String::from("<table id=\"compare-table\">\n<tr><th>figure</th>");
    for (i, (name, _)) in inputs.iter().enumerate() {
        let _ = write!(s, "<th>{}</th>", escape(name));
        if i > 0 {
            s.push_str("<th>change</th>");
        }
    }
    s.push_str("</tr>\n");
    for m in metrics() {
        let _ = write!(s, "<tr><td>{}</td>", escape(m.name));
        let base_value = (m.of_result)(base);
        for (i, (_, r)) in inputs.iter().enumerate() {
            let v = (m.of_result)(r);
            let _ = write!(s, "<td>{}</td>", escape(&(m.show)(v)));
            if i > 0 {
                let change = match verdict(&m, &base.repeats, &r.repeats) {
                    Some(v) => v.show(v.change),
                    None => change_pct(base_value, v),
                };
                let _ = write!(s, "<td>{}</td>", escape(&change));
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

/// The interval table of one input against the baseline (both with repeats).
fn interval_table(i: usize, base: &RunResult, r: &RunResult) -> String {
    let mut s = format!(
        "<table id=\"compare-intervals-{i}\">\n<tr><th>figure</th><th>change</th><th>{:.0}% CI</th><th>verdict</th></tr>\n",
        CONFIDENCE * 100.0
    );
    for m in metrics() {
        if let Some(v) = verdict(&m, &base.repeats, &r.repeats) {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{} … {}</td><td>{}</td></tr>",
                escape(m.name),
                escape(&v.show(v.change)),
                escape(&v.show(v.low)),
                escape(&v.show(v.high)),
                escape(&v.describe())
            );
        }
    }
    s.push_str("</table>\n");
    s
}

/// The comparison as an HTML page.
pub fn render_compare_html(inputs: &[(String, &RunResult)]) -> String {
    let mut body = String::from("<h1>webtune compare</h1>\n");
    // The answer first (issue 39).
    if let Some(v) = crate::compare_verdict::compare_verdict(inputs) {
        body.push_str(&v.html());
    }
    let Some((base_name, base)) = inputs.first() else {
        body.push_str("<p>Nothing to compare.</p>\n");
        return page("webtune compare", &body);
    };
    let _ = writeln!(
        body,
        "<p>Compared to <strong>{}</strong> (the baseline, first column).</p>\n<ul id=\"compare-inputs\">",
        escape(base_name)
    );
    for (name, r) in inputs {
        let _ = writeln!(
            body,
            "<li><strong>{}</strong>: {}, {} connections, {:.1} s, {}{}</li>",
            escape(name),
            escape(&crate::text::headline(r)),
            r.spec.connections,
            r.duration_s,
            if r.repeats.is_empty() {
                "1 run".to_string()
            } else {
                format!("{} repeats", r.repeats.len())
            },
            if r.interrupted { ", INTERRUPTED" } else { "" }
        );
    }
    body.push_str("</ul>\n<h2>Changes</h2>\n");
    for (i, (name, r)) in inputs.iter().enumerate().skip(1) {
        let forest = change_forest(base, base_name, name, r);
        let with_intervals = base.repeats.len() >= 2 && r.repeats.len() >= 2;
        let caption = if with_intervals {
            format!(
                "Each figure's change and its {:.0}% confidence interval over the repeats \
                 (Welch's t on the log scale): green better, orange worse, grey when the \
                 interval holds 0 (no significant difference). Errors % (in points) is in \
                 the tables below.",
                CONFIDENCE * 100.0
            )
        } else {
            "Each figure's change, from single results: no interval (hollow squares). Run both \
             sides with `bench --repeat N` (N ≥ 2) for confidence intervals; single runs on a \
             shared machine differ by 3–50% from noise alone."
                .to_string()
        };
        body.push_str(&figure_svg(
            &format!("plot-compare-change-{i}"),
            &render_forest(&format!("plot-compare-change-{i}-svg"), &forest),
            &caption,
        ));
    }
    body.push_str("<h2>Latency distributions</h2>\n");
    body.push_str(&figure(
        "plot-compare-distribution",
        &distribution_chart(inputs),
        "The share of responses in each latency bin (ten bins per decade), one line per result.",
    ));
    let curves: Vec<(String, &LatencyHistogram)> = inputs
        .iter()
        .map(|(name, r)| (name.clone(), &r.histograms.total))
        .collect();
    body.push_str(&figure(
        "plot-compare-percentiles",
        &percentile_chart("Latency by percentile", &curves),
        "Total latency by percentile, one line per result.",
    ));
    body.push_str("<h2>The numbers</h2>\n");
    body.push_str(&values_table(inputs));
    for (i, (name, r)) in inputs.iter().enumerate().skip(1) {
        if base.repeats.len() >= 2 && r.repeats.len() >= 2 {
            let _ = writeln!(
                body,
                "<p>{} against {}: {:.0}% confidence intervals ({} and {} repeats).</p>",
                escape(name),
                escape(base_name),
                CONFIDENCE * 100.0,
                base.repeats.len(),
                r.repeats.len()
            );
            body.push_str(&interval_table(i, base, r));
        }
    }
    let config = crate::compare_figures::configuration_differences(inputs);
    if !config.trim().is_empty() {
        let _ = writeln!(
            body,
            "<pre id=\"compare-configuration\">{}</pre>",
            escape(config.trim_matches('\n'))
        );
    }
    let mut over_time = Chart::new("Throughput over time", "time (s)", "responses/s");
    for (i, (name, r)) in inputs.iter().enumerate() {
        if let Some(s) = throughput_chart(r).series.into_iter().next() {
            over_time
                .series
                .push(Series::new(name.clone(), s.points, i));
        }
    }
    body.push_str(&figure(
        "plot-compare-throughput",
        &over_time,
        "Responses per second in each interval, one line per result.",
    ));
    page("webtune compare", &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_testkit::results::{repeats_at, synthetic_result};

    #[test]
    fn the_page_has_a_forest_plot_both_distributions_and_tables() {
        let mut before = synthetic_result(100, &[5_000, 9_000]);
        let mut after = synthetic_result(100, &[2_000, 4_000]);
        before.repeats = repeats_at(&[1000.0, 1050.0, 980.0]);
        after.repeats = repeats_at(&[1500.0, 1480.0, 1530.0]);
        let html = render_compare_html(&[("a".into(), &before), ("b".into(), &after)]);
        for id in [
            "plot-compare-change-1",
            "plot-compare-distribution",
            "plot-compare-percentiles",
            "plot-compare-throughput",
            "compare-table",
            "compare-intervals-1",
        ] {
            assert!(html.contains(&format!("id=\"{id}\"")), "missing {id}");
        }
        // requests/s clearly better: an interval, coloured as better
        assert!(
            html.contains("<g class=\"row better\" data-row=\"requests/s\">"),
            "{html}"
        );
        assert!(html.contains("class=\"interval\""));
        // both distributions are drawn
        assert!(html.contains("data-series=\"a\"") && html.contains("data-series=\"b\""));
        assert!(!html.contains("<pre id=\"compare-table\">"));
        assert!(!html.contains("NaN"));
    }

    #[test]
    fn single_runs_get_estimates_without_intervals() {
        let before = synthetic_result(100, &[5_000]);
        let after = synthetic_result(120, &[4_000]);
        let html = render_compare_html(&[("a".into(), &before), ("b".into(), &after)]);
        assert!(html.contains("class=\"row estimate\""));
        assert!(!html.contains("class=\"interval\""));
        assert!(html.contains("no interval"));
    }

    #[test]
    fn the_distribution_sums_to_all_responses() {
        let mut h = LatencyHistogram::new();
        for us in [900, 1_000, 1_100, 20_000, 20_500] {
            h.record(us);
        }
        let points = distribution(&h, 0.5, 30.0);
        let sum: f64 = points.iter().map(|p| p.1).sum();
        assert!((sum - 100.0).abs() < 1e-9, "{points:?}");
        assert!(points.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
