//! Tests of the tune's HTML page (`tune_html`) on a real study of the search-bench's
//! synthetic server (moved here with the page from the search crate, issue 36 item 2).

use super::*;
use webtune_search::report::{ProofReport, TimeReport};
use webtune_search::study::{Next, Study, StudySettings};
use webtune_search::{analyze, GpSampler, Objective, Slo};
use webtune_search_bench::synthetic;

fn study(slos: Vec<Slo>, trials: usize, seed: u64) -> Study {
    let sp = synthetic::space();
    let seeds = if slos.is_empty() {
        vec![]
    } else {
        synthetic::seeds(&sp)
    };
    let mut s = Study::new(
        sp,
        Objective::MaximizeThroughput,
        slos,
        seeds,
        StudySettings {
            trials,
            seed,
            ..StudySettings::default()
        },
        Box::new(GpSampler::default()),
    );
    let mut rng = webtune_model::rng::Rng::seeded(seed);
    while let Next::Measure(c, why) = s.next() {
        let o = synthetic::measure(&c, &mut rng);
        s.record(c, why, o);
    }
    s
}

#[test]
fn the_page_opens_with_the_verdict_and_names_the_trials_and_the_noise() {
    let s = study(vec![Slo::parse(synthetic::SLO).unwrap()], 8, 2);
    let p = analyze(&[(100.0, 100.5), (100.0, 99.0), (100.0, 101.0)], true);
    let report = TuneReport::from_study(
        &s,
        vec!["c=256".into()],
        Some(ProofReport::new(p, vec![], Some(0.4), true)),
    );
    let html = render_html(&report);
    let boxed = html
        .find("<div id=\"verdict\"")
        .expect("the HTML opens with the verdict");
    assert!(boxed < html.find("The objective of every trial").unwrap());
    assert!(
        html.contains(" measured runs within at most 8 (--trials)"),
        "{html}"
    );
    assert!(html.contains("Run-to-run noise ±"), "{html}");
    assert!(html.contains("A/A difference "), "{html}");
    assert!(!html.contains("Run-to-run noise (A/A)"), "{html}");
}

#[test]
fn a_budget_tune_names_its_time_and_no_proof_means_no_proof_section() {
    let s = study(vec![], 4, 3);
    let mut report = TuneReport::from_study(&s, vec!["as given".into()], None);
    report.time = Some(TimeReport {
        wall_s: 130.0,
        search_s: 118.0,
        budget_s: Some(120.0),
        budget_spent: true,
        halving: None,
    });
    let html = render_html(&report);
    assert!(
        html.contains("within a --budget of 2m00s (the search took 1m58s)"),
        "{html}"
    );
    assert!(!html.contains("Proof at as given"), "{html}");
}

#[test]
fn a_search_against_its_incumbent_shows_each_candidate_ratio_and_leaves_out_wide_intervals() {
    use webtune_search::interleave::search::PairedTrial;
    use webtune_search::interleave::Verdict;
    let s = study(vec![], 4, 5);
    let mut report = TuneReport::from_study(&s, vec!["c=20".into()], None);
    assert!(!render_html(&report).contains("against the incumbent"));
    let reference = report.trials[0].summary[0].clone();
    let params = report.trials[0].params.clone();
    let pair =
        |ratio: f64, ci: (f64, f64), pairs: usize, verdict: Verdict, became: bool| PairedTrial {
            incumbent: params.clone(),
            candidate: params.clone(),
            reference: reference.clone(),
            metric: "throughput".into(),
            verdict,
            ratio,
            ci_low: Some(ci.0),
            ci_high: Some(ci.1),
            pairs,
            blocks: 2 * pairs,
            incumbent_measured: None,
            candidate_measured: None,
            became_incumbent: became,
            told: None,
            log_se: None,
            stand_in: false,
        };
    report.trials[1].paired = Some(pair(1.25, (1.1, 1.4), 8, Verdict::BBetter, true));
    report.trials[2].paired = Some(pair(0.8, (0.7, 0.9), 8, Verdict::ABetter, false));
    report.trials[3].paired = Some(pair(
        1.073,
        (0.000_05, 17_805.6),
        2,
        Verdict::Undecided,
        false,
    ));
    let html = render_html(&report);
    assert!(
        html.contains("<h2>The search against the incumbent</h2>"),
        "{html}"
    );
    assert!(html.contains("plot-incumbent-svg"), "{html}");
    assert!(html.contains("<th>vs incumbent</th>"), "{html}");
    assert!(
        html.contains("×1.250 (95% CI ×1.100–×1.400) over 8 pair(s); now the incumbent"),
        "{html}"
    );
    assert!(
        html.contains("×0.800 (95% CI ×0.700–×0.900) over 8 pair(s)<"),
        "{html}"
    );
    assert!(
        html.contains("×1.073 (95% CI too wide to show) over 2 pair(s)"),
        "{html}"
    );
    assert!(
        html.contains("class=\"row better\" data-row=\"trial 2\""),
        "{html}"
    );
    assert!(
        html.contains("class=\"row worse\" data-row=\"trial 3\""),
        "{html}"
    );
    assert!(
        html.contains("class=\"row estimate\" data-row=\"trial 4\""),
        "{html}"
    );
    assert!(
        !html.contains("17805"),
        "an interval that says nothing is not drawn: {html}"
    );
}
