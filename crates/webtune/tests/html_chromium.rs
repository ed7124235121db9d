//! The HTML reports in a real browser: Debian's `chromium`, headless, loads each report
//! from a file with the network cut off (every host name resolves to nothing), the test
//! reads the DOM back (`--dump-dom`) and checks that the plots and figures are there, and
//! a screenshot is taken. Each page (run, lab run, sweep, capacity, compare, tune) is also
//! laid out at two window widths with a measuring script added to a copy of it (the pages
//! themselves have none): no two labels of a plot overlap, no label leaves its plot, the
//! page is no wider than the window and no box cuts its text off.
//!
//! Needs the `chromium` package (apt-get install -y chromium). Without it the test fails
//! and says so, unless the run opts out with WEBTUNE_SKIP=browser (or WEBTUNE_SKIP_BROWSER=1).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webtune_model::sweep::{SweepLevel, SweepResult, SweepVariable};
use webtune_testkit::results::{synthetic_result, synthetic_result_without_stall};

const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

fn browser() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| {
            std::env::var_os("PATH")
                .map(|p| {
                    std::env::split_paths(&p)
                        .map(|d| d.join(name))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .find(|p| p.is_file())
}

/// The browser, or None when the run opts out of it; panics with the reason otherwise.
fn browser_or_skip() -> Option<PathBuf> {
    let found = browser();
    if found.is_none() {
        support::opt_out::opt_out(
            "browser",
            "chromium is not installed: the HTML report cannot be checked in a browser",
        );
    }
    found
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("webtune-html-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Run headless chromium on a file with a fresh profile; returns stdout.
fn chromium(browser: &Path, work: &Path, extra: &[String], page: &Path) -> String {
    let profile = work.join(format!("profile-{}", extra.len()));
    let out_path = work.join(format!("chromium-{}.out", extra.len()));
    let out_file = std::fs::File::create(&out_path).expect("output file");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdout(out_file)
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > BROWSER_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within {BROWSER_TIMEOUT:?}");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => panic!("waiting for chromium: {e}"),
        }
    }
    std::fs::read_to_string(&out_path).unwrap_or_default()
}

fn webtune(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_webtune"))
        .args(args)
        .output()
        .expect("webtune runs");
    assert!(
        out.status.success(),
        "webtune {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The text of the element with this id (crude: from its opening tag to the matching
/// closing tag of the same name, enough for the report's flat structure).
fn element<'a>(dom: &'a str, tag: &str, id: &str) -> &'a str {
    let open = format!("<{tag} id=\"{id}\"");
    let start = dom
        .find(&open)
        .unwrap_or_else(|| panic!("no <{tag} id={id:?}> in the DOM"));
    let close = format!("</{tag}>");
    let end = dom[start..]
        .find(&close)
        .map(|e| start + e + close.len())
        .unwrap_or(dom.len());
    &dom[start..end]
}

fn assert_plot(dom: &str, id: &str) {
    let fig = element(dom, "figure", id);
    assert!(fig.contains("<svg"), "{id}: no svg");
    assert!(fig.contains("<polyline"), "{id}: no line");
    assert!(fig.contains("<figcaption>"), "{id}: no caption");
}

fn assert_self_contained(html: &str) {
    assert!(
        !html.contains("<script"),
        "the report must not need scripts"
    );
    for attr in [
        "src=\"http",
        "href=\"http",
        "src=\"//",
        "href=\"//",
        "@import",
        "url(",
    ] {
        assert!(!html.contains(attr), "external resource: {attr}");
    }
}

/// The window widths every page is laid out at: a desktop browser and a phone's.
const WIDTHS: [u32; 2] = [1280, 480];

/// Measures the laid-out page in the browser and writes what is wrong into
/// `<pre id="layout-check">`, one `FAIL` line each, then a `checked` line. At the narrow
/// width a `<pre>` (an aligned text table) may scroll; nothing else may, at either width.
const LAYOUT_SCRIPT: &str = r#"<script>
(function () {
  var out = [];
  var narrow = NARROW;
  var de = document.documentElement, vw = de.clientWidth;
  if (de.scrollWidth > vw + 1) out.push('FAIL the page is wider than the window: ' + de.scrollWidth + ' > ' + vw);
  function name(e) { return e.tagName.toLowerCase() + (e.id ? '#' + e.id : ''); }
  var all = document.body.querySelectorAll('*');
  for (var i = 0; i < all.length; i++) {
    var e = all[i];
    if (e.closest('svg') && e.tagName.toLowerCase() !== 'svg') continue;
    var r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 1) out.push('FAIL past the right edge: ' + name(e) + ' ends at ' + Math.round(r.right) + ' of ' + vw);
    var ox = getComputedStyle(e).overflowX;
    if (e.scrollWidth > e.clientWidth + 1 && ox !== 'visible' && !(narrow && e.tagName === 'PRE'))
      out.push('FAIL cut off in a scrolling box: ' + name(e) + ' ' + e.scrollWidth + ' > ' + e.clientWidth);
  }
  var svgs = document.querySelectorAll('svg'), labels = 0;
  for (var s = 0; s < svgs.length; s++) {
    var svg = svgs[s], box = svg.getBoundingClientRect();
    var texts = svg.querySelectorAll('text'), boxes = [];
    for (var t = 0; t < texts.length; t++) {
      var b = texts[t].getBoundingClientRect();
      if (b.width === 0) continue;
      boxes.push([texts[t].textContent, b]);
      if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1)
        out.push('FAIL a label leaves its plot in ' + svg.id + ': "' + texts[t].textContent + '"');
    }
    labels += boxes.length;
    for (var a = 0; a < boxes.length; a++) for (var c = a + 1; c < boxes.length; c++) {
      var p = boxes[a][1], q = boxes[c][1];
      if (p.left < q.right - 0.5 && q.left < p.right - 0.5 && p.top < q.bottom - 0.5 && q.top < p.bottom - 0.5)
        out.push('FAIL labels overlap in ' + svg.id + ': "' + boxes[a][0] + '" and "' + boxes[c][0] + '"');
    }
  }
  out.push('checked ' + svgs.length + ' plots, ' + labels + ' labels at ' + vw + ' px');
  var pre = document.createElement('pre');
  pre.id = 'layout-check';
  pre.textContent = out.join('\n');
  document.body.appendChild(pre);
})();
</script>"#;

/// Lay `page` out at each of `WIDTHS` and assert what `LAYOUT_SCRIPT` measures; returns the
/// DOM at the first width.
fn check_layout(browser: &Path, work: &Path, page: &Path) -> String {
    let html = std::fs::read_to_string(page).expect("the page");
    assert_self_contained(&html);
    let mut first = None;
    for width in WIDTHS {
        let script = LAYOUT_SCRIPT.replace("NARROW", if width < 800 { "true" } else { "false" });
        let copy = work.join(format!("measured-{width}.html"));
        std::fs::write(
            &copy,
            html.replace("</body>", &format!("{script}\n</body>")),
        )
        .unwrap();
        let dom = chromium(
            browser,
            work,
            &[
                "--dump-dom".to_string(),
                format!("--window-size={width},2000"),
                "--hide-scrollbars".to_string(),
            ],
            &copy,
        );
        let check = element(&dom, "pre", "layout-check");
        assert!(check.contains("checked "), "no layout measured:\n{dom}");
        let fails: Vec<&str> = check.lines().filter(|l| l.contains("FAIL")).collect();
        assert!(
            fails.is_empty(),
            "{} at {width} px:\n{}",
            page.display(),
            fails.join("\n")
        );
        first.get_or_insert(dom);
    }
    first.unwrap()
}

#[test]
fn run_report_renders_in_headless_chromium() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let work = temp_dir("run");
    let json = work.join("result.json");
    let html = work.join("report.html");
    let mut result = synthetic_result(900, &[800, 1_500, 9_000, 40_000]);
    result.server = Some(webtune_testkit::results::synthetic_server_samples(20));
    std::fs::write(&json, result.to_json_pretty()).unwrap();
    webtune(&[
        "report",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_self_contained(&std::fs::read_to_string(&html).unwrap());

    let dom = chromium(&browser, &work, &["--dump-dom".to_string()], &html);
    // a lab run's result: the header names the stack
    assert!(
        dom.contains("<h1>webtune report: <span id=\"stack\">nginx</span></h1>"),
        "DOM not loaded or no stack in the header:\n{dom}"
    );
    check_layout(&browser, &work, &html);
    for id in [
        "plot-latency-percentiles",
        "plot-throughput",
        "plot-latency-over-time",
        "plot-errors-over-time",
        "plot-server-cpu",
        "plot-server-memory",
        "plot-server-tcp",
    ] {
        assert_plot(&dom, id);
    }
    // one line per CPU in the server's CPU plot
    let cpu = element(&dom, "figure", "plot-server-cpu");
    for line in ["cpu0", "cpu1", "steal (mean)"] {
        assert!(cpu.contains(&format!("data-series=\"{line}\"")), "{line}");
    }
    // the stall at 6 s is shaded on the time plots and listed
    assert!(element(&dom, "figure", "plot-throughput").contains("class=\"stall\""));
    assert!(element(&dom, "ul", "stalls").contains("stall from 6.0 s to 7.0 s"));
    // the summary figures
    let summary = element(&dom, "table", "summary");
    assert!(
        summary.contains("data-figure=\"requests_per_s\">90.00<"),
        "{summary}"
    );
    assert!(
        summary.contains("data-figure=\"p99_ms\">40.03<"),
        "{summary}"
    );
    assert!(element(&dom, "pre", "text-summary").contains("Latency (ms)"));

    let shot = work.join("report.png");
    chromium(
        &browser,
        &work,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1000,5200".to_string(),
            "--hide-scrollbars".to_string(),
        ],
        &html,
    );
    let png = std::fs::read(&shot).expect("chromium wrote a screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 20_000,
        "screenshot suspiciously small: {} bytes",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn sweep_report_renders_in_headless_chromium() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let work = temp_dir("sweep");
    let mut sweep = SweepResult::new("webtune 0.1.0", SweepVariable::Connections);
    for (level, n, lat) in [
        (8.0, 800, 1_000),
        (32.0, 1_600, 2_000),
        (128.0, 1_620, 8_000),
    ] {
        sweep.levels.push(SweepLevel {
            level,
            // steady levels: a stalled one would be left out of the knee
            result: synthetic_result_without_stall(n, &[lat]),
        });
    }
    let json = work.join("sweep.json");
    let html = work.join("sweep.html");
    std::fs::write(&json, sweep.to_json_pretty()).unwrap();
    webtune(&[
        "report",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_self_contained(&std::fs::read_to_string(&html).unwrap());
    let dom = chromium(&browser, &work, &["--dump-dom".to_string()], &html);
    for id in [
        "plot-sweep-throughput",
        "plot-sweep-latency",
        "plot-sweep-errors",
        "plot-sweep-percentiles",
    ] {
        assert_plot(&dom, id);
    }
    check_layout(&browser, &work, &html);
    assert!(element(&dom, "figure", "plot-sweep-throughput").contains("class=\"knee\""));
    assert!(element(&dom, "pre", "sweep-table").contains("Knee: 32 connections"));
}

#[test]
fn capacity_page_labels_do_not_overlap_and_the_result_wraps() {
    use webtune_model::capacity::{
        CapacityLimit, CapacityResult, CapacityStep, SearchSettings, StepOutcome, CAPACITY_SCHEMA,
    };
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let work = temp_dir("capacity");
    let step = |rate: f64, outcome: StepOutcome, p99_ms: f64| CapacityStep {
        rate_rps: rate,
        outcome,
        verdicts: vec![webtune_model::Verdict {
            threshold: "p99<=50ms".into(),
            metric: "p99".into(),
            unit: "us".into(),
            observed: p99_ms * 1000.0,
            limit: 50_000.0,
            baseline: None,
            passed: outcome != StepOutcome::Broke,
            aborted: false,
        }],
        broken: if outcome == StepOutcome::Broke {
            vec!["p99<=50ms".into()]
        } else {
            vec![]
        },
        reasons: if outcome == StepOutcome::ClientLimited {
            vec!["the generator's CPU was 97% busy: these numbers describe the client".into()]
        } else {
            vec![]
        },
        result: synthetic_result_without_stall(400, &[2_000, 9_000]),
    };
    // The issue's page: the capacity (161/s) and the generator's limit (168/s) 7/s apart,
    // and a Result line longer than any window.
    let result = CapacityResult {
        schema: CAPACITY_SCHEMA.into(),
        tool: "webtune test".into(),
        target: "http://127.0.0.1:8080/cpu/20000".into(),
        settings: String::new(),
        slos: vec!["p99<=50ms".into()],
        search: SearchSettings::default(),
        step_s: 10.0,
        capacity_rps: Some(161.0),
        limit: CapacityLimit::Slo,
        broke_at_rps: Some(165.0),
        broke_first: vec!["p99<=50ms".into()],
        generator_limited_at_rps: Some(168.0),
        interrupted: false,
        target_down: None,
        drift: Vec::new(),
        summary: "capacity 161 req/s: the highest rate at which every SLO held (p99<=50ms broke \
                  first at 165 req/s); the generator itself was the limit at 168 req/s, so \
                  rates above that were not measured and the server's real capacity may be \
                  higher than what this machine can generate"
            .into(),
        steps: vec![
            step(100.0, StepOutcome::Held, 10.0),
            step(161.0, StepOutcome::Held, 40.0),
            step(168.0, StepOutcome::ClientLimited, 45.0),
            step(165.0, StepOutcome::Broke, 70.0),
            step(161.0, StepOutcome::Held, 41.0),
        ],
    };
    let json = work.join("capacity.json");
    let html = work.join("capacity.html");
    std::fs::write(&json, serde_json::to_string_pretty(&result).unwrap()).unwrap();
    webtune(&[
        "report",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let dom = check_layout(&browser, &work, &html);
    let plot = element(&dom, "figure", "plot-capacity-latency");
    assert!(plot.contains("capacity 161/s") && plot.contains("generator limit 168/s"));
    assert!(element(&dom, "p", "capacity-result").contains("may be higher"));
}

#[test]
fn compare_page_plots_both_distributions_and_each_change_with_its_interval() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let work = temp_dir("compare");
    let with_repeats = |n: u64, lat: &[u64], rps: [f64; 3]| {
        let mut r = synthetic_result_without_stall(n, lat);
        r.repeats = webtune_testkit::results::repeats_at(&rps);
        r
    };
    let before = with_repeats(900, &[5_000, 9_000, 40_000], [1000.0, 1040.0, 970.0]);
    let after = with_repeats(1200, &[2_000, 4_000, 8_000], [1400.0, 1460.0, 1380.0]);
    let (a, b) = (work.join("default.json"), work.join("tuned.json"));
    std::fs::write(&a, before.to_json_pretty()).unwrap();
    std::fs::write(&b, after.to_json_pretty()).unwrap();
    let html = work.join("compare.html");
    webtune(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let dom = check_layout(&browser, &work, &html);
    let forest = element(&dom, "figure", "plot-compare-change-1");
    assert!(forest.contains("class=\"interval\""), "{forest}");
    assert!(forest.contains("data-row=\"p99 (ms)\""), "{forest}");
    let dist = element(&dom, "figure", "plot-compare-distribution");
    for name in ["default.json", "tuned.json"] {
        assert!(dist.contains(&format!("data-series=\"{name}\"")), "{dist}");
    }
    assert_plot(&dom, "plot-compare-percentiles");
    assert!(element(&dom, "table", "compare-table").contains("requests/s"));
    assert!(element(&dom, "table", "compare-intervals-1").contains("better"));
}

/// A tune report from a real study of the tuner's synthetic server (no lab): five
/// parameters, a p99 SLO that some trials miss, the winner proven in five pairs.
fn synthetic_tune_report() -> webtune_search::TuneReport {
    use webtune_search::{
        LevelSummary, Next, Objective, Outcome, RandomSampler, Slo, Study, StudySettings,
    };
    use webtune_search_bench::synthetic;
    let space = synthetic::space();
    let seeds = synthetic::seeds(&space);
    let mut study = Study::new(
        space,
        Objective::MaximizeThroughput,
        vec![Slo::parse(synthetic::SLO).unwrap()],
        seeds,
        StudySettings {
            trials: 24,
            seed: 7,
            ..StudySettings::default()
        },
        Box::new(RandomSampler),
    );
    let mut wobble = 0.0f64;
    while let Next::Measure(c, why) = study.next() {
        let (tp, p99) = synthetic::truth(&c);
        wobble = (wobble + 0.37) % 0.1;
        study.record(
            c,
            why,
            Outcome::Measured(vec![LevelSummary {
                level: "c=256".into(),
                throughput: tp * (0.95 + wobble),
                p50_ms: p99 / 4.0,
                p90_ms: p99 / 2.0,
                p99_ms: p99 * (0.95 + wobble),
                p999_ms: p99 * 2.0,
                mean_ms: p99 / 3.0,
                error_ratio: 0.0,
                mail: None,
            }]),
        );
    }
    let pairs = [
        (100.0, 131.0),
        (104.0, 128.0),
        (98.0, 135.0),
        (101.0, 126.0),
        (99.0, 133.0),
    ];
    let proof = webtune_search::analyze(&pairs, true);
    let levels = vec![webtune_search::report::LevelProof {
        level: "c=256".into(),
        proof: proof.clone(),
    }];
    let proof = webtune_search::ProofReport::new(proof, levels, Some(0.3), true);
    webtune_search::TuneReport::from_study(&study, vec!["c=256".into()], Some(proof))
}

#[test]
fn tune_page_plots_slices_effects_and_the_proofs_pairs() {
    let Some(browser) = browser_or_skip() else {
        return;
    };
    let work = temp_dir("tune");
    let report = synthetic_tune_report();
    assert!(
        report.trials.iter().any(|t| !t.feasible) && report.trials.iter().any(|t| t.feasible),
        "the study needs trials on both sides of the SLO"
    );
    let json = work.join("tune.json");
    let html = work.join("tune.html");
    std::fs::write(&json, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    webtune(&[
        "report",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let dom = check_layout(&browser, &work, &html);
    // one slice plot per parameter, with both kinds of trial and the winner
    let slices = element(&dom, "div", "slices");
    for (i, _) in webtune_search_bench::synthetic::PARAMS.iter().enumerate() {
        assert!(
            slices.contains(&format!("id=\"plot-slice-{i}\"")),
            "{slices}"
        );
    }
    assert!(slices.contains("class=\"dot filled\""), "{slices}");
    assert!(slices.contains("class=\"dot hollow\""), "{slices}");
    assert!(slices.contains("class=\"dot highlight\""), "{slices}");
    // the effects with their intervals
    let effects = element(&dom, "figure", "plot-effects");
    assert!(effects.contains("class=\"interval\""), "{effects}");
    // the proof's five pairs, each A joined to B
    let pairs = element(&dom, "figure", "plot-proof-0");
    assert_eq!(pairs.matches("class=\"pair\"").count(), 5, "{pairs}");
}
