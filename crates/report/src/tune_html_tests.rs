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
