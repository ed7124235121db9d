//! The proof after the search: the default (A) and the winner (B) measured in interleaved
//! pairs (A B, B A, A B, …, so a drift of the machine hits both arms alike), then the
//! paired log-ratio's mean with a Student-t 95% confidence interval, an exact two-sided sign
//! test, and a plain verdict — "better by 12% (95% CI 8–15%, 5/5 pairs)" or "no significant
//! difference: keep the default". Direction-aware: for latency, lower is better. The words
//! of every verdict, and the per-pair lines both `tune` and `advise --verify` print, are
//! made here and nowhere else; the runs themselves are `paired`'s.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The two arms of the proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arm {
    /// A: the stack's default configuration.
    Default,
    /// B: the search's winner.
    Winner,
}

impl Arm {
    pub fn letter(self) -> &'static str {
        match self {
            Arm::Default => "A",
            Arm::Winner => "B",
        }
    }
}

/// The run order for `pairs` pairs: A B B A A B B A …
pub fn order(pairs: usize) -> Vec<Arm> {
    (0..pairs)
        .flat_map(|i| {
            if i % 2 == 0 {
                [Arm::Default, Arm::Winner]
            } else {
                [Arm::Winner, Arm::Default]
            }
        })
        .collect()
}

/// What the paired runs say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proof {
    /// Usable pairs (both figures positive and finite).
    pub pairs: usize,
    /// Pairs in which the winner did better.
    pub winner_better: usize,
    /// Geometric mean of winner / default.
    pub ratio: f64,
    /// 95% confidence interval of the ratio (None with fewer than two pairs).
    pub ratio_ci: Option<(f64, f64)>,
    /// Exact two-sided sign test p-value (ties left out).
    pub sign_test_p: f64,
    /// "better", "worse" or "no difference".
    pub outcome: String,
    pub verdict: String,
    /// The usable pairs themselves, (A, B) in run order.
    #[serde(default)]
    pub runs: Vec<(f64, f64)>,
}

fn pct(x: f64) -> String {
    let p = 100.0 * x;
    if p.abs() >= 10.0 {
        format!("{p:.0}")
    } else {
        let s = format!("{p:.1}");
        s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
    }
}

/// Exact two-sided sign test: `k` successes of `n` under p = 1/2.
pub fn sign_test(k: usize, n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let tail = k.min(n - k);
    let mut c = 1.0f64; // C(n, 0)
    let mut sum = 0.0;
    for i in 0..=tail {
        if i > 0 {
            c = c * (n - i + 1) as f64 / i as f64;
        }
        sum += c;
    }
    (2.0 * sum / 2f64.powi(n as i32)).min(1.0)
}

/// Judge the pairs `(default, winner)` of the objective's figure.
pub fn analyze(pairs: &[(f64, f64)], higher_is_better: bool) -> Proof {
    analyze_against(pairs, higher_is_better, "the default")
}

/// Judge the pairs `(A, B)`, naming A as `baseline` in the verdict ("keep the current
/// config" for `advise --verify`).
pub fn analyze_against(pairs: &[(f64, f64)], higher_is_better: bool, baseline: &str) -> Proof {
    let usable: Vec<(f64, f64)> = pairs
        .iter()
        .copied()
        .filter(|(a, b)| *a > 0.0 && *b > 0.0 && a.is_finite() && b.is_finite())
        .collect();
    let d: Vec<f64> = usable.iter().map(|(a, b)| (b / a).ln()).collect();
    let n = d.len();
    let sign = if higher_is_better { 1.0 } else { -1.0 };
    let better = d.iter().filter(|x| sign * **x > 0.0).count();
    let worse = d.iter().filter(|x| sign * **x < 0.0).count();
    let sign_test_p = sign_test(better, better + worse);
    let mean = if n > 0 {
        d.iter().sum::<f64>() / n as f64
    } else {
        0.0
    };
    let ci = (n >= 2).then(|| {
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
        let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map(|s| s.inverse_cdf(0.975))
            .unwrap_or(f64::INFINITY);
        let half = t * sd / (n as f64).sqrt();
        (mean - half, mean + half)
    });
    // Improvement (positive = better) and its interval, in the objective's direction.
    let gain = |log_ratio: f64| {
        if higher_is_better {
            log_ratio.exp() - 1.0
        } else {
            1.0 - log_ratio.exp()
        }
    };
    let (outcome, verdict) = match ci {
        Some((lo, hi)) if (sign * lo).min(sign * hi) > 0.0 => {
            let (g_lo, g_hi) = sorted(gain(lo), gain(hi));
            (
                "better",
                format!(
                    "better by {}% (95% CI {}–{}%, {better}/{n} pairs)",
                    pct(gain(mean)),
                    pct(g_lo),
                    pct(g_hi)
                ),
            )
        }
        Some((lo, hi)) if (sign * lo).max(sign * hi) < 0.0 => {
            let (g_lo, g_hi) = sorted(-gain(lo), -gain(hi));
            (
                "worse",
                format!(
                    "worse by {}% (95% CI {}–{}%, {worse}/{n} pairs): keep {baseline}",
                    pct(-gain(mean)),
                    pct(g_lo),
                    pct(g_hi)
                ),
            )
        }
        _ => (
            "no difference",
            format!("no significant difference: keep {baseline}"),
        ),
    };
    Proof {
        pairs: n,
        winner_better: better,
        ratio: mean.exp(),
        ratio_ci: ci.map(|(lo, hi)| (lo.exp(), hi.exp())),
        sign_test_p,
        outcome: outcome.to_string(),
        verdict,
        runs: usable,
    }
}

/// How a figure reads in the per-pair lines: whole numbers from 100 up.
fn figure(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

impl Proof {
    /// The measured change of B against A with its interval, and the verdict's word, in
    /// one phrase that never contradicts itself: "+12.0% (95% CI +8.0% to +15.0%): better",
    /// or "no significant difference (+35.1%, 95% CI −4.0% to +90.0%)".
    pub fn headline(&self) -> String {
        let change = |r: f64| format!("{:+.1}%", (r - 1.0) * 100.0);
        let ci = self
            .ratio_ci
            .map_or("no interval with one pair".to_string(), |(lo, hi)| {
                format!("95% CI {} to {}", change(lo), change(hi))
            });
        if self.pairs == 0 {
            return "no usable pair".to_string();
        }
        match self.outcome.as_str() {
            "better" | "worse" => format!("{} ({ci}): {}", change(self.ratio), self.outcome),
            _ => format!("no significant difference ({}, {ci})", change(self.ratio)),
        }
    }

    /// The pairs and the interval, as lines: what each pair measured (A → B, in `unit`),
    /// then the ratio B/A with its 95% interval, the pairs B won and the sign test.
    /// `names` are the arms' names ("default", "winner").
    pub fn detail(&self, unit: &str, (a, b): (&str, &str)) -> Vec<String> {
        if self.runs.is_empty() {
            return vec![format!("no usable pair ({a} and {b} both measured)")];
        }
        let pairs: Vec<String> = self
            .runs
            .iter()
            .map(|(x, y)| format!("{} → {}", figure(*x), figure(*y)))
            .collect();
        let ci = self
            .ratio_ci
            .map_or("no interval with one pair".to_string(), |(lo, hi)| {
                format!("95% CI ×{lo:.3}–×{hi:.3}")
            });
        vec![
            format!("pairs, {a} → {b} ({unit}): {}", pairs.join(", ")),
            format!(
                "{b}/{a} ×{:.3} ({ci}); {b} better in {}/{} pairs, sign test p = {:.2}",
                self.ratio, self.winner_better, self.pairs, self.sign_test_p
            ),
        ]
    }
}

fn sorted(a: f64, b: f64) -> (f64, f64) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// A sentence when the proof disagrees with the search: the search measured the winner
/// `search_gain` better (relative, positive = better) but the paired runs found no gain, a
/// loss, or a gain whose interval excludes the search's figure. None when they agree.
pub fn disagreement(search_gain: f64, proof: &Proof, higher_is_better: bool) -> Option<String> {
    let searched = format!(
        "the search measured the winner {}% better",
        pct(search_gain)
    );
    if proof.outcome != "better" {
        if search_gain <= 0.0 {
            return None;
        }
        return Some(format!(
            "the proof disagrees with the search: {searched}; the paired runs say {}",
            proof.verdict
        ));
    }
    let (lo, hi) = proof.ratio_ci?;
    let (g_lo, g_hi) = if higher_is_better {
        (lo - 1.0, hi - 1.0)
    } else {
        (1.0 - hi, 1.0 - lo)
    };
    if search_gain > g_hi {
        return Some(format!(
            "the search overstated the gain: {searched}; the paired runs say {}",
            proof.verdict
        ));
    }
    if search_gain < g_lo {
        return Some(format!(
            "the search understated the gain: {searched}; the paired runs say {}",
            proof.verdict
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_interleaves_abba() {
        use Arm::*;
        assert_eq!(
            order(3),
            vec![Default, Winner, Winner, Default, Default, Winner]
        );
        assert_eq!(order(0), vec![]);
    }

    #[test]
    fn sign_test_is_exact() {
        assert!((sign_test(5, 5) - 0.0625).abs() < 1e-12);
        assert!((sign_test(0, 5) - 0.0625).abs() < 1e-12);
        assert!((sign_test(6, 6) - 0.03125).abs() < 1e-12);
        assert_eq!(sign_test(2, 4), 1.0);
        assert_eq!(sign_test(0, 0), 1.0);
    }

    #[test]
    fn verdicts_read_plainly_and_know_the_direction() {
        let better = [
            (1000.0, 1120.0),
            (1010.0, 1150.0),
            (990.0, 1100.0),
            (1005.0, 1110.0),
            (1000.0, 1140.0),
        ];
        let p = analyze(&better, true);
        assert_eq!(p.outcome, "better");
        assert!(
            p.verdict.starts_with("better by 12% (95% CI "),
            "{}",
            p.verdict
        );
        assert!(p.verdict.ends_with(", 5/5 pairs)"), "{}", p.verdict);
        // The same figures as latencies: the winner is slower.
        let p = analyze(&better, false);
        assert_eq!(p.outcome, "worse");
        assert!(p.verdict.starts_with("worse by "), "{}", p.verdict);
        // Lower latency is better.
        let lat: Vec<(f64, f64)> = better.iter().map(|(a, b)| (*b, *a)).collect();
        assert_eq!(analyze(&lat, false).outcome, "better");
        let noise = [
            (1000.0, 1010.0),
            (1000.0, 990.0),
            (1000.0, 1020.0),
            (1000.0, 985.0),
        ];
        let p = analyze(&noise, true);
        assert_eq!(p.verdict, "no significant difference: keep the default");
        assert_eq!(
            analyze(&[(1.0, 2.0)], true).verdict,
            "no significant difference: keep the default"
        );
        assert_eq!(analyze(&[(0.0, 2.0), (f64::NAN, 1.0)], true).pairs, 0);
    }

    #[test]
    fn the_headline_never_contradicts_the_verdict_and_the_pairs_are_shown() {
        // A large but noisy change: not significant, and the headline says so first.
        let noisy = [(1000.0, 1900.0), (1000.0, 900.0)];
        let p = analyze_against(&noisy, true, "the current config");
        assert_eq!(p.outcome, "no difference");
        assert_eq!(
            p.verdict,
            "no significant difference: keep the current config"
        );
        let h = p.headline();
        assert!(
            h.starts_with("no significant difference (+30.8%, 95% CI "),
            "{h}"
        );
        assert!(!h.contains("% (no difference)"), "{h}");
        let lines = p.detail("req/s", ("current", "advised"));
        assert_eq!(
            lines[0],
            "pairs, current → advised (req/s): 1000 → 1900, 1000 → 900"
        );
        assert!(
            lines[1].starts_with("advised/current ×1.308 (95% CI ×"),
            "{}",
            lines[1]
        );
        assert!(lines[1].ends_with("advised better in 1/2 pairs, sign test p = 1.00"));
        let better = analyze(&[(100.0, 110.0), (100.0, 111.0), (100.0, 109.0)], true);
        assert!(
            better.headline().ends_with("): better"),
            "{}",
            better.headline()
        );
        assert_eq!(better.runs.len(), 3);
    }

    #[test]
    fn disagreement_is_said() {
        let noise = [
            (1000.0, 1010.0),
            (1000.0, 990.0),
            (1000.0, 1020.0),
            (1000.0, 985.0),
        ];
        let p = analyze(&noise, true);
        let s = disagreement(0.3, &p, true).unwrap();
        assert!(s.starts_with("the proof disagrees with the search"), "{s}");
        assert!(disagreement(0.0, &p, true).is_none());
        let p = analyze(&[(100.0, 110.0), (100.0, 111.0), (100.0, 109.0)], true);
        assert!(disagreement(0.10, &p, true).is_none());
        assert!(disagreement(0.5, &p, true).unwrap().contains("overstated"));
    }
}
