//! The tune's HTML report (`--html`): the objective of every trial with the best-so-far
//! curve, one slice plot per parameter (the objective against its value, as Optuna's slice
//! plot: trials that met the SLOs filled, those that missed hollow, the winner ringed), the
//! parameters' effects with their intervals (a forest plot), the proof's pairs (default A
//! against winner B, each pair joined) and verdict per level, the server-side evidence, and,
//! for a search measured against its incumbent (`--search-protocol interleaved`), each
//! candidate's ratio to the incumbent with its interval (a forest plot).
//! Drawn with this crate's page shell and SVG charts, so it looks like every other webtune
//! report; the search (`webtune-search`) hands over the `TuneReport` value and draws nothing.

use crate::dots::{
    render_dots, render_forest, Dot, DotChart, DotStyle, Forest, ForestRow, RowVerdict, Segment,
};
use crate::html::{figure, figure_svg, page};
use crate::svg::{escape, Chart, Series};
use crate::verdict_box::VerdictHtml;
use webtune_search::interleave::Verdict;
use webtune_search::report::TuneReport;
use webtune_search::space::Value;
use webtune_search::Proof;

/// One slice plot per parameter: every trial with an objective, at its value of the
/// parameter. Integer values on a numeric axis (log when they span ≥ 16×), words (or a mix,
/// such as `auto` and numbers) as categories.
fn slice_plots(report: &TuneReport) -> String {
    let mut names: Vec<&String> = report.trials.iter().flat_map(|t| t.params.keys()).collect();
    names.sort();
    names.dedup();
    let winner = report.best.as_ref().map(|b| &b.params);
    let y_label = format!("objective ({})", report.unit);
    let mut out = String::from("<div id=\"slices\" class=\"small-multiples\">\n");
    for (i, name) in names.iter().enumerate() {
        let values: Vec<&Value> = report
            .trials
            .iter()
            .filter_map(|t| t.params.get(*name))
            .collect();
        let numeric = values.iter().all(|v| matches!(v, Value::Int(_)));
        let mut categories: Vec<String> = Vec::new();
        if !numeric {
            categories = values.iter().map(|v| v.to_string()).collect();
            // numbers in numeric order, words after them
            categories.sort_by(|a, b| match (a.parse::<i64>(), b.parse::<i64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                (Ok(_), Err(_)) => std::cmp::Ordering::Greater,
                (Err(_), Ok(_)) => std::cmp::Ordering::Less,
                _ => a.cmp(b),
            });
            categories.dedup();
        }
        let mut chart = DotChart::new(name, name, &y_label);
        chart.legend = vec![
            (DotStyle::Filled, "met the SLOs".into()),
            (DotStyle::Hollow, "missed one".into()),
            (DotStyle::Highlight, "winner".into()),
        ];
        for t in &report.trials {
            let (Some(v), Some(y)) = (t.params.get(*name), t.objective) else {
                continue;
            };
            let x = match v {
                Value::Int(n) if numeric => *n as f64,
                other => {
                    let text = other.to_string();
                    categories.iter().position(|c| *c == text).unwrap_or(0) as f64
                }
            };
            let style = if t.feasible && winner == Some(&t.params) {
                DotStyle::Highlight
            } else if t.feasible {
                DotStyle::Filled
            } else {
                DotStyle::Hollow
            };
            chart.dots.push(Dot {
                x,
                y,
                style,
                title: format!("trial {}: {name}={v}, {y:.2}", t.number),
            });
        }
        if numeric {
            let ints: Vec<f64> = chart.dots.iter().map(|d| d.x).collect();
            let lo = ints.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ints.iter().copied().fold(0.0f64, f64::max);
            chart.x_log = lo > 0.0 && hi / lo >= 16.0;
        } else {
            chart.categories = Some(categories);
        }
        out.push_str(&figure_svg(
            &format!("plot-slice-{i}"),
            &render_dots(&format!("plot-slice-{i}-svg"), &chart),
            &format!("The objective of every trial against its {name}."),
        ));
    }
    out.push_str("</div>\n");
    out
}

/// The effects as a forest plot: each parameter's spread with its 90% interval, clear ones
/// green, unclear ones grey.
fn effects_forest(report: &TuneReport) -> Forest {
    let rows = report
        .effects
        .iter()
        .map(|e| ForestRow {
            label: e.param.clone(),
            estimate: e.spread * 100.0,
            interval: Some((e.spread_low * 100.0, e.spread_high * 100.0)),
            verdict: if e.unclear_because().is_none() {
                RowVerdict::Better
            } else {
                RowVerdict::Unclear
            },
            note: match e.unclear_because() {
                None => format!("{:.1}%, best {}", e.spread * 100.0, e.best),
                Some(_) => format!("{:.1}%, unclear", e.spread * 100.0),
            },
        })
        .collect();
    Forest {
        title: "Parameter effects".into(),
        x_label: "spread of the objective between the parameter's best and worst values (%)".into(),
        rows,
    }
}

/// `--search-protocol interleaved`: each paired trial's ratio B/A to the incumbent on the
/// deciding metric, as a change in percent with its interval; green where the candidate
/// became the incumbent, red where the incumbent was better by the interval, grey otherwise.
/// An interval too wide to say anything (`PairedTrial::shown_interval`) is left out and the
/// row shows its estimate alone.
fn incumbent_forest(report: &TuneReport) -> Forest {
    let metric = report
        .trials
        .iter()
        .find_map(|t| t.paired.as_ref().map(|p| p.metric.clone()))
        .unwrap_or_default();
    let rows = report
        .trials
        .iter()
        .filter_map(|t| t.paired.as_ref().map(|p| (t.number, p)))
        .map(|(number, p)| {
            let pct = |r: f64| (r - 1.0) * 100.0;
            let interval = p.shown_interval().map(|(lo, hi)| (pct(lo), pct(hi)));
            ForestRow {
                // A trial the errors decided (`judge::errors_guard`) has their ratio.
                label: if p.metric == metric {
                    format!("trial {number}")
                } else {
                    format!("trial {number} ({})", p.metric)
                },
                estimate: pct(p.ratio),
                verdict: if p.became_incumbent {
                    RowVerdict::Better
                } else if interval.is_none() {
                    RowVerdict::Estimate
                } else if p.verdict == Verdict::ABetter {
                    RowVerdict::Worse
                } else {
                    RowVerdict::Unclear
                },
                interval,
                // The notes' column is narrow: the numbers only; the words are the
                // trials table's.
                note: match p.shown_interval() {
                    Some((lo, hi)) => format!("×{:.3} (×{lo:.3}–×{hi:.3})", p.ratio),
                    None => format!("×{:.3}, no interval", p.ratio),
                },
            }
        })
        .collect();
    Forest {
        title: "Each candidate against the incumbent".into(),
        x_label: format!("{metric}: candidate / incumbent − 1 (%)"),
        rows,
    }
}

/// The proof's pairs at one level: A (the default) and B (the winner) of each pair, joined.
fn pairs_plot(level: &str, proof: &Proof, unit: &str) -> DotChart {
    let mut chart = DotChart::new(
        &format!("Proof {}: {} pairs", at_level(level), proof.runs.len()),
        "arm",
        unit,
    );
    chart.categories = Some(vec!["A: default".into(), "B: winner".into()]);
    chart.legend = vec![
        (DotStyle::Hollow, "default (A)".into()),
        (DotStyle::Filled, "winner (B)".into()),
    ];
    for (i, &(a, b)) in proof.runs.iter().enumerate() {
        chart.segments.push(Segment {
            from: (0.0, a),
            to: (1.0, b),
        });
        chart.dots.push(Dot {
            x: 0.0,
            y: a,
            style: DotStyle::Hollow,
            title: format!("pair {}: A {a:.2}", i + 1),
        });
        chart.dots.push(Dot {
            x: 1.0,
            y: b,
            style: DotStyle::Filled,
            title: format!("pair {}: B {b:.2}", i + 1),
        });
    }
    chart
}

/// "at 64 connections", or for the load as the bench flags gave it (no `--levels`) "at the
/// load as given" (issue 39: the page read "Proof at as given").
fn at_level(level: &str) -> String {
    match level {
        "as given" => "at the load as given".to_string(),
        "the objective" => "on the objective".to_string(),
        level => format!("at {level}"),
    }
}

fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    table_with_prose(head, rows, &[])
}

/// A table whose columns `prose` hold sentences: they keep a readable width instead of
/// wrapping one word a line beside a wide column (issue 39: the advice's verdicts).
fn table_with_prose(head: &[&str], rows: &[Vec<String>], prose: &[usize]) -> String {
    let mut out = String::from("<table><thead><tr>");
    for h in head {
        out.push_str(&format!("<th>{}</th>", escape(h)));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if prose.contains(&i) {
                " class=\"prose\""
            } else {
                ""
            };
            out.push_str(&format!("<td{class}>{}</td>", escape(cell)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// The whole page.
pub fn render_html(report: &TuneReport) -> String {
    let higher = report.objective.starts_with("maximize");
    // The answer first (issue 39: "keep the default" came after the curve and the table).
    let mut body = format!(
        "<h1>webtune tune: {}</h1>\n{}<p>{} measured runs within {}, sampler {}, levels {}; \
         SLOs: {}. Run-to-run noise ±{:.1}% (the spread the racing allowed for); A/A \
         difference {} (the default measured twice).</p>\n",
        escape(&report.objective),
        report.verdict().html(),
        report.trials.len(),
        escape(&report.budget_words()),
        escape(&report.sampler),
        escape(&report.levels.join(", ")),
        escape(&if report.slos.is_empty() {
            "none".to_string()
        } else {
            report.slos.join(", ")
        }),
        100.0 * report.noise.relative_sd,
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
    if report.trials.iter().any(|t| t.objective.is_some()) {
        body.push_str("<h2>The objective against each parameter</h2>\n");
        body.push_str(&slice_plots(report));
    }
    body.push_str("<h2>Trials</h2>\n");
    let paired = report.trials.iter().any(|t| t.paired.is_some());
    let rows: Vec<Vec<String>> = report
        .trials
        .iter()
        .map(|t| {
            let mut row = vec![
                t.number.to_string(),
                if t.rules.is_empty() {
                    t.why.clone()
                } else {
                    format!("{} (advice: {})", t.why, t.rules.join(", "))
                },
                webtune_search::space::render(&t.params),
                t.objective.map_or("—".into(), |v| format!("{v:.2}")),
                if t.feasible { "yes" } else { "no" }.into(),
                t.error.clone().unwrap_or_default(),
            ];
            if paired {
                row.push(
                    t.paired
                        .as_ref()
                        .map_or(String::new(), |p| p.ratio_words("")),
                );
            }
            row
        })
        .collect();
    let mut head = vec!["#", "why", "parameters", "objective", "meets SLOs", "error"];
    if paired {
        head.push("vs incumbent");
    }
    body.push_str(&table(&head, &rows));
    if paired {
        body.push_str(
            "<h2>The search against the incumbent</h2>\n<p>Each candidate ran at once with \
             the incumbent (the best configuration so far, the default at first), the load \
             alternating between them in blocks; its objective above is the incumbent's \
             times the pairs' ratio. A candidate becomes the incumbent only when the \
             interval lies wholly on its better side and it meets every SLO.</p>\n",
        );
        body.push_str(&figure_svg(
            "plot-incumbent",
            &render_forest("plot-incumbent-svg", &incumbent_forest(report)),
            "Each paired trial's ratio to the incumbent on the deciding metric, with its \
             always-valid 95% interval: green where the candidate became the incumbent, red \
             where the incumbent was better, grey where the pairs could not tell; a dot \
             alone where the interval was too wide to draw.",
        ));
    }
    if let Some(best) = &report.best {
        body.push_str(&format!(
            "<h2>Best</h2>\n<p>{} — {:.2} {} over {} measurement(s){}</p>\n",
            escape(&webtune_search::space::render(&best.params)),
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
        let plotted: Vec<(&str, &Proof)> = if proof.levels.is_empty() {
            vec![("the objective", &proof.overall)]
        } else {
            proof
                .levels
                .iter()
                .map(|l| (l.level.as_str(), &l.proof))
                .collect()
        };
        body.push_str("<div id=\"proof-pairs\" class=\"small-multiples\">\n");
        for (i, (level, p)) in plotted.iter().enumerate() {
            if p.runs.is_empty() {
                continue;
            }
            body.push_str(&figure_svg(
                &format!("plot-proof-{i}"),
                &render_dots(
                    &format!("plot-proof-{i}-svg"),
                    &pairs_plot(level, p, &format!("objective ({})", report.unit)),
                ),
                &format!(
                    "Each pair's default (A) and winner (B) {}, joined: {}.",
                    at_level(level),
                    p.verdict
                ),
            ));
        }
        body.push_str("</div>\n");
        body.push_str(&table_with_prose(
            &[
                "level",
                "winner / default",
                "95% CI",
                "pairs won",
                "verdict",
            ],
            &rows,
            &[4],
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
                    webtune_search::space::render(&s.params),
                    s.vs_default
                        .map_or("—".into(), |g| format!("{:+.1}%", g * 100.0)),
                    s.vs_winner
                        .map_or("—".into(), |g| format!("{:+.1}%", g * 100.0)),
                    s.verdict.clone(),
                ]
            })
            .collect();
        body.push_str(&table_with_prose(
            &[
                "trials",
                "rules",
                "parameters",
                "vs default",
                "vs winner",
                "verdict",
            ],
            &rows,
            &[5],
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
        body.push_str(&figure_svg(
            "plot-effects",
            &render_forest("plot-effects-svg", &effects_forest(report)),
            "How much the objective spreads between each parameter's best and worst values, \
             with the model's 90% interval: green where the effect is clear (the interval \
             excludes zero, enough runs on both sides), grey where it is unclear.",
        ));
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

#[cfg(test)]
#[path = "tune_html_tests.rs"]
mod tests;
