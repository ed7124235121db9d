//! The joint fit on synthetic comparison graphs with known levels.

use super::*;
use crate::interleave::Verdict;
use crate::space::Value;

fn cfg(w: i64) -> Config {
    Config::from([("w".to_string(), Value::Int(w))])
}

/// Figures at throughput `tp`, every latency 1000 / `tp` ms (twice that for p99).
fn level(tp: f64) -> LevelSummary {
    let lat = 1000.0 / tp;
    LevelSummary {
        level: "c=4".into(),
        throughput: tp,
        p50_ms: lat,
        p90_ms: lat,
        p99_ms: 2.0 * lat,
        p999_ms: 3.0 * lat,
        mean_ms: lat,
        error_ratio: 0.0,
        mail: None,
    }
}

/// A trial of `candidate` against `incumbent` whose pairs said B/A = `ratio` (throughput; the
/// latencies 1/ratio), told on `reference` as the chained search told it.
fn trial(
    incumbent: i64,
    candidate: i64,
    reference: &LevelSummary,
    ratio: f64,
    pairs: usize,
) -> PairedTrial {
    let mut told = level(reference.throughput * ratio);
    told.error_ratio = 0.01 * candidate as f64;
    PairedTrial {
        incumbent: cfg(incumbent),
        candidate: cfg(candidate),
        reference: reference.clone(),
        metric: "throughput".into(),
        verdict: Verdict::Undecided,
        ratio,
        ci_low: None,
        ci_high: None,
        pairs,
        blocks: 2 * pairs,
        incumbent_measured: None,
        candidate_measured: None,
        became_incumbent: false,
        told: Some(told),
        log_se: None,
        stand_in: false,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a / b - 1.0).abs() < 1e-9
}

#[test]
fn one_wrong_link_in_a_chain_of_incumbents_is_corrected_by_the_other_paths() {
    // True levels: the default (1) 1,000 ok/s, 2 2,000, 3 3,000; candidates 4, 5 and 6 at
    // 1,200, 1,500 and 800. Each candidate was measured against the default, then 2 won on
    // a link that said ×6 (×3 off, one pair), then 3 beat 2 by ×1.5: chained, 2 is put at
    // 6,000 and 3 at 9,000. The candidates proposed again were measured against 2: three
    // more paths from the default to 2, each saying ×2.
    let d = level(1000.0);
    let t2 = trial(1, 2, &d, 6.0, 1);
    let i2 = t2.told.clone().unwrap();
    let t3 = trial(2, 3, &i2, 1.5, 4);
    assert!(close(t3.told.as_ref().unwrap().throughput, 9000.0));
    let truth = [
        (1, 1000.0),
        (2, 2000.0),
        (3, 3000.0),
        (4, 1200.0),
        (5, 1500.0),
        (6, 800.0),
    ];
    let mut trials = vec![t2, t3];
    for (w, tp) in &truth[3..] {
        trials.push(trial(1, *w, &d, tp / 1000.0, 4));
        trials.push(trial(2, *w, &i2, tp / 2000.0, 4));
    }
    let pairs: Vec<&PairedTrial> = trials.iter().collect();
    let fit = fit(&cfg(1), &[&d], &pairs).unwrap();
    let tp = |w| fit.level(&cfg(w)).unwrap().throughput;
    assert!(close(tp(1), 1000.0));
    // The wrong link weighs one pair against three paths of four: from ×3 off to within 20%.
    for (w, truth) in truth {
        let off = (tp(w) / truth).ln().abs();
        assert!(off < 1.2f64.ln(), "w={w}: {} against {truth}", tp(w));
    }
    // Latencies are fitted alike (they move as 1/throughput here). A configuration's trials
    // are told figures whose geometric mean is its fitted level, each with its own error
    // share; 2, measured once as a candidate, is told its fitted level.
    let c = fit.level(&cfg(4)).unwrap();
    assert!(close(c.p99_ms, 2000.0 / c.throughput), "{c:?}");
    let told: Vec<LevelSummary> = trials[2..4]
        .iter()
        .map(|t| fit.trial_figures(t).unwrap())
        .collect();
    assert!(close(
        (told[0].throughput * told[1].throughput).sqrt(),
        tp(4)
    ));
    assert!(told.iter().all(|t| t.error_ratio == 0.04));
    assert!(close(
        fit.trial_figures(&trials[0]).unwrap().throughput,
        tp(2)
    ));
}

#[test]
fn with_one_path_to_each_configuration_the_fit_is_the_chained_figures() {
    // A tree: each configuration measured once, against the incumbent of its time (the
    // default, then 2 once it won, then 5), as the chained search told them.
    let runs = [level(900.0), level(1100.0)];
    let d = reference(&[&runs[0], &runs[1]]).unwrap();
    let t2 = trial(1, 2, &d, 1.4, 3);
    let i2 = t2.told.clone().unwrap();
    let t3 = trial(1, 3, &d, 0.7, 2);
    let t4 = trial(2, 4, &i2, 0.95, 5);
    let t5 = trial(2, 5, &i2, 1.3, 1);
    let i5 = t5.told.clone().unwrap();
    let t6 = trial(5, 6, &i5, 1.02, 4);
    let pairs = [&t2, &t3, &t4, &t5, &t6];
    let fit = fit(&cfg(1), &[&runs[0], &runs[1]], &pairs).unwrap();
    for t in pairs {
        let told = t.told.as_ref().unwrap();
        let joint = fit.trial_figures(t).unwrap();
        for (a, b) in figures(told).into_iter().zip(figures(&joint)) {
            assert!(close(a, b), "{told:?} became {joint:?}");
        }
        assert_eq!(joint.error_ratio, told.error_ratio);
    }
    assert!(close(fit.level(&cfg(1)).unwrap().throughput, d.throughput));
}

#[test]
fn an_edge_of_ten_pairs_outweighs_one_of_one_pair() {
    let d = level(1000.0);
    let many = trial(1, 2, &d, 2.0, 10);
    let one = trial(1, 2, &d, 1.0, 1);
    let fit = fit(&cfg(1), &[&d], &[&many, &one]).unwrap();
    let tp = fit.level(&cfg(2)).unwrap().throughput;
    // The weighted mean of the log-ratios: (10 ln 2 + 1 ln 1) / 11.
    assert!(close(tp, 1000.0 * (10.0 * 2f64.ln() / 11.0).exp()), "{tp}");
    assert!(tp > 1800.0);
    // The study is told both trials, their geometric mean the fitted level and their ratio
    // what the pairs measured (×2 against ×1).
    let (a, b) = (
        fit.trial_figures(&many).unwrap().throughput,
        fit.trial_figures(&one).unwrap().throughput,
    );
    assert!(close((a * b).sqrt(), tp) && close(a / b, 2.0), "{a} {b}");
}

#[test]
fn a_trial_against_itself_keeps_its_noise_on_the_fitted_level() {
    let d = level(1000.0);
    let aa = trial(1, 1, &d, 1.08, 3);
    let t2 = trial(1, 2, &d, 1.5, 3);
    let i2 = t2.told.clone().unwrap();
    let race = trial(2, 2, &i2, 0.9, 3);
    let fit = fit(&cfg(1), &[&d], &[&aa, &t2, &race]).unwrap();
    // The A/A trials say nothing of the levels…
    assert!(close(fit.level(&cfg(1)).unwrap().throughput, 1000.0));
    assert!(close(fit.level(&cfg(2)).unwrap().throughput, 1500.0));
    // …and keep their own ratio, so the study still sees the noise.
    assert!(close(fit.trial_figures(&aa).unwrap().throughput, 1080.0));
    assert!(close(fit.trial_figures(&race).unwrap().throughput, 1350.0));
}

#[test]
fn what_the_anchor_does_not_reach_keeps_what_it_was_told() {
    let d = level(1000.0);
    let elsewhere = trial(7, 8, &level(500.0), 2.0, 3);
    let mut untold = trial(1, 2, &d, 2.0, 3);
    untold.told = None;
    let fit = fit(&cfg(1), &[&d], &[&elsewhere, &untold]).unwrap();
    assert!(fit.level(&cfg(8)).is_none() && fit.level(&cfg(2)).is_none());
    assert_eq!(fit.trial_figures(&elsewhere), elsewhere.told.clone());
    assert_eq!(fit.trial_figures(&untold), None);
    assert!(super::fit(&cfg(1), &[], &[&elsewhere]).is_none());
}

/// `trial` with the pairs' standard error of the mean log-ratio.
fn with_se(mut t: PairedTrial, se: Option<f64>) -> PairedTrial {
    t.log_se = se;
    t
}

#[test]
fn a_level_reached_through_few_pairs_has_the_spread_of_its_links() {
    let d = level(1000.0);
    let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
    // A chain: the default, 2 against it, 3 against 2; each link two pairs, ±0.3 each.
    let t2 = with_se(trial(1, 2, &d, 1.2, 2), Some(0.3));
    let i2 = t2.told.clone().unwrap();
    let t3 = with_se(trial(2, 3, &i2, 1.5, 2), Some(0.3));
    let f = fit(&cfg(1), &[&d], &[&t2, &t3]).unwrap();
    assert_eq!(f.spread(&cfg(1)), Some(0.0));
    assert!(near(f.spread(&cfg(2)).unwrap(), 0.3));
    // Its links' variances add up: 3 is known to ±0.3√2, though its own pairs said ±0.3.
    assert!(near(f.spread(&cfg(3)).unwrap(), 0.3 * 2f64.sqrt()));
    assert_eq!(f.spreads().count(), 3);
    // Measured twice against the default, alike: the mean of two, ±0.3/√2.
    let again = with_se(trial(1, 2, &d, 1.25, 2), Some(0.3));
    let f = fit(&cfg(1), &[&d], &[&t2, &again]).unwrap();
    assert!(near(f.spread(&cfg(2)).unwrap(), 0.3 / 2f64.sqrt()));
    // Two pairs that happened to agree (±0.01) are no precise figure: the pooled per-pair
    // variance over its pairs is the floor, (0.09·2 + 0.0001·2) / 2 / 2 here.
    let lucky = with_se(trial(1, 4, &d, 3.0, 2), Some(0.01));
    let f = fit(&cfg(1), &[&d], &[&t2, &lucky]).unwrap();
    let floor = ((0.09 * 2.0 + 0.0001 * 2.0) / 2.0 / 2.0f64).sqrt();
    assert!(
        near(f.spread(&cfg(4)).unwrap(), floor),
        "{:?}",
        f.spread(&cfg(4))
    );
    assert!(near(f.spread(&cfg(2)).unwrap(), 0.3));
    // A trial without its own (one pair, or an older journal) has the pooled figure alone.
    let single = with_se(trial(1, 5, &d, 0.5, 1), None);
    let f = fit(&cfg(1), &[&d], &[&t2, &single]).unwrap();
    assert!(near(f.spread(&cfg(5)).unwrap(), (0.09f64 * 2.0).sqrt()));
    // No trial with two pairs: nothing is known of the spreads.
    let f = fit(&cfg(1), &[&d], &[&single]).unwrap();
    assert_eq!(f.spread(&cfg(5)), None);
    assert_eq!(f.spreads().count(), 0);
}

#[test]
fn a_trial_whose_pairs_disagreed_weighs_less_than_one_whose_pairs_agreed() {
    let d = level(1000.0);
    // 2 measured twice against the default over two pairs each: ×3 from pairs that
    // disagreed wildly (±0.6 in ln), ×1.2 from pairs that agreed (±0.05); three other
    // configurations' calm trials make the pooled per-pair variance.
    let wild = with_se(trial(1, 2, &d, 3.0, 2), Some(0.6));
    let calm = with_se(trial(1, 2, &d, 1.2, 2), Some(0.05));
    let others: Vec<PairedTrial> = (3..6)
        .map(|w| with_se(trial(1, w, &d, 1.0, 2), Some(0.05)))
        .collect();
    let mut pairs = vec![&wild, &calm];
    pairs.extend(others.iter());
    let f = fit(&cfg(1), &[&d], &pairs).unwrap();
    let tp = f.level(&cfg(2)).unwrap().throughput;
    // By pairs alone it would be the geometric mean, ×1.90; by variance, nearer ×1.2. The
    // calm trial's variance is the pooled floor (0.74 / 5 pairs' df / 2 pairs), not its own.
    let v = [0.6f64 * 0.6, (0.72 + 0.02) / 5.0 / 2.0];
    let x = (3f64.ln() / v[0] + 1.2f64.ln() / v[1]) / (1.0 / v[0] + 1.0 / v[1]);
    assert!(close(tp, 1000.0 * x.exp()), "{tp}");
    assert!(tp < 1450.0, "{tp}");
    // Without any trial's spread (an older journal) the weights are the pairs, as before.
    let (mut wild, mut calm) = (wild.clone(), calm.clone());
    (wild.log_se, calm.log_se) = (None, None);
    let f = fit(&cfg(1), &[&d], &[&wild, &calm]).unwrap();
    assert!(close(
        f.level(&cfg(2)).unwrap().throughput,
        1000.0 * 3.6f64.sqrt()
    ));
}
