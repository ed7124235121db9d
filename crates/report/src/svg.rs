//! SVG line charts, written by hand as text: axes with round-number ticks, one polyline per
//! series, a legend, shaded bands (stalls) and labelled vertical markers (the knee).
//! No scripts, no fonts or styles fetched: the SVG is inlined into the HTML report.

use std::fmt::Write as _;

/// Escape text for XML / HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Colours for series, in order; readable on white and for common colour blindness
/// (the Okabe–Ito palette, https://jfly.uni-koeln.de/color/).
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];

/// One line on a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub color: String,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>, index: usize) -> Series {
        Series {
            name: name.into(),
            points,
            color: PALETTE[index % PALETTE.len()].to_string(),
        }
    }
}

/// A shaded x range, e.g. a stall.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub from_x: f64,
    pub to_x: f64,
    /// CSS class, e.g. "stall".
    pub class: String,
    pub label: String,
}

/// A labelled vertical line, e.g. the knee of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub class: String,
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log10,
}

/// A chart to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub bands: Vec<Band>,
    pub markers: Vec<Marker>,
    pub x_scale: Scale,
    /// Tick positions and labels for x; None for round-number ticks.
    pub x_ticks: Option<Vec<(f64, String)>>,
}

impl Chart {
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Chart {
        Chart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            bands: Vec::new(),
            markers: Vec::new(),
            x_scale: Scale::Linear,
            x_ticks: None,
        }
    }
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
/// Top margin: the title, then the first legend row below it (the legend's 11 px text
/// under the 14 px title, their boxes apart).
const TITLE_AND_LEGEND: f64 = 46.0;
/// The baseline of the first legend row.
const LEGEND_Y: f64 = 33.0;
/// Rough width of one character of the 11 px legend text (no font metrics without a
/// browser; a little generous so entries never overlap).
/// Measured in Chromium with Debian's default sans (DejaVu): up to ~6.8 px.
const LEGEND_CHAR_W: f64 = 7.0;

/// Where each legend entry goes: (x, row), flowed left to right by the width of its label
/// and wrapped at the right edge.
fn legend_layout<'a>(names: impl Iterator<Item = &'a str>) -> Vec<(f64, usize)> {
    let (mut x, mut row) = (LEFT, 0usize);
    let mut out = Vec::new();
    for name in names {
        let w = 18.0 + LEGEND_CHAR_W * name.chars().count() as f64 + 16.0;
        if x > LEFT && x + w > WIDTH - RIGHT {
            x = LEFT;
            row += 1;
        }
        out.push((x, row));
        x += w;
    }
    out
}
const BOTTOM: f64 = 48.0;
/// Vertical distance between stacked marker labels.
const MARKER_ROW: f64 = 14.0;

/// Where a marker's label goes: its anchor x, whether it is drawn left of the line (text
/// ending at x), and its row below the plot's top.
#[derive(Debug, Clone, Copy, PartialEq)]
struct MarkerLabel {
    x: f64,
    left: bool,
    row: usize,
}

/// Place the labels of vertical markers (x in pixels, label) so that none overlaps another
/// or runs past the plot: right of its line, or left of it near the right edge, and a row
/// lower when the row above is taken there (two markers 7/s apart, "capacity 161/s" and
/// "generator limit 168/s", used to print over each other).
fn marker_label_layout<'a>(labels: impl Iterator<Item = (f64, &'a str)>) -> Vec<MarkerLabel> {
    // the horizontal spans taken in each row so far
    let mut rows: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut out = Vec::new();
    for (x, label) in labels {
        let w = LEGEND_CHAR_W * label.chars().count() as f64;
        let left = x + 4.0 + w > WIDTH - RIGHT && x - 4.0 - w >= LEFT;
        let (from, to) = if left {
            (x - 4.0 - w, x - 4.0)
        } else {
            (x + 4.0, x + 4.0 + w)
        };
        let free =
            |spans: &Vec<(f64, f64)>| spans.iter().all(|&(a, b)| to + 4.0 <= a || from >= b + 4.0);
        let row = match rows.iter().position(free) {
            Some(r) => r,
            None => {
                rows.push(Vec::new());
                rows.len() - 1
            }
        };
        rows[row].push((from, to));
        out.push(MarkerLabel {
            x: if left { x - 4.0 } else { x + 4.0 },
            left,
            row,
        });
    }
    out
}

/// Round-number ticks covering [lo, hi]: steps of 1, 2 or 5 times a power of ten.
pub fn nice_ticks(lo: f64, hi: f64, wanted: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / wanted.max(1) as f64;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power);
    let first = (lo / step).ceil() * step;
    let mut ticks = Vec::new();
    let mut t = first;
    while t <= hi + step * 1e-9 && ticks.len() < 50 {
        ticks.push(t);
        t += step;
    }
    ticks
}

/// The y axis ticks from 0 for data up to `y_max`: round numbers whose last one is at or
/// above the data, so the top label is never below the highest point.
pub fn y_axis_ticks(y_max: f64) -> Vec<f64> {
    let top = if y_max.is_finite() && y_max > 0.0 {
        y_max
    } else {
        1.0
    };
    let mut ticks = nice_ticks(0.0, top, 5);
    if let [first, second, ..] = ticks[..] {
        let step = second - first;
        while ticks.last().is_some_and(|&t| t < top * (1.0 - 1e-12)) && ticks.len() < 60 {
            let next = ticks[ticks.len() - 1] + step;
            ticks.push(next);
        }
    }
    ticks
}

/// A number as a tick label: no needless decimals.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6).replace(".0M", "M")
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || (v.fract() == 0.0) {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

/// Draw a chart as an `<svg>` element. `id` becomes the element's id.
pub fn render_chart(id: &str, chart: &Chart) -> String {
    let tx = |x: f64| match chart.x_scale {
        Scale::Linear => x,
        Scale::Log10 => x.max(f64::MIN_POSITIVE).log10(),
    };
    let xs = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| tx(p.0)))
        .chain(chart.bands.iter().flat_map(|b| [tx(b.from_x), tx(b.to_x)]))
        .chain(chart.markers.iter().map(|m| tx(m.x)))
        .filter(|v| v.is_finite());
    let (mut x_lo, mut x_hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !x_lo.is_finite() {
        (x_lo, x_hi) = (0.0, 1.0);
    }
    if x_hi <= x_lo {
        x_hi = x_lo + 1.0;
    }
    let y_max = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let y_ticks = y_axis_ticks(y_max);
    let y_hi = y_ticks
        .last()
        .copied()
        .unwrap_or(1.0)
        .max(y_max)
        .max(f64::MIN_POSITIVE);
    let legend_names: Vec<String> = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, series)| {
            match chart.series[..i]
                .iter()
                .find(|other| !series.points.is_empty() && other.points == series.points)
            {
                Some(other) => format!("{} (same as {})", series.name, other.name),
                None => series.name.clone(),
            }
        })
        .collect();
    let legend = legend_layout(legend_names.iter().map(|s| s.as_str()));
    let legend_rows = legend.last().map(|&(_, row)| row + 1).unwrap_or(1);
    let top = TITLE_AND_LEGEND + 14.0 * (legend_rows - 1) as f64;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - top - BOTTOM;
    let px = |x: f64| LEFT + (tx(x) - x_lo) / (x_hi - x_lo) * plot_w;
    let py = |y: f64| top + plot_h - (y / y_hi) * plot_h;

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{}" class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{}">"#,
        escape(id),
        escape(&chart.title)
    );
    let _ = write!(s, "<title>{}</title>", escape(&chart.title));
    let _ = write!(
        s,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##
    );
    let _ = write!(
        s,
        r##"<text x="{LEFT}" y="15" font-size="14" font-weight="bold" fill="#222">{}</text>"##,
        escape(&chart.title)
    );
    for band in &chart.bands {
        let (a, b) = (px(band.from_x), px(band.to_x));
        let _ = write!(
            s,
            r##"<rect class="{}" x="{:.1}" y="{top}" width="{:.1}" height="{plot_h}" fill="#d62728" fill-opacity="0.18"><title>{}</title></rect>"##,
            escape(&band.class),
            a.min(b),
            (b - a).abs().max(2.0),
            escape(&band.label)
        );
    }
    // grid and y axis
    for t in &y_ticks {
        let y = py(*t);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#444">{}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            tick_label(*t)
        );
    }
    let x_ticks: Vec<(f64, String)> = match &chart.x_ticks {
        Some(t) => t.clone(),
        None => nice_ticks(x_lo, x_hi, 8)
            .into_iter()
            .map(|v| (v, tick_label(v)))
            .collect(),
    };
    for (v, label) in &x_ticks {
        let x = px(*v);
        if !(LEFT - 0.5..=WIDTH - RIGHT + 0.5).contains(&x) {
            continue;
        }
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#888"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle" fill="#444">{}</text>"##,
            top + plot_h,
            top + plot_h + 4.0,
            top + plot_h + 17.0,
            escape(label)
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{:.1}" stroke="#444"/><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#444"/>"##,
        top + plot_h,
        top + plot_h,
        WIDTH - RIGHT,
        top + plot_h
    );
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" fill="#222">{}</text>"##,
        LEFT + plot_w / 2.0,
        HEIGHT - 8.0,
        escape(&chart.x_label)
    );
    let _ = write!(
        s,
        r##"<text transform="translate(14 {:.1}) rotate(-90)" font-size="12" text-anchor="middle" fill="#222">{}</text>"##,
        top + plot_h / 2.0,
        escape(&chart.y_label)
    );
    let marker_xs: Vec<f64> = chart.markers.iter().map(|m| px(m.x)).collect();
    let placed = marker_label_layout(
        chart
            .markers
            .iter()
            .zip(&marker_xs)
            .map(|(m, &x)| (x, m.label.as_str())),
    );
    for ((marker, x), label) in chart.markers.iter().zip(marker_xs).zip(placed) {
        let _ = write!(
            s,
            r##"<g class="{}"><line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="#333" stroke-dasharray="5 4"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#333" text-anchor="{}" paint-order="stroke" stroke="#ffffff" stroke-width="3">{}</text></g>"##,
            escape(&marker.class),
            top + plot_h,
            label.x,
            top + 12.0 + MARKER_ROW * label.row as f64,
            if label.left { "end" } else { "start" },
            escape(&marker.label)
        );
    }
    for (i, series) in chart.series.iter().enumerate() {
        // A line identical to an earlier one would hide it: draw it dashed over the earlier
        // one and say so in the legend.
        let same_as = chart.series[..i]
            .iter()
            .find(|other| !series.points.is_empty() && other.points == series.points);
        let points: Vec<String> = series
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = write!(
            s,
            r#"<g class="series" data-series="{}"><polyline fill="none" stroke="{}" stroke-width="2"{} points="{}"/>"#,
            escape(&series.name),
            escape(&series.color),
            if same_as.is_some() {
                r#" stroke-dasharray="7 5""#
            } else {
                ""
            },
            points.join(" ")
        );
        if points.len() <= 40 {
            for p in &points {
                if let Some((x, y)) = p.split_once(',') {
                    let _ = write!(
                        s,
                        r#"<circle cx="{x}" cy="{y}" r="2.5" fill="{}"/>"#,
                        escape(&series.color)
                    );
                }
            }
        }
        s.push_str("</g>");
        // legend under the title, flowed left to right
        let (lx, row) = legend[i];
        let ly = LEGEND_Y + 14.0 * row as f64;
        let _ = write!(
            s,
            r##"<rect x="{lx:.1}" y="{:.1}" width="14" height="3" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="11" fill="#222">{}</text>"##,
            ly - 4.0,
            escape(&series.color),
            lx + 18.0,
            ly,
            escape(&legend_names[i])
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_entries_never_overlap_and_wrap() {
        let names = [
            "total (from intended start)",
            "service (from send)",
            "first byte",
            "connect",
            "a rather long name for a fifth series",
            "x",
        ];
        let layout = legend_layout(names.iter().copied());
        for (i, pair) in layout.windows(2).enumerate() {
            let ((x0, r0), (x1, r1)) = (pair[0], pair[1]);
            if r0 == r1 {
                let needed = 18.0 + LEGEND_CHAR_W * names[i].chars().count() as f64;
                assert!(x1 - x0 >= needed, "{} overlaps {}", names[i], names[i + 1]);
            } else {
                assert_eq!(x1, LEFT);
            }
        }
        assert!(
            layout.last().unwrap().1 >= 1,
            "six long names need a second row"
        );
    }

    #[test]
    fn marker_labels_close_together_are_stacked_and_kept_inside() {
        // capacity 161/s and generator limit 168/s on a 100..170 axis: 7/s apart
        let placed = marker_label_layout(
            [(640.0, "capacity 161/s"), (700.0, "generator limit 168/s")].into_iter(),
        );
        assert_ne!(placed[0].row, placed[1].row, "{placed:?}");
        // the second would run past the right edge: drawn left of its line
        assert!(placed[1].left, "{placed:?}");
        // far apart: one row
        let placed = marker_label_layout([(100.0, "knee"), (500.0, "another")].into_iter());
        assert_eq!((placed[0].row, placed[1].row), (0, 0));
    }

    #[test]
    fn ticks_are_round_numbers() {
        assert_eq!(
            nice_ticks(0.0, 10.0, 5),
            vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(nice_ticks(0.0, 0.9, 4), vec![0.0, 0.5]);
        assert_eq!(tick_label(25_000.0), "25k");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(2.5), "2.5");
    }

    #[test]
    fn chart_has_series_bands_markers_and_escapes_text() {
        let mut chart = Chart::new("a < b", "x", "y");
        chart.series.push(Series::new(
            "p99 & more",
            vec![(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)],
            0,
        ));
        chart.bands.push(Band {
            from_x: 1.0,
            to_x: 2.0,
            class: "stall".into(),
            label: "stall at 1 s".into(),
        });
        chart.markers.push(Marker {
            x: 1.5,
            class: "knee".into(),
            label: "knee".into(),
        });
        let svg = render_chart("c1", &chart);
        assert!(svg.starts_with("<svg id=\"c1\""));
        assert!(svg.ends_with("</svg>"));
        assert!(svg.contains("a &lt; b"));
        assert!(svg.contains("data-series=\"p99 &amp; more\""));
        assert!(svg.contains("class=\"stall\""));
        assert!(svg.contains("class=\"knee\""));
        assert_eq!(svg.matches("<circle").count(), 3);
    }

    #[test]
    fn empty_chart_still_draws() {
        let svg = render_chart("e", &Chart::new("nothing", "x", "y"));
        assert!(svg.contains("</svg>"));
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn y_axis_reaches_above_the_data() {
        // RSS ~15 MiB used to sit over a top label of 10
        for y_max in [
            14.9, 15.3, 0.9, 1.0, 7.0, 99.0, 101.0, 0.012, 123_456.0, 3.0,
        ] {
            let ticks = y_axis_ticks(y_max);
            let top = *ticks.last().unwrap();
            assert!(top >= y_max, "{y_max}: {ticks:?}");
            assert!(ticks.len() <= 12, "{y_max}: {ticks:?}");
        }
        assert_eq!(y_axis_ticks(14.9), vec![0.0, 5.0, 10.0, 15.0]);
        let empty = y_axis_ticks(0.0);
        assert_eq!(empty.len(), 6, "{empty:?}");
        assert!((empty[5] - 1.0).abs() < 1e-9, "{empty:?}");
        let mut chart = Chart::new("memory", "t", "MiB");
        chart
            .series
            .push(Series::new("RSS", vec![(0.0, 14.0), (1.0, 14.9)], 0));
        let svg = render_chart("m", &chart);
        assert!(svg.contains(">15</text>"), "{svg}");
    }

    #[test]
    fn identical_series_stay_visible() {
        let mut chart = Chart::new("memory", "t", "MiB");
        let points = vec![(0.0, 1.0), (1.0, 2.0)];
        chart.series.push(Series::new("RSS", points.clone(), 0));
        chart.series.push(Series::new("PSS", points, 1));
        chart
            .series
            .push(Series::new("other", vec![(0.0, 3.0), (1.0, 2.0)], 2));
        let svg = render_chart("m", &chart);
        assert_eq!(svg.matches("stroke-dasharray=\"7 5\"").count(), 1, "{svg}");
        assert!(svg.contains(">PSS (same as RSS)</text>"), "{svg}");
        assert!(svg.contains(">other</text>"));
    }
}
