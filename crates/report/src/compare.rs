//! Before → after: several results side by side (the first is the baseline), each figure
//! with its change in percent, as seed 000 compared "5505.80 -> 4478.60". When both sides
//! carry repeats (`bench --repeat N`), each change gets a 95% confidence interval over the
//! per-repeat figures and a verdict; "no significant difference" when the interval holds 0.
//! Latency and throughput are positive, so their interval is Welch's t on the log scale (a
//! ratio of geometric means, never below −100%); error % is a difference in points. The
//! first table shows the same point estimate as the interval table when both have repeats.

use crate::compare_figures::{aligned, change_pct, configuration_differences, metrics, verdict};
use std::fmt::Write as _;
use std::path::PathBuf;
use webtune_model::threshold::{judge_all, Measured};
use webtune_model::{RunResult, Threshold, ThresholdError, Verdict};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare_html::render_compare_html;
    use webtune_model::Percentiles;
    use webtune_model::RepeatSummary;
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

/// Short, unique column names for saved results: file names, or whole paths when two file
/// names collide.
pub fn labels(files: &[PathBuf]) -> Vec<String> {
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            f.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| f.display().to_string())
        })
        .collect();
    let unique = names
        .iter()
        .enumerate()
        .all(|(i, n)| !names[..i].contains(n));
    if unique {
        names
    } else {
        files.iter().map(|f| f.display().to_string()).collect()
    }
}

/// `compare --threshold`: every result after the first judged against the first, the
/// section that says so ("Thresholds (against A):", then each result's verdicts) and every
/// verdict. `inputs` holds at least one result.
pub fn judge_against_first(
    thresholds: &[Threshold],
    inputs: &[(String, &RunResult)],
) -> Result<(String, Vec<Verdict>), ThresholdError> {
    let mut verdicts = Vec::new();
    let Some((base_label, baseline)) = inputs.first() else {
        return Ok((String::new(), verdicts));
    };
    let mut text = format!("\nThresholds (against {base_label}):\n");
    for (label, result) in &inputs[1..] {
        let mut judged = judge_all(thresholds, *result, Some(*baseline as &dyn Measured))?;
        text.push_str(&format!("{label}\n"));
        text.push_str(&crate::verdicts::render_verdicts(&judged));
        verdicts.append(&mut judged);
    }
    Ok((text, verdicts))
}

#[cfg(test)]
mod label_tests {
    use super::*;

    #[test]
    fn labels_are_file_names_unless_they_collide() {
        let files = vec![
            PathBuf::from("/a/before.json"),
            PathBuf::from("/b/after.json"),
        ];
        assert_eq!(labels(&files), ["before.json", "after.json"]);
        let clash = vec![PathBuf::from("/a/r.json"), PathBuf::from("/b/r.json")];
        assert_eq!(labels(&clash), ["/a/r.json", "/b/r.json"]);
    }
}
