//! Tests of the dot and forest plots (`dots`).

use super::*;

#[test]
fn dots_keep_their_styles_and_pairs_are_joined() {
    let mut chart = DotChart::new("workers", "workers", "req/s");
    chart.x_log = true;
    chart.legend = vec![
        (DotStyle::Filled, "met the SLOs".into()),
        (DotStyle::Hollow, "missed an SLO".into()),
        (DotStyle::Highlight, "the winner".into()),
    ];
    for (x, y, style) in [
        (1.0, 10.0, DotStyle::Hollow),
        (8.0, 40.0, DotStyle::Filled),
        (32.0, 55.0, DotStyle::Highlight),
    ] {
        chart.dots.push(Dot {
            x,
            y,
            style,
            title: format!("{x} → {y}"),
        });
    }
    chart.segments.push(Segment {
        from: (1.0, 10.0),
        to: (8.0, 40.0),
    });
    let svg = render_dots("d", &chart);
    assert!(svg.starts_with("<svg id=\"d\""), "{svg}");
    assert_eq!(svg.matches("class=\"dot hollow\"").count(), 1);
    assert_eq!(svg.matches("class=\"dot highlight\"").count(), 1);
    assert_eq!(svg.matches("class=\"pair\"").count(), 1);
    assert!(!svg.contains("NaN"));
    // the highlighted dot is drawn last, over the others
    assert!(svg.rfind("dot highlight") > svg.rfind("dot filled"));
}

#[test]
fn categories_that_do_not_fit_are_shortened() {
    let mut chart = DotChart::new("mpm", "mpm", "req/s");
    let names: Vec<String> = (0..8).map(|i| format!("a-long-category-{i}")).collect();
    chart.categories = Some(names);
    chart.dots.push(Dot {
        x: 0.0,
        y: 1.0,
        style: DotStyle::Filled,
        title: String::new(),
    });
    let svg = render_dots("c", &chart);
    assert!(svg.contains('…'), "{svg}");
    assert_eq!(shorten("abcdef", 4), "abc…");
    assert_eq!(shorten("abc", 4), "abc");
}

#[test]
fn the_axis_covers_the_data_in_whole_steps_and_no_more() {
    let (lo, hi, ticks) = axis(254.11, 9157.2, 4);
    assert_eq!((lo, hi), (0.0, 10_000.0));
    assert_eq!(ticks, vec![0.0, 5_000.0, 10_000.0]);
    let (lo, hi, _) = axis(-34.1, 51.7, 5);
    assert!(
        (-60.0..=-34.1).contains(&lo) && (51.7..80.0).contains(&hi),
        "{lo} {hi}"
    );
}

#[test]
fn forest_rows_show_intervals_and_a_zero_line() {
    let forest = Forest {
        title: "change".into(),
        x_label: "change (%)".into(),
        rows: vec![
            ForestRow {
                label: "requests/s".into(),
                estimate: 12.0,
                interval: Some((8.0, 16.0)),
                verdict: RowVerdict::Better,
                note: "+12.0% (+8.0 … +16.0) better".into(),
            },
            ForestRow {
                label: "p99 (ms)".into(),
                estimate: -3.0,
                interval: None,
                verdict: RowVerdict::Estimate,
                note: "-3.0%".into(),
            },
        ],
    };
    let svg = render_forest("f", &forest);
    assert_eq!(svg.matches("class=\"interval\"").count(), 1);
    assert_eq!(svg.matches("class=\"estimate\"").count(), 2);
    assert!(svg.contains("class=\"zero\""));
    assert!(svg.contains("data-row=\"p99 (ms)\""));
    assert!(!svg.contains("NaN"));
}

/// Sibling parameters keep the names that tell them apart: the label column grows to fit
/// them, and a name too long even then keeps its end.
#[test]
fn forest_labels_are_not_cut_into_ambiguity() {
    let row = |label: &str| ForestRow {
        label: label.into(),
        estimate: 5.0,
        interval: Some((1.0, 9.0)),
        verdict: RowVerdict::Better,
        note: "5%".into(),
    };
    let forest = Forest {
        title: "effects".into(),
        x_label: "spread (%)".into(),
        rows: vec![row("backend.KeepAlive"), row("backend.KeepAliveTimeout")],
    };
    let svg = render_forest("f", &forest);
    assert!(svg.contains(">backend.KeepAlive</text>"), "{svg}");
    assert!(svg.contains(">backend.KeepAliveTimeout</text>"), "{svg}");
    assert_eq!(
        shorten_keeping_end("frontend.open_file_cache_min_uses_and_more", 20),
        "…e_min_uses_and_more"
    );
}
