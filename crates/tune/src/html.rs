//! The tune's HTML report (`--html`): the objective of every trial with the best-so-far
//! curve, the parameters' effects, the proof's verdict per level, default vs winner at each
//! level, and the server-side evidence. Drawn with the report crate's page shell and SVG
//! charts, so it looks like every other webtune report.

use crate::report::TuneReport;
use webtune_report::html::{figure, page};
use webtune_report::svg::{escape, Chart, Series};

fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table><thead><tr>");
    for h in head {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            out.push_str(&format!("<td>{}</td>", escape(cell)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// The whole page.
pub fn render_html(report: &TuneReport) -> String {
    let higher = report.objective.starts_with("maximize");
    let mut body = format!(
        "<h1>webtune tune: {}</h1>\n<p>{} measured runs of a budget of {}, sampler {}, levels {}; SLOs: {}. \
         Run-to-run noise (A/A): {}.</p>\n",
        escape(&report.objective),
        report.trials.len(),
        report.budget,
        escape(&report.sampler),
        escape(&report.levels.join(", ")),
        escape(&if report.slos.is_empty() {
            "none".to_string()
        } else {
            report.slos.join(", ")
        }),
        report
            .noise
            .aa_difference
            .map_or("not measured".to_string(), |d| format!("{:.1}%", d * 100.0)),
    );
    let mut trials = Vec::new();
    let mut best_so_far = Vec::new();
    let mut best: Option<f64> = None;
    for t in &report.trials {
        if let Some(v) = t.objective {
            trials.push((t.number as f64, v));
            if t.feasible {
                best = Some(match best {
                    Some(b) if (higher && b >= v) || (!higher && b <= v) => b,
                    _ => v,
                });
            }
        }
        if let Some(b) = best {
            best_so_far.push((t.number as f64, b));
        }
    }
    let mut chart = Chart::new(
        "The objective of every trial",
        "trial",
        &format!("{} ({})", report.objective, report.unit),
    );
    chart.series.push(Series::new("each trial", trials, 0));
    chart
        .series
        .push(Series::new("best feasible so far", best_so_far, 1));
    body.push_str(&figure(
        "trials",
        &chart,
        "Each measured run's objective at its worst level, and the best configuration that met every SLO so far.",
    ));
    body.push_str("<h2>Trials</h2>\n");
    let rows: Vec<Vec<String>> = report
        .trials
        .iter()
        .map(|t| {
            vec![
                t.number.to_string(),
                if t.rules.is_empty() {
                    t.why.clone()
                } else {
                    format!("{} (advice: {})", t.why, t.rules.join(", "))
                },
                crate::space::render(&t.params),
                t.objective.map_or("—".into(), |v| format!("{v:.2}")),
                if t.feasible { "yes" } else { "no" }.into(),
                t.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    body.push_str(&table(
        &["#", "why", "parameters", "objective", "meets SLOs", "error"],
        &rows,
    ));
    if let Some(best) = &report.best {
        body.push_str(&format!(
            "<h2>Best</h2>\n<p>{} — {:.2} {} over {} measurement(s){}</p>\n",
            escape(&crate::space::render(&best.params)),
            best.objective,
            escape(&report.unit),
            best.measurements,
            best.search_gain.map_or(String::new(), |g| format!(
                "; {:+.1}% against the default in the search",
                g * 100.0
            ))
        ));
        if !report.snippet.is_empty() {
            body.push_str(&format!(
                "<p>{}</p>\n<pre>{}</pre>\n",
                escape(&report.snippet_heading()),
                escape(&report.snippet.join("\n"))
            ));
        }
    }
    if let Some(proof) = &report.proof {
        body.push_str(&format!(
            "<h2>Proof</h2>\n<p><strong>{}</strong></p>\n",
            escape(proof.verdict())
        ));
        if let Some(d) = &proof.disagreement {
            body.push_str(&format!("<p>{}</p>\n", escape(d)));
        }
        let rows: Vec<Vec<String>> = proof
            .levels
            .iter()
            .map(|l| {
                vec![
                    l.level.clone(),
                    format!("{:.3}", l.proof.ratio),
                    l.proof
                        .ratio_ci
                        .map_or("—".into(), |(lo, hi)| format!("{lo:.3} … {hi:.3}")),
                    format!("{}/{}", l.proof.winner_better, l.proof.pairs),
                    l.proof.verdict.clone(),
                ]
            })
            .collect();
        body.push_str(&table(
            &[
                "level",
                "winner / default",
                "95% CI",
                "pairs won",
                "verdict",
            ],
            &rows,
        ));
    }
    if let Some(advice) = &report.advice {
        body.push_str(
            "<h2>The advice</h2>\n<p>The configuration <code>webtune advise</code> gives for the \
             stack's config, measured as a seed: were its rules of thumb right on this \
             machine?</p>\n",
        );
        let rows: Vec<Vec<String>> = advice
            .seeds
            .iter()
            .map(|s| {
                vec![
                    s.trials
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    s.rules.join(", "),
                    crate::space::render(&s.params),
                    s.vs_default
                        .map_or("—".into(), |g| format!("{:+.1}%", g * 100.0)),
                    s.vs_winner
                        .map_or("—".into(), |g| format!("{:+.1}%", g * 100.0)),
                    s.verdict.clone(),
                ]
            })
            .collect();
        body.push_str(&table(
            &[
                "trials",
                "rules",
                "parameters",
                "vs default",
                "vs winner",
                "verdict",
            ],
            &rows,
        ));
        if !advice.notes.is_empty() {
            body.push_str("<ul>");
            for n in &advice.notes {
                body.push_str(&format!("<li>{}</li>", escape(n)));
            }
            body.push_str("</ul>\n");
        }
    }
    if !report.evidence.is_empty() {
        body.push_str("<h2>What the servers showed</h2>\n<ul>");
        for line in &report.evidence {
            body.push_str(&format!("<li>{}</li>", escape(line)));
        }
        body.push_str("</ul>\n");
    }
    if !report.effects.is_empty() {
        body.push_str("<h2>Parameter effects</h2>\n");
        let rows: Vec<Vec<String>> = report
            .effects
            .iter()
            .map(|e| {
                vec![
                    e.param.clone(),
                    format!("{:.1}%", e.spread * 100.0),
                    format!(
                        "{:+.1}% .. {:+.1}%",
                        e.spread_low * 100.0,
                        e.spread_high * 100.0
                    ),
                    match e.unclear_because() {
                        None => format!("{} ({} runs)", e.best, e.measured_times),
                        Some(why) => format!("unclear: {why}"),
                    },
                ]
            })
            .collect();
        body.push_str(&table(
            &[
                "parameter",
                "spread of the objective",
                "90% interval",
                "best values",
            ],
            &rows,
        ));
    }
    page(&format!("webtune tune: {}", report.objective), &body)
}
