//! The always-valid confidence sequence for the mean of the pairs' log-ratios.
//!
//! We use the asymptotic confidence sequence of Waudby-Smith, Arnold, Wu, Ramdas & Howard,
//! "Time-uniform central limit theory and asymptotic confidence sequences" (2021,
//! arXiv:2103.06476, Section 2): after n observations with mean μ̂ and standard deviation σ̂,
//!
//!   μ̂ ± σ̂ · sqrt( 2(nρ² + 1) / (n²ρ²) · ln( sqrt(nρ² + 1) / α ) )
//!
//! which is the two-sided normal-mixture boundary of Robbins (1970) / Howard et al.
//! ("Time-uniform, nonparametric, nonasymptotic confidence sequences", 2021) with σ̂ in place
//! of the known σ. With probability at least 1 − α (asymptotically) the interval holds the true
//! mean at *every* n at once, so looking after every pair and stopping on the first exclusion
//! keeps the false-positive rate at α. ρ sets where the boundary is tightest; the paper's
//! choice for a target sample size t* is ρ² = (−2 ln α + ln(−2 ln α + 1)) / t*. A fixed-n
//! Student-t interval looked at after every pair would not hold its α (`tests` show both).

/// The mixture parameter ρ² that makes the boundary tightest at `t_star` observations.
pub fn rho_squared(alpha: f64, t_star: f64) -> f64 {
    let l = -2.0 * alpha.ln();
    (l + (l + 1.0).ln()) / t_star.max(1.0)
}

/// The half-width, in units of σ, of the sequence after `n` observations.
///
/// The boundary is asymptotic: with few pairs σ̂ itself is uncertain and, looked at after
/// every pair from the third on, the plain boundary claims a difference between identical
/// arms in about 8% of simulated runs at α = 0.05. So the radius is widened by the
/// Student-t to normal quantile ratio t(n−1)/z (the usual small-sample correction for an
/// estimated σ, which vanishes as n grows and so keeps the asymptotic guarantee); with it,
/// and no verdict before 5 pairs, the simulated rate is about 3% (`judge`'s tests).
pub fn radius(n: usize, alpha: f64, rho2: f64) -> f64 {
    if n < 2 {
        return f64::INFINITY;
    }
    let small_sample = StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .map(|t| t.inverse_cdf(1.0 - alpha / 2.0))
        .unwrap_or(f64::INFINITY)
        / Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
    let n = n as f64;
    let a = n * rho2 + 1.0;
    small_sample * (2.0 * a / (n * n * rho2) * (a.sqrt() / alpha).ln()).sqrt()
}

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Mean and sample standard deviation (n − 1); None with fewer than two values.
pub fn mean_sd(xs: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((mean, var.sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundary_narrows_like_sqrt_log_n_over_n() {
        let rho2 = rho_squared(0.05, 20.0);
        let r10 = radius(10, 0.05, rho2);
        let r40 = radius(40, 0.05, rho2);
        let r1000 = radius(1000, 0.05, rho2);
        assert!(r10 > r40 && r40 > r1000);
        // Wider than the fixed-n 1.96/sqrt(n) everywhere: the price of looking at every n.
        assert_eq!(radius(1, 0.05, rho2), f64::INFINITY);
        for n in [2usize, 5, 10, 20, 50, 200, 1000] {
            assert!(radius(n, 0.05, rho2) > 1.96 / (n as f64).sqrt(), "n = {n}");
        }
        assert_eq!(radius(0, 0.05, rho2), f64::INFINITY);
        assert!(mean_sd(&[1.0]).is_none());
        let (m, s) = mean_sd(&[1.0, 3.0]).unwrap();
        assert!((m - 2.0).abs() < 1e-12 && (s - 2f64.sqrt()).abs() < 1e-12);
    }
}
