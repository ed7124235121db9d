//! The live comparison's report (`webtune.compare-live/1`) and its words: the verdict first
//! ("B is 9.8% faster (95% CI 7.1–12.4%), decided after 41 s; p99 −12% (…); no errors"),
//! then per metric each arm's figure and the ratio with its interval, then the interference
//! the arms met. Every block is kept in the report.

use super::block::{Block, Interference, Metric, Settings, Side};
use super::judge::{self, MetricInterval, Verdict};
use super::schedule::Protocol;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use webtune_model::LatencyHistogram;

/// One arm's figures over its counted blocks: totals, and percentiles from the merged
/// histograms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSummary {
    /// What the arm is (a URL, or the stack's settings).
    pub name: String,
    pub blocks: usize,
    pub responses: u64,
    pub errors: u64,
    /// Responses per counted second.
    pub throughput: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
}

/// Mean interference per block of each arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmsInterference {
    pub a: Interference,
    pub b: Interference,
    /// Whether the arms met clearly different interference (CPU pressure or other CPU apart
    /// by more than a quarter of the larger and more than 2 points / 0.05 cores).
    pub differs: bool,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub verdict: Verdict,
    /// The metric that decided (or would have).
    pub metric: String,
    /// Per metric: `ratio` B/A and its interval `ci_low`–`ci_high`.
    pub metrics: BTreeMap<String, MetricInterval>,
    /// Half-width of the deciding metric's interval, a fraction (±): with `undecided`, the
    /// smallest difference this budget could detect with this noise.
    pub mde: Option<f64>,
    pub decided_after_s: Option<f64>,
    pub elapsed_s: f64,
    pub pairs: usize,
    pub starts: usize,
    pub interrupted: bool,
    pub settings: Settings,
    pub arms: BTreeMap<String, ArmSummary>,
    pub interference: ArmsInterference,
    /// Every block, in order.
    pub blocks: Vec<Block>,
    /// Anything the caller wants said (how blocks were measured, memory checks…).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn arm_summary(name: &str, blocks: &[&Block]) -> ArmSummary {
    let mut h = LatencyHistogram::new();
    for b in blocks {
        if let Some(bh) = &b.histogram {
            h.merge(bh);
        }
    }
    let counted: f64 = blocks.iter().map(|b| b.counted_s).sum();
    let responses = blocks.iter().map(|b| b.responses).sum();
    let ms = |p: f64| h.percentile(p) as f64 / 1000.0;
    ArmSummary {
        name: name.to_string(),
        blocks: blocks.len(),
        responses,
        errors: blocks.iter().map(|b| b.errors).sum(),
        throughput: if counted > 0.0 {
            responses as f64 / counted
        } else {
            0.0
        },
        p50_ms: ms(50.0),
        p90_ms: ms(90.0),
        p99_ms: ms(99.0),
    }
}

fn mean_interference(blocks: &[&Block]) -> Interference {
    let mean = |f: &dyn Fn(&Interference) -> Option<f64>| {
        let xs: Vec<f64> = blocks.iter().filter_map(|b| f(&b.interference)).collect();
        (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
    };
    Interference {
        cpu_pressure_pct: mean(&|i| i.cpu_pressure_pct),
        steal_pct: mean(&|i| i.steal_pct),
        other_cpu_cores: mean(&|i| i.other_cpu_cores),
    }
}

fn apart(a: Option<f64>, b: Option<f64>, floor: f64) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() > floor && (a - b).abs() > 0.25 * a.max(b),
        _ => false,
    }
}

impl Report {
    /// The report of `protocol` as it stands, `elapsed_s` into the comparison.
    pub fn new(
        (a, b): (&str, &str),
        protocol: &Protocol,
        elapsed_s: f64,
        interrupted: bool,
    ) -> Report {
        let j = protocol.judgement();
        let blocks = protocol.blocks();
        let of = |side: Side| -> Vec<&Block> { blocks.iter().filter(|b| b.arm == side).collect() };
        let (ba, bb) = (of(Side::A), of(Side::B));
        let (ia, ib) = (mean_interference(&ba), mean_interference(&bb));
        let differs = apart(ia.cpu_pressure_pct, ib.cpu_pressure_pct, 2.0)
            || apart(ia.other_cpu_cores, ib.other_cpu_cores, 0.05)
            || apart(ia.steal_pct, ib.steal_pct, 2.0);
        let decided_after_s = protocol.decided_after_s();
        Report {
            schema: super::SCHEMA.to_string(),
            verdict: if decided_after_s.is_some() {
                j.verdict
            } else {
                Verdict::Undecided
            },
            metric: j.metric,
            metrics: j.metrics,
            mde: j.mde,
            decided_after_s,
            elapsed_s,
            pairs: j.pairs,
            starts: blocks.iter().map(|b| b.start + 1).max().unwrap_or(0),
            interrupted,
            settings: protocol.settings().clone(),
            arms: BTreeMap::from([
                ("a".to_string(), arm_summary(a, &ba)),
                ("b".to_string(), arm_summary(b, &bb)),
            ]),
            interference: ArmsInterference {
                a: ia,
                b: ib,
                differs,
            },
            blocks: blocks.to_vec(),
            notes: Vec::new(),
        }
    }

    fn interval(&self, m: Metric) -> &MetricInterval {
        &self.metrics[m.name()]
    }

    /// The metric the verdict was taken on: the asked one (`--decide-on`), or the errors
    /// when they decided on their own (`judge::errors_guard`).
    pub fn deciding_metric(&self) -> Metric {
        Metric::from_name(&self.metric).unwrap_or(self.settings.decide_on)
    }

    /// The verdict sentence, first line of the text.
    pub fn headline(&self) -> String {
        let m = self.deciding_metric();
        let mi = self.interval(m);
        let after = self
            .decided_after_s
            .map(|s| format!(", decided after {s:.0} s"))
            .unwrap_or_default();
        let lead = match self.verdict {
            Verdict::BBetter | Verdict::ABetter if m == Metric::Errors => {
                let (a, b) = judge::error_shares(&self.blocks);
                let (who, worse, better) = if self.verdict == Verdict::BBetter {
                    ("B", a, b)
                } else {
                    ("A", b, a)
                };
                format!(
                    "{who} fails fewer requests: {}% of its attempts against {}% (errors B/A \
                     {}){after}",
                    num(100.0 * better),
                    num(100.0 * worse),
                    ratio_ci(mi)
                )
            }
            Verdict::BBetter | Verdict::ABetter => {
                let b_wins = self.verdict == Verdict::BBetter;
                let (lo, hi) = (mi.ci_low.unwrap_or(0.0), mi.ci_high.unwrap_or(0.0));
                // The winner's advantage, as a positive percentage, with its interval.
                let (g, glo, ghi) = match (m.higher_is_better(), b_wins) {
                    (true, true) => (mi.ratio - 1.0, lo - 1.0, hi - 1.0),
                    (true, false) => (1.0 / mi.ratio - 1.0, 1.0 / hi - 1.0, 1.0 / lo - 1.0),
                    (false, true) => (1.0 - mi.ratio, 1.0 - hi, 1.0 - lo),
                    (false, false) => (mi.ratio - 1.0, lo - 1.0, hi - 1.0),
                };
                let who = if b_wins { "B" } else { "A" };
                let what = if m.higher_is_better() {
                    format!("{who} is {}% faster", num(100.0 * g))
                } else {
                    format!("{who}'s {} is {}% lower", m.name(), num(100.0 * g))
                };
                format!(
                    "{what} (95% CI {}–{}%){after}",
                    num(100.0 * glo),
                    num(100.0 * ghi)
                )
            }
            Verdict::Same => format!(
                "A and B are the same within ±{}% ({} B/A {}){after}",
                num(100.0 * self.settings.same_within),
                m.name(),
                ratio_ci(mi)
            ),
            Verdict::Undecided => {
                let mde = self
                    .mde
                    .map(|x| format!("±{}%", num(100.0 * x)))
                    .unwrap_or_else(|| "not known (fewer than two pairs)".into());
                let why = if self.interrupted {
                    format!("interrupted after {:.0} s", self.elapsed_s)
                } else {
                    format!("undecided after {:.0} s", self.elapsed_s)
                };
                let counted = self.pairs_in_last_start();
                if counted < self.settings.min_pairs && !self.interrupted {
                    // The interval may already exclude 1: what stopped a verdict is the
                    // count, and a longer budget is the remedy, not less noise.
                    format!(
                        "{why}: {counted} pair(s) in the last start, and a verdict needs {} \
                         (a longer --budget holds more) ({} B/A {})",
                        self.settings.min_pairs,
                        m.name(),
                        ratio_ci(mi)
                    )
                } else {
                    format!(
                        "{why}: with this noise the smallest difference this budget can detect \
                         is {mde} ({} B/A {})",
                        m.name(),
                        ratio_ci(mi)
                    )
                }
            }
        };
        let other = if m != self.settings.decide_on {
            // The errors decided: the asked metric comes next.
            self.settings.decide_on
        } else if m == Metric::P99 {
            Metric::Throughput
        } else {
            Metric::P99
        };
        let oi = self.interval(other);
        let errors = match (&self.arms["a"], &self.arms["b"]) {
            (a, b) if a.errors == 0 && b.errors == 0 => "no errors".to_string(),
            (a, b) if a.errors == b.errors => format!("errors equal ({})", a.errors),
            (a, b) => format!("errors A {} / B {}", a.errors, b.errors),
        };
        format!(
            "{lead}; {} {} ({}); {errors}",
            other.name(),
            signed(oi.ratio),
            ci_signed(oi)
        )
    }

    /// Complete pairs (both arms measured) in the last start: where the rule wants
    /// `min_pairs` before a verdict.
    fn pairs_in_last_start(&self) -> usize {
        let last = self.settings.starts.saturating_sub(1);
        let mut arms: BTreeMap<usize, (bool, bool)> = BTreeMap::new();
        for b in self.blocks.iter().filter(|b| b.start == last) {
            let e = arms.entry(b.pair).or_default();
            match b.arm {
                Side::A => e.0 = true,
                Side::B => e.1 = true,
            }
        }
        arms.values().filter(|(a, b)| *a && *b).count()
    }

    /// The whole text: the verdict, per metric lines, the interference.
    pub fn text(&self) -> String {
        let mut out = format!("{}\n", self.headline());
        let (a, b) = (&self.arms["a"], &self.arms["b"]);
        out.push_str(&format!(
            "A: {} ({} blocks)\nB: {} ({} blocks)\n",
            a.name, a.blocks, b.name, b.blocks
        ));
        for m in Metric::ALL {
            let mi = self.interval(m);
            let (fa, fb) = match m {
                Metric::Throughput => (
                    format!("{:.0}/s", a.throughput),
                    format!("{:.0}/s", b.throughput),
                ),
                Metric::P50 => (ms(a.p50_ms), ms(b.p50_ms)),
                Metric::P90 => (ms(a.p90_ms), ms(b.p90_ms)),
                Metric::P99 => (ms(a.p99_ms), ms(b.p99_ms)),
                Metric::Errors => (a.errors.to_string(), b.errors.to_string()),
            };
            let decides = if m == self.deciding_metric() {
                "  (decides)"
            } else {
                ""
            };
            out.push_str(&format!(
                "  {:<10} A {fa:>10}  B {fb:>10}  B/A {} over {} pairs{decides}\n",
                m.name(),
                ratio_ci(mi),
                mi.pairs
            ));
        }
        let i = &self.interference;
        out.push_str(&format!(
            "interference, mean per block: A {}; B {}\n",
            interference(&i.a),
            interference(&i.b)
        ));
        if i.differs {
            out.push_str("the two arms met different interference: read the verdict with care\n");
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        out
    }

    /// Exit status words: decided or not.
    pub fn decided(&self) -> bool {
        self.verdict.decided()
    }
}

/// A progress line: pairs so far and the deciding metric's interval.
pub fn progress(protocol: &Protocol, elapsed_s: f64) -> String {
    let j = protocol.judgement();
    let mi = j.metrics[&j.metric];
    format!(
        "[{elapsed_s:>5.0} s] {} pairs: {} B/A {}",
        j.pairs,
        j.metric,
        ratio_ci(&mi)
    )
}

fn interference(i: &Interference) -> String {
    let f = |x: Option<f64>, unit: &str| x.map_or("n/a".to_string(), |v| format!("{v:.1}{unit}"));
    format!(
        "CPU pressure {}, steal {}, other CPU {}",
        f(i.cpu_pressure_pct, "%"),
        f(i.steal_pct, "%"),
        i.other_cpu_cores
            .map_or("n/a".to_string(), |v| format!("{v:.2} cores"))
    )
}

/// A percentage: one decimal under 10, whole above.
fn num(p: f64) -> String {
    if p.abs() >= 10.0 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    }
}

fn ms(x: f64) -> String {
    format!("{x:.2} ms")
}

/// "+9.8%" / "−12%" (a true minus sign).
fn signed(ratio: f64) -> String {
    let p = 100.0 * (ratio - 1.0);
    let s = num(p.abs());
    if p < 0.0 {
        format!("−{s}%")
    } else {
        format!("+{s}%")
    }
}

fn ci_signed(mi: &MetricInterval) -> String {
    match (mi.ci_low, mi.ci_high) {
        (Some(lo), Some(hi)) => format!("95% CI {} to {}", signed(lo), signed(hi)),
        _ => "no interval yet".to_string(),
    }
}

fn ratio_ci(mi: &MetricInterval) -> String {
    match (mi.ci_low, mi.ci_high) {
        (Some(lo), Some(hi)) => format!("{} (95% CI {}–{})", times(mi.ratio), times(lo), times(hi)),
        _ => format!("{} (no interval yet)", times(mi.ratio)),
    }
}

/// A ratio as "×1.234"; under ×0.001 (errors that one arm all but never had) with two
/// significant digits, "×1.2e-4", rather than "×0.000".
pub(crate) fn times(x: f64) -> String {
    if x >= 0.001 || x == 0.0 || !x.is_finite() {
        format!("×{x:.3}")
    } else {
        format!("×{x:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::super::schedule::Step;
    use super::*;

    fn run(rps_b: f64, errors_b: u64) -> Report {
        let mut s = Settings::new(Metric::Throughput);
        s.budget_s = 40.0;
        let mut p = Protocol::new(s);
        let mut t = 0.0;
        let mut k = 0u64;
        while let Step::Measure { side, .. } = p.next(t) {
            k += 1;
            let wobble = 1.0 + 0.01 * (k % 5) as f64;
            let (rps, errors) = match side {
                Side::A => (1000.0 * wobble, 0),
                Side::B => (rps_b * wobble, errors_b),
            };
            let mut h = LatencyHistogram::new();
            h.record((1e6 / rps) as u64);
            let mut b = Block::measured(side, 0.9, (rps * 0.9) as u64, errors, h);
            b.interference.cpu_pressure_pct = Some(3.0);
            p.record(b, t, 1.0);
            t += 1.0;
        }
        let mut r = Report::new(("http://a/", "http://b/"), &p, t, false);
        r.notes.push("a note".into());
        r
    }

    #[test]
    fn too_few_pairs_for_a_verdict_says_so_not_that_the_noise_was_too_high() {
        // 8 s of 1 s blocks: 4 pairs, one short of the 5 a verdict
        // needs, though a 30% difference already lies outside the interval.
        let mut s = Settings::new(Metric::Throughput);
        s.budget_s = 8.0;
        let mut p = Protocol::new(s);
        let mut t = 0.0;
        while let Step::Measure { side, .. } = p.next(t) {
            let rps = if side == Side::B { 1300.0 } else { 1000.0 } * (1.0 + 0.001 * t);
            let mut h = LatencyHistogram::new();
            h.record((1e6 / rps) as u64);
            p.record(Block::measured(side, 0.9, (rps * 0.9) as u64, 0, h), t, 1.0);
            t += 1.0;
        }
        let r = Report::new(("http://a/", "http://b/"), &p, t, false);
        assert_eq!(r.verdict, Verdict::Undecided);
        let first = r.headline();
        assert!(
            first.contains("pair(s) in the last start, and a verdict needs 5"),
            "{first}"
        );
        assert!(!first.contains("smallest difference"), "{first}");
    }

    #[test]
    fn an_arm_that_turns_requests_away_loses_though_it_serves_as_many() {
        // B serves as many responses a second as A but fails 300 attempts a block (25%):
        // throughput alone cannot tell them apart; the errors decide.
        let r = run(1000.0, 300);
        assert_eq!(r.verdict, Verdict::ABetter);
        assert_eq!(r.metric, "errors");
        assert_eq!(r.deciding_metric(), Metric::Errors);
        let first = r.headline();
        assert!(
            first.starts_with("A fails fewer requests: 0.0% of its attempts against 2"),
            "{first}"
        );
        assert!(first.contains("(errors B/A ×"), "{first}");
        assert!(first.contains("; throughput "), "{first}");
        let text = r.text();
        let decides: Vec<&str> = text.lines().filter(|l| l.contains("(decides)")).collect();
        assert_eq!(decides.len(), 1);
        assert!(decides[0].trim_start().starts_with("errors"), "{decides:?}");
        // The smallest difference the budget could tell stays the asked metric's.
        assert!(r.mde.is_some_and(|m| m < 0.5), "{:?}", r.mde);
    }

    #[test]
    fn the_verdict_comes_first_and_reads_the_right_way() {
        let r = run(1100.0, 0);
        assert_eq!(r.verdict, Verdict::BBetter);
        let text = r.text();
        let first = text.lines().next().unwrap();
        assert!(first.starts_with("B is "), "{first}");
        assert!(first.contains("% faster (95% CI "), "{first}");
        assert!(first.contains(", decided after "), "{first}");
        assert!(first.contains("; p99 −"), "{first}");
        assert!(first.ends_with("; no errors"), "{first}");
        assert!(text.contains("interference, mean per block: A CPU pressure 3.0%"));
        let r = run(900.0, 3);
        assert_eq!(r.verdict, Verdict::ABetter);
        assert!(r.headline().starts_with("A is 1"), "{}", r.headline());
        assert!(r.headline().contains("errors A 0 / B "), "{}", r.headline());
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["schema"], "webtune.compare-live/1");
        assert_eq!(json["verdict"], "a_better");
        assert_eq!(json["metric"], "throughput");
        for m in ["throughput", "p50", "p90", "p99", "errors"] {
            for f in ["ratio", "ci_low", "ci_high"] {
                assert!(json["metrics"][m][f].is_number(), "{m}.{f}");
            }
        }
        assert!(json["blocks"].as_array().unwrap().len() >= 6);
        assert!(json["interference"]["a"]["cpu_pressure_pct"].is_number());
        assert!(json["mde"].is_number() && json["decided_after_s"].is_number());
        // And it reads back.
        let back: Report = serde_json::from_value(json).unwrap();
        assert_eq!(back.blocks.len(), r.blocks.len());
    }
}
