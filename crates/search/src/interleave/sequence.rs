//! The always-valid interval for the mean of the pairs' log-ratios: two confidence
//! sequences, each at a share of α, intersected (a union bound keeps the pair's joint
//! error at α; Howard et al. 2021, §6, on combining boundaries).
//!
//! **The mixture, for early stops (α/5).** The asymptotic confidence sequence of
//! Waudby-Smith, Arnold, Wu, Ramdas & Howard, "Time-uniform central limit theory and
//! asymptotic confidence sequences" (2021, arXiv:2103.06476, Section 2): after n
//! observations with mean μ̂ and standard deviation σ̂,
//!
//!   μ̂ ± σ̂ · sqrt( 2(nρ² + 1) / (n²ρ²) · ln( sqrt(nρ² + 1) / α ) )
//!
//! which is the two-sided normal-mixture boundary of Robbins (1970) / Howard et al.
//! ("Time-uniform, nonparametric, nonasymptotic confidence sequences", 2021) with σ̂ in place
//! of the known σ. It holds at every n, however many, and is tightest where ρ puts it —
//! here at a quarter of the pairs the budget holds, so that a large difference stops the
//! comparison early. ρ² = (−2 ln α + ln(−2 ln α + 1)) / t* (the paper's rule for t*).
//!
//! **The constant boundary up to the budget, for power at its end (4α/5).** A comparison
//! has a budget, so it has a largest number of pairs N (a block takes at least `--block`).
//! The partial sums S_n of N(0, σ²) pairs, scaled by σ√N, are a Brownian motion W on [0, 1]
//! seen at t = n/N, and P(sup_{t≤1} |W(t)| ≥ c) = 1 − Σ_k (−1)^k [Φ((2k+1)c) − Φ((2k−1)c)]
//! (the reflection principle; Feller II, X.5). With c solving that for α, the repeated
//! confidence interval μ̂ ± c σ̂ √N / n (Jennison & Turnbull, "Group Sequential Methods",
//! 2000, ch. 9: the O'Brien–Fleming shape under continuous monitoring) covers the mean at
//! every n ≤ N at once. Looking after every pair sees W at N points only, so the true rate
//! is a little below α. It is wide early and narrow at the end: at N, with its 4α/5 and
//! the small-sample widening, it is 1.2× the fixed-n interval, where the mixture alone at
//! the whole α is 1.55× (needing 2.4× the pairs to tell the same difference) — that was why a 5–6% difference in p99 stayed undecided in 4 of 5
//! three-minute runs (docs/experiments.md).
//!
//! A fixed-n Student-t interval looked at after every pair would not hold its α (`judge`'s
//! tests show all three).

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
    let widen = small_sample(n, alpha);
    let n = n as f64;
    let a = n * rho2 + 1.0;
    widen * (2.0 * a / (n * n * rho2) * (a.sqrt() / alpha).ln()).sqrt()
}

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// The share of α given to the mixture (early stops); the rest goes to the constant
/// boundary (power at the budget's end). One fifth: at the budget's end the combined
/// interval is 4% wider than the constant boundary at the whole α, and before a third of
/// the budget it is within ~15% of the mixture at the whole α.
const MIXTURE_SHARE: f64 = 0.2;

/// P(sup over [0, 1] of |W(t)| ≥ c) for a standard Brownian motion (the series above,
/// which converges within a few terms for c > 1).
fn brownian_crossing(c: f64) -> f64 {
    let phi = Normal::standard();
    let inside: f64 = (-12i32..=12)
        .map(|k| {
            let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
            let k = k as f64;
            sign * (phi.cdf((2.0 * k + 1.0) * c) - phi.cdf((2.0 * k - 1.0) * c))
        })
        .sum();
    1.0 - inside
}

/// The c with P(sup |W| ≥ c) = α (2.2414 at α = 0.05), by bisection: the crossing
/// probability falls monotonically in c. A comparison asks for the same α after every pair
/// and for every metric, so the last answer is kept (per thread) rather than bisected again.
pub fn brownian_boundary(alpha: f64) -> f64 {
    thread_local! {
        static LAST: std::cell::Cell<(u64, f64)> = const { std::cell::Cell::new((u64::MAX, 0.0)) };
    }
    let (key, c) = LAST.with(|l| l.get());
    if key == alpha.to_bits() {
        return c;
    }
    let c = bisect_brownian_boundary(alpha);
    LAST.with(|l| l.set((alpha.to_bits(), c)));
    c
}

fn bisect_brownian_boundary(alpha: f64) -> f64 {
    let (mut lo, mut hi) = (0.5f64, 8.0f64);
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if brownian_crossing(mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The t(n−1)/z widening of a boundary that uses σ̂ for σ (see `radius`), taken at the
/// boundary's own two-sided tail probability `alpha`.
fn small_sample(n: usize, alpha: f64) -> f64 {
    StudentsT::new(0.0, 1.0, (n - 1) as f64)
        .map(|t| t.inverse_cdf(1.0 - alpha / 2.0))
        .unwrap_or(f64::INFINITY)
        / Normal::standard().inverse_cdf(1.0 - alpha / 2.0)
}

/// The half-width, in units of σ, of the constant boundary after `n` of at most `n_max`
/// pairs. Past `n_max` (a last block that ran over the budget) it is taken at n.
pub fn constant_radius(n: usize, n_max: f64, alpha: f64) -> f64 {
    if n < 2 {
        return f64::INFINITY;
    }
    let n_max = n_max.max(n as f64);
    let c = brownian_boundary(alpha);
    // Widened at the tail c itself cuts off (2(1 − Φ(c)), not α): with σ̂ for σ, 4,000
    // simulated A/A runs of 90 pairs crossed in 4.2% (at α: 4.7%; unwidened: 7.0%; with
    // σ known: 3.5%, the discrete looks' slack).
    let tail = 2.0 * (1.0 - Normal::standard().cdf(c));
    small_sample(n, tail) * c * n_max.sqrt() / n as f64
}

/// The half-width, in units of σ, of the interval the comparison uses after `n` of at most
/// `n_max` pairs: the narrower of the mixture at α/5 (tightest at n_max/4) and the constant
/// boundary at 4α/5.
pub fn combined_radius(n: usize, n_max: f64, alpha: f64) -> f64 {
    let early = MIXTURE_SHARE * alpha;
    let mixture = radius(n, early, rho_squared(early, n_max / 4.0));
    mixture.min(constant_radius(n, n_max, alpha - early))
}

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
        assert_eq!(combined_radius(1, 90.0, 0.05), f64::INFINITY);
        assert!(mean_sd(&[1.0]).is_none());
        let (m, s) = mean_sd(&[1.0, 3.0]).unwrap();
        assert!((m - 2.0).abs() < 1e-12 && (s - 2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn the_constant_boundary_is_the_brownian_crossing_point() {
        // c for α = 0.05: P(sup_[0,1] |W| ≥ c) = 0.05 at c ≈ 2.2414 (for large c the series
        // is ≈ 4(1 − Φ(c)), so 4 · 0.0125 = 0.05 checks it independently).
        let c = brownian_boundary(0.05);
        assert!((c - 2.2414).abs() < 1e-3, "{c}");
        let tail = 1.0 - Normal::standard().cdf(c);
        assert!((4.0 * tail - 0.05).abs() < 1e-3);
        assert!(brownian_boundary(0.01) > c);
        // At the budget's end the combined interval is close to the fixed-n one and well
        // inside the mixture at the whole α; early on the mixture share keeps it near the
        // mixture's.
        let n_max = 90.0;
        let end = combined_radius(90, n_max, 0.05) * 90f64.sqrt();
        let mixture_end = radius(90, 0.05, rho_squared(0.05, n_max)) * 90f64.sqrt();
        assert!(end < 2.4 && end > 1.96, "{end}");
        assert!(mixture_end / end > 1.25, "{mixture_end} vs {end}");
        let early = combined_radius(12, n_max, 0.05);
        assert!(
            early < 1.2 * radius(12, 0.05, rho_squared(0.05, n_max)),
            "{early}"
        );
        // Past the largest count: taken at n, never narrower than before.
        assert!(constant_radius(100, n_max, 0.04) <= constant_radius(90, n_max, 0.04));
    }
}
