//! Small statistics for comparisons: mean, sample variance, Student's t distribution and
//! Welch's t-interval for the difference of two means with unequal variances.
//!
//! The t distribution's CDF is the regularized incomplete beta function, evaluated by its
//! continued fraction with the modified Lentz method (DLMF 8.17.22,
//! https://dlmf.nist.gov/8.17); ln Γ uses the Lanczos approximation with g = 7 and the
//! widely published nine coefficients. Quantiles are found by bisection.

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

fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx)
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-14;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The t with P(T ≤ t) = p, for 0 < p < 1.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p < 0.5 {
        return -student_t_quantile(1.0 - p, df);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while student_t_cdf(hi, df) < p && hi < 1e12 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
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
        assert!(close(student_t_cdf(0.0, 3.0), 0.5, 1e-12));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-10));
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
}
