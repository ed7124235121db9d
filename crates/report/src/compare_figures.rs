//! The figures a comparison of saved results shows and the rules that judge them: which
//! metrics (`metrics`, each with the direction that is better), their change in percent,
//! the 95% interval and verdict per difference (`verdict`), and the configuration that
//! differs between inputs. A leaf: the text (`compare`), the HTML (`compare_html`) and the
//! verdict box (`compare_verdict`) all read it.

use crate::stats::{log_ratio_interval, welch_interval};
use crate::units::ms_f;
use webtune_model::{RepeatSummary, RunResult};

/// Confidence of the intervals.
pub const CONFIDENCE: f64 = 0.95;

/// Which way is better for a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// How a change of a figure is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Relative change of a positive quantity, in percent (the ratio minus 1).
    Ratio,
    /// Difference in the figure's own unit; for a percentage, in percentage points.
    Points,
}

/// One compared figure.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    pub name: &'static str,
    pub better: Better,
    pub change: ChangeKind,
    /// The figure of a whole result.
    pub of_result: fn(&RunResult) -> f64,
    /// The figure of one repeat; None when repeats do not carry it.
    pub of_repeat: Option<fn(&RepeatSummary) -> f64>,
    /// How to print it.
    pub show: fn(f64) -> String,
}

fn show_rate(v: f64) -> String {
    format!("{v:.2}")
}
fn show_ms(v: f64) -> String {
    ms_f(v)
}
fn show_count(v: f64) -> String {
    format!("{v:.0}")
}
fn show_pct(v: f64) -> String {
    format!("{v:.2}%")
}

fn error_pct(errors: u64, responses: u64) -> f64 {
    let attempted = errors + responses;
    if attempted == 0 {
        0.0
    } else {
        errors as f64 * 100.0 / attempted as f64
    }
}

macro_rules! latency_metric {
    ($name:expr, $field:ident) => {
        Metric {
            name: $name,
            better: Better::Lower,
            change: ChangeKind::Ratio,
            of_result: |r| r.latency.total.$field as f64,
            of_repeat: Some(|s| s.latency.$field as f64),
            show: show_ms,
        }
    };
}

/// The figures compared, in order.
pub fn metrics() -> Vec<Metric> {
    vec![
        Metric {
            name: "requests/s",
            better: Better::Higher,
            change: ChangeKind::Ratio,
            of_result: |r| r.requests_per_s,
            of_repeat: Some(|s| s.requests_per_s),
            show: show_rate,
        },
        latency_metric!("mean (ms)", mean_us),
        latency_metric!("p50 (ms)", p50_us),
        latency_metric!("p75 (ms)", p75_us),
        latency_metric!("p90 (ms)", p90_us),
        latency_metric!("p95 (ms)", p95_us),
        latency_metric!("p99 (ms)", p99_us),
        latency_metric!("p99.9 (ms)", p999_us),
        latency_metric!("max (ms)", max_us),
        Metric {
            name: "errors",
            better: Better::Lower,
            change: ChangeKind::Ratio,
            of_result: |r| r.errors.total() as f64,
            of_repeat: None,
            show: show_count,
        },
        Metric {
            name: "errors %",
            better: Better::Lower,
            change: ChangeKind::Points,
            of_result: |r| r.error_ratio() * 100.0,
            of_repeat: Some(|s| error_pct(s.errors, s.responses)),
            show: show_pct,
        },
    ]
}

/// Change from `base` to `value` in percent, e.g. "+23.1%"; "n/a" from zero.
pub fn change_pct(base: f64, value: f64) -> String {
    if base == 0.0 {
        if value == 0.0 {
            "0.0%".into()
        } else {
            "n/a".into()
        }
    } else {
        format!("{:+.1}%", (value - base) / base * 100.0)
    }
}

/// The verdict on one figure between two repeated results.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub kind: ChangeKind,
    /// The point estimate and the interval's bounds: for `Ratio` the change in percent of
    /// the baseline (ratio of the repeats' geometric means, minus 1; never below −100%), for
    /// `Points` the difference of the repeats' means in the figure's unit.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    pub significant: bool,
    /// When significant: did it get better?
    pub better: bool,
}

impl Verdict {
    pub fn describe(&self) -> String {
        if !self.significant {
            "no significant difference".into()
        } else if self.better {
            "better".into()
        } else {
            "worse".into()
        }
    }

    /// A value of this verdict as text: "+12.3%" or "+0.40 pp".
    pub fn show(&self, v: f64) -> String {
        if !v.is_finite() {
            return "n/a".into();
        }
        match self.kind {
            ChangeKind::Ratio => format!("{v:+.1}%"),
            ChangeKind::Points => format!("{v:+.2} pp"),
        }
    }
}

/// Compare one figure over the repeats of two results. None without ≥ 2 repeats each, for
/// a figure the repeats do not carry, or for a ratio when a repeat measured 0.
pub fn verdict(
    metric: &Metric,
    before: &[RepeatSummary],
    after: &[RepeatSummary],
) -> Option<Verdict> {
    let of = metric.of_repeat?;
    let a: Vec<f64> = before.iter().map(of).collect();
    let b: Vec<f64> = after.iter().map(of).collect();
    let (change, low, high, df) = match metric.change {
        ChangeKind::Ratio => {
            let i = log_ratio_interval(&a, &b, CONFIDENCE)?;
            (i.change * 100.0, i.low * 100.0, i.high * 100.0, i.df)
        }
        ChangeKind::Points => {
            let i = welch_interval(&a, &b, CONFIDENCE)?;
            (i.estimate, i.low, i.high, i.df)
        }
    };
    let significant = !(low <= 0.0 && high >= 0.0);
    let went_up = change > 0.0;
    Some(Verdict {
        kind: metric.change,
        change,
        low,
        high,
        df,
        significant,
        better: match metric.better {
            Better::Higher => went_up,
            Better::Lower => !went_up,
        },
    })
}

pub(crate) fn aligned(rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    crate::text_parts::write_aligned(&mut out, rows);
    out
}

/// The lab parameters whose values differ between the inputs (from `server.parameters`),
/// one row per parameter and a column per input; empty when the inputs carry none.
pub fn configuration_differences(inputs: &[(String, &RunResult)]) -> String {
    let params: Vec<Option<&std::collections::BTreeMap<String, String>>> = inputs
        .iter()
        .map(|(_, r)| {
            r.server
                .as_ref()
                .map(|s| &s.parameters)
                .filter(|p| !p.is_empty())
        })
        .collect();
    if params.iter().filter(|p| p.is_some()).count() < 2 {
        return String::new();
    }
    let mut names: Vec<&String> = params.iter().flatten().flat_map(|p| p.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows = vec![{
        let mut h = vec!["Configuration".to_string()];
        h.extend(inputs.iter().map(|(n, _)| n.clone()));
        h
    }];
    for name in names {
        let values: Vec<String> = params
            .iter()
            .map(|p| {
                p.and_then(|p| p.get(name))
                    .cloned()
                    .unwrap_or_else(|| "-".into())
            })
            .collect();
        if values.iter().any(|v| *v != values[0]) {
            let mut row = vec![format!("  {name}")];
            row.extend(values);
            rows.push(row);
        }
    }
    if rows.len() == 1 {
        return "\nConfiguration: the same lab parameters in every input.\n".into();
    }
    format!("\n{}", aligned(&rows))
}
