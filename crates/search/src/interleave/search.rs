//! The search measured against its incumbent (issue 34 item 2, `tune --search-protocol
//! interleaved`): each candidate (arm B) runs at once with the incumbent (arm A: the best
//! configuration so far, the default at first), the load alternating between them in
//! blocks, and the study is told the candidate's figures *on the incumbent's scale*: the
//! incumbent's reference figures (the geometric mean of what the study holds for it) times
//! the pairs' ratios B/A. Noise that both arms met cancels in the ratio, so the study compares
//! candidates through ratios rather than through absolute runs taken minutes apart.
//!
//! This module owns that arithmetic (`reference`, `on_reference_scale`), the figures of one
//! arm from its counted blocks (`arm_summary`), the rule that changes the incumbent
//! (`replaces_incumbent`) and what the journal and the report keep per trial (`PairedTrial`). It
//! measures nothing (webtune-tuner's `interleaved_search` runs the pairs) and writes nothing.

use super::block::{Block, Metric, Side};
use super::judge::{Judgement, Verdict};
use crate::objective::LevelSummary;
use crate::space::Config;
use serde::{Deserialize, Serialize};
use webtune_model::LatencyHistogram;

/// One search trial measured against the incumbent: what the journal keeps with its blocks
/// and the report shows beside the trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedTrial {
    /// Arm A: the incumbent when the trial ran.
    pub incumbent: Config,
    /// Arm B: the candidate (the trial's configuration).
    pub candidate: Config,
    /// The incumbent's figures the ratios were applied to (`reference`).
    pub reference: LevelSummary,
    /// The metric the verdict is taken on (the objective's).
    pub metric: String,
    /// The pairs' verdict on `metric` (B is the candidate).
    pub verdict: Verdict,
    /// The pairs' ratio B/A on `metric`, with its always-valid 95% interval (None with
    /// fewer than two pairs).
    pub ratio: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub pairs: usize,
    pub blocks: usize,
    /// What each arm measured itself in its counted blocks (the incumbent re-measured for
    /// free, and the candidate's own absolute figures): shared noise moves both alike.
    pub incumbent_measured: Option<LevelSummary>,
    pub candidate_measured: Option<LevelSummary>,
    /// The candidate beat the incumbent by the interval and met every SLO: it is the
    /// incumbent of the next trial.
    pub became_incumbent: bool,
    /// The candidate's figures as told when the trial ran: `reference` times the pairs'
    /// ratios (`on_reference_scale`). The joint fit (`joint`) reads each trial's ratios from
    /// them; the study then holds the fit's figures. Absent in journals written before the
    /// fit, where the trial's journaled figures are the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub told: Option<LevelSummary>,
    /// The standard error of the pairs' mean ln(B/A) on the objective's figure (`log_se`):
    /// how far this trial's ratio alone may be off. The joint fit carries it to each
    /// configuration's level (`JointFit::spread`), which racing reads. None with fewer than two
    /// pairs, for an objective the pairs do not track, and in journals written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_se: Option<f64>,
    /// Arm A was not the incumbent but the scale's configuration (the default, measured
    /// alone) standing in for a race (webtune-tuner's `interleaved_search::opponent`): the
    /// trial measured the candidate's level directly and replaced nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stand_in: bool,
}

/// The widest interval of a ratio that is still worth printing, as its high bound over its
/// low one: wider than ×0.01–×100 (two or three pairs, one degree of freedom) the bounds
/// say only that nothing is known yet, and "×0.000–×17805.578" read like a measurement. By
/// width, not position: an errors ratio of ×3.4e-4 (95% CI ×2.4e-4–×4.7e-4) is known well.
pub const SHOWN_RATIO_SPAN: f64 = 1e4;

impl PairedTrial {
    /// The pairs' interval when it says something (no wider than `SHOWN_RATIO_SPAN`).
    pub fn shown_interval(&self) -> Option<(f64, f64)> {
        let (lo, hi) = (self.ci_low?, self.ci_high?);
        (lo > 0.0 && hi / lo <= SHOWN_RATIO_SPAN).then_some((lo, hi))
    }

    /// "×1.073 (95% CI ×0.912–×1.204){against} over 8 pair(s); now the incumbent": the
    /// ratio, its interval and the pairs, as the progress line (`against` names the
    /// incumbent) and the report's table (`against` empty) say them.
    pub fn ratio_words(&self, against: &str) -> String {
        format!(
            "{}{}{against} over {} pair(s){}",
            super::render::times(self.ratio),
            self.interval_words()
                .map_or(String::new(), |w| format!(" ({w})")),
            self.pairs,
            if self.became_incumbent {
                "; now the incumbent"
            } else {
                ""
            }
        )
    }

    /// The interval in words: "95% CI ×0.912–×1.204", "95% CI too wide to show" (two or
    /// three pairs), or None with fewer than two pairs. One home for the progress line, the text
    /// report and the HTML page.
    pub fn interval_words(&self) -> Option<String> {
        match (self.shown_interval(), self.ci_low.zip(self.ci_high)) {
            (Some((lo, hi)), _) => Some(format!(
                "95% CI {}–{}",
                super::render::times(lo),
                super::render::times(hi)
            )),
            (None, Some(_)) => Some("95% CI too wide to show".to_string()),
            (None, None) => None,
        }
    }
}

/// The incumbent's reference figures from its measured runs: the geometric mean of each
/// latency and throughput figure (the study averages on the log scale too), the mean of
/// the error ratios. None without a run.
pub fn reference(runs: &[&LevelSummary]) -> Option<LevelSummary> {
    let first = runs.first()?;
    let geo = |f: fn(&LevelSummary) -> f64| {
        let logs: Vec<f64> = runs.iter().map(|r| f(r).max(1e-9).ln()).collect();
        (logs.iter().sum::<f64>() / logs.len() as f64).exp()
    };
    Some(LevelSummary {
        level: first.level.clone(),
        throughput: geo(|r| r.throughput),
        p50_ms: geo(|r| r.p50_ms),
        p90_ms: geo(|r| r.p90_ms),
        p99_ms: geo(|r| r.p99_ms),
        p999_ms: geo(|r| r.p999_ms),
        mean_ms: geo(|r| r.mean_ms),
        error_ratio: runs.iter().map(|r| r.error_ratio).sum::<f64>() / runs.len() as f64,
        mail: None,
    })
}

/// One arm's own figures over its counted blocks: responses over counted seconds, latencies
/// from the merged histograms (the blocks' own figures, averaged, where blocks carry
/// none), errors over attempts. None when the arm has no block with a response.
pub fn arm_summary(level: &str, blocks: &[Block], side: Side) -> Option<LevelSummary> {
    let mine: Vec<&Block> = blocks.iter().filter(|b| b.arm == side).collect();
    let responses: u64 = mine.iter().map(|b| b.responses).sum();
    let errors: u64 = mine.iter().map(|b| b.errors).sum();
    let counted: f64 = mine.iter().map(|b| b.counted_s).sum();
    if responses == 0 || counted <= 0.0 {
        return None;
    }
    let mut merged: Option<LatencyHistogram> = None;
    for h in mine.iter().filter_map(|b| b.histogram.as_ref()) {
        match &mut merged {
            Some(m) => m.merge(h),
            None => merged = Some(h.clone()),
        }
    }
    let ms = |us: u64| us as f64 / 1e3;
    let avg = |f: fn(&Block) -> f64| mine.iter().map(|b| f(b)).sum::<f64>() / mine.len() as f64;
    let (p50, p90, p99, p999, mean) = match &merged {
        Some(h) if !h.is_empty() => (
            ms(h.percentile(50.0)),
            ms(h.percentile(90.0)),
            ms(h.percentile(99.0)),
            ms(h.percentile(99.9)),
            h.mean() / 1e3,
        ),
        _ => (
            avg(|b| b.p50_ms),
            avg(|b| b.p90_ms),
            avg(|b| b.p99_ms),
            avg(|b| b.p99_ms),
            avg(|b| b.p50_ms),
        ),
    };
    Some(LevelSummary {
        level: level.to_string(),
        throughput: responses as f64 / counted,
        p50_ms: p50,
        p90_ms: p90,
        p99_ms: p99,
        p999_ms: p999,
        mean_ms: mean,
        error_ratio: errors as f64 / (responses + errors) as f64,
        mail: None,
    })
}

/// The candidate's figures on the incumbent's scale: each of throughput, p50, p90 and p99 is
/// the reference's times the pairs' ratio B/A of that metric (the geometric mean of the
/// per-pair ratios, `judge`); p99.9 and the mean, which the pairs do not track, the
/// reference's times the ratio of the two arms' merged figures; the error ratio is the
/// candidate's own (an SLO on errors bounds an absolute share, not a ratio). None when no
/// complete pair measured both arms' throughput.
pub fn on_reference_scale(
    reference: &LevelSummary,
    blocks: &[Block],
    judgement: &Judgement,
) -> Option<LevelSummary> {
    if judgement
        .metrics
        .get("throughput")
        .is_none_or(|m| m.pairs == 0)
    {
        return None;
    }
    let a = arm_summary(&reference.level, blocks, Side::A)?;
    let b = arm_summary(&reference.level, blocks, Side::B)?;
    let point = |x: f64, y: f64| if x > 0.0 && y > 0.0 { y / x } else { 1.0 };
    let paired = |name: &str, fallback: f64| {
        judgement
            .metrics
            .get(name)
            .filter(|m| m.pairs > 0 && m.ratio.is_finite() && m.ratio > 0.0)
            .map_or(fallback, |m| m.ratio)
    };
    Some(LevelSummary {
        level: reference.level.clone(),
        throughput: reference.throughput * paired("throughput", point(a.throughput, b.throughput)),
        p50_ms: reference.p50_ms * paired("p50", point(a.p50_ms, b.p50_ms)),
        p90_ms: reference.p90_ms * paired("p90", point(a.p90_ms, b.p90_ms)),
        p99_ms: reference.p99_ms * paired("p99", point(a.p99_ms, b.p99_ms)),
        p999_ms: reference.p999_ms * point(a.p999_ms, b.p999_ms),
        mean_ms: reference.mean_ms * point(a.mean_ms, b.mean_ms),
        error_ratio: b.error_ratio,
        mail: None,
    })
}

/// The standard error of the mean per-pair ln(B/A) of `metric` over the complete pairs of
/// `blocks` (sample standard deviation / √pairs): None with fewer than two pairs. Not the
/// verdict's always-valid interval, which pays for being looked at after every pair: this
/// is one trial's figure as an estimate, for the joint fit's spread and for racing.
pub fn log_se(blocks: &[Block], metric: Metric) -> Option<f64> {
    let xs: Vec<f64> = super::judge::log_ratios(blocks, metric)
        .into_iter()
        .map(|(_, x)| x)
        .filter(|x| x.is_finite())
        .collect();
    let (_, sd) = super::sequence::mean_sd(&xs)?;
    Some(sd / (xs.len() as f64).sqrt())
}

/// Whether the candidate becomes the incumbent: only when the pairs' interval on the
/// deciding metric lies wholly on the candidate's better side (verdict `b_better`, the same
/// rule that ends a comparison) and its figures meet every SLO. A better point estimate
/// inside the noise never changes the reference every later candidate is measured against.
pub fn replaces_incumbent(judgement: &Judgement, feasible: bool) -> bool {
    feasible && judgement.verdict == Verdict::BBetter
}

#[cfg(test)]
mod tests {
    use super::super::block::Settings;
    use super::super::judge;
    use super::*;

    #[test]
    fn an_interval_that_says_nothing_is_not_printed_as_numbers() {
        let mut p = PairedTrial {
            incumbent: Config::new(),
            candidate: Config::new(),
            reference: summary(100.0, 10.0),
            metric: "throughput".into(),
            verdict: Verdict::Undecided,
            ratio: 1.073,
            ci_low: Some(0.000_05),
            ci_high: Some(17_805.6),
            pairs: 2,
            blocks: 4,
            incumbent_measured: None,
            candidate_measured: None,
            became_incumbent: false,
            told: None,
            log_se: None,
            stand_in: false,
        };
        assert_eq!(p.shown_interval(), None);
        assert_eq!(
            p.interval_words().as_deref(),
            Some("95% CI too wide to show")
        );
        (p.ci_low, p.ci_high) = (Some(0.144), Some(2.554));
        assert_eq!(p.shown_interval(), Some((0.144, 2.554)));
        assert_eq!(p.interval_words().as_deref(), Some("95% CI ×0.144–×2.554"));
        (p.ci_low, p.ci_high) = (None, None);
        assert_eq!(p.interval_words(), None);
        // An errors ratio far below 1 and known well: shown, in significant digits.
        (p.ratio, p.ci_low, p.ci_high) = (3.4e-4, Some(2.4e-4), Some(4.7e-4));
        assert_eq!(
            p.ratio_words(" vs the scale"),
            "×3.4e-4 (95% CI ×2.4e-4–×4.7e-4) vs the scale over 2 pair(s)"
        );
    }

    fn summary(tp: f64, p99: f64) -> LevelSummary {
        LevelSummary {
            level: "c=4".into(),
            throughput: tp,
            p50_ms: 1.0,
            p90_ms: 2.0,
            p99_ms: p99,
            p999_ms: p99 * 2.0,
            mean_ms: 1.0,
            error_ratio: 0.0,
            mail: None,
        }
    }

    /// `pairs` pairs in which B has `ratio` × A's throughput (and 1/ratio × its latencies),
    /// the shared level drifting from pair to pair as a neighbour would make it.
    fn blocks(pairs: usize, ratio: f64) -> Vec<Block> {
        let mut out = Vec::new();
        for p in 0..pairs {
            let level = 1000.0 * (1.0 + 0.3 * ((p as f64) * 1.7).sin());
            for (side, tp) in [(Side::A, level), (Side::B, level * ratio)] {
                let lat = 1000.0 / tp;
                let mut b = Block::from_figures(side, 0.9, tp, [lat, 2.0 * lat, 4.0 * lat]);
                b.pair = p;
                b.index = out.len();
                out.push(b);
            }
        }
        out
    }

    fn judged(blocks: &[Block]) -> Judgement {
        let mut s = Settings::new(Metric::Throughput);
        s.budget_s = 2.0 * blocks.len() as f64;
        judge::judge(blocks, &s)
    }

    #[test]
    fn the_candidate_is_told_on_the_incumbents_scale_and_shared_noise_cancels() {
        // The arms' absolute level swings ±30% from pair to pair; the ratio does not.
        let bs = blocks(12, 1.10);
        let j = judged(&bs);
        let reference = summary(500.0, 40.0);
        let told = on_reference_scale(&reference, &bs, &j).unwrap();
        assert!((told.throughput / 550.0 - 1.0).abs() < 1e-6, "{told:?}");
        assert!((told.p99_ms / (40.0 / 1.10) - 1.0).abs() < 1e-6, "{told:?}");
        assert_eq!(told.level, "c=4");
        assert_eq!(told.error_ratio, 0.0);
        // Decided by the interval, not the point: a clear 10% replaces the incumbent, with its SLOs.
        assert_eq!(j.verdict, Verdict::BBetter);
        assert!(replaces_incumbent(&j, true));
        assert!(!replaces_incumbent(&j, false));
        // The same arms: the candidate's figure is the reference's, and nothing changes.
        let same = blocks(12, 1.0);
        let j = judged(&same);
        let told = on_reference_scale(&reference, &same, &j).unwrap();
        assert!((told.throughput - 500.0).abs() < 1e-6);
        assert!(!replaces_incumbent(&j, true));
        // A small gain within the noise of three pairs does not replace it either.
        let mut noisy = blocks(3, 1.02);
        noisy[1].throughput *= 0.8;
        assert!(!replaces_incumbent(&judged(&noisy), true));
        // No complete pair: nothing to tell.
        assert!(on_reference_scale(&reference, &same[..1], &judged(&same[..1])).is_none());
    }

    #[test]
    fn a_trials_standard_error_is_its_pairs_spread_over_root_n() {
        // The shared level swings ±30%; B/A is ×1.10 in every pair: no spread at all.
        assert_eq!(log_se(&blocks(6, 1.10), Metric::Throughput), Some(0.0));
        // B/A ×1.2, ×1.0, ×0.9 in three pairs.
        let mut bs = blocks(3, 1.0);
        bs[1].throughput *= 1.2;
        bs[5].throughput *= 0.9;
        let xs = [1.2f64.ln(), 0.0, 0.9f64.ln()];
        let mean = xs.iter().sum::<f64>() / 3.0;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        let se = log_se(&bs, Metric::Throughput).unwrap();
        assert!((se - sd / 3f64.sqrt()).abs() < 1e-12, "{se}");
        // One pair has no spread to tell.
        assert_eq!(log_se(&bs[..2], Metric::Throughput), None);
    }

    #[test]
    fn the_reference_is_the_geometric_mean_and_an_arm_sums_its_counted_blocks() {
        let r = reference(&[&summary(100.0, 10.0), &summary(400.0, 40.0)]).unwrap();
        assert!((r.throughput - 200.0).abs() < 1e-9 && (r.p99_ms - 20.0).abs() < 1e-9);
        assert!(reference(&[]).is_none());
        let mut h = LatencyHistogram::default();
        for us in [1000, 2000, 3000] {
            h.record(us);
        }
        let mut a = Block::measured(Side::A, 0.5, 3, 1, h.clone());
        a.counted_s = 0.5;
        let b = Block::measured(Side::B, 0.5, 3, 0, h);
        let s = arm_summary("c=1", &[a.clone(), b, a], Side::A).unwrap();
        assert!((s.throughput - 6.0).abs() < 1e-9, "{s:?}");
        assert!((s.error_ratio - 0.25).abs() < 1e-9);
        assert!((s.p50_ms - 2.0).abs() < 0.01, "{s:?}");
        assert!(arm_summary("c=1", &[], Side::B).is_none());
    }
}
