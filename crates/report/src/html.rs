//! The self-contained HTML report: one file, no network (no CDN, fonts or scripts), inline
//! CSS and SVG plots drawn by `svg`. For one run: summary figures, the text summary, the
//! latency percentile curve, throughput / latency / errors over time with stalls shaded,
//! and the server samples when the result has them. Sweeps and comparisons reuse the shell
//! and the plots (see `sweep` and `compare`).

pub use crate::about::{stack_line, stack_settings, sweep_stack_line};
use crate::svg::{escape, render_chart, Band, Chart, Marker, Scale, Series};
use crate::units::{bytes, ctime_utc, ms, ms_f, percent};
use std::fmt::Write as _;
use webtune_model::{stall, IntervalSample, LatencyHistogram, RunResult, Stall};

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;\
margin:2em auto;max-width:820px;color:#222;padding:0 1em}\
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:.6em 0}td,th{padding:.2em .7em;text-align:right;\
border-bottom:1px solid #eee}th:first-child,td:first-child{text-align:left}\
pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:.85em}\
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}\
svg{max-width:100%;height:auto}.small-multiples{display:flex;flex-wrap:wrap;gap:0 1em}\
.small-multiples figure{flex:1 1 360px;max-width:100%}\
.bad{color:#b00020;font-weight:bold}.note{color:#555;font-size:.9em}\
.verdict{border:2px solid #888;border-radius:4px;padding:.3em 1em;margin:1em 0}\
.verdict.v-good{border-color:#2e7d32}.verdict.v-bad{border-color:#b00020}\
.verdict p{margin:.4em 0}.verdict .answer{font-size:1.1em}td.prose{min-width:14em;text-align:left}\
@media (max-width:640px){td,th{padding:.2em .3em;overflow-wrap:anywhere}\
table{font-size:.85em}}";

/// Wrap a body in the page shell (inline style, no external resources).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"generator\" content=\"webtune\">\n<title>{}</title>\n<style>{STYLE}</style>\n\
         </head>\n<body>\n{body}\n</body>\n</html>\n",
        escape(title)
    )
}

/// A `<figure>` holding an SVG drawn elsewhere (`dots`) and a caption.
pub fn figure_svg(id: &str, svg: &str, caption: &str) -> String {
    format!(
        "<figure id=\"{}\">{svg}<figcaption>{}</figcaption></figure>\n",
        escape(id),
        escape(caption)
    )
}

/// A `<figure>` holding an SVG chart and a caption.
pub fn figure(id: &str, chart: &Chart, caption: &str) -> String {
    format!(
        "<figure id=\"{}\">{}<figcaption>{}</figcaption></figure>\n",
        escape(id),
        render_chart(&format!("{id}-svg"), chart),
        escape(caption)
    )
}

/// The stalls of a run (DESIGN.md's stall; the rule is `webtune_model::stall`'s): the
/// engine's own (100 ms granularity) when it recorded any, otherwise the stalled intervals
/// of the timeline as plotted (results saved before the engine kept stalls, or merged ones;
/// a run's last few milliseconds are no stall), open connections being what an interval
/// says of outstanding work. Stalled intervals that follow one another are one stall, as
/// the engine joins its slots (`stall::runs`).
pub fn stalls(result: &RunResult) -> Vec<Stall> {
    if !result.stalls.is_empty() {
        return result.stalls.clone();
    }
    let plotted = plotted_intervals(&result.timeline);
    let pieces = plotted
        .iter()
        .map(|s| (s.open_connections > 0, s.responses));
    stall::runs(pieces)
        .into_iter()
        .map(|(first, n)| {
            let run = &plotted[first..first + n];
            Stall {
                start_s: run[0].start_s,
                length_s: run.iter().map(|s| s.length_s).sum(),
            }
        })
        .collect()
}

/// Percentiles plotted on the curve; x is "nines" (-log10(1 - p)), so 90 %, 99 %, 99.9 %
/// are evenly spaced, as in HdrHistogram's percentile plots.
const CURVE_PERCENTILES: [f64; 22] = [
    0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 75.0, 80.0, 85.0, 90.0, 93.0, 95.0, 97.0, 98.0,
    99.0, 99.5, 99.9, 99.95, 99.99, 99.999,
];

fn nines(p: f64) -> f64 {
    -(1.0 - p / 100.0).max(1e-9).log10()
}

/// Points (nines, ms) of a histogram's percentile curve, ending at its max.
pub fn percentile_curve(h: &LatencyHistogram) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut points: Vec<(f64, f64)> = CURVE_PERCENTILES
        .iter()
        .map(|&p| (nines(p), h.percentile(p) as f64 / 1000.0))
        .collect();
    points.push((5.6, h.max() as f64 / 1000.0));
    points
}

/// A percentile-curve chart of several histograms (one series each).
pub fn percentile_chart(title: &str, histograms: &[(String, &LatencyHistogram)]) -> Chart {
    let mut chart = Chart::new(title, "percentile", "latency (ms)");
    chart.x_ticks = Some(vec![
        (0.0, "0%".into()),
        (1.0, "90%".into()),
        (2.0, "99%".into()),
        (3.0, "99.9%".into()),
        (4.0, "99.99%".into()),
        (5.0, "99.999%".into()),
        (5.6, "max".into()),
    ]);
    for (i, (name, h)) in histograms.iter().enumerate() {
        if !h.is_empty() {
            chart
                .series
                .push(Series::new(name.clone(), percentile_curve(h), i));
        }
    }
    chart
}

fn stall_bands(result: &RunResult) -> Vec<Band> {
    stalls(result)
        .into_iter()
        .map(|s| Band {
            from_x: s.start_s,
            to_x: s.start_s + s.length_s,
            class: "stall".into(),
            label: format!(
                "stall: requests outstanding and none finished from {:.1} s to {:.1} s",
                s.start_s,
                s.start_s + s.length_s
            ),
        })
        .collect()
}

/// Where the measured window begins and ends on the over-time charts: the warm-up (and
/// cool-down) are in the time series but out of the summary, so the charts say where
/// (issue 39).
fn window_markers(result: &RunResult) -> Vec<Marker> {
    let spec = &result.spec;
    let window = spec.measurement_window();
    let mut markers = Vec::new();
    if spec.warmup_s > 0.0 {
        markers.push(Marker {
            x: window.from_s,
            class: "warmup".into(),
            label: "warm-up ends".into(),
        });
    }
    if spec.cooldown_s > 0.0 && window.to_s.is_finite() {
        markers.push(Marker {
            x: window.to_s,
            class: "cooldown".into(),
            label: "cool-down starts".into(),
        });
    }
    markers
}

/// The timeline as plotted. A run's last interval is often a few milliseconds long: the
/// responses still in flight at the deadline. Its handful of responses over so short a time
/// is no throughput to speak of, and plotted on its own it shows a collapse at the end of
/// every run (and a zig-zag where `--repeat` runs follow each other). So an interval shorter
/// than half the others that directly follows another is folded into it: counts summed,
/// lengths added (rates stay over the real time), percentiles those of the busier part.
pub fn plotted_intervals(timeline: &[IntervalSample]) -> Vec<IntervalSample> {
    let nominal = timeline.iter().map(|s| s.length_s).fold(0.0f64, f64::max);
    let mut out: Vec<IntervalSample> = Vec::with_capacity(timeline.len());
    for s in timeline {
        let short = s.length_s < nominal / 2.0;
        // Folded when it follows the previous interval within half an interval (issue 39: a
        // last interval a hair off its predecessor's end was plotted as 270/s from one
        // response).
        match out.last_mut() {
            Some(prev)
                if short
                    && s.start_s >= prev.start_s
                    && (prev.start_s + prev.length_s - s.start_s).abs() < nominal / 2.0 =>
            {
                if s.responses > prev.responses {
                    (prev.p50_us, prev.p90_us, prev.p99_us) = (s.p50_us, s.p90_us, s.p99_us);
                }
                prev.max_us = prev.max_us.max(s.max_us);
                prev.length_s += s.length_s;
                prev.responses += s.responses;
                prev.errors.merge(&s.errors);
                prev.bytes += s.bytes;
                prev.open_connections = s.open_connections;
            }
            _ => out.push(s.clone()),
        }
    }
    out
}

fn timeline_points(result: &RunResult, value: impl Fn(&IntervalSample) -> f64) -> Vec<(f64, f64)> {
    plotted_intervals(&result.timeline)
        .iter()
        .map(|s| (s.start_s + s.length_s / 2.0, value(s)))
        .collect()
}

fn per_second(count: u64, length_s: f64) -> f64 {
    if length_s > 0.0 {
        count as f64 / length_s
    } else {
        0.0
    }
}

/// Throughput per interval, stalls shaded.
pub fn throughput_chart(result: &RunResult) -> Chart {
    let mut chart = Chart::new("Throughput over time", "time (s)", "responses/s");
    chart.series.push(Series::new(
        "responses/s",
        timeline_points(result, |s| per_second(s.responses, s.length_s)),
        0,
    ));
    chart.bands = stall_bands(result);
    chart.markers = window_markers(result);
    chart
}

/// p50 / p90 / p99 per interval, stalls shaded. Stalled intervals have no latency and are
/// left out of the lines.
pub fn latency_over_time_chart(result: &RunResult) -> Chart {
    let mut chart = Chart::new("Latency over time", "time (s)", "latency (ms)");
    let intervals = plotted_intervals(&result.timeline);
    let live: Vec<&IntervalSample> = intervals.iter().filter(|s| s.responses > 0).collect();
    let points = |f: fn(&IntervalSample) -> u64| -> Vec<(f64, f64)> {
        live.iter()
            .map(|s| (s.start_s + s.length_s / 2.0, f(s) as f64 / 1000.0))
            .collect()
    };
    chart
        .series
        .push(Series::new("p50", points(|s| s.p50_us), 0));
    chart
        .series
        .push(Series::new("p90", points(|s| s.p90_us), 1));
    chart
        .series
        .push(Series::new("p99", points(|s| s.p99_us), 2));
    chart.bands = stall_bands(result);
    chart.markers = window_markers(result);
    chart
}

/// Errors per interval (all kinds), stalls shaded.
pub fn errors_over_time_chart(result: &RunResult) -> Chart {
    let mut chart = Chart::new("Errors over time", "time (s)", "errors/s");
    chart.series.push(Series::new(
        "errors/s",
        timeline_points(result, |s| per_second(s.errors.total(), s.length_s)),
        1,
    ));
    chart.bands = stall_bands(result);
    chart.markers = window_markers(result);
    chart
}

fn summary_table(r: &RunResult) -> String {
    let t = &r.latency.total;
    let rows: Vec<(&str, &str, String)> = vec![
        (
            "requests_per_s",
            "Requests/s",
            format!("{:.2}", r.requests_per_s),
        ),
        ("responses", "Responses", r.responses.to_string()),
        (
            "errors",
            "Errors",
            format!("{} ({})", r.errors.total(), percent(r.error_ratio())),
        ),
        (
            "length_varies",
            "Length varies (not an error)",
            r.length_varies.to_string(),
        ),
        ("p50_ms", "Latency p50 (ms)", ms(t.p50_us)),
        ("p99_ms", "Latency p99 (ms)", ms(t.p99_us)),
        ("max_ms", "Latency max (ms)", ms(t.max_us)),
        ("mean_ms", "Latency mean (ms)", ms_f(t.mean_us)),
        (
            "transfer",
            "Received",
            format!("{}/s", bytes(r.bytes_per_s)),
        ),
        (
            "connections",
            "Connections",
            format!("{} ({} opened)", r.spec.connections, r.connections_opened),
        ),
        ("duration_s", "Measured (s)", format!("{:.2}", r.duration_s)),
        ("stalls", "Stalls", stalls(r).len().to_string()),
    ];
    let mut s = String::from("<table id=\"summary\">\n");
    for (key, label, value) in rows {
        let _ = writeln!(
            s,
            "<tr><th>{}</th><td data-figure=\"{key}\">{}</td></tr>",
            escape(label),
            escape(&value)
        );
    }
    s.push_str("</table>\n");
    s
}

/// The body (no page shell) of one run's report; `prefix` keeps ids unique when several
/// runs share a page.
pub fn run_section(result: &RunResult, prefix: &str) -> String {
    let mut body = String::new();
    let spec = &result.spec;
    let what = match &spec.scenario {
        // a scenario's requests go to several URLs with their own methods
        Some(_) => escape(&crate::text::headline(result)),
        None => format!(
            "{} <code>{}</code>",
            escape(&spec.method),
            escape(&spec.url)
        ),
    };
    let _ = writeln!(
        body,
        "<p>{what} — {} connections, started {} UTC, {}.</p>",
        spec.connections,
        escape(&ctime_utc(result.started_at_unix_ms)),
        escape(&result.tool)
    );
    if let Some(stack) = stack_line(result) {
        let _ = writeln!(body, "<p id=\"{prefix}load\">{}</p>", escape(&stack));
    }
    if result.interrupted {
        body.push_str("<p class=\"bad\" id=\"interrupted\">INTERRUPTED — partial result</p>\n");
    }
    if result.validity.client_limited {
        let _ = writeln!(
            body,
            "<p class=\"bad\" id=\"{prefix}validity\">WARNING: the generator was the limit — these \
             numbers describe the client, not the server: {}</p>",
            escape(&result.validity.reasons.join("; "))
        );
    }
    body.push_str("<h2>Summary</h2>\n");
    body.push_str(&summary_table(result));
    let _ = writeln!(
        body,
        "<pre id=\"{prefix}text-summary\">{}</pre>",
        escape(&crate::text::render_text(result))
    );
    body.push_str("<h2>Latency percentiles</h2>\n");
    let h = &result.histograms;
    let open_loop = !h.service.is_empty();
    let mut curves: Vec<(String, &LatencyHistogram)> = vec![(
        if open_loop {
            "total (from intended start)".to_string()
        } else {
            "total".to_string()
        },
        &h.total,
    )];
    if open_loop {
        curves.push(("service (from send)".to_string(), &h.service));
    }
    curves.push(("first byte".to_string(), &h.first_byte));
    curves.push(("connect".to_string(), &h.connect));
    if let Some(probe) = &result.probe {
        curves.push(("probe".to_string(), &probe.histogram));
    }
    let caption = if open_loop {
        "Latency at each percentile; the x axis spreads the tail (90%, 99%, 99.9% … evenly \
         spaced). Open loop: total is measured from each request's intended start (what a user \
         arriving on schedule waited), service from its actual send."
    } else {
        "Latency at each percentile; the x axis spreads the tail (90%, 99%, 99.9% … evenly spaced)."
    };
    body.push_str(&figure(
        &format!("{prefix}plot-latency-percentiles"),
        &percentile_chart("Latency by percentile", &curves),
        caption,
    ));
    if !result.by_name.is_empty() {
        let named: Vec<(String, &LatencyHistogram)> = result
            .by_name
            .iter()
            .map(|(name, n)| (name.clone(), &n.histogram))
            .collect();
        body.push_str(&figure(
            &format!("{prefix}plot-by-name"),
            &percentile_chart("Latency by percentile, per request name", &named),
            "Total latency of each request name of the scenario.",
        ));
    }
    body.push_str(&crate::journeys::html_table(result, prefix));
    let walks = crate::journeys::walk_curves(result);
    if !walks.is_empty() {
        body.push_str(&figure(
            &format!("{prefix}plot-by-journey"),
            &percentile_chart("Walk time by percentile, per journey", &walks),
            "Time of each completed walk, its first step's start to its last step's answer (think times included).",
        ));
    }
    body.push_str("<h2>Over time</h2>\n");
    if result.timeline.is_empty() {
        body.push_str("<p class=\"note\">This result has no time series.</p>\n");
    } else {
        let stall_list = stalls(result);
        let stall_note = if stall_list.is_empty() {
            "No stalls.".to_string()
        } else {
            format!(
                "{} stall(s), shaded red: requests outstanding and none completed.",
                stall_list.len()
            )
        };
        body.push_str(&figure(
            &format!("{prefix}plot-throughput"),
            &throughput_chart(result),
            &format!("Responses per second in each interval. {stall_note}"),
        ));
        body.push_str(&figure(
            &format!("{prefix}plot-latency-over-time"),
            &latency_over_time_chart(result),
            "p50, p90 and p99 of the responses completed in each interval.",
        ));
        body.push_str(&figure(
            &format!("{prefix}plot-errors-over-time"),
            &errors_over_time_chart(result),
            "Failed requests per second in each interval (all kinds).",
        ));
        if !stall_list.is_empty() {
            let _ = writeln!(body, "<ul id=\"{prefix}stalls\">");
            for s in stall_list {
                let _ = writeln!(
                    body,
                    "<li class=\"stall\">stall from {:.1} s to {:.1} s: requests outstanding, none finished</li>",
                    s.start_s,
                    s.start_s + s.length_s
                );
            }
            body.push_str("</ul>\n");
        }
    }
    if let Some(server) = &result.server {
        body.push_str("<h2>Server samples</h2>\n");
        let _ = writeln!(
            body,
            "<p id=\"{prefix}server-summary\">{} ({}): {} samples every {} ms on {} CPUs; the \
             sampler itself used {:.2} s of CPU.</p>",
            escape(&server.target),
            escape(&server.selector),
            server.samples.len(),
            server.interval_ms,
            server.cpu_count,
            server.sampler_cpu_s
        );
        for d in &server.deaths {
            let when = if d.t_s > 0.0 {
                format!("by {:.2} s into the run", d.t_s)
            } else {
                "before the load began".to_string()
            };
            let _ = writeln!(
                body,
                "<p class=\"bad\" id=\"{prefix}server-died-{}\">{} main process (pid {}) \
                 died{}{}, {when}: the results describe a broken stack.</p>",
                d.pid,
                escape(&d.process),
                d.pid,
                if d.how.is_empty() { "" } else { ": " },
                escape(&d.how)
            );
        }
        if !server.parameters.is_empty() {
            let _ = writeln!(
                body,
                "<table id=\"{prefix}server-parameters\"><tr><th>parameter</th><th>value</th><th></th></tr>"
            );
            for (name, value) in &server.parameters {
                let set = server
                    .parameters_set
                    .iter()
                    .any(|s| s == name || s.split_once('=').is_some_and(|(n, _)| n == name));
                let _ = writeln!(
                    body,
                    "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(name),
                    escape(value),
                    if set { "set" } else { "default" }
                );
            }
            body.push_str("</table>\n");
        }
        let plots = crate::server_plots::server_plots(server);
        if plots.is_empty() {
            body.push_str("<p class=\"note\" id=\"server-samples-empty\">The server was sampled, but no sample was taken.</p>\n");
        }
        for plot in plots {
            let mut chart = Chart::new(plot.title, "time since sampling began (s)", plot.y_label);
            chart.series = plot.series;
            body.push_str(&figure(
                &format!("{prefix}plot-server-{}", plot.id),
                &chart,
                plot.caption,
            ));
        }
    }
    body
}

/// What a lab run loaded, for the page's header: "nginx (use=poll)", the stack and the
/// parameters set on it; None for a run without the lab's server samples.
pub fn stack_words(result: &RunResult) -> Option<String> {
    let server = result.server.as_ref()?;
    if server.target.is_empty() {
        return None;
    }
    let set: Vec<String> = server
        .parameters_set
        .iter()
        .map(|name| match server.parameters.get(name) {
            Some(value) if !name.contains('=') => format!("{name}={value}"),
            _ => name.clone(),
        })
        .collect();
    Some(if set.is_empty() {
        server.target.clone()
    } else {
        format!("{} ({})", server.target, set.join(" "))
    })
}

/// The full HTML report of one run; a lab run's names its stack in the header.
pub fn render_html(result: &RunResult) -> String {
    let header = match stack_words(result) {
        Some(stack) => format!(
            "<h1>webtune report: <span id=\"stack\">{}</span></h1>",
            escape(&stack)
        ),
        None => "<h1>webtune report</h1>".to_string(),
    };
    let body = format!("{header}\n{}", run_section(result, ""));
    let title = match stack_words(result) {
        Some(stack) => format!(
            "webtune report — {stack} — {}",
            crate::text::headline(result)
        ),
        None => format!("webtune report — {}", crate::text::headline(result)),
    };
    page(&title, &body)
}

/// Used by sweep / compare pages: x values on a log scale when the levels span a lot.
pub fn level_scale(levels: &[f64]) -> Scale {
    let lo = levels.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = levels.iter().copied().fold(0.0, f64::max);
    if lo > 0.0 && hi / lo >= 16.0 {
        Scale::Log10
    } else {
        Scale::Linear
    }
}

#[cfg(test)]
#[path = "html_tests.rs"]
mod tests;
