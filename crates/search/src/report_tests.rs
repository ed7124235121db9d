//! Tests of the tune's report (`report`), kept apart to keep `report.rs` short.

use super::*;
use crate::proof::analyze;
use crate::study::{Next, StudySettings};
use crate::{synthetic, GpSampler, Objective, Slo};

#[test]
fn json_has_the_documented_shape_and_text_reads() {
    let sp = synthetic::space();
    let seeds = synthetic::seeds(&sp);
    let mut s = Study::new(
        sp,
        Objective::MaximizeThroughput,
        vec![Slo::parse(synthetic::SLO).unwrap()],
        seeds,
        StudySettings {
            trials: 8,
            seed: 2,
            ..StudySettings::default()
        },
        Box::new(GpSampler::default()),
    );
    let mut rng = webtune_model::rng::Rng::seeded(2);
    while let Next::Measure(c, why) = s.next() {
        let o = synthetic::measure(&c, &mut rng);
        s.record(c, why, o);
    }
    let p = analyze(&[(100.0, 100.5), (100.0, 99.0), (100.0, 101.0)], true);
    let report = TuneReport::from_study(
        &s,
        vec!["c=256".into()],
        Some(ProofReport::new(p.clone(), vec![], Some(0.4), true)),
    );
    let v: serde_json::Value = serde_json::from_str(&report.to_json_pretty()).unwrap();
    assert_eq!(v["schema"], "webtune.tune/1");
    let t = &v["trials"][0];
    for key in ["params", "feasible", "objective", "summary"] {
        assert!(!t[key].is_null(), "trials[0].{key}");
    }
    assert!(v["trials"][0]["params"]["workers"].is_i64());
    assert!(v["best"]["params"].is_object());
    assert_eq!(v["proof"]["verdict"], p.verdict);
    assert!(v["effects"].is_array());
    let back: TuneReport = serde_json::from_value(v).unwrap();
    assert_eq!(back, report);
    let mut report = report;
    report.evidence = vec!["listen-queue overflows: default 12, winner 0".into()];
    report.snippet = vec!["backend: MaxRequestWorkers 4".into()];
    let text = report.render_text();
    assert!(
        text.contains("  listen-queue overflows: default 12, winner 0"),
        "{text}"
    );
    // The proof says keep the default: the directives are no recommendation.
    assert!(
        text.contains("(not a recommendation: the proof says keep the default):\n  backend: MaxRequestWorkers 4"),
        "{text}"
    );
    assert!(!text.contains("the winner's directives"), "{text}");
    assert!(text.contains("proof: no significant difference: keep the default\n  pairs, default → winner (ok/s): 100 → "), "{text}");
    assert!(
        text.starts_with("tune: maximize throughput at c=256; "),
        "{text}"
    );
    assert!(text.contains("noise floor: A/A differed by"), "{text}");
    assert!(text.contains("proof: no significant difference: keep the default"));
    // The verdict right after the heading, before the trials (issue 39).
    let verdict = text
        .find("Verdict: Keep the default: the winner is no significant")
        .unwrap();
    assert!(verdict < text.find("noise floor").unwrap(), "{text}");
    assert!(
        text.contains("  What to do: keep the default configuration"),
        "{text}"
    );
    // The HTML page of this report: webtune-report's tune_html tests.
    assert!(
        text.contains("note: the proof disagrees with the search"),
        "{text}"
    );
    // Without a proof, the best is unproven.
    report.proof = None;
    let text = report.render_text();
    assert!(text.contains("(unproven: no proof ran; "), "{text}");
    report.levels = vec!["as given".into()];
    assert!(report
        .render_text()
        .starts_with("tune: maximize throughput at the load of the bench flags; "));
}

#[test]
fn a_tune_where_every_trial_failed_says_so_and_why() {
    let sp = synthetic::space();
    let mut s = Study::new(
        sp,
        Objective::MaximizeThroughput,
        vec![],
        vec![],
        StudySettings {
            trials: 3,
            seed: 1,
            ..StudySettings::default()
        },
        Box::new(GpSampler::default()),
    );
    let mut n = 0;
    while let Next::Measure(c, why) = s.next() {
        n += 1;
        let reason = if n == 3 {
            "--apply `x` did not finish within 2s"
        } else {
            "--apply `x` exited with status 3: cannot reach the pool"
        };
        s.record(c, why, Outcome::Failed(reason.into()));
    }
    let report = TuneReport::from_study(&s, vec!["as given".into()], None);
    assert!(report.effects.is_empty(), "{:?}", report.effects);
    let text = report.render_text();
    assert!(
        text.contains("best: none — no trial succeeded (3 of 3 failed); why:\n  2× --apply `x` exited with status 3: cannot reach the pool\n  1× --apply `x` did not finish within 2s\n"),
        "{text}"
    );
    assert!(!text.contains("effects:"), "{text}");
    assert!(!text.contains("met every SLO"), "{text}");
}

/// The default as the search's best reads "the default was best", a gain says the noise
/// it is read against, and a --budget tune names its time, not the trial cap.
#[test]
fn the_text_names_the_default_the_noise_and_the_budget() {
    let sp = synthetic::space();
    let mut s = Study::new(
        sp,
        Objective::MaximizeThroughput,
        vec![],
        vec![],
        StudySettings {
            trials: 4,
            seed: 3,
            ..StudySettings::default()
        },
        Box::new(GpSampler::default()),
    );
    let mut rng = webtune_model::rng::Rng::seeded(3);
    while let Next::Measure(c, why) = s.next() {
        let o = synthetic::measure(&c, &mut rng);
        s.record(c, why, o);
    }
    let mut report = TuneReport::from_study(&s, vec!["as given".into()], None);
    let default = report.trials[0].params.clone();
    let best = report.best.as_mut().unwrap();
    best.params = default;
    assert!(report.best_is_default());
    let text = report.render_text();
    assert!(text.contains("best: the default was best — "), "{text}");
    assert!(
        text.contains("Verdict: The default was best in the search"),
        "{text}"
    );
    let best = report.best.as_mut().unwrap();
    best.params = report.trials.last().unwrap().params.clone();
    best.search_gain = Some(0.073);
    report.noise.relative_sd = 0.097;
    let text = report.render_text();
    assert!(
        text.contains("+7.3% vs the default in the search (run-to-run noise ±9.7%: within it)"),
        "{text}"
    );
    report.time = Some(TimeReport {
        wall_s: 130.0,
        search_s: 118.0,
        budget_s: Some(120.0),
        budget_spent: true,
        halving: None,
    });
    let text = report.render_text();
    assert!(text.contains("; 4 runs within --budget 2m"), "{text}");
}

#[test]
fn a_default_that_turns_most_clients_away_is_not_kept_without_a_word() {
    let sp = synthetic::space();
    let mut s = Study::new(
        sp,
        Objective::MaximizeThroughput,
        vec![],
        vec![],
        StudySettings {
            trials: 4,
            seed: 5,
            ..StudySettings::default()
        },
        Box::new(GpSampler::default()),
    );
    let mut rng = webtune_model::rng::Rng::seeded(5);
    while let Next::Measure(c, why) = s.next() {
        let o = synthetic::measure(&c, &mut rng);
        s.record(c, why, o);
    }
    // The proof: no significant difference.
    let p = analyze(&[(100.0, 100.5), (100.0, 99.0), (100.0, 101.0)], true);
    let mut report = TuneReport::from_study(
        &s,
        vec!["c=1024".into()],
        Some(ProofReport::new(p, vec![], Some(0.4), true)),
    );
    assert_eq!(
        report.unserved(),
        None,
        "the synthetic server fails nothing"
    );
    let best = report.trials.last().unwrap().params.clone();
    report.best.as_mut().unwrap().params = best.clone();
    for t in report.trials.iter_mut() {
        let share = if t.why == "baseline" {
            0.67
        } else if t.params == best {
            0.57
        } else {
            0.0
        };
        for l in t.summary.iter_mut() {
            l.error_ratio = share;
        }
    }
    assert_eq!(
        report.unserved().as_deref(),
        Some("the default failed 67% of its requests (the search's best 57%)")
    );
    let text = report.render_text();
    assert!(
        text.starts_with("tune: ") && text.contains("Verdict: Keep the default: the winner is "),
        "{text}"
    );
    assert!(
        text.contains("; but the default failed 67% of its requests (the search's best 57%)"),
        "{text}"
    );
    assert!(text.contains("--slo 'errors<=1%'"), "{text}");
    // Without a proof the search's answer gets the same "but".
    let proof = report.proof.take();
    let v = report.verdict();
    assert!(
        v.answer.starts_with("Unproven: no proof ran"),
        "{}",
        v.answer
    );
    assert!(
        v.answer
            .ends_with("; but the default failed 67% of its requests (the search's best 57%)"),
        "{}",
        v.answer
    );
    assert_eq!(v.tone, webtune_model::verdict::Tone::Bad);
    report.proof = proof;
    // Errors under an SLO are the SLO's to judge.
    report.slos = vec!["errors<=5%".into()];
    assert_eq!(report.unserved(), None);
    // Less than a point of errors is no news.
    report.slos.clear();
    for t in report.trials.iter_mut() {
        for l in t.summary.iter_mut() {
            l.error_ratio = 0.004;
        }
    }
    assert_eq!(report.unserved(), None);
}

/// Every configuration failing four requests in five under the tune's own errors SLO: no
/// winner, and what to do names the limit as webtune's, with the flag that sets another.
#[test]
fn nothing_under_the_default_errors_slo_says_whose_limit_it_is() {
    let mut s = Study::new(
        synthetic::space(),
        Objective::MaximizeThroughput,
        Slo::with_default_errors(vec![]),
        vec![],
        StudySettings {
            trials: 4,
            seed: 3,
            ..StudySettings::default()
        },
        Box::new(GpSampler::default()),
    );
    let mut rng = webtune_model::rng::Rng::seeded(3);
    while let Next::Measure(c, why) = s.next() {
        let mut o = synthetic::measure(&c, &mut rng);
        if let Outcome::Measured(levels) = &mut o {
            levels.iter_mut().for_each(|l| l.error_ratio = 0.8);
        }
        s.record(c, why, o);
    }
    let report = TuneReport::from_study(&s, vec!["c=1024".into()], None);
    assert_eq!(report.slos, vec!["errors<=1% (default)".to_string()]);
    let v = report.verdict();
    assert_eq!(v.answer, "No configuration met every SLO");
    assert!(
        v.action
            .contains("relax the SLOs (errors<=1% (default) is webtune's own: --slo 'errors<=N%' sets another)"),
        "{}",
        v.action
    );
    assert!(report.render_text().contains("SLOs: errors<=1% (default);"));
}
