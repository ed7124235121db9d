//! Tests of the run page (`html`), kept apart to keep `html.rs` short.

use super::*;
use webtune_testkit::results::synthetic_result;

#[test]
fn report_is_self_contained_with_every_plot() {
    let r = synthetic_result(900, &[800, 1_500, 9_000]);
    let html = render_html(&r);
    assert!(html.starts_with("<!DOCTYPE html>"));
    for id in [
        "plot-latency-percentiles",
        "plot-throughput",
        "plot-latency-over-time",
        "plot-errors-over-time",
        "summary",
        "stalls",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "missing {id}");
    }
    assert!(html.contains("class=\"stall\""));
    assert!(!html.contains("<script"));
    assert!(!html.contains("src=\"http"));
    assert!(!html.contains("href=\"http"));
    assert!(!html.contains("NaN"));
    assert!(!html.contains("server-samples"));
}

fn interval(start_s: f64, length_s: f64, responses: u64) -> IntervalSample {
    IntervalSample {
        start_s,
        length_s,
        responses,
        open_connections: 2,
        p50_us: 1_000,
        ..IntervalSample::default()
    }
}

#[test]
fn rates_are_over_each_intervals_real_length_and_the_last_ms_do_not_collapse() {
    let mut r = synthetic_result(100, &[1_000]);
    // 1000/s for two seconds, the deadline's in-flight responses in the last 4 ms
    r.timeline = vec![
        interval(0.0, 1.0, 1_000),
        interval(1.0, 1.0, 1_000),
        interval(2.0, 0.004, 2),
    ];
    let points = &throughput_chart(&r).series[0].points;
    assert_eq!(points.len(), 2, "{points:?}");
    assert_eq!(points[0], (0.5, 1_000.0));
    let (x, rate) = points[1];
    assert!((x - 1.502).abs() < 1e-9, "{x}");
    assert!((rate - 1_002.0 / 1.004).abs() < 1e-9, "{rate}");
    // a short last interval that is not a tail (a -n run's last 0.6 s) is over 0.6 s
    r.timeline = vec![interval(0.0, 1.0, 1_000), interval(1.0, 1.0, 1_000)];
    r.timeline.push(interval(2.0, 0.6, 600));
    let points = &throughput_chart(&r).series[0].points;
    assert_eq!(points[2], (2.3, 1_000.0));
    // nothing to fold: a single short run keeps its one interval
    r.timeline = vec![interval(0.0, 0.3, 30)];
    assert_eq!(throughput_chart(&r).series[0].points, vec![(0.15, 100.0)]);
    // a zero-response tail is no stall
    r.stalls.clear();
    r.timeline = vec![interval(0.0, 1.0, 1_000), interval(1.0, 0.002, 0)];
    assert!(stalls(&r).is_empty());
}

/// Issue 36: one definition of a stall. A silence over three intervals of a result without
/// the engine's stall list is one stall of three seconds, as the engine would have found it
/// over its slots, not three stalls.
#[test]
fn a_silence_over_several_intervals_is_one_stall() {
    let mut r = synthetic_result(100, &[1_000]);
    r.stalls.clear();
    r.timeline = (0..6)
        .map(|i| interval(i as f64, 1.0, if (2..5).contains(&i) { 0 } else { 500 }))
        .collect();
    let found = stalls(&r);
    assert_eq!(
        found,
        vec![Stall {
            start_s: 2.0,
            length_s: 3.0
        }]
    );
    // With no connection open, a quiet interval waits on nothing: no stall.
    for s in &mut r.timeline {
        s.open_connections = 0;
    }
    assert!(stalls(&r).is_empty());
}

#[test]
fn repeats_follow_each_other_without_zig_zag() {
    let run = |n: u64| {
        let mut r = synthetic_result(n, &[1_000]);
        r.stalls.clear();
        r.duration_s = 2.003;
        r.timeline = vec![
            interval(0.0, 1.0, 1_000),
            interval(1.0, 1.0, 1_000),
            interval(2.0, 0.003, 1),
        ];
        r
    };
    let merged = crate::with_repeats(vec![run(10), run(10), run(10)]).unwrap();
    let points = &throughput_chart(&merged).series[0].points;
    assert_eq!(points.len(), 6, "{points:?}");
    for &(_, rate) in points {
        assert!((rate - 1_000.0).abs() < 5.0, "{points:?}");
    }
    let latency = latency_over_time_chart(&merged);
    assert_eq!(latency.series[0].points.len(), 6);
}

#[test]
fn a_lab_runs_header_names_its_stack() {
    let mut r = synthetic_result(100, &[1_000]);
    assert!(render_html(&r).contains("<h1>webtune report</h1>"));
    let mut server = webtune_testkit::results::synthetic_server_samples(2);
    server.parameters.insert("use".into(), "poll".into());
    server.parameters.insert("sendfile".into(), "on".into());
    server.parameters_set = vec!["use".into()];
    r.server = Some(server);
    let html = render_html(&r);
    assert!(
        html.contains("<h1>webtune report: <span id=\"stack\">nginx (use=poll)</span></h1>"),
        "{html}"
    );
    assert!(html.contains("<title>webtune report — nginx (use=poll) — "));
}

#[test]
fn server_samples_are_plotted_when_present() {
    let mut r = synthetic_result(100, &[1_000]);
    r.server = Some(webtune_model::ServerSamples::default());
    let html = render_html(&r);
    assert!(html.contains("Server samples"));
    assert!(html.contains("server-samples-empty"));
    let mut server = webtune_model::ServerSamples::default();
    server.samples.push(webtune_model::server::ServerSample {
        t_s: 1.0,
        length_s: 1.0,
        ..Default::default()
    });
    server.parameters.insert("max_clients".into(), "4".into());
    server.parameters.insert("keepalive".into(), "on".into());
    server.parameters_set = vec!["max_clients".into()];
    server.deaths.push(webtune_model::server::ProcessDeath {
        process: "apache2".into(),
        pid: 4123,
        t_s: 1.5,
        how: "killed by SIGKILL".into(),
    });
    r.server = Some(server);
    let html = render_html(&r);
    assert!(
        html.contains("apache2 main process (pid 4123) died: killed by SIGKILL, by 1.50 s"),
        "{html}"
    );
    assert!(html.contains("<tr><td>max_clients</td><td>4</td><td>set</td></tr>"));
    assert!(html.contains("<tr><td>keepalive</td><td>on</td><td>default</td></tr>"));
    for id in [
        "plot-server-cpu",
        "plot-server-memory",
        "plot-server-tcp",
        "server-summary",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "missing {id}");
    }
}

#[test]
fn stall_is_outstanding_with_nothing_completed() {
    let mut r = synthetic_result(900, &[1_000]);
    let s = stalls(&r);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].start_s, 6.0);
    // the engine's own finer stalls win when present
    r.stalls = vec![
        Stall {
            start_s: 2.3,
            length_s: 0.4,
        },
        Stall {
            start_s: 6.0,
            length_s: 1.0,
        },
    ];
    assert_eq!(stalls(&r), r.stalls);
    let html = render_html(&r);
    assert!(html.contains("stall from 2.3 s to 2.7 s"));
    assert_eq!(html.matches("<rect class=\"stall\"").count(), 2 * 3);
}

#[test]
fn open_loop_service_probe_names_and_validity_are_shown() {
    let mut r = synthetic_result(300, &[2_000, 9_000]);
    for v in [1_000, 1_500, 2_000] {
        r.histograms.service.record(v);
    }
    let mut probe = webtune_model::NamedResult::default();
    probe.histogram.record(3_000);
    r.probe = Some(probe.clone());
    r.by_name.insert("topic_list".into(), probe);
    r.validity.client_limited = true;
    r.validity.reasons = vec!["generator CPU 98% busy".into()];
    let html = render_html(&r);
    assert!(html.contains("data-series=\"service (from send)\""));
    assert!(html.contains("data-series=\"total (from intended start)\""));
    assert!(html.contains("data-series=\"probe\""));
    assert!(html.contains("id=\"plot-by-name\""));
    assert!(html.contains("data-series=\"topic_list\""));
    assert!(html.contains("id=\"validity\""));
    assert!(html.contains("generator CPU 98% busy"));
}

#[test]
fn journeys_get_a_table_and_a_walk_time_chart() {
    let mut r = synthetic_result(100, &[1_000]);
    let mut j = webtune_model::JourneyResult {
        completed: 4,
        ..Default::default()
    };
    j.histogram.record(40_000);
    j.failed_at("login", webtune_model::ErrorKind::Extract);
    j.finish();
    r.by_journey.insert("posters".into(), j);
    let html = render_html(&r);
    assert!(html.contains("<table id=\"journeys\">"), "{html}");
    assert!(html.contains("id=\"plot-by-journey\""));
    assert!(html.contains("data-series=\"posters\""));
    assert!(html.contains("login: 1 journey step extracted nothing"));
    let text = crate::text::render_text(&r);
    assert!(text.contains("Per journey"), "{text}");
    assert!(text.contains("posters ended at login"), "{text}");
}

/// A lab page says its stack, what differs from the defaults and the load; the over-time
/// charts mark where the warm-up ends; a last sliver a hair off its predecessor's end is
/// folded into it, not plotted as a rate of its own (issue 39).
#[test]
fn a_lab_page_says_stack_settings_load_and_marks_the_warm_up() {
    let mut r = synthetic_result(100, &[1_000]);
    r.spec.connections = 20;
    r.spec.stop = webtune_model::StopCondition::Duration { seconds: 10.0 };
    r.spec.warmup_s = 2.0;
    let mut server = webtune_testkit::results::synthetic_server_samples(2);
    server.parameters.insert("use".into(), "poll".into());
    server.parameters_set = vec!["use".into()];
    r.server = Some(server);
    let html = render_html(&r);
    assert!(
        html.contains("Stack: nginx with the defaults but use=poll. Load: 20 connections, for 10 s (the first 2 s left out of the figures)."),
        "{html}"
    );
    assert_eq!(
        sweep_stack_line(&r, "1, 4 connections").unwrap(),
        "Stack: nginx with the defaults but use=poll. Load: each level (1, 4 connections) for 10 s (the first 2 s left out of the figures)."
    );
    let chart = throughput_chart(&r);
    assert_eq!(chart.markers.len(), 1);
    assert_eq!(chart.markers[0].x, 2.0);
    assert_eq!(chart.markers[0].label, "warm-up ends");
    assert_eq!(latency_over_time_chart(&r).markers.len(), 1);
    r.timeline = vec![
        interval(0.0, 1.0, 1_000),
        interval(1.0, 1.0, 1_000),
        interval(2.0012, 0.0037, 1),
    ];
    let points = &throughput_chart(&r).series[0].points;
    assert_eq!(points.len(), 2, "{points:?}");
    assert!(points.iter().all(|&(_, rate)| rate < 1_010.0), "{points:?}");
}
