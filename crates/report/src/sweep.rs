//! Sweep reports: one row per load level (throughput, p50, p99, error %), the knee, and the
//! HTML page with the same figures plotted against the level.
//!
//! The knee is the level after which throughput grows by less than 5% while p99 keeps
//! growing: past it, more load only buys latency (seed 000: ~4.5 req/s at every
//! concurrency once the backend was saturated). A level that stalled (requests outstanding
//! and none finished) or was cut short (interrupted) is marked and left out of the knee:
//! its figures do not describe the load level.
//!
//! In a sweep over open-loop rates throughput follows the rate while the server keeps up, so
//! the flattening above never shows until it has stopped keeping up. A rate level whose
//! throughput fell below 95% of its rate is marked (`reached 987 of 1600/s`), and the knee is
//! the last level that reached its rate before the first one that did not.

use crate::html::{figure, level_scale, page, percentile_chart, run_section, stalls};
use crate::svg::{escape, Chart, Marker, Series};
use crate::units::ms;
use std::fmt::Write as _;
use webtune_model::sweep::{SweepResult, SweepVariable};

/// Throughput growth below which a step counts as flat.
pub const KNEE_GROWTH: f64 = 0.05;

/// Share of its requested rate a rate level's throughput must reach to count as kept.
pub const RATE_REACHED: f64 = 0.95;

/// The figures of one level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelRow {
    pub level: f64,
    pub requests_per_s: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// Failed requests, percent of attempted.
    pub error_pct: f64,
    pub responses: u64,
    /// Seconds the level spent stalled (requests outstanding, none finished).
    pub stall_s: f64,
    /// The level's run was interrupted before its end.
    pub cut_short: bool,
    /// The open-loop rate the level asked for, requests/s (None in a sweep over connections).
    pub requested_rps: Option<f64>,
    /// Responses with an expected status: none means the level measured only errors.
    pub ok: u64,
    /// Length of the level's measurement, seconds.
    pub measured_s: f64,
}

impl LevelRow {
    /// Whether the level's figures can feed the knee: no stall and not cut short.
    pub fn trusted(&self) -> bool {
        !self.cut_short && self.stall_s <= 0.0
    }

    /// Why the level is left out of the knee ("stalled 1.7 s", "cut short"); empty when
    /// it is not.
    pub fn flaw(&self) -> String {
        let mut notes = Vec::new();
        if self.stall_s > 0.0 {
            notes.push(format!("stalled {:.1} s", self.stall_s));
        }
        if self.cut_short {
            notes.push("cut short".to_string());
        }
        notes.join(", ")
    }

    /// A rate level whose throughput fell below `RATE_REACHED` of the rate it asked for.
    pub fn short_of_rate(&self) -> bool {
        self.requested_rps
            .is_some_and(|rate| self.requests_per_s < rate * RATE_REACHED)
    }

    /// A rate level that fell short of its rate by more than its stalls explain: even with
    /// the stalled seconds taken out of its measurement its throughput stays below
    /// `RATE_REACHED` of the rate (400/s asked, 89/s answered, 0.1 s of 1 s stalled). Such a
    /// level feeds the knee although it stalled: the server did not keep up whatever the
    /// stall was. A cut-short level never does.
    pub fn short_beyond_its_stalls(&self) -> bool {
        let Some(rate) = self.requested_rps else {
            return false;
        };
        if self.cut_short || !self.short_of_rate() {
            return false;
        }
        if self.stall_s <= 0.0 {
            return true;
        }
        let unstalled = self.measured_s - self.stall_s;
        unstalled > 0.0 && self.requests_per_s * self.measured_s / unstalled < rate * RATE_REACHED
    }

    /// Whether the level is the knee's evidence that the server no longer kept up.
    fn counts_as_short(&self) -> bool {
        (self.trusted() && self.short_of_rate()) || self.short_beyond_its_stalls()
    }

    /// "reached 987 of 1600/s" for a level short of its rate; empty otherwise.
    pub fn shortfall(&self) -> String {
        match self.requested_rps {
            Some(rate) if self.short_of_rate() => format!(
                "reached {} of {}/s",
                level_label(self.requests_per_s.round()),
                level_label(rate)
            ),
            _ => String::new(),
        }
    }
}

/// One row per level, in the order run.
pub fn level_rows(sweep: &SweepResult) -> Vec<LevelRow> {
    sweep
        .levels
        .iter()
        .map(|l| LevelRow {
            level: l.level,
            requests_per_s: l.result.requests_per_s,
            p50_us: l.result.latency.total.p50_us,
            p99_us: l.result.latency.total.p99_us,
            error_pct: l.result.error_ratio() * 100.0,
            responses: l.result.responses,
            stall_s: stalls(&l.result).iter().fold(0.0, |t, s| t + s.length_s),
            cut_short: l.result.interrupted,
            requested_rps: (sweep.variable == SweepVariable::Rate).then_some(l.level),
            ok: l.result.ok,
            measured_s: l.result.duration_s,
        })
        .collect()
}

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

/// Index (into `rows`) of the knee: the first level after which throughput grows by less
/// than 5% — no later level beats it by 5% or more, so a noisy dip does not count — while p99
/// keeps growing (the next level's p99 is higher). Stalled and cut-short levels are skipped
/// as if they had not run. None when throughput keeps growing or p99 does not.
///
/// A rate sweep whose levels fell short of their rate: the last level that reached its rate
/// before the first that did not (None when the first level already fell short). A stalled
/// level that fell short by more than its stall explains counts as short
/// (`short_beyond_its_stalls`).
pub fn find_knee(rows: &[LevelRow]) -> Option<usize> {
    if let Some(first_short) = rows.iter().position(|r| r.counts_as_short()) {
        return rows[..first_short].iter().rposition(|r| r.trusted());
    }
    let trusted: Vec<&LevelRow> = rows.iter().filter(|r| r.trusted()).collect();
    let k = (0..trusted.len().saturating_sub(1)).find(|&i| {
        let here = trusted[i];
        let best_later = trusted[i + 1..]
            .iter()
            .map(|r| r.requests_per_s)
            .fold(f64::NEG_INFINITY, f64::max);
        here.requests_per_s > 0.0
            && best_later < here.requests_per_s * (1.0 + KNEE_GROWTH)
            && trusted[i + 1].p99_us > here.p99_us
    })?;
    rows.iter().position(|r| std::ptr::eq(r, trusted[k]))
}

/// The last column of a level's row: why it is left out of the knee, or that it is the knee.
fn note(row: &LevelRow, is_knee: bool) -> String {
    let mut notes = Vec::new();
    if is_knee {
        notes.push("<- knee".to_string());
    }
    if row.ok == 0 {
        notes.push("no successful response".into());
    }
    if row.short_beyond_its_stalls() && !row.trusted() {
        notes.push(row.flaw());
        notes.push(row.shortfall());
    } else if !row.trusted() {
        notes.push(format!("{} (not in the knee)", row.flaw()));
    } else if row.short_of_rate() {
        notes.push(row.shortfall());
    }
    notes.join("; ")
}

fn level_label(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
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
    if rows
        .iter()
        .any(|r| !r.trusted() && !r.short_beyond_its_stalls())
    {
        let _ = writeln!(
            out,
            "Levels marked stalled (requests outstanding and none finished) or cut short \
             (interrupted) are left out of the knee."
        );
    }
    let first_short = rows.iter().find(|r| r.counts_as_short());
    if first_short.is_some() {
        let _ = writeln!(
            out,
            "Levels marked \"reached N of R/s\" did not get their rate (below {:.0}% of it): the \
             server no longer kept up.",
            RATE_REACHED * 100.0
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
            let _ = writeln!(
                out,
                "No knee: throughput grew by 5% or more at every step (or p99 did not grow)."
            );
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
    let flawed = rows
        .iter()
        .filter(|r| !r.trusted() && !r.short_beyond_its_stalls())
        .map(|r| Marker {
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
    let mut body = String::from("<h1>webtune sweep</h1>\n");
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
        LevelRow {
            level,
            requests_per_s: rps,
            p50_us: p99_ms * 500,
            p99_us: p99_ms * 1000,
            error_pct: 0.0,
            responses: 0,
            stall_s: 0.0,
            cut_short: false,
            requested_rps: None,
            ok: 1,
            measured_s: 1.0,
        }
    }

    #[test]
    fn knee_is_where_throughput_flattens_and_p99_grows() {
        // seed 003's levels; saturation at 128
        let rows = [
            row(8.0, 100.0, 10),
            row(32.0, 380.0, 11),
            row(128.0, 900.0, 15),
            row(256.0, 930.0, 40),
            row(512.0, 935.0, 90),
            row(1024.0, 920.0, 200),
        ];
        assert_eq!(find_knee(&rows), Some(2));
    }

    #[test]
    fn a_noisy_dip_is_not_the_knee() {
        // measured on a shared 2-vCPU machine: level 4 dipped, level 8 was the real top
        let rows = [
            row(1.0, 1621.0, 7),
            row(2.0, 2374.0, 9),
            row(4.0, 1478.0, 15),
            row(8.0, 3443.0, 6),
            row(16.0, 3091.0, 26),
        ];
        assert_eq!(find_knee(&rows), Some(3));
    }

    #[test]
    fn no_knee_while_throughput_keeps_growing_or_p99_stays() {
        let growing = [
            row(1.0, 100.0, 10),
            row(2.0, 200.0, 11),
            row(4.0, 390.0, 12),
        ];
        assert_eq!(find_knee(&growing), None);
        let flat_but_p99_steady = [row(1.0, 100.0, 10), row(2.0, 101.0, 10)];
        assert_eq!(find_knee(&flat_but_p99_steady), None);
        assert_eq!(find_knee(&[]), None);
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
        assert!(text.contains("left out of the knee"), "{text}");
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
