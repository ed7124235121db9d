//! Small statistics for comparisons: mean, sample variance and Welch's t-interval for the
//! difference of two means with unequal variances, plus its log-scale form for the ratio of
//! two positive quantities (latency, throughput). Student's t quantiles come from `statrs`.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Arithmetic mean; NaN for an empty slice.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        f64::NAN
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Sample variance (n − 1 in the denominator); NaN with fewer than two values.
pub fn sample_variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return f64::NAN;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64
}

/// The t with P(T ≤ t) = p for Student's t with `df` degrees of freedom, 0 < p < 1; NaN
/// for a p or df out of range. An infinite df is the normal distribution's quantile.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(p),
        Err(_) => f64::NAN,
    }
}

/// A confidence interval for a difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The point estimate (mean of b minus mean of a).
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
}

impl Interval {
    /// Does the interval include zero (no significant difference)?
    pub fn contains_zero(&self) -> bool {
        self.low <= 0.0 && self.high >= 0.0
    }
}

/// Welch's t-interval for mean(b) − mean(a) at the given confidence (e.g. 0.95). None when
/// either sample has fewer than two values.
pub fn welch_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<Interval> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (sample_variance(a) / na, sample_variance(b) / nb);
    let estimate = mean(b) - mean(a);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return Some(Interval {
            estimate,
            low: estimate,
            high: estimate,
            df: f64::INFINITY,
        });
    }
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let t = student_t_quantile(0.5 + confidence / 2.0, df);
    let half = t * se2.sqrt();
    Some(Interval {
        estimate,
        low: estimate - half,
        high: estimate + half,
        df,
    })
}

/// A confidence interval for the ratio of two positive quantities, as a relative change:
/// the estimate and bounds are `ratio − 1` (0.1 = 10% more), so they never go below −1
/// (−100%).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatioInterval {
    /// Geometric mean of b over geometric mean of a, minus 1.
    pub change: f64,
    pub low: f64,
    pub high: f64,
    /// Welch–Satterthwaite degrees of freedom of the log-scale interval.
    pub df: f64,
}

impl RatioInterval {
    /// Does the interval include "no change"?
    pub fn contains_zero(&self) -> bool {
        self.low <= 0.0 && self.high >= 0.0
    }
}

/// Welch's t-interval on the logarithms of two samples of positive values, turned back into
/// a relative change of b against a (the ratio of geometric means). Latency and throughput
/// are positive and spread multiplicatively, so an interval on the log scale fits them and
/// cannot claim a change below −100%. None with fewer than two values on a side or any value
/// that is not positive and finite.
pub fn log_ratio_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<RatioInterval> {
    let logs = |xs: &[f64]| -> Option<Vec<f64>> {
        xs.iter()
            .map(|&x| (x > 0.0 && x.is_finite()).then(|| x.ln()))
            .collect()
    };
    let i = welch_interval(&logs(a)?, &logs(b)?, confidence)?;
    Some(RatioInterval {
        change: i.estimate.exp_m1(),
        low: i.low.exp_m1(),
        high: i.high.exp_m1(),
        df: i.df,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_tables() {
        // Two-sided 95% critical values from any t table.
        for (df, t) in [(1.0, 12.706), (4.0, 2.776), (10.0, 2.228), (30.0, 2.042)] {
            let q = student_t_quantile(0.975, df);
            assert!(close(q, t, 0.001), "df {df}: {q}");
        }
        assert!(close(student_t_quantile(0.5, 7.0), 0.0, 1e-9));
        assert!(close(student_t_quantile(0.025, 4.0), -2.776, 0.001));
        assert!(student_t_quantile(1.0, 4.0).is_nan());
        assert!(student_t_quantile(0.9, 0.0).is_nan());
    }

    #[test]
    fn welch_interval_of_known_samples() {
        let a = [10.0, 11.0, 12.0, 13.0, 14.0];
        let b = [20.0, 21.0, 22.0, 23.0, 24.0];
        let i = welch_interval(&a, &b, 0.95).unwrap();
        assert_eq!(i.estimate, 10.0);
        // se = sqrt(2.5/5 + 2.5/5) = 1, df = 8, t = 2.306
        assert!(close(i.df, 8.0, 1e-9));
        assert!(close(i.low, 10.0 - 2.306, 0.001), "{i:?}");
        assert!(!i.contains_zero());
        assert!(welch_interval(&a[..1], &b, 0.95).is_none());
    }

    #[test]
    fn ratio_interval_of_a_sample_with_itself_is_centred_on_no_change() {
        // three latency repeats that spread widely (the 3-repeat p99s)
        let a = [4.0, 1.0, 25.0];
        let i = log_ratio_interval(&a, &a, 0.95).unwrap();
        assert_eq!(i.change, 0.0);
        assert!(i.low > -1.0 && i.low < 0.0, "{i:?}");
        assert!(i.high > 0.0, "{i:?}");
        // symmetric on the log scale: (1 + low)(1 + high) = 1
        assert!(close((1.0 + i.low) * (1.0 + i.high), 1.0, 1e-9), "{i:?}");
        assert!(i.contains_zero());
        // the plain difference of means goes below −100% for the same data
        let plain = welch_interval(&a, &a, 0.95).unwrap();
        assert!(plain.low / mean(&a) < -1.0, "{plain:?}");
    }

    #[test]
    fn ratio_interval_stays_above_minus_100_percent() {
        let before = [900.0, 1_000.0, 1_100.0];
        let after = [50.0, 400.0, 90.0];
        let i = log_ratio_interval(&before, &after, 0.95).unwrap();
        assert!(i.low > -1.0, "{i:?}");
        assert!(i.change < 0.0 && i.high > i.change, "{i:?}");
        // geometric means: (50·400·90)^(1/3) / (900·1000·1100)^(1/3)
        let expected = (50.0f64 * 400.0 * 90.0 / (900.0 * 1_000.0 * 1_100.0)).cbrt() - 1.0;
        assert!(close(i.change, expected, 1e-12), "{i:?}");
        assert!(log_ratio_interval(&[0.0, 1.0], &[1.0, 2.0], 0.95).is_none());
        assert!(log_ratio_interval(&[1.0], &[1.0, 2.0], 0.95).is_none());
    }
}
