//! Before → after: several results side by side (the first is the baseline), each figure
//! with its change in percent, as seed 000 compared "5505.80 -> 4478.60". When both sides
//! carry repeats (`bench --repeat N`), each change gets a 95% confidence interval over the
//! per-repeat figures and a verdict; "no significant difference" when the interval holds 0.
//! Latency and throughput are positive, so their interval is Welch's t on the log scale (a
//! ratio of geometric means, never below −100%); error % is a difference in points. The
//! first table shows the same point estimate as the interval table when both have repeats.

use crate::stats::{log_ratio_interval, welch_interval};
use crate::units::ms_f;
use std::fmt::Write as _;
use webtune_model::{RepeatSummary, RunResult};

/// Confidence of the intervals.
pub const CONFIDENCE: f64 = 0.95;

/// Which way is better for a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// How a change of a figure is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Relative change of a positive quantity, in percent (the ratio minus 1).
    Ratio,
    /// Difference in the figure's own unit; for a percentage, in percentage points.
    Points,
}

/// One compared figure.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub better: Better,
    pub change: ChangeKind,
    /// The figure of a whole result.
    pub of_result: fn(&RunResult) -> f64,
    /// The figure of one repeat; None when repeats do not carry it.
    pub of_repeat: Option<fn(&RepeatSummary) -> f64>,
    /// How to print it.
    pub show: fn(f64) -> String,
}

fn show_rate(v: f64) -> String {
    format!("{v:.2}")
}
fn show_ms(v: f64) -> String {
    ms_f(v)
}
fn show_count(v: f64) -> String {
    format!("{v:.0}")
}
fn show_pct(v: f64) -> String {
    format!("{v:.2}%")
}

fn error_pct(errors: u64, responses: u64) -> f64 {
    let attempted = errors + responses;
    if attempted == 0 {
        0.0
    } else {
        errors as f64 * 100.0 / attempted as f64
    }
}

macro_rules! latency_metric {
    ($name:expr, $field:ident) => {
        Metric {
            name: $name,
            better: Better::Lower,
            change: ChangeKind::Ratio,
            of_result: |r| r.latency.total.$field as f64,
            of_repeat: Some(|s| s.latency.$field as f64),
            show: show_ms,
        }
    };
}

/// The figures compared, in order.
pub fn metrics() -> Vec<Metric> {
    vec![
        Metric {
            name: "requests/s",
            better: Better::Higher,
            change: ChangeKind::Ratio,
            of_result: |r| r.requests_per_s,
            of_repeat: Some(|s| s.requests_per_s),
            show: show_rate,
        },
        latency_metric!("mean (ms)", mean_us),
        latency_metric!("p50 (ms)", p50_us),
        latency_metric!("p75 (ms)", p75_us),
        latency_metric!("p90 (ms)", p90_us),
        latency_metric!("p95 (ms)", p95_us),
        latency_metric!("p99 (ms)", p99_us),
        latency_metric!("p99.9 (ms)", p999_us),
        latency_metric!("max (ms)", max_us),
        Metric {
            name: "errors",
            better: Better::Lower,
            change: ChangeKind::Ratio,
            of_result: |r| r.errors.total() as f64,
            of_repeat: None,
            show: show_count,
        },
        Metric {
            name: "errors %",
            better: Better::Lower,
            change: ChangeKind::Points,
            of_result: |r| r.error_ratio() * 100.0,
            of_repeat: Some(|s| error_pct(s.errors, s.responses)),
            show: show_pct,
        },
    ]
}

/// Change from `base` to `value` in percent, e.g. "+23.1%"; "n/a" from zero.
pub fn change_pct(base: f64, value: f64) -> String {
    if base == 0.0 {
        if value == 0.0 {
            "0.0%".into()
        } else {
            "n/a".into()
        }
    } else {
        format!("{:+.1}%", (value - base) / base * 100.0)
    }
}

/// The verdict on one figure between two repeated results.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub kind: ChangeKind,
    /// The point estimate and the interval's bounds: for `Ratio` the change in percent of
    /// the baseline (ratio of the repeats' geometric means, minus 1; never below −100%), for
    /// `Points` the difference of the repeats' means in the figure's unit.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    pub significant: bool,
    /// When significant: did it get better?
    pub better: bool,
}

impl Verdict {
    pub fn describe(&self) -> String {
        if !self.significant {
            "no significant difference".into()
        } else if self.better {
            "better".into()
        } else {
            "worse".into()
        }
    }

    /// A value of this verdict as text: "+12.3%" or "+0.40 pp".
    pub fn show(&self, v: f64) -> String {
        if !v.is_finite() {
            return "n/a".into();
        }
        match self.kind {
            ChangeKind::Ratio => format!("{v:+.1}%"),
            ChangeKind::Points => format!("{v:+.2} pp"),
        }
    }
}

/// Compare one figure over the repeats of two results. None without ≥ 2 repeats each, for
/// a figure the repeats do not carry, or for a ratio when a repeat measured 0.
pub fn verdict(
    metric: &Metric,
    before: &[RepeatSummary],
    after: &[RepeatSummary],
) -> Option<Verdict> {
    let of = metric.of_repeat?;
    let a: Vec<f64> = before.iter().map(of).collect();
    let b: Vec<f64> = after.iter().map(of).collect();
    let (change, low, high, df) = match metric.change {
        ChangeKind::Ratio => {
            let i = log_ratio_interval(&a, &b, CONFIDENCE)?;
            (i.change * 100.0, i.low * 100.0, i.high * 100.0, i.df)
        }
        ChangeKind::Points => {
            let i = welch_interval(&a, &b, CONFIDENCE)?;
            (i.estimate, i.low, i.high, i.df)
        }
    };
    let significant = !(low <= 0.0 && high >= 0.0);
    let went_up = change > 0.0;
    Some(Verdict {
        kind: metric.change,
        change,
        low,
        high,
        df,
        significant,
        better: match metric.better {
            Better::Higher => went_up,
            Better::Lower => !went_up,
        },
    })
}

fn aligned(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    crate::text::write_aligned(&mut out, rows);
    out
}

/// The comparison as text: values side by side with changes vs the first, then the
/// confidence intervals where both sides have repeats.
pub fn render_compare_text(inputs: &[(String, &RunResult)]) -> String {
    let mut out = String::new();
    let Some((base_name, base)) = inputs.first() else {
        return "nothing to compare\n".into();
    };
    let _ = writeln!(out, "Compared to {base_name} (first column)");
    // The answer first (issue 39).
    if let Some(v) = crate::compare_verdict::compare_verdict(inputs) {
        out.push_str(&v.text());
    }
    for (name, r) in inputs {
        let repeats = if r.repeats.is_empty() {
            "1 run".to_string()
        } else {
            format!("{} repeats", r.repeats.len())
        };
        let _ = writeln!(
            out,
            "  {name}: {}, {} connections, {:.1} s, {repeats}{}",
            crate::text::headline(r),
            r.spec.connections,
            r.duration_s,
            if r.interrupted { ", INTERRUPTED" } else { "" }
        );
    }
    out.push('\n');
    let mut header = vec![String::new()];
    for (i, (name, _)) in inputs.iter().enumerate() {
        header.push(name.clone());
        if i > 0 {
            header.push("change".into());
        }
    }
    let mut rows = vec![header];
    let mut from_repeats = false;
    for m in metrics() {
        let base_value = (m.of_result)(base);
        let mut row = vec![m.name.to_string()];
        for (i, (_, r)) in inputs.iter().enumerate() {
            let v = (m.of_result)(r);
            row.push((m.show)(v));
            if i > 0 {
                // the interval table's estimate when there is one, so the tables agree
                match verdict(&m, &base.repeats, &r.repeats) {
                    Some(verdict) => {
                        from_repeats = true;
                        row.push(verdict.show(verdict.change));
                    }
                    None => row.push(change_pct(base_value, v)),
                }
            }
        }
        rows.push(row);
    }
    out.push_str(&aligned(&rows));
    if from_repeats {
        out.push_str(
            "change: over the repeats where both sides have them (ratio of their geometric \
             means; errors % in\n  percentage points), as in the interval table; the columns \
             show the repeats merged.\n",
        );
    }
    out.push_str(&configuration_differences(inputs));
    for (name, r) in inputs.iter().skip(1) {
        out.push('\n');
        if base.repeats.len() >= 2 && r.repeats.len() >= 2 {
            let _ = writeln!(
                out,
                "{name} vs {base_name}: 95% confidence interval of the change (Welch t, on the \
                 log scale for ratios; {} and {} repeats)",
                base.repeats.len(),
                r.repeats.len()
            );
            let mut rows = vec![vec![
                String::new(),
                "change".into(),
                "95% CI".into(),
                "verdict".into(),
            ]];
            for m in metrics() {
                if let Some(v) = verdict(&m, &base.repeats, &r.repeats) {
                    rows.push(vec![
                        m.name.to_string(),
                        v.show(v.change),
                        format!("{} … {}", v.show(v.low), v.show(v.high)),
                        v.describe(),
                    ]);
                } else if m.of_repeat.is_some() {
                    rows.push(vec![
                        m.name.to_string(),
                        "n/a".into(),
                        "n/a".into(),
                        "a repeat measured 0: no ratio".into(),
                    ]);
                }
            }
            out.push_str(&aligned(&rows));
        } else {
            let _ = writeln!(
                out,
                "{name} vs {base_name}: no confidence interval: run both with `bench --repeat N` \
                 (N ≥ 2; 5 or more is better). Single runs on a shared machine differ by 3–50% \
                 from noise alone."
            );
        }
    }
    out
}

/// The lab parameters whose values differ between the inputs (from `server.parameters`),
/// one row per parameter and a column per input; empty when the inputs carry none.
pub fn configuration_differences(inputs: &[(String, &RunResult)]) -> String {
    let params: Vec<Option<&std::collections::BTreeMap<String, String>>> = inputs
        .iter()
        .map(|(_, r)| {
            r.server
                .as_ref()
                .map(|s| &s.parameters)
                .filter(|p| !p.is_empty())
        })
        .collect();
    if params.iter().filter(|p| p.is_some()).count() < 2 {
        return String::new();
    }
    let mut names: Vec<&String> = params.iter().flatten().flat_map(|p| p.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows = vec![{
        let mut h = vec!["Configuration".to_string()];
        h.extend(inputs.iter().map(|(n, _)| n.clone()));
        h
    }];
    for name in names {
        let values: Vec<String> = params
            .iter()
            .map(|p| {
                p.and_then(|p| p.get(name))
                    .cloned()
                    .unwrap_or_else(|| "-".into())
            })
            .collect();
        if values.iter().any(|v| *v != values[0]) {
            let mut row = vec![format!("  {name}")];
            row.extend(values);
            rows.push(row);
        }
    }
    if rows.len() == 1 {
        return "\nConfiguration: the same lab parameters in every input.\n".into();
    }
    format!("\n{}", aligned(&rows))
}

pub use crate::compare_html::render_compare_html;

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::Percentiles;
    use webtune_testkit::results::synthetic_result;

    /// Deterministic pseudo-random normal samples (xorshift + Box–Muller).
    fn normal_samples(seed: u64, n: usize, mean: f64, sd: f64) -> Vec<f64> {
        let mut state = seed.max(1);
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let (u1, u2) = (uniform().max(1e-12), uniform());
                mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect()
    }

    fn repeats_from(rps: &[f64]) -> Vec<RepeatSummary> {
        rps.iter()
            .map(|&v| RepeatSummary {
                duration_s: 5.0,
                responses: (v * 5.0) as u64,
                errors: 0,
                requests_per_s: v,
                latency: Percentiles {
                    count: 10,
                    mean_us: 1e6 / v,
                    p50_us: (1e6 / v) as u64,
                    p99_us: (2e6 / v) as u64,
                    ..Percentiles::default()
                },
            })
            .collect()
    }

    #[test]
    fn same_distribution_gives_no_significant_difference() {
        let rps = &metrics()[0];
        let a = repeats_from(&normal_samples(7, 8, 1000.0, 80.0));
        let b = repeats_from(&normal_samples(99, 8, 1000.0, 80.0));
        let v = verdict(rps, &a, &b).unwrap();
        assert!(!v.significant, "{v:?}");
        assert_eq!(v.describe(), "no significant difference");
    }

    #[test]
    fn clear_difference_gets_a_clear_verdict() {
        let rps = &metrics()[0];
        let a = repeats_from(&normal_samples(7, 6, 1000.0, 50.0));
        let b = repeats_from(&normal_samples(99, 6, 1300.0, 50.0));
        let v = verdict(rps, &a, &b).unwrap();
        assert!(v.significant, "{v:?}");
        assert!(v.better);
        assert!(v.low > 5.0 && v.high < 80.0, "{v:?}");
        let p50 = metrics()
            .into_iter()
            .find(|m| m.name == "p50 (ms)")
            .unwrap();
        let lat = verdict(&p50, &a, &b).unwrap();
        assert!(
            lat.significant && lat.better,
            "lower latency is better: {lat:?}"
        );
    }

    #[test]
    fn table_shows_values_side_by_side_with_change() {
        let mut before = synthetic_result(1000, &[5_000]);
        let mut after = synthetic_result(1000, &[4_000]);
        before.requests_per_s = 3.63;
        after.requests_per_s = 4.47;
        let text = render_compare_text(&[
            ("before.json".into(), &before),
            ("after.json".into(), &after),
        ]);
        let rps = text.lines().find(|l| l.starts_with("requests/s")).unwrap();
        let cells: Vec<&str> = rps.split_whitespace().collect();
        assert_eq!(cells, ["requests/s", "3.63", "4.47", "+23.1%"]);
        let p50 = text.lines().find(|l| l.starts_with("p50 (ms)")).unwrap();
        assert!(p50.ends_with("-20.0%"), "{p50}");
        assert!(text.contains("no confidence interval"));
        // column order is input order
        let header = text
            .lines()
            .find(|l| l.contains("before.json") && l.contains("after.json") && l.contains("change"))
            .unwrap();
        assert!(header.find("before.json") < header.find("after.json"));
    }

    #[test]
    fn configuration_differences_are_listed() {
        let mut a = synthetic_result(10, &[1_000]);
        let mut b = synthetic_result(10, &[1_000]);
        let mut sa = webtune_model::ServerSamples::default();
        sa.parameters.insert("max_clients".into(), "12".into());
        sa.parameters.insert("keepalive".into(), "on".into());
        let mut sb = sa.clone();
        sb.parameters.insert("max_clients".into(), "4".into());
        a.server = Some(sa);
        b.server = Some(sb);
        let text = render_compare_text(&[("before".into(), &a), ("after".into(), &b)]);
        let row = text.lines().find(|l| l.contains("max_clients")).unwrap();
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["max_clients", "12", "4"]
        );
        assert!(!text.contains("keepalive"));
        let plain = synthetic_result(10, &[1_000]);
        assert!(
            configuration_differences(&[("x".into(), &plain), ("y".into(), &plain)]).is_empty()
        );
    }

    #[test]
    fn repeats_bring_intervals_and_verdicts() {
        let mut before = synthetic_result(100, &[5_000]);
        let mut after = synthetic_result(100, &[5_000]);
        before.repeats = repeats_from(&normal_samples(3, 5, 1000.0, 50.0));
        after.repeats = repeats_from(&normal_samples(4, 5, 1000.0, 50.0));
        let text = render_compare_text(&[("a".into(), &before), ("b".into(), &after)]);
        assert!(text.contains("95% confidence interval"), "{text}");
        let line = text
            .lines()
            .filter(|l| l.starts_with("requests/s"))
            .nth(1)
            .unwrap();
        assert!(line.ends_with("no significant difference"), "{line}");
        let html = render_compare_html(&[("a".into(), &before), ("b".into(), &after)]);
        assert!(html.contains("id=\"plot-compare-percentiles\""));
    }

    /// The percent cells of a row ("+1.2%", "-3.4%"), in order.
    fn percents(line: &str) -> Vec<f64> {
        line.split_whitespace()
            .filter_map(|c| c.strip_suffix('%'))
            .filter_map(|c| c.parse().ok())
            .collect()
    }

    #[test]
    fn a_file_compared_with_itself_changes_by_zero_with_an_interval_around_it() {
        let mut r = synthetic_result(100, &[5_000]);
        // three repeats whose p99 spread widely, as on a shared machine
        r.repeats = repeats_from(&[1000.0, 3000.0, 200.0]);
        for (rep, p99) in r.repeats.iter_mut().zip([4_000, 1_000, 25_000]) {
            rep.latency.p99_us = p99;
        }
        let text = render_compare_text(&[("a.json".into(), &r), ("a.json".into(), &r)]);
        let interval_table = &text[text.find("95% confidence interval").unwrap()..];
        let mut checked = 0;
        for line in interval_table.lines().skip(2) {
            if line.ends_with("a repeat measured 0: no ratio") {
                continue;
            }
            if line.starts_with("errors %") {
                assert!(line.contains("+0.00 pp"), "{line}");
                continue;
            }
            let p = percents(line);
            assert_eq!(p.len(), 3, "{line}");
            assert_eq!(p[0], 0.0, "{line}");
            assert!(p[1] > -100.0 && p[1] <= 0.0 && p[2] >= 0.0, "{line}");
            assert!(line.ends_with("no significant difference"), "{line}");
            checked += 1;
        }
        assert_eq!(checked, 4, "requests/s, mean, p50, p99: {text}");
        // the first table shows the same estimate: 0% everywhere
        let first = &text[..text.find("95% confidence interval").unwrap()];
        for line in first.lines().filter(|l| l.starts_with("p99 (ms)")) {
            assert!(line.ends_with("+0.0%"), "{line}");
        }
    }

    #[test]
    fn latency_interval_stays_above_minus_100_percent_and_tables_agree() {
        let mut before = synthetic_result(100, &[5_000]);
        let mut after = synthetic_result(100, &[5_000]);
        before.repeats = repeats_from(&[1000.0, 1100.0, 900.0]);
        after.repeats = repeats_from(&[1000.0, 1100.0, 900.0]);
        // after's p99 fell a lot, noisily: a difference of means would reach below −100%
        for (rep, p99) in after.repeats.iter_mut().zip([100, 3_000, 150]) {
            rep.latency.p99_us = p99;
        }
        let p99 = metrics()
            .into_iter()
            .find(|m| m.name == "p99 (ms)")
            .unwrap();
        let v = verdict(&p99, &before.repeats, &after.repeats).unwrap();
        assert!(v.low > -100.0 && v.change < 0.0, "{v:?}");
        let text = render_compare_text(&[("b".into(), &before), ("a".into(), &after)]);
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("p99 (ms)")).collect();
        assert_eq!(rows.len(), 2, "{text}");
        // the first table's change is the interval table's estimate
        let first = percents(rows[0]);
        let second = percents(rows[1]);
        assert_eq!(first.last(), second.first(), "{text}");
        assert!(second.iter().all(|&p| p > -100.0), "{text}");
        assert!(text.contains("ratio of their geometric"), "{text}");
    }
}
