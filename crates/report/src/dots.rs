//! Dot plots and forest plots as SVG text, beside `svg`'s line charts (same no-script,
//! no-font rules). A dot plot puts points on numeric or categorical x with a style each
//! (filled, hollow, highlighted) and may join pairs of them with segments: the tune page's
//! slice plots (objective against one parameter) and its proof's pairs (A against B). A
//! forest plot gives one row per figure: its estimate, its interval as a bar, a zero line,
//! and the numbers written beside it: compare's changes and tune's effects.
//!
//! Every label is placed from an estimate of its width (no font metrics without a
//! browser, so a generous one) and shortened with "…" rather than let it run into another;
//! the HTML test measures the real boxes in Chromium.

use crate::svg::{escape, nice_ticks, tick_label};
use std::fmt::Write as _;

/// Rough width of one character of 11 px text (generous, as in `svg`: Debian's default
/// sans in Chromium takes up to ~6.8 px).
const CHAR_W: f64 = 7.0;

/// How a dot is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DotStyle {
    /// A filled circle (e.g. a trial that met every SLO, the winner's run of a pair).
    Filled,
    /// A hollow grey circle (a trial that missed an SLO, the default's run of a pair).
    Hollow,
    /// A large ringed dot (the winner).
    Highlight,
}

impl DotStyle {
    fn class(self) -> &'static str {
        match self {
            DotStyle::Filled => "dot filled",
            DotStyle::Hollow => "dot hollow",
            DotStyle::Highlight => "dot highlight",
        }
    }
}

/// One point.
#[derive(Debug, Clone, PartialEq)]
pub struct Dot {
    pub x: f64,
    pub y: f64,
    pub style: DotStyle,
    /// Shown on hover (an SVG `<title>`).
    pub title: String,
}

/// A line joining two points, e.g. the two runs of a pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    pub from: (f64, f64),
    pub to: (f64, f64),
}

/// A small dot plot.
#[derive(Debug, Clone, PartialEq)]
pub struct DotChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Category names: x is then the category's index (0, 1, …).
    pub categories: Option<Vec<String>>,
    /// Numeric x on a log scale (all values positive).
    pub x_log: bool,
    pub dots: Vec<Dot>,
    pub segments: Vec<Segment>,
    /// What each style means, shown under the title.
    pub legend: Vec<(DotStyle, String)>,
}

impl DotChart {
    pub fn new(title: &str, x_label: &str, y_label: &str) -> DotChart {
        DotChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            categories: None,
            x_log: false,
            dots: Vec::new(),
            segments: Vec::new(),
            legend: Vec::new(),
        }
    }
}

/// `text` cut to at most `max_chars` characters, "…" marking the cut.
pub fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let keep = max_chars.saturating_sub(1);
    let mut out: String = text.chars().take(keep).collect();
    out.push('…');
    out
}

/// `text` cut to at most `max_chars` characters from its start, "…" marking the cut: the
/// end of a parameter's name is what tells it from its siblings (`…KeepAliveTimeout`).
pub fn shorten_keeping_end(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_string();
    }
    let keep = max_chars.saturating_sub(1);
    let mut out = String::from("…");
    out.extend(text.chars().skip(count - keep));
    out
}

/// Ticks covering [lo, hi] (widened to whole steps) and the widened range.
fn axis(lo: f64, hi: f64, wanted: usize) -> (f64, f64, Vec<f64>) {
    let (lo, hi) = if !(lo.is_finite() && hi.is_finite()) {
        (0.0, 1.0)
    } else if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = (hi.abs() * 0.1).max(1.0);
        (lo - pad, hi + pad)
    } else {
        (lo, hi)
    };
    // the step nice_ticks takes: 1, 2 or 5 times a power of ten
    let raw = (hi - lo) / wanted.max(1) as f64;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power);
    let lo = (lo / step).floor() * step;
    let hi = (hi / step).ceil() * step;
    (lo, hi, nice_ticks(lo, hi, wanted))
}

/// Powers of ten (and 2, 5 between them when few) within [lo, hi], for a log axis.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let few = b - a <= 2;
    for e in a..=b {
        for m in if few {
            &[1.0, 2.0, 5.0][..]
        } else {
            &[1.0][..]
        } {
            let v = m * 10f64.powi(e);
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                out.push(v);
            }
        }
    }
    out
}

/// Maps an x value to its pixel column.
type XToPixel = Box<dyn Fn(f64) -> f64>;

const DOT_W: f64 = 380.0;
const DOT_H: f64 = 250.0;
const DOT_LEFT: f64 = 58.0;
const DOT_RIGHT: f64 = 16.0;
const DOT_BOTTOM: f64 = 40.0;

/// Draw a dot plot as an `<svg>` element with this id.
pub fn render_dots(id: &str, chart: &DotChart) -> String {
    // legend: one row under the title, entries flowed; a second row when needed
    let mut legend_at = Vec::new();
    let (mut lx, mut row) = (DOT_LEFT, 0usize);
    for (_, name) in &chart.legend {
        let w = 14.0 + CHAR_W * name.chars().count() as f64 + 12.0;
        if lx > DOT_LEFT && lx + w > DOT_W - DOT_RIGHT {
            lx = DOT_LEFT;
            row += 1;
        }
        legend_at.push((lx, row));
        lx += w;
    }
    let legend_rows = if chart.legend.is_empty() { 0 } else { row + 1 };
    let top = 34.0 + 14.0 * legend_rows as f64;
    let plot_w = DOT_W - DOT_LEFT - DOT_RIGHT;
    let plot_h = DOT_H - top - DOT_BOTTOM;

    let ys = chart
        .dots
        .iter()
        .map(|d| d.y)
        .chain(chart.segments.iter().flat_map(|s| [s.from.1, s.to.1]))
        .filter(|v| v.is_finite());
    let (y_min, y_max) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (y_lo, y_hi, y_ticks) = axis(y_min, y_max, 4);
    let py = |y: f64| top + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h;

    // x: categories spread evenly with half a slot at each end; numbers on their axis
    let (x_ticks, px): (Vec<(f64, String)>, XToPixel) = match &chart.categories {
        Some(names) => {
            let n = names.len().max(1) as f64;
            let slot = plot_w / n;
            let max_chars = ((slot - 6.0) / CHAR_W).floor().max(1.0) as usize;
            let ticks = names
                .iter()
                .enumerate()
                .map(|(i, name)| (i as f64, shorten(name, max_chars)))
                .collect();
            (ticks, Box::new(move |x: f64| DOT_LEFT + slot * (x + 0.5)))
        }
        None => {
            let xs = chart
                .dots
                .iter()
                .map(|d| d.x)
                .filter(|v| v.is_finite() && (!chart.x_log || *v > 0.0));
            let (x_min, x_max) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
            if chart.x_log && x_min.is_finite() && x_max > x_min {
                let (lo, hi) = (x_min.log10(), x_max.log10());
                let pad = (hi - lo) * 0.04;
                let (lo, hi) = (lo - pad, hi + pad);
                let ticks = log_ticks(10f64.powf(lo), 10f64.powf(hi))
                    .into_iter()
                    .map(|v| (v, tick_label(v)))
                    .collect();
                (
                    ticks,
                    Box::new(move |x: f64| {
                        DOT_LEFT + (x.max(f64::MIN_POSITIVE).log10() - lo) / (hi - lo) * plot_w
                    }),
                )
            } else {
                let (lo, hi, ticks) = axis(x_min, x_max, 4);
                (
                    ticks.into_iter().map(|v| (v, tick_label(v))).collect(),
                    Box::new(move |x: f64| DOT_LEFT + (x - lo) / (hi - lo) * plot_w),
                )
            }
        }
    };

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{}" class="chart dots" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {DOT_W} {DOT_H}" width="{DOT_W}" height="{DOT_H}" role="img" aria-label="{}">"#,
        escape(id),
        escape(&chart.title)
    );
    let _ = write!(s, "<title>{}</title>", escape(&chart.title));
    let _ = write!(
        s,
        r##"<rect x="0" y="0" width="{DOT_W}" height="{DOT_H}" fill="#ffffff"/><text x="{DOT_LEFT}" y="15" font-size="13" font-weight="bold" fill="#222">{}</text>"##,
        escape(&shorten(
            &chart.title,
            ((DOT_W - DOT_LEFT - DOT_RIGHT) / 7.6) as usize
        ))
    );
    for ((style, name), (x, row)) in chart.legend.iter().zip(&legend_at) {
        let y = 33.0 + 14.0 * *row as f64;
        let _ = write!(s, "{}", dot_mark(x + 5.0, y - 4.0, *style, 3.5));
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{y:.1}" font-size="11" fill="#222">{}</text>"##,
            x + 14.0,
            escape(name)
        );
    }
    for t in &y_ticks {
        let y = py(*t);
        let _ = write!(
            s,
            r##"<line x1="{DOT_LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#444">{}</text>"##,
            DOT_W - DOT_RIGHT,
            DOT_LEFT - 5.0,
            y + 4.0,
            tick_label(*t)
        );
    }
    let base = top + plot_h;
    // x tick labels: skip one that would touch the previous (log ticks crowd)
    let mut last_right = f64::NEG_INFINITY;
    for (v, label) in &x_ticks {
        let x = px(*v);
        let w = CHAR_W * label.chars().count() as f64;
        if !(DOT_LEFT - 0.5..=DOT_W - DOT_RIGHT + 0.5).contains(&x)
            || x - w / 2.0 < last_right + 4.0
        {
            continue;
        }
        last_right = x + w / 2.0;
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{base:.1}" x2="{x:.1}" y2="{:.1}" stroke="#888"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#444">{}</text>"##,
            base + 4.0,
            base + 16.0,
            escape(label)
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{DOT_LEFT}" y1="{top}" x2="{DOT_LEFT}" y2="{base:.1}" stroke="#444"/><line x1="{DOT_LEFT}" y1="{base:.1}" x2="{:.1}" y2="{base:.1}" stroke="#444"/>"##,
        DOT_W - DOT_RIGHT
    );
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#222">{}</text>"##,
        DOT_LEFT + plot_w / 2.0,
        DOT_H - 6.0,
        escape(&shorten(&chart.x_label, (plot_w / 7.0) as usize))
    );
    let _ = write!(
        s,
        r##"<text transform="translate(13 {:.1}) rotate(-90)" font-size="12" text-anchor="middle" fill="#222">{}</text>"##,
        top + plot_h / 2.0,
        escape(&shorten(&chart.y_label, (plot_h / 7.0) as usize))
    );
    for seg in &chart.segments {
        let _ = write!(
            s,
            r##"<line class="pair" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#999" stroke-width="1.2"/>"##,
            px(seg.from.0),
            py(seg.from.1),
            px(seg.to.0),
            py(seg.to.1)
        );
    }
    // highlighted dots last, so nothing hides them
    let mut order: Vec<&Dot> = chart.dots.iter().collect();
    order.sort_by_key(|d| d.style == DotStyle::Highlight);
    for d in order {
        if !(d.x.is_finite() && d.y.is_finite()) {
            continue;
        }
        let _ = write!(
            s,
            r#"<g class="{}">{}<title>{}</title></g>"#,
            d.style.class(),
            dot_mark(px(d.x), py(d.y), d.style, 3.5),
            escape(&d.title)
        );
    }
    s.push_str("</svg>");
    s
}

fn dot_mark(x: f64, y: f64, style: DotStyle, r: f64) -> String {
    match style {
        DotStyle::Filled => {
            format!(r##"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="#0072B2"/>"##)
        }
        DotStyle::Hollow => format!(
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="#ffffff" stroke="#888" stroke-width="1.5"/>"##
        ),
        DotStyle::Highlight => format!(
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="{:.1}" fill="#E69F00" stroke="#000" stroke-width="1.5"/>"##,
            r + 2.0
        ),
    }
}

/// How a forest row reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowVerdict {
    Better,
    Worse,
    /// The interval holds zero, or too little data: no conclusion.
    Unclear,
    /// No interval at all (single runs): the estimate alone.
    Estimate,
}

impl RowVerdict {
    fn class(self) -> &'static str {
        match self {
            RowVerdict::Better => "better",
            RowVerdict::Worse => "worse",
            RowVerdict::Unclear => "unclear",
            RowVerdict::Estimate => "estimate",
        }
    }
    fn color(self) -> &'static str {
        match self {
            RowVerdict::Better => "#009E73",
            RowVerdict::Worse => "#D55E00",
            RowVerdict::Unclear | RowVerdict::Estimate => "#777777",
        }
    }
}

/// One row of a forest plot.
#[derive(Debug, Clone, PartialEq)]
pub struct ForestRow {
    pub label: String,
    pub estimate: f64,
    pub interval: Option<(f64, f64)>,
    pub verdict: RowVerdict,
    /// The numbers, written right of the plot, e.g. "+12.3% (+8.1 … +16.0) better".
    pub note: String,
}

/// A forest plot: rows of estimates with intervals against a zero line.
#[derive(Debug, Clone, PartialEq)]
pub struct Forest {
    pub title: String,
    pub x_label: String,
    pub rows: Vec<ForestRow>,
}

const FOREST_W: f64 = 760.0;
const FOREST_LEFT: f64 = 110.0;
/// The widest the label column grows to fit its longest label (issue 39: a fixed 110 px
/// cut `backend.KeepAlive` and `backend.KeepAliveTimeout` both to `backend.Keep…`).
const FOREST_LEFT_MAX: f64 = 280.0;
/// The notes' column.
const FOREST_NOTE: f64 = 250.0;
const FOREST_ROW: f64 = 22.0;

/// Draw a forest plot as an `<svg>` element with this id.
pub fn render_forest(id: &str, forest: &Forest) -> String {
    let top = 34.0;
    let bottom = 40.0;
    let height = top + FOREST_ROW * forest.rows.len().max(1) as f64 + bottom;
    let longest = forest
        .rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0);
    let left = (16.0 + CHAR_W * longest as f64).clamp(FOREST_LEFT, FOREST_LEFT_MAX);
    let plot_l = left;
    let plot_r = FOREST_W - FOREST_NOTE - 10.0;
    let values = forest
        .rows
        .iter()
        .flat_map(|r| {
            let (a, b) = r.interval.unwrap_or((r.estimate, r.estimate));
            [r.estimate, a, b]
        })
        .filter(|v| v.is_finite())
        .chain([0.0]);
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (lo, hi, ticks) = axis(lo, hi, 5);
    let px = |v: f64| plot_l + (v - lo) / (hi - lo) * (plot_r - plot_l);
    let base = top + FOREST_ROW * forest.rows.len().max(1) as f64;

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{}" class="chart forest" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {FOREST_W} {height}" width="{FOREST_W}" height="{height}" role="img" aria-label="{}">"#,
        escape(id),
        escape(&forest.title)
    );
    let _ = write!(
        s,
        r##"<title>{}</title><rect x="0" y="0" width="{FOREST_W}" height="{height}" fill="#ffffff"/><text x="10" y="15" font-size="14" font-weight="bold" fill="#222">{}</text>"##,
        escape(&forest.title),
        escape(&shorten(&forest.title, ((FOREST_W - 20.0) / 8.2) as usize))
    );
    let mut last_right = f64::NEG_INFINITY;
    for t in &ticks {
        let x = px(*t);
        let label = tick_label(*t);
        let w = CHAR_W * label.chars().count() as f64;
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{base:.1}" stroke="#eeeeee"/>"##
        );
        if x - w / 2.0 < last_right + 4.0 {
            continue;
        }
        last_right = x + w / 2.0;
        let _ = write!(
            s,
            r##"<text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#444">{}</text>"##,
            base + 15.0,
            label
        );
    }
    let zero = px(0.0);
    let _ = write!(
        s,
        r##"<line class="zero" x1="{zero:.1}" y1="{:.1}" x2="{zero:.1}" y2="{base:.1}" stroke="#333"/><line x1="{plot_l}" y1="{base:.1}" x2="{plot_r}" y2="{base:.1}" stroke="#444"/>"##,
        top - 4.0
    );
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#222">{}</text>"##,
        (plot_l + plot_r) / 2.0,
        height - 8.0,
        escape(&forest.x_label)
    );
    let label_chars = ((left - 16.0) / CHAR_W) as usize;
    let note_chars = ((FOREST_NOTE - 8.0) / CHAR_W) as usize;
    for (i, row) in forest.rows.iter().enumerate() {
        let y = top + FOREST_ROW * (i as f64 + 0.5);
        let color = row.verdict.color();
        let _ = write!(
            s,
            r##"<g class="row {}" data-row="{}"><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#222">{}</text>"##,
            row.verdict.class(),
            escape(&row.label),
            left - 10.0,
            y + 4.0,
            escape(&shorten_keeping_end(&row.label, label_chars))
        );
        if let Some((a, b)) = row.interval.filter(|(a, b)| a.is_finite() && b.is_finite()) {
            let _ = write!(
                s,
                r##"<line class="interval" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2.5"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="1.5"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="1.5"/>"##,
                px(a),
                px(b),
                px(a),
                y - 5.0,
                px(a),
                y + 5.0,
                px(b),
                y - 5.0,
                px(b),
                y + 5.0
            );
        }
        if row.estimate.is_finite() {
            let hollow = row.interval.is_none();
            let _ = write!(
                s,
                r##"<rect class="estimate" x="{:.1}" y="{:.1}" width="9" height="9" fill="{}" stroke="{color}" stroke-width="1.5"/>"##,
                px(row.estimate) - 4.5,
                y - 4.5,
                if hollow { "#ffffff" } else { color }
            );
        }
        let _ = write!(
            s,
            r##"<text class="note" x="{:.1}" y="{:.1}" font-size="11" fill="{}">{}</text></g>"##,
            FOREST_W - FOREST_NOTE,
            y + 4.0,
            if row.verdict == RowVerdict::Estimate {
                "#444"
            } else {
                color
            },
            escape(&shorten(&row.note, note_chars))
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
#[path = "dots_tests.rs"]
mod tests;
