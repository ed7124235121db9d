//! A capacity search (`webtune.capacity/1`) for people: the table of every step (rate,
//! achieved rate, latency, errors, the generator's validity verdict — the run's own, as its
//! section of the page prints it — and the SLO verdict) with
//! the capacity marked on one row, a step that found the target gone, any drift of the
//! server during the search, the conclusion, and the HTML page whose plot puts each latency SLO's
//! figure against the rate with the SLO line and the capacity (the knee) marked.

use crate::html::{figure, page, run_section};
use crate::svg::{escape, Chart, Marker, Series};
use crate::verdict_box::{Tone, VerdictBox, VerdictHtml};
use std::fmt::Write as _;
use webtune_model::capacity::{CapacityLimit, CapacityResult, CapacityStep, StepOutcome};

fn rate(r: f64) -> String {
    if r >= 100.0 || r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.2}")
    }
}

fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

/// The one row marked `<- capacity`: the last step that held at the capacity rate (its
/// repeat at the boundary, which confirmed it).
fn capacity_row(r: &CapacityResult) -> Option<usize> {
    let c = r.capacity_rps?;
    r.steps
        .iter()
        .rposition(|s| s.outcome == StepOutcome::Held && s.rate_rps == c)
}

fn verdict(s: &CapacityStep) -> String {
    match s.outcome {
        StepOutcome::Held => "held".into(),
        StepOutcome::Broke => format!("BROKE {}", s.broken.join(", ")),
        StepOutcome::ClientLimited if s.result.validity.client_limited => {
            "not counted: the generator was the limit".into()
        }
        StepOutcome::ClientLimited => "not counted: every -c connection was busy".into(),
        StepOutcome::Interrupted => "not counted: interrupted".into(),
        StepOutcome::TargetDown => "TARGET DOWN: the search stopped here".into(),
    }
}

/// The step's "generator" cell: the engine's own verdict on the run (the same one its
/// section of the page prints), or the `-c` cap that kept the step from counting.
fn generator_cell(s: &CapacityStep) -> &'static str {
    if s.result.validity.client_limited {
        "LIMITED"
    } else if s.outcome == StepOutcome::ClientLimited {
        "-c cap"
    } else {
        "ok"
    }
}

/// The search as a text table, the capacity marked, then the conclusion and the reasons of
/// any client-limited step.
/// The search's verdict (`verdict_box`): the capacity, the bracket it lies in, what to do.
pub fn capacity_verdict(r: &CapacityResult) -> VerdictBox {
    let rate = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.1} req/s"));
    let cap = rate(r.capacity_rps);
    let broke = match (r.broke_at_rps, r.broke_first.is_empty()) {
        (Some(b), false) => format!("{} broke at {b:.1} req/s", r.broke_first.join(", ")),
        (Some(b), true) => format!("an SLO broke at {b:.1} req/s"),
        (None, _) => "no SLO broke at any rate tried".to_string(),
    };
    let bracket = Some(format!(
        "{broke}; the search stops within {:.0}%",
        100.0 * r.search.precision
    ));
    let (answer, interval, action, tone) = match r.limit {
        CapacityLimit::Slo => (
            format!("Capacity: {cap} with every SLO held"),
            bracket,
            format!("plan for at most {cap} (with headroom); tune the stack to raise it"),
            Tone::Good,
        ),
        CapacityLimit::Generator => (
            format!("At least {cap}: the generator, not the server, was the limit above it"),
            bracket,
            "give the generator more CPU (--client-cpus) or shard it (bench --shard) to find \
             the server's limit"
                .to_string(),
            Tone::Neutral,
        ),
        CapacityLimit::MaxRate => (
            format!("At least {cap}: every SLO held up to --max-rate"),
            bracket,
            "raise --max-rate to find the limit".to_string(),
            Tone::Neutral,
        ),
        CapacityLimit::Unmeetable => (
            "No capacity: an SLO broke even at the lowest rate tried".to_string(),
            bracket,
            "relax the SLOs, or find what makes the server miss them at a low rate".to_string(),
            Tone::Bad,
        ),
        CapacityLimit::StepBudget => (
            format!("Capacity between {cap} and {}", rate(r.broke_at_rps)),
            bracket,
            "give more --max-steps (or a coarser --precision) to narrow it".to_string(),
            Tone::Neutral,
        ),
        CapacityLimit::Interrupted => (
            format!("Interrupted: at least {cap} held"),
            bracket,
            "run the search again to its end".to_string(),
            Tone::Neutral,
        ),
        CapacityLimit::TargetDown => (
            format!(
                "The target went down: {}",
                r.target_down.as_deref().unwrap_or("the search stopped")
            ),
            None,
            "find out why the server died (its log, `lab run --keep`) before measuring again"
                .to_string(),
            Tone::Bad,
        ),
    };
    VerdictBox {
        answer,
        interval,
        action,
        tone,
    }
}

pub fn render_capacity_text(r: &CapacityResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Capacity search: {}", r.target);
    if !r.settings.is_empty() {
        let _ = writeln!(out, "Settings: {}", r.settings);
    }
    let _ = writeln!(
        out,
        "SLOs: {}; steps of {}s, open loop, latency from each request's intended start",
        r.slos.join(", "),
        r.step_s
    );
    if r.interrupted {
        let _ = writeln!(out, "INTERRUPTED — partial search");
    }
    // The answer before the steps behind it (issue 39).
    out.push_str(&capacity_verdict(r).text());
    out.push('\n');
    let table = step_rows(r);
    let header_len = table[0].len();
    let last = header_len - 1;
    let widths: Vec<usize> = (0..last)
        .map(|c| {
            table
                .iter()
                .map(|row| row[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == last {
                let _ = write!(line, "  {cell}");
            } else if c == 6 {
                let _ = write!(line, "  {cell:<w$}", w = widths[c]);
            } else {
                let sep = if c == 0 { "" } else { "  " };
                let _ = write!(line, "{sep}{cell:>w$}", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out.push('\n');
    for (i, s) in r.steps.iter().enumerate() {
        for reason in &s.reasons {
            let _ = writeln!(out, "step {}: {reason}", i + 1);
        }
    }
    for line in &r.drift {
        let _ = writeln!(out, "Drift: {line}");
    }
    let _ = writeln!(out, "Result: {}", r.summary);
    out
}

/// The step table: a header row, then one row per step, the capacity's marked.
fn step_rows(r: &CapacityResult) -> Vec<Vec<String>> {
    let header = [
        "step",
        "rate/s",
        "achieved/s",
        "p50 (ms)",
        "p99 (ms)",
        "errors %",
        "generator",
        "verdict",
    ];
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    let marked = capacity_row(r);
    for (i, s) in r.steps.iter().enumerate() {
        let res = &s.result;
        let achieved = res
            .schedule
            .as_ref()
            .map_or(res.requests_per_s, |sch| sch.achieved_rate);
        let mut v = verdict(s);
        if Some(i) == marked {
            v.push_str("  <- capacity");
        }
        table.push(vec![
            (i + 1).to_string(),
            rate(s.rate_rps),
            format!("{achieved:.1}"),
            ms(res.latency.total.p50_us),
            ms(res.latency.total.p99_us),
            format!("{:.2}", res.error_ratio() * 100.0),
            generator_cell(s).into(),
            v,
        ]);
    }
    table
}

/// The search for the page: settings and SLOs as paragraphs, the steps as an HTML table
/// (the capacity's row marked), reasons and drift as lists, and the Result as a paragraph
/// that wraps: a `<pre>` cut the long Result line off in a scrolling box.
fn capacity_html_table(r: &CapacityResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<p id=\"capacity-target\">Capacity search: <code>{}</code>{}</p>",
        escape(&r.target),
        if r.settings.is_empty() {
            String::new()
        } else {
            format!("; settings: {}", escape(&r.settings))
        }
    );
    let _ = writeln!(
        out,
        "<p>SLOs: {}; steps of {} s, open loop, latency from each request's intended start.</p>",
        escape(&r.slos.join(", ")),
        r.step_s
    );
    if r.interrupted {
        out.push_str("<p class=\"bad\">INTERRUPTED — partial search</p>\n");
    }
    let rows = step_rows(r);
    let marked = capacity_row(r);
    out.push_str("<table id=\"capacity-table\">\n<tr>");
    for h in &rows[0] {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>\n");
    for (i, row) in rows[1..].iter().enumerate() {
        let class = if Some(i) == marked {
            " class=\"capacity\""
        } else {
            ""
        };
        let _ = write!(out, "<tr{class}>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    let reasons: Vec<String> = r
        .steps
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.reasons
                .iter()
                .map(move |why| format!("step {}: {why}", i + 1))
        })
        .chain(r.drift.iter().map(|d| format!("Drift: {d}")))
        .collect();
    if !reasons.is_empty() {
        out.push_str("<ul id=\"capacity-reasons\">\n");
        for line in reasons {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }
    let _ = writeln!(
        out,
        "<p id=\"capacity-result\">Result: {}</p>",
        escape(&r.summary)
    );
    out
}

/// One latency SLO's points: (rate, observed ms) of every step that counts, by rate.
fn slo_points(r: &CapacityResult, slo: &str) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = r
        .steps
        .iter()
        .filter(|s| matches!(s.outcome, StepOutcome::Held | StepOutcome::Broke))
        .filter_map(|s| {
            s.verdicts
                .iter()
                .find(|v| v.threshold == slo && v.unit == "us")
                .map(|v| (s.rate_rps, v.observed / 1000.0))
        })
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// The capacity search's HTML page: the table, latency against rate with each latency SLO's
/// line and the capacity marked, then every step's own report.
pub fn render_capacity_html(r: &CapacityResult) -> String {
    let mut body = format!("<h1>webtune capacity</h1>\n{}", capacity_verdict(r).html());
    let _ = writeln!(
        body,
        "<p id=\"capacity-summary\"><strong>{}</strong></p>",
        escape(&r.summary)
    );
    body.push_str(&capacity_html_table(r));
    let mut chart = Chart::new("Latency against rate", "rate (req/s)", "latency (ms)");
    let mut index = 0;
    let latency_slos: Vec<(String, f64)> = r
        .steps
        .iter()
        .flat_map(|s| s.verdicts.iter())
        .filter(|v| v.unit == "us")
        .map(|v| (v.threshold.clone(), v.limit / 1000.0))
        .fold(Vec::new(), |mut acc, (t, l)| {
            if !acc.iter().any(|(seen, _)| *seen == t) {
                acc.push((t, l));
            }
            acc
        });
    let rates: Vec<f64> = r.steps.iter().map(|s| s.rate_rps).collect();
    let (lo, hi) = rates.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
        (lo.min(x), hi.max(x))
    });
    for (slo, limit) in &latency_slos {
        chart.series.push(Series::new(
            format!("{} (measured)", slo),
            slo_points(r, slo),
            index,
        ));
        if lo.is_finite() {
            chart.series.push(Series::new(
                format!("SLO line {slo}"),
                vec![(lo, *limit), (hi, *limit)],
                index + 1,
            ));
        }
        index += 2;
    }
    if let Some(c) = r.capacity_rps {
        chart.markers.push(Marker {
            x: c,
            class: "knee".into(),
            label: format!("capacity {}/s", rate(c)),
        });
    }
    if let Some(g) = r.generator_limited_at_rps {
        chart.markers.push(Marker {
            x: g,
            class: "knee".into(),
            label: format!("generator limit {}/s", rate(g)),
        });
    }
    body.push_str(&figure(
        "plot-capacity-latency",
        &chart,
        "Each latency SLO's figure at every step that counts (client-limited and interrupted \
         steps are left out), its limit as a flat line, and the capacity marked: the highest \
         rate at which every SLO held.",
    ));
    for (i, s) in r.steps.iter().enumerate() {
        let _ = writeln!(
            body,
            "<h2>Step {} at {} req/s: {}</h2>\n<section id=\"step-{i}\">",
            i + 1,
            rate(s.rate_rps),
            escape(&verdict(s))
        );
        body.push_str(&run_section(&s.result, &format!("step-{i}-")));
        body.push_str("</section>\n");
    }
    page("webtune capacity", &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::capacity::{CapacityLimit, SearchSettings, CAPACITY_SCHEMA};
    use webtune_model::Verdict;
    use webtune_testkit::results::synthetic_result;

    fn step(rate: f64, outcome: StepOutcome, p99_us: f64) -> CapacityStep {
        let passed = outcome != StepOutcome::Broke;
        CapacityStep {
            rate_rps: rate,
            outcome,
            verdicts: vec![Verdict {
                threshold: "p99<=100ms".into(),
                metric: "p99".into(),
                unit: "us".into(),
                observed: p99_us,
                limit: 100_000.0,
                baseline: None,
                passed,
                aborted: false,
            }],
            broken: if passed {
                vec![]
            } else {
                vec!["p99<=100ms".into()]
            },
            reasons: if outcome == StepOutcome::ClientLimited {
                vec!["the generator's CPU was 97% busy".into()]
            } else {
                vec![]
            },
            result: {
                let mut r = synthetic_result(100, &[1000, 2000, 3000]);
                if outcome == StepOutcome::ClientLimited {
                    r.validity.client_limited = true;
                    r.validity.reasons = vec!["the generator's CPU was 97% busy".into()];
                }
                r
            },
        }
    }

    fn search() -> CapacityResult {
        CapacityResult {
            schema: CAPACITY_SCHEMA.into(),
            tool: "webtune test".into(),
            target: "http://127.0.0.1:1/".into(),
            settings: String::new(),
            slos: vec!["p99<=100ms".into()],
            search: SearchSettings::default(),
            step_s: 2.0,
            capacity_rps: Some(200.0),
            limit: CapacityLimit::Slo,
            broke_at_rps: Some(210.0),
            broke_first: vec!["p99<=100ms".into()],
            generator_limited_at_rps: Some(400.0),
            interrupted: false,
            target_down: None,
            drift: Vec::new(),
            summary: "capacity 200 req/s".into(),
            steps: vec![
                step(100.0, StepOutcome::Held, 20_000.0),
                step(200.0, StepOutcome::Held, 60_000.0),
                step(400.0, StepOutcome::ClientLimited, 900_000.0),
                step(210.0, StepOutcome::Broke, 150_000.0),
                step(200.0, StepOutcome::Held, 61_000.0),
            ],
        }
    }

    #[test]
    fn the_table_marks_the_capacity_and_the_generators_steps() {
        let text = render_capacity_text(&search());
        // One row: the repeat that confirmed it (step 5), not step 2 as well.
        assert_eq!(text.matches("<- capacity").count(), 1, "{text}");
        let marked = text.lines().find(|l| l.contains("<- capacity")).unwrap();
        assert!(marked.trim_start().starts_with("5 "), "{text}");
        assert!(text.contains("LIMITED"), "{text}");
        assert!(text.contains("BROKE p99<=100ms"), "{text}");
        assert!(text.contains("step 3: the generator's CPU"), "{text}");
        assert!(text.contains("Result: capacity 200 req/s"), "{text}");
        // The verdict before the steps (issue 39).
        let verdict = text
            .find(
                "Verdict: Capacity: 200.0 req/s with every SLO held\n  p99<=100ms broke at 210.0 req/s",
            )
            .unwrap_or_else(|| panic!("{text}"));
        assert!(verdict < text.find("achieved/s").unwrap(), "{text}");
        let html = render_capacity_html(&search());
        assert!(html.find("<div id=\"verdict\"").unwrap() < html.find("capacity-summary").unwrap());
    }

    #[test]
    fn a_target_down_step_and_the_drift_are_in_the_text() {
        let mut r = search();
        r.steps.truncate(3);
        let mut down = step(400.0, StepOutcome::TargetDown, 0.0);
        down.reasons = vec!["nginx (pid 812), a main process of the stack, died".into()];
        r.steps[2] = down;
        r.capacity_rps = None;
        r.limit = CapacityLimit::TargetDown;
        r.drift = vec!["the server got slower during the search".into()];
        r.summary = "target down at step 3 (400 req/s): nginx died".into();
        let text = render_capacity_text(&r);
        assert!(text.contains("TARGET DOWN"), "{text}");
        assert!(text.contains("step 3: nginx (pid 812)"), "{text}");
        assert!(text.contains("Drift: the server got slower"), "{text}");
        assert!(text.contains("Result: target down at step 3"), "{text}");
        assert!(!text.contains("<- capacity"), "{text}");
    }

    #[test]
    fn the_page_plots_the_slo_line_and_the_knee() {
        let html = render_capacity_html(&search());
        assert!(html.contains("plot-capacity-latency"));
        assert!(html.contains("SLO line p99&lt;=100ms"));
        assert!(html.contains("capacity 200/s"));
        assert!(html.contains("step-4-"));
        // the table is HTML, the capacity's row marked, and the Result a paragraph
        assert!(html.contains("<table id=\"capacity-table\">"), "{html}");
        assert_eq!(html.matches("<tr class=\"capacity\">").count(), 1);
        assert!(html.contains("<p id=\"capacity-result\">Result: capacity 200 req/s</p>"));
        assert!(!html.contains("<pre id=\"capacity-table\">"));
        // Client-limited steps are not on the curve.
        let points = slo_points(&search(), "p99<=100ms");
        assert!(points.iter().all(|p| p.0 != 400.0));
        assert_eq!(points.first().unwrap().0, 100.0);
    }

    #[test]
    fn the_table_and_each_steps_section_give_one_verdict_on_the_generator() {
        let mut r = search();
        // A step the -c cap kept from counting: the generator itself kept up.
        let mut capped = step(300.0, StepOutcome::ClientLimited, 400_000.0);
        capped.result.validity = webtune_model::Validity::default();
        capped.reasons = vec!["all 10 connections (-c) were busy".into()];
        r.steps.push(capped);
        let html = render_capacity_html(&r);
        let rows: Vec<&str> = html
            .split("<tr")
            .filter(|row| row.contains("<td>"))
            .collect();
        for (i, step) in r.steps.iter().enumerate() {
            let section = html
                .split(&format!("<section id=\"step-{i}\">"))
                .nth(1)
                .and_then(|rest| rest.split("</section>").next())
                .unwrap_or_else(|| panic!("no section for step {i}"));
            let warned = section.contains("the generator was the limit");
            let limited = rows[i].contains("<td>LIMITED</td>");
            assert_eq!(warned, limited, "step {i}: {}\n{section}", rows[i]);
            assert_eq!(warned, step.result.validity.client_limited, "step {i}");
            // "ok" in the table only where the section has no warning either.
            if rows[i].contains("<td>ok</td>") {
                assert!(!warned, "step {i}");
            }
        }
        let last = rows.last().unwrap();
        assert!(last.contains("<td>-c cap</td>"), "{last}");
        assert!(last.contains("every -c connection was busy"), "{last}");
    }
}
