//! An interleaved comparison as the tuner's proof (`tune --protocol interleaved`): A is the
//! default, B the winner; the verdict's words are `proof`'s ("better by 12% (95% CI 8–15%,
//! …)", "… : keep the default"), the interval the always-valid one, the pairs the deciding
//! metric's adjacent blocks.

use super::block::{Metric, Side};
use super::judge::Verdict;
use super::render::Report;
use crate::proof::{sign_test, Proof};

fn pct(x: f64) -> String {
    let p = 100.0 * x;
    if p.abs() >= 10.0 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    }
}

/// The proof an interleaved comparison gives, `baseline` naming A in the verdict.
pub fn to_proof(report: &Report, baseline: &str) -> Proof {
    let m = report.settings.decide_on;
    let mi = report.metrics[m.name()];
    let higher = m.higher_is_better();
    // The deciding metric's figures, (A, B) per complete pair.
    let mut runs = Vec::new();
    let mut pending: Option<(usize, Side, f64)> = None;
    for b in &report.blocks {
        let Some(v) = m.of(b) else {
            pending = None;
            continue;
        };
        match pending.take() {
            Some((pair, side, w)) if pair == b.pair && side != b.arm => {
                runs.push(if side == Side::A { (w, v) } else { (v, w) });
            }
            _ => pending = Some((b.pair, b.arm, v)),
        }
    }
    let better = runs
        .iter()
        .filter(|(a, b)| if higher { b > a } else { b < a })
        .count();
    let worse = runs
        .iter()
        .filter(|(a, b)| if higher { b < a } else { b > a })
        .count();
    let n = runs.len();
    let ci = mi.ci_low.zip(mi.ci_high);
    let gain = |r: f64| if higher { r - 1.0 } else { 1.0 - r };
    let after = report
        .decided_after_s
        .map(|s| format!(", decided after {s:.0} s"))
        .unwrap_or_default();
    let interval = |lo: f64, hi: f64| {
        let (a, b) = (gain(lo), gain(hi));
        (a.min(b), a.max(b))
    };
    let errors_decided = report.deciding_metric() == Metric::Errors;
    let (outcome, verdict) = match (report.verdict, ci) {
        // The errors decided on their own (`judge::errors_guard`): the words say so, and
        // the objective's figures stay the pairs' (they are what the report plots).
        (Verdict::BBetter | Verdict::ABetter, _) if errors_decided => {
            let (a, b) = super::judge::error_shares(&report.blocks);
            let b_wins = report.verdict == Verdict::BBetter;
            let objective = match ci {
                Some((lo, hi)) => {
                    let (g_lo, g_hi) = interval(lo, hi);
                    format!(
                        "; {} {}{}% (95% CI {}–{}%)",
                        m.name(),
                        if gain(mi.ratio) >= 0.0 { "+" } else { "" },
                        pct(gain(mi.ratio)),
                        pct(g_lo),
                        pct(g_hi)
                    )
                }
                None => String::new(),
            };
            let words = format!(
                "the winner fails {}% of its requests, {baseline} {}% (interleaved, {n} pairs{after}){objective}",
                pct(b),
                pct(a)
            );
            if b_wins {
                ("better", format!("better: {words}"))
            } else {
                ("worse", format!("worse: {words}: keep {baseline}"))
            }
        }
        (Verdict::BBetter, Some((lo, hi))) => {
            let (g_lo, g_hi) = interval(lo, hi);
            (
                "better",
                format!(
                    "better by {}% (95% CI {}–{}%, interleaved, {better}/{n} pairs{after})",
                    pct(gain(mi.ratio)),
                    pct(g_lo),
                    pct(g_hi)
                ),
            )
        }
        (Verdict::ABetter, Some((lo, hi))) => {
            let (g_lo, g_hi) = interval(lo, hi);
            (
                "worse",
                format!(
                    "worse by {}% (95% CI {}–{}%, interleaved, {worse}/{n} pairs{after}): keep {baseline}",
                    pct(-gain(mi.ratio)),
                    pct(-g_hi),
                    pct(-g_lo)
                ),
            )
        }
        (Verdict::Same, _) => (
            "no difference",
            format!(
                "no difference: the same within ±{}% (interleaved{after}): keep {baseline}",
                pct(report.settings.same_within)
            ),
        ),
        _ => (
            "no difference",
            format!(
                "no significant difference (interleaved, {n} pairs; ±{}% was detectable in \
                 this budget): keep {baseline}",
                report.mde.map_or("?".to_string(), pct)
            ),
        ),
    };
    Proof {
        pairs: n,
        winner_better: better,
        ratio: mi.ratio,
        ratio_ci: ci,
        sign_test_p: sign_test(better, better + worse),
        outcome: outcome.to_string(),
        verdict,
        runs,
    }
}

/// The proof `metric` alone gives (not the deciding one: `advise --verify` shows throughput
/// and p99 both): better or worse where its always-valid interval excludes 1, else no
/// significant difference.
pub fn to_proof_of(report: &Report, metric: Metric, baseline: &str) -> Proof {
    let mut r = report.clone();
    r.settings.decide_on = metric;
    r.metric = metric.name().to_string();
    let mi = r.metrics[metric.name()];
    r.verdict = match (mi.ci_low, mi.ci_high) {
        (Some(lo), _) if lo > 1.0 => {
            if metric.higher_is_better() {
                Verdict::BBetter
            } else {
                Verdict::ABetter
            }
        }
        (_, Some(hi)) if hi < 1.0 => {
            if metric.higher_is_better() {
                Verdict::ABetter
            } else {
                Verdict::BBetter
            }
        }
        _ => Verdict::Undecided,
    };
    r.mde = mi.log_interval().map(|_| mi.log_half_width.exp() - 1.0);
    to_proof(&r, baseline)
}

/// The metric an objective is decided on by the interleaved protocol, if it has one (the
/// mean, p99.9, capacity and deliveries have none: their proof stays sequential).
pub fn metric_of(objective: &crate::Objective) -> Option<Metric> {
    use crate::objective::Stat;
    match objective {
        crate::Objective::MaximizeThroughput => Some(Metric::Throughput),
        crate::Objective::Minimize(Stat::P50) => Some(Metric::P50),
        crate::Objective::Minimize(Stat::P90) => Some(Metric::P90),
        crate::Objective::Minimize(Stat::P99) => Some(Metric::P99),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::block::{Block, Settings};
    use super::super::schedule::{Protocol, Step};
    use super::*;

    fn report(effect: f64) -> Report {
        let mut s = Settings::new(Metric::Throughput);
        s.budget_s = 40.0;
        let mut p = Protocol::new(s);
        let mut t = 0.0;
        let mut k = 0u64;
        while let Step::Measure { side, .. } = p.next(t) {
            k += 1;
            let w = 1.0 + 0.01 * (k % 3) as f64;
            let rps = if side == Side::B {
                1000.0 * effect
            } else {
                1000.0
            } * w;
            p.record(Block::from_figures(side, 1.0, rps, [1.0; 3]), t, 1.0);
            t += 1.0;
        }
        Report::new(("default", "winner"), &p, t, false)
    }

    #[test]
    fn a_default_that_turns_requests_away_is_not_kept_for_its_equal_throughput() {
        let mut s = Settings::new(Metric::Throughput);
        s.budget_s = 40.0;
        let mut p = Protocol::new(s);
        let mut t = 0.0;
        let mut k = 0u64;
        while let Step::Measure { side, .. } = p.next(t) {
            k += 1;
            let ok = 1000.0 * (1.0 + 0.01 * (k % 3) as f64);
            // A, the default, fails 30% of its attempts; B none.
            let errors = if side == Side::A { 430 } else { 0 };
            let mut h = webtune_model::LatencyHistogram::new();
            h.record(1000);
            p.record(Block::measured(side, 1.0, ok as u64, errors, h), t, 1.0);
            t += 1.0;
        }
        let r = Report::new(("default", "winner"), &p, t, false);
        let proof = to_proof(&r, "the default");
        assert_eq!(proof.outcome, "better", "{}", proof.verdict);
        assert!(
            proof
                .verdict
                .starts_with("better: the winner fails 0.0% of its requests, the default 3"),
            "{}",
            proof.verdict
        );
        assert!(proof.verdict.contains("; throughput "), "{}", proof.verdict);
        // The pairs plotted stay the objective's.
        assert!(
            proof.runs.iter().all(|(a, _)| *a >= 1000.0),
            "{:?}",
            proof.runs
        );
    }

    #[test]
    fn the_interleaved_verdict_reads_as_the_proofs() {
        let p = to_proof(&report(1.12), "the default");
        assert_eq!(p.outcome, "better");
        assert!(p.verdict.starts_with("better by 1"), "{}", p.verdict);
        assert!(p.verdict.contains("interleaved"), "{}", p.verdict);
        assert!(p.headline().ends_with("): better"), "{}", p.headline());
        assert_eq!(p.runs.len(), p.pairs);
        assert!(p.runs.iter().all(|(a, b)| b > a));
        let p = to_proof(&report(0.85), "the default");
        assert_eq!(p.outcome, "worse");
        assert!(p.verdict.ends_with(": keep the default"), "{}", p.verdict);
        let p = to_proof(&report(1.0), "the default");
        assert_eq!(p.outcome, "no difference");
        assert!(p.verdict.contains("keep the default"), "{}", p.verdict);
        assert_eq!(
            metric_of(&crate::Objective::MaximizeThroughput),
            Some(Metric::Throughput)
        );
        assert_eq!(metric_of(&crate::Objective::MaximizeCapacity), None);
        // Any metric alone: B's latency (1 ms, as A's) is no different.
        let p = to_proof_of(&report(1.12), Metric::P99, "the current config");
        assert_eq!(p.outcome, "no difference");
        let p = to_proof_of(&report(1.12), Metric::Throughput, "the current config");
        assert_eq!(p.outcome, "better");
    }
}
