//! Thresholds: pass/fail rules on a run's figures, for CI gates and the tuner's SLOs.
//!
//! One grammar, `METRIC OP VALUE`, spaces optional:
//! - METRIC: `p50`, `p90`, `p99`, `p999` (= p99.9), any `pN[.N]`, `mean`, `min`, `max`
//!   (total latency, from the merged histogram); `errors` (or `error_rate`); `rps` (or
//!   `throughput`, responses per second).
//! - OP: `<=`, `<`, `>=`, `>`.
//! - VALUE: a duration for latency (`50ms`, `250us`, `1.5s`); a percentage (`0.1%`, a share
//!   of attempted requests) or a plain count for errors; a number for rps; or a signed
//!   change against a baseline (`+10%`, `-5%`) for any metric: `compare`'s regression gate.
//!
//! This module parses and judges; it does no I/O. `Measured` is what a judgement reads, so
//! a finished `RunResult` and a live snapshot during a run are judged by the same code.

use crate::{parse_duration, LatencyHistogram};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which latency figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyStat {
    /// A percentile, 0..=100.
    Percentile(f64),
    Mean,
    Min,
    Max,
}

/// What a threshold looks at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    Latency(LatencyStat),
    Errors,
    Rps,
}

/// How the observed value must compare with the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Le,
    Lt,
    Ge,
    Gt,
}

/// The right-hand side as written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// Latency, microseconds.
    Micros(f64),
    /// A share of attempted requests, 0..=1 (written as a percentage).
    Ratio(f64),
    /// A plain number: an error count or responses per second.
    Number(f64),
    /// A change against a baseline's value of the same metric: +0.10 is "+10%".
    Change(f64),
}

/// One parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression as the user wrote it (trimmed).
    pub text: String,
    pub metric: Metric,
    pub comparison: Comparison,
    pub limit: Limit,
}

/// Why a threshold did not parse or cannot be judged. One line each, naming the input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    #[error(
        "threshold {0:?} is not METRIC OP VALUE (e.g. 'p99<=50ms', 'errors<=0.1%', 'rps>=1000')"
    )]
    Syntax(String),
    #[error("threshold {text:?}: unknown metric {metric:?} (use p50, p90, p99, p999, pN, mean, min, max, errors or rps)")]
    UnknownMetric { text: String, metric: String },
    #[error("threshold {text:?}: {metric} takes {wants}, not {value:?}")]
    WrongUnit {
        text: String,
        metric: &'static str,
        wants: &'static str,
        value: String,
    },
    #[error("threshold {0:?} is relative: it needs a baseline (use it with compare)")]
    NeedsBaseline(String),
}

/// The figures a threshold reads.
pub trait Measured {
    /// Total latency in microseconds.
    fn latency_us(&self, stat: LatencyStat) -> f64;
    /// Failed requests, unexpected statuses included.
    fn error_count(&self) -> u64;
    /// Failed requests / attempted requests (0 when none was attempted).
    fn error_ratio(&self) -> f64;
    /// Responses per second.
    fn rps(&self) -> f64;
}

pub(crate) fn histogram_stat(h: &LatencyHistogram, stat: LatencyStat) -> f64 {
    match stat {
        LatencyStat::Percentile(p) => h.percentile(p) as f64,
        LatencyStat::Mean => h.mean(),
        LatencyStat::Min => h.min() as f64,
        LatencyStat::Max => h.max() as f64,
    }
}

/// A run's figures so far, for judging thresholds while it runs (`--threshold-abort`).
#[derive(Debug, Clone, Copy)]
pub struct LiveFigures<'a> {
    pub latency: &'a LatencyHistogram,
    pub responses: u64,
    pub errors: u64,
    pub attempted: u64,
    pub elapsed_s: f64,
}

impl Measured for LiveFigures<'_> {
    fn latency_us(&self, stat: LatencyStat) -> f64 {
        histogram_stat(self.latency, stat)
    }
    fn error_count(&self) -> u64 {
        self.errors
    }
    fn error_ratio(&self) -> f64 {
        if self.attempted == 0 {
            0.0
        } else {
            self.errors as f64 / self.attempted as f64
        }
    }
    fn rps(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.responses as f64 / self.elapsed_s
        } else {
            0.0
        }
    }
}

/// How one threshold fared: printed as a verdict line and kept in the result's JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The expression as given.
    pub threshold: String,
    /// The metric's canonical name ("p99", "p99.9", "mean", "errors", "rps").
    pub metric: String,
    /// "us" (latency), "ratio" (errors as a share, 0..1), "count" (errors) or "req/s".
    pub unit: String,
    pub observed: f64,
    /// The limit in `unit`; for a relative threshold, computed from the baseline.
    pub limit: f64,
    /// The baseline's value of the metric (relative thresholds only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<f64>,
    pub passed: bool,
    /// True when this threshold failed during the run and stopped it (`--threshold-abort`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aborted: bool,
}

impl Metric {
    /// The canonical name.
    pub fn name(self) -> String {
        match self {
            Metric::Latency(LatencyStat::Percentile(p)) => format!("p{p}"),
            Metric::Latency(LatencyStat::Mean) => "mean".into(),
            Metric::Latency(LatencyStat::Min) => "min".into(),
            Metric::Latency(LatencyStat::Max) => "max".into(),
            Metric::Errors => "errors".into(),
            Metric::Rps => "rps".into(),
        }
    }

    fn parse(text: &str) -> Option<Metric> {
        let lower = text.to_ascii_lowercase();
        Some(match lower.as_str() {
            "mean" | "avg" => Metric::Latency(LatencyStat::Mean),
            "min" => Metric::Latency(LatencyStat::Min),
            "max" => Metric::Latency(LatencyStat::Max),
            "errors" | "error_rate" | "error-rate" => Metric::Errors,
            "rps" | "throughput" | "requests_per_s" => Metric::Rps,
            _ => Metric::Latency(LatencyStat::Percentile(percentile(
                lower.strip_prefix('p')?,
            )?)),
        })
    }
}

/// "99" → 99, "99.9" → 99.9, "999" → 99.9, "9999" → 99.99 (a run of digits after "99"
/// reads as decimals, as p999 is commonly written).
fn percentile(digits: &str) -> Option<f64> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let value: f64 = if !digits.contains('.') && digits.len() > 2 && digits.starts_with("99") {
        format!("{}.{}", &digits[..2], &digits[2..]).parse().ok()?
    } else {
        digits.parse().ok()?
    };
    (value > 0.0 && value <= 100.0).then_some(value)
}

impl FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(text: &str) -> Result<Threshold, ThresholdError> {
        let text = text.trim();
        let syntax = || ThresholdError::Syntax(text.to_string());
        let at = text.find(['<', '>']).ok_or_else(syntax)?;
        let (left, rest) = text.split_at(at);
        let (comparison, right) = if let Some(r) = rest.strip_prefix("<=") {
            (Comparison::Le, r)
        } else if let Some(r) = rest.strip_prefix(">=") {
            (Comparison::Ge, r)
        } else if let Some(r) = rest.strip_prefix('<') {
            (Comparison::Lt, r)
        } else if let Some(r) = rest.strip_prefix('>') {
            (Comparison::Gt, r)
        } else {
            return Err(syntax());
        };
        let (left, right) = (left.trim(), right.trim());
        if left.is_empty() || right.is_empty() {
            return Err(syntax());
        }
        let metric = Metric::parse(left).ok_or_else(|| ThresholdError::UnknownMetric {
            text: text.to_string(),
            metric: left.to_string(),
        })?;
        let limit = parse_limit(text, metric, right)?;
        Ok(Threshold {
            text: text.to_string(),
            metric,
            comparison,
            limit,
        })
    }
}

fn parse_limit(text: &str, metric: Metric, value: &str) -> Result<Limit, ThresholdError> {
    let (name, wants) = match metric {
        Metric::Latency(_) => ("latency", "a duration (e.g. 50ms) or a change (e.g. +10%)"),
        Metric::Errors => (
            "errors",
            "a percentage (e.g. 0.1%), a count (e.g. 5) or a change (e.g. +10%)",
        ),
        Metric::Rps => ("rps", "a number (e.g. 1000) or a change (e.g. -5%)"),
    };
    let wrong = || ThresholdError::WrongUnit {
        text: text.to_string(),
        metric: name,
        wants,
        value: value.to_string(),
    };
    let number = |s: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(signed) = value
        .strip_suffix('%')
        .filter(|v| v.starts_with(['+', '-']))
    {
        let (sign, magnitude) = signed.split_at(1);
        let change = number(magnitude).ok_or_else(wrong)? / 100.0;
        return Ok(Limit::Change(if sign == "-" { -change } else { change }));
    }
    match metric {
        Metric::Latency(_) => parse_duration(value)
            .ok()
            .filter(|_| {
                !value
                    .trim()
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b'.')
            })
            .map(|d| Limit::Micros(d.as_secs_f64() * 1e6))
            .ok_or_else(wrong),
        Metric::Errors => match value.strip_suffix('%') {
            Some(p) => number(p)
                .filter(|p| *p <= 100.0)
                .map(|p| Limit::Ratio(p / 100.0))
                .ok_or_else(wrong),
            None => number(value).map(Limit::Number).ok_or_else(wrong),
        },
        Metric::Rps => number(value).map(Limit::Number).ok_or_else(wrong),
    }
}

impl Comparison {
    pub fn holds(self, observed: f64, limit: f64) -> bool {
        match self {
            Comparison::Le => observed <= limit,
            Comparison::Lt => observed < limit,
            Comparison::Ge => observed >= limit,
            Comparison::Gt => observed > limit,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::Le => "<=",
            Comparison::Lt => "<",
            Comparison::Ge => ">=",
            Comparison::Gt => ">",
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Threshold {
    /// Parse every expression, stopping at the first bad one.
    pub fn parse_all<S: AsRef<str>>(texts: &[S]) -> Result<Vec<Threshold>, ThresholdError> {
        texts.iter().map(|t| t.as_ref().parse()).collect()
    }

    /// True when the threshold compares against a baseline (`+10%`).
    pub fn is_relative(&self) -> bool {
        matches!(self.limit, Limit::Change(_))
    }

    /// The value and unit this threshold reads from `m`.
    fn observe(&self, m: &dyn Measured) -> (f64, &'static str) {
        match (self.metric, self.limit) {
            (Metric::Latency(stat), _) => (m.latency_us(stat), "us"),
            (Metric::Errors, Limit::Number(_)) => (m.error_count() as f64, "count"),
            (Metric::Errors, _) => (m.error_ratio(), "ratio"),
            (Metric::Rps, _) => (m.rps(), "req/s"),
        }
    }

    /// Judge `m`, against `baseline` for a relative threshold (required then).
    pub fn judge(
        &self,
        m: &dyn Measured,
        baseline: Option<&dyn Measured>,
    ) -> Result<Verdict, ThresholdError> {
        let (observed, unit) = self.observe(m);
        let (limit, base) = match self.limit {
            Limit::Micros(v) | Limit::Ratio(v) | Limit::Number(v) => (v, None),
            Limit::Change(change) => {
                let b = baseline.ok_or_else(|| ThresholdError::NeedsBaseline(self.text.clone()))?;
                let (base, _) = self.observe(b);
                (base * (1.0 + change), Some(base))
            }
        };
        Ok(Verdict {
            threshold: self.text.clone(),
            metric: self.metric.name(),
            unit: unit.to_string(),
            observed,
            limit,
            baseline: base,
            passed: self.comparison.holds(observed, limit),
            aborted: false,
        })
    }
}

/// Judge every absolute threshold against a result (relative ones need `compare`).
pub fn judge_all(
    thresholds: &[Threshold],
    m: &dyn Measured,
    baseline: Option<&dyn Measured>,
) -> Result<Vec<Verdict>, ThresholdError> {
    thresholds.iter().map(|t| t.judge(m, baseline)).collect()
}

/// True when every verdict passed (and vacuously with none).
pub fn all_passed(verdicts: &[Verdict]) -> bool {
    verdicts.iter().all(|v| v.passed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Threshold {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn the_issue_and_tuner_spellings_parse() {
        let t = parse("p99<=50ms");
        assert_eq!(t.metric, Metric::Latency(LatencyStat::Percentile(99.0)));
        assert_eq!(t.comparison, Comparison::Le);
        assert_eq!(t.limit, Limit::Micros(50_000.0));
        assert_eq!(parse("errors <= 0.1%").limit, Limit::Ratio(0.001));
        assert_eq!(parse("errors<=5").limit, Limit::Number(5.0));
        assert_eq!(parse("rps >= 1000").metric, Metric::Rps);
        assert_eq!(parse("throughput>=1000").metric, Metric::Rps);
        assert_eq!(parse("p99 <= +10%").limit, Limit::Change(0.1));
        assert_eq!(parse("rps>=-5%").limit, Limit::Change(-0.05));
        assert_eq!(
            parse("p999<1s").metric,
            Metric::Latency(LatencyStat::Percentile(99.9))
        );
        assert_eq!(
            parse("P99.99 < 2ms").metric,
            Metric::Latency(LatencyStat::Percentile(99.99))
        );
        assert_eq!(parse("max<250us").limit, Limit::Micros(250.0));
        assert_eq!(parse("mean > 1ms").comparison, Comparison::Gt);
    }

    #[test]
    fn nonsense_is_refused_with_the_reason() {
        let cases = [
            ("p99 50ms", "is not METRIC OP VALUE"),
            ("p99<=", "is not METRIC OP VALUE"),
            ("p99=<5ms", "unknown metric"),
            ("latency<=5ms", "unknown metric \"latency\""),
            ("p101<=5ms", "unknown metric"),
            ("p99<=5%", "latency takes a duration"),
            ("p99<=50", "latency takes a duration"),
            ("errors<=5ms", "errors takes a percentage"),
            ("errors<=150%", "errors takes a percentage"),
            ("rps>=1k", "rps takes a number"),
            ("rps>=10%", "rps takes a number"),
        ];
        for (text, words) in cases {
            let e = text.parse::<Threshold>().expect_err(text).to_string();
            assert!(e.contains(words), "{text}: {e}");
        }
    }

    struct Fixed {
        latency: LatencyHistogram,
        errors: u64,
        attempted: u64,
        rps: f64,
    }

    impl Measured for Fixed {
        fn latency_us(&self, stat: LatencyStat) -> f64 {
            histogram_stat(&self.latency, stat)
        }
        fn error_count(&self) -> u64 {
            self.errors
        }
        fn error_ratio(&self) -> f64 {
            self.errors as f64 / self.attempted as f64
        }
        fn rps(&self) -> f64 {
            self.rps
        }
    }

    fn fixed(latency_us: u64, errors: u64, rps: f64) -> Fixed {
        let mut latency = LatencyHistogram::new();
        for _ in 0..100 {
            latency.record(latency_us);
        }
        Fixed {
            latency,
            errors,
            attempted: 1000,
            rps,
        }
    }

    #[test]
    fn verdicts_compare_the_right_figure() {
        let run = fixed(40_000, 2, 900.0);
        let pass = |text: &str| parse(text).judge(&run, None).unwrap().passed;
        assert!(pass("p99<=50ms"));
        assert!(!pass("p99<=30ms"));
        assert!(pass("errors<=0.2%"));
        assert!(!pass("errors<0.2%"));
        assert!(!pass("errors<=1"));
        assert!(!pass("rps>=1000"));
        assert!(pass("throughput>=900"));
        let v = parse("errors<=0.1%").judge(&run, None).unwrap();
        assert_eq!(
            (v.unit.as_str(), v.observed, v.limit),
            ("ratio", 0.002, 0.001)
        );
    }

    #[test]
    fn a_fractional_count_limit_is_kept_exactly() {
        let t = parse("errors<=1.5");
        assert_eq!(t.limit, Limit::Number(1.5));
        let judge = |errors| t.judge(&fixed(1_000, errors, 10.0), None).unwrap();
        let (two, one) = (judge(2), judge(1));
        assert_eq!(
            (two.unit.as_str(), two.limit, two.passed),
            ("count", 1.5, false)
        );
        assert_eq!((one.limit, one.passed), (1.5, true));
        let json = serde_json::to_string(&two).unwrap();
        assert!(json.contains("\"limit\":1.5"), "{json}");
    }

    #[test]
    fn relative_thresholds_need_and_use_a_baseline() {
        let before = fixed(10_000, 0, 1000.0);
        let after = fixed(10_500, 0, 940.0);
        let t = parse("p99 <= +10%");
        assert_eq!(
            t.judge(&after, None),
            Err(ThresholdError::NeedsBaseline("p99 <= +10%".into()))
        );
        let v = t.judge(&after, Some(&before)).unwrap();
        assert!(v.passed, "{v:?}");
        assert!(v.baseline.is_some());
        assert!((v.limit - v.baseline.unwrap() * 1.1).abs() < 1e-6);
        assert!(
            !parse("rps >= -5%")
                .judge(&after, Some(&before))
                .unwrap()
                .passed
        );
        assert!(
            parse("rps >= -10%")
                .judge(&after, Some(&before))
                .unwrap()
                .passed
        );
    }
}
