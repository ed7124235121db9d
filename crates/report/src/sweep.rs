//! Sweep reports: one row per load level (throughput, p50, p99, error %), the knee and every
//! level left out of it marked (the rule and the marks are `knee`'s), the CSV, and the HTML
//! page with the same figures plotted against the level.

use crate::html::{figure, level_scale, page, percentile_chart, run_section};
use crate::knee::{find_knee, level_label, level_rows, no_knee_sentence, note, LevelRow};
use crate::svg::{escape, Chart, Marker, Series};
pub use crate::sweep_verdict::sweep_verdict;
use crate::units::ms;
use crate::verdict_box::VerdictHtml;
use std::fmt::Write as _;
use webtune_model::sweep::{SweepResult, SweepVariable};

/// One line per level that got no successful response (every request failed, or every
/// response had an unexpected status), saying what it got instead; interrupted levels aside.
/// Such a level's figures describe errors, not the load: the sweep commands exit 1.
pub fn unanswered(sweep: &SweepResult) -> Vec<String> {
    sweep
        .levels
        .iter()
        .filter(|l| l.result.ok == 0 && !l.result.interrupted)
        .map(|l| {
            let r = &l.result;
            let mut got: Vec<String> = r
                .errors
                .nonzero()
                .map(|(kind, n)| format!("{} {n}", kind.describe()))
                .collect();
            if !r.status.is_empty() {
                let codes: Vec<String> = r.status.keys().map(|c| c.to_string()).collect();
                got.push(format!("status {}", codes.join(", ")));
            }
            if got.is_empty() {
                got.push("no request was sent".into());
            }
            let unit = match sweep.variable {
                SweepVariable::Connections => "connections",
                SweepVariable::Rate => "req/s",
            };
            format!(
                "level {} {unit} got no successful response ({}); check the URL or path",
                level_label(l.level),
                got.join(", ")
            )
        })
        .collect()
}

/// The sweep as a text table with the knee marked.
pub fn render_sweep_text(sweep: &SweepResult) -> String {
    let rows = level_rows(sweep);
    let knee = find_knee(&rows);
    let mut out = String::new();
    if let Some(first) = sweep.levels.first() {
        let _ = writeln!(
            out,
            "Sweep over {}: {}",
            sweep.variable.label(),
            crate::text::headline(&first.result)
        );
    }
    if sweep.interrupted {
        let _ = writeln!(out, "INTERRUPTED — partial sweep");
    }
    out.push('\n');
    let mut table = vec![vec![
        sweep.variable.label().to_string(),
        "requests/s".into(),
        "p50 (ms)".into(),
        "p99 (ms)".into(),
        "errors %".into(),
        "responses".into(),
        String::new(),
    ]];
    for (i, r) in rows.iter().enumerate() {
        table.push(vec![
            level_label(r.level),
            format!("{:.2}", r.requests_per_s),
            ms(r.p50_us),
            ms(r.p99_us),
            format!("{:.2}", r.error_pct),
            r.responses.to_string(),
            note(r, Some(i) == knee),
        ]);
    }
    // right-align every column, the first included (levels are numbers)
    let widths: Vec<usize> = (0..7)
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 6 {
                let _ = write!(line, "  {cell}");
            } else {
                let _ = write!(
                    line,
                    "{}{cell:>w$}",
                    if c == 0 { "" } else { "  " },
                    w = widths[c]
                );
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out.push('\n');
    if rows.iter().any(LevelRow::left_out) {
        let _ = writeln!(
            out,
            "Levels marked \"not in the knee\" are left out of it: stalled (requests \
             outstanding and none finished, in the measured window: a stall in the warm-up or \
             cool-down does not count), cut short (interrupted), or measured while the generator \
             was the limit."
        );
    }
    let first_short = rows.iter().find(|r| r.counts_as_short());
    if first_short.is_some() {
        let _ = writeln!(
            out,
            "Levels marked \"reached N of R/s\" did not get their rate (below {:.0}% of it): the \
             server no longer kept up.",
            crate::knee::RATE_REACHED * 100.0
        );
    }
    match (knee, first_short) {
        (Some(i), Some(short)) => {
            let _ = writeln!(
                out,
                "Knee: {} {} — the next level asked for {}/s and the server answered {:.0}/s: \
                 beyond it more load only buys latency (p99 {} → {} ms).",
                level_label(rows[i].level),
                sweep.variable.label(),
                level_label(short.level),
                short.requests_per_s,
                ms(rows[i].p99_us),
                ms(short.p99_us)
            );
        }
        (None, Some(short)) => {
            let _ = writeln!(
                out,
                "No knee within the levels: the first, {}/s, already fell short ({:.0}/s): \
                 the server was saturated below it; sweep lower rates.",
                level_label(short.level),
                short.requests_per_s
            );
        }
        (Some(i), None) => {
            let _ = writeln!(
                out,
                "Knee: {} {} — beyond it throughput grows by less than 5% while p99 keeps growing.",
                level_label(rows[i].level),
                sweep.variable.label()
            );
        }
        (None, None) => {
            let _ = writeln!(out, "{}", no_knee_sentence(&rows));
        }
    }
    out
}

/// CSV: the level, its stalled seconds, its note (`knee`, or why it is left out of the knee:
/// `stalled 1.7 s`, `cut short`), then the single-run CSV columns.
pub fn render_sweep_csv(sweep: &SweepResult) -> String {
    let rows = level_rows(sweep);
    let knee = find_knee(&rows);
    let mut out = format!("level,stall_s,note,{}\n", crate::csv::csv_header());
    for (i, (l, r)) in sweep.levels.iter().zip(&rows).enumerate() {
        let note = if Some(i) == knee {
            "knee".to_string()
        } else if r.short_beyond_its_stalls() && !r.trusted() {
            format!("{}; {}", r.flaw(), r.shortfall())
        } else if r.trusted() {
            r.shortfall()
        } else {
            r.flaw()
        };
        let _ = writeln!(
            out,
            "{},{:.3},\"{note}\",{}",
            l.level,
            r.stall_s,
            crate::csv::csv_row(&l.result)
        );
    }
    out
}

/// The knee's marker, and one per level left out of it (class `flawed`).
fn knee_marker(rows: &[LevelRow]) -> Vec<Marker> {
    let flawed = rows.iter().filter(|r| r.left_out()).map(|r| Marker {
        x: r.level,
        class: "flawed".into(),
        label: r.flaw(),
    });
    let short = rows.iter().filter(|r| r.counts_as_short()).map(|r| Marker {
        x: r.level,
        class: "flawed".into(),
        label: r.shortfall(),
    });
    find_knee(rows)
        .map(|i| Marker {
            x: rows[i].level,
            class: "knee".into(),
            label: format!("knee: {}", level_label(rows[i].level)),
        })
        .into_iter()
        .chain(flawed)
        .chain(short)
        .collect()
}

fn level_chart(sweep: &SweepResult, rows: &[LevelRow], title: &str, y: &str) -> Chart {
    let mut chart = Chart::new(title, sweep.variable.label(), y);
    let levels: Vec<f64> = rows.iter().map(|r| r.level).collect();
    chart.x_scale = level_scale(&levels);
    chart.x_ticks = Some(levels.iter().map(|&l| (l, level_label(l))).collect());
    chart.markers = knee_marker(rows);
    chart
}

/// The sweep's HTML page: table, throughput / latency / error % against the level with the
/// knee marked, every level's percentile curve, then each level's own report.
pub fn render_sweep_html(sweep: &SweepResult) -> String {
    let rows = level_rows(sweep);
    // The answer first (issue 39), then the table and the plots behind it.
    let mut body = format!("<h1>webtune sweep</h1>\n{}", sweep_verdict(sweep).html());
    // A lab sweep's page says its stack, settings and load (issue 39).
    if let Some(first) = sweep.levels.first() {
        let levels = rows
            .iter()
            .map(|r| level_label(r.level))
            .collect::<Vec<_>>()
            .join(", ");
        let unit = match sweep.variable {
            SweepVariable::Connections => "connections",
            SweepVariable::Rate => "req/s",
        };
        if let Some(line) =
            crate::html::sweep_stack_line(&first.result, &format!("{levels} {unit}"))
        {
            let _ = writeln!(body, "<p id=\"sweep-stack\">{}</p>", escape(&line));
        }
    }
    let _ = writeln!(
        body,
        "<pre id=\"sweep-table\">{}</pre>",
        escape(&render_sweep_text(sweep))
    );
    let points = |f: fn(&LevelRow) -> f64| rows.iter().map(|r| (r.level, f(r))).collect();
    let mut throughput = level_chart(sweep, &rows, "Throughput by level", "requests/s");
    throughput
        .series
        .push(Series::new("requests/s", points(|r| r.requests_per_s), 0));
    body.push_str(&figure(
        "plot-sweep-throughput",
        &throughput,
        "Requests per second at each level; the dashed line marks the knee (levels that \
         stalled or were cut short are marked too, and left out of it).",
    ));
    let mut latency = level_chart(sweep, &rows, "Latency by level", "latency (ms)");
    latency
        .series
        .push(Series::new("p50", points(|r| r.p50_us as f64 / 1000.0), 0));
    latency
        .series
        .push(Series::new("p99", points(|r| r.p99_us as f64 / 1000.0), 2));
    body.push_str(&figure(
        "plot-sweep-latency",
        &latency,
        "p50 and p99 of the total time at each level.",
    ));
    let mut errors = level_chart(sweep, &rows, "Errors by level", "errors (%)");
    errors
        .series
        .push(Series::new("errors %", points(|r| r.error_pct), 1));
    body.push_str(&figure(
        "plot-sweep-errors",
        &errors,
        "Failed requests, percent of attempted, at each level.",
    ));
    let curves: Vec<(String, &webtune_model::LatencyHistogram)> = sweep
        .levels
        .iter()
        .map(|l| (level_label(l.level), &l.result.histograms.total))
        .collect();
    body.push_str(&figure(
        "plot-sweep-percentiles",
        &percentile_chart("Latency by percentile at each level", &curves),
        "Total latency by percentile, one line per level.",
    ));
    for (i, l) in sweep.levels.iter().enumerate() {
        let _ = writeln!(
            body,
            "<h2>Level {} {}</h2>\n<section id=\"level-{i}\">",
            level_label(l.level),
            escape(sweep.variable.label())
        );
        body.push_str(&run_section(&l.result, &format!("level-{i}-")));
        body.push_str("</section>\n");
    }
    page("webtune sweep", &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::sweep::SweepLevel;
    use webtune_testkit::results::{synthetic_result, synthetic_result_without_stall};

    fn row(level: f64, rps: f64, p99_ms: u64) -> LevelRow {
        crate::knee::tests::row(level, rps, p99_ms)
    }

    #[test]
    fn table_marks_the_knee_and_html_plots_it() {
        let mut sweep = SweepResult::new("webtune 0.1.0", SweepVariable::Connections);
        for (level, n, lat) in [(8.0, 800, 1_000), (32.0, 1600, 2_000), (128.0, 1610, 8_000)] {
            sweep.levels.push(SweepLevel {
                level,
                result: synthetic_result_without_stall(n, &[lat]),
            });
        }
        let text = render_sweep_text(&sweep);
        let knee_line = text.lines().find(|l| l.ends_with("<- knee")).unwrap();
        assert!(knee_line.trim_start().starts_with("32 "), "{text}");
        assert!(text.contains("Knee: 32 connections"));
        let html = render_sweep_html(&sweep);
        for id in [
            "plot-sweep-throughput",
            "plot-sweep-latency",
            "plot-sweep-errors",
            "plot-sweep-percentiles",
            "level-2-plot-throughput",
        ] {
            assert!(html.contains(&format!("id=\"{id}\"")), "missing {id}");
        }
        assert!(html.contains("class=\"knee\""));
        // The verdict opens the page (issue 39).
        let verdict = html.find("<div id=\"verdict\"").expect("a verdict box");
        assert!(verdict < html.find("id=\"sweep-table\"").unwrap());
        let v = sweep_verdict(&sweep);
        assert!(
            v.answer.starts_with("The knee is at 32 connections: "),
            "{v:?}"
        );
        assert!(
            v.action
                .starts_with("keep the load at or under 32 connections"),
            "{v:?}"
        );
        let csv = render_sweep_csv(&sweep);
        assert_eq!(csv.lines().count(), 4);
        assert!(csv.lines().nth(3).unwrap().starts_with("128,"));
    }

    #[test]
    fn stalled_and_cut_short_levels_are_marked_and_left_out_of_the_knee() {
        // Without the flaws the knee is 128: flat after it while p99 grows.
        let mut rows = vec![
            row(8.0, 100.0, 10),
            row(32.0, 380.0, 11),
            row(128.0, 900.0, 15),
            row(256.0, 930.0, 40),
            row(512.0, 935.0, 90),
        ];
        assert_eq!(find_knee(&rows), Some(2));
        // 128 stalled for 1.7 s: its figures do not count, and 32 → 256 grew a lot.
        rows[2].stall_s = 1.7;
        assert_eq!(find_knee(&rows), Some(3));
        // a cut-short level is skipped the same way
        rows[3].cut_short = true;
        assert_eq!(find_knee(&rows), None, "8 and 32 grew on to 512");
        assert!(!rows[2].trusted() && !rows[3].trusted());
        assert_eq!(rows[2].flaw(), "stalled 1.7 s");
        assert_eq!(rows[3].flaw(), "cut short");

        let mut sweep = SweepResult::new("webtune 0.1.0", SweepVariable::Connections);
        for (level, n, lat) in [
            (8.0, 800, 1_000),
            (32.0, 1600, 2_000),
            (64.0, 1610, 8_000),
            (128.0, 1620, 9_000),
            (256.0, 1630, 10_000),
        ] {
            sweep.levels.push(SweepLevel {
                level,
                result: synthetic_result_without_stall(n, &[lat]),
            });
        }
        // 32 would be the knee; with it stalled (synthetic_result's 1 s stall) the knee is
        // 64, and the interrupted level 128 is marked too.
        sweep.levels[1].result = synthetic_result(1600, &[2_000]);
        sweep.levels[3].result.interrupted = true;
        let text = render_sweep_text(&sweep);
        let line = |lvl: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(&format!("{lvl} ")))
                .unwrap_or_else(|| panic!("no {lvl}: {text}"))
                .to_string()
        };
        assert!(
            line("32").ends_with("stalled 1.0 s (not in the knee)"),
            "{text}"
        );
        assert!(line("64").ends_with("<- knee"), "{text}");
        assert!(
            line("128").ends_with("cut short (not in the knee)"),
            "{text}"
        );
        assert!(text.contains("are left out of it"), "{text}");
        let csv = render_sweep_csv(&sweep);
        assert!(csv.starts_with("level,stall_s,note,"));
        assert!(
            csv.lines()
                .nth(2)
                .unwrap()
                .starts_with("32,1.000,\"stalled 1.0 s\","),
            "{csv}"
        );
        assert!(
            csv.lines()
                .nth(3)
                .unwrap()
                .starts_with("64,0.000,\"knee\","),
            "{csv}"
        );
        assert!(csv
            .lines()
            .nth(4)
            .unwrap()
            .starts_with("128,0.000,\"cut short\","));
        let html = render_sweep_html(&sweep);
        let table = &html[html.find("id=\"sweep-table\"").unwrap()..];
        assert!(table.contains("stalled 1.0 s (not in the knee)"));
        assert!(html.contains("class=\"flawed\""));
    }

    #[test]
    fn a_rate_sweep_that_falls_short_of_its_rate_finds_the_knee_there() {
        // The sweep: 1600/s asked, 987/s answered, p99 5.6 → 800 ms. Throughput grew
        // by 23% from 800, so the closed-loop rule alone says "No knee".
        let rate = |level: f64, rps: f64, p99_ms: u64| LevelRow {
            requested_rps: Some(level),
            ..row(level, rps, p99_ms)
        };
        let rows = [
            rate(200.0, 200.0, 3),
            rate(400.0, 399.0, 4),
            rate(800.0, 797.0, 6),
            rate(1600.0, 987.0, 800),
        ];
        assert!(!rows[2].short_of_rate() && rows[3].short_of_rate());
        assert_eq!(rows[3].shortfall(), "reached 987 of 1600/s");
        assert_eq!(find_knee(&rows), Some(2));
        // Every level kept its rate: no knee (throughput followed the rate).
        assert_eq!(find_knee(&rows[..3]), None);
        // Already short at the first level: no knee within the levels.
        assert_eq!(find_knee(&rows[3..]), None);
        // A stall does not hide a shortfall it cannot explain: 0.1 s of 1 s stalled at
        // 1600/s cannot turn 1520/s into 987/s, so the level still marks the knee; a level
        // whose shortfall the stall explains is left out of it.
        let stalled = |rps: f64| LevelRow {
            stall_s: 0.1,
            ..rate(1600.0, rps, 800)
        };
        let explained = [rows[0], rows[1], rows[2], stalled(1500.0)];
        assert!(!explained[3].short_beyond_its_stalls());
        assert_eq!(find_knee(&explained), None);
        let unexplained = [rows[0], rows[1], rows[2], stalled(987.0)];
        assert!(unexplained[3].short_beyond_its_stalls());
        assert_eq!(find_knee(&unexplained), Some(2));
        assert_eq!(
            note(&unexplained[3], false),
            "stalled 0.1 s; reached 987 of 1600/s"
        );

        let mut sweep = SweepResult::new("webtune 0.1.0", SweepVariable::Rate);
        for (level, n, lat) in [
            (200.0, 2000, 3_000),
            (400.0, 3990, 4_000),
            (800.0, 7970, 5_600),
            (1600.0, 9870, 800_000),
        ] {
            sweep.levels.push(SweepLevel {
                level,
                result: synthetic_result_without_stall(n, &[lat]),
            });
        }
        let text = render_sweep_text(&sweep);
        let line = |lvl: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(&format!("{lvl} ")))
                .unwrap_or_else(|| panic!("no {lvl}: {text}"))
                .to_string()
        };
        assert!(line("800").ends_with("<- knee"), "{text}");
        assert!(line("1600").ends_with("reached 987 of 1600/s"), "{text}");
        assert!(!text.contains("No knee"), "{text}");
        assert!(
            text.contains("Knee: 800 rate (req/s) — the next level asked for 1600/s and the server answered 987/s"),
            "{text}"
        );
        let csv = render_sweep_csv(&sweep);
        assert!(
            csv.lines()
                .nth(4)
                .unwrap()
                .starts_with("1600,0.000,\"reached 987 of 1600/s\","),
            "{csv}"
        );
        assert!(render_sweep_html(&sweep).contains("reached 987 of 1600/s"));
    }

    #[test]
    fn a_level_without_a_successful_response_is_named() {
        let mut sweep = SweepResult::new("webtune 0.1.0", SweepVariable::Connections);
        for level in [2.0, 8.0] {
            sweep.levels.push(SweepLevel {
                level,
                result: synthetic_result_without_stall(100, &[1_000]),
            });
        }
        assert_eq!(unanswered(&sweep), Vec::<String>::new());
        // Level 8: every response a 404 (the wrong path on this stack).
        let r = &mut sweep.levels[1].result;
        r.ok = 0;
        r.errors = webtune_model::ErrorCounts::default();
        for _ in 0..100 {
            r.errors.add(webtune_model::ErrorKind::UnexpectedStatus);
        }
        r.status = [(404u16, 100u64)].into_iter().collect();
        assert_eq!(
            unanswered(&sweep),
            vec![
                "level 8 connections got no successful response (unexpected status 100, \
                 status 404); check the URL or path"
            ]
        );
        let text = render_sweep_text(&sweep);
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("8 "))
            .unwrap();
        assert!(row.ends_with("no successful response"), "{text}");
        // Interrupted before anything came back: 130 says it, not this.
        sweep.levels[1].result.interrupted = true;
        assert!(unanswered(&sweep).is_empty());
    }
}
