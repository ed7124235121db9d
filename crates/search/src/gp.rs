//! The Gaussian-process model the search and the effects use: a GP over the unit cube
//! (Matérn 5/2, one length scale per parameter, a Hamming distance for categorical
//! parameters, a mix of a joint and an additive kernel, and a learned noise term, its grid
//! centred on the spread of the repeated measurements when there are some; optionally two
//! range coordinates seen through their sum and difference, `Turn`), fitted by maximum
//! a-posteriori over a small grid. The sampler that maximises an acquisition over it is
//! `acquisition`. Ideas from Snoek et al. 2012 (Matérn 5/2); code our own. Sizes are tens of
//! points, so plain O(n³) Cholesky is instant.

use crate::sampler::Observation;
use crate::space::Space;
use statrs::function::erf::erfc;

/// A fitted Gaussian process.
pub(crate) struct Gp {
    x: Vec<Vec<f64>>,
    cat: Vec<bool>,
    ls: Vec<f64>,
    lambda: f64,
    /// The noise variance (standardised units).
    noise: f64,
    /// Lower Cholesky factor of K + noise·I (standardised units).
    l: Vec<Vec<f64>>,
    alpha: Vec<f64>,
    mean: f64,
    scale: f64,
    /// Two range coordinates seen through their sum and difference (`Turn`), or None.
    turn: Option<Turn>,
    /// The log posterior of the chosen hyper-parameters (to compare fits of one data set).
    log_posterior: f64,
}

/// A fit's hyper-parameters: the length scales (one a coordinate as the kernel sees it), the
/// joint kernel's share of the mix, and the noise variance (standardised units).
#[derive(Clone, Copy)]
struct Hyper<'a> {
    ls: &'a [f64],
    lambda: f64,
    noise: f64,
}

/// Two range parameters `i` and `j` seen by the kernel through the sum and the difference of
/// their coordinates, each weighted by `wi`, `wj` (a log range's span in nats, so the sum
/// is ln a + ln b up to a constant): a ridge along a product a·b (or a ratio a/b) of two
/// parameters runs along one of the two new axes, and one length scale per axis lets the
/// model stretch along it, where per-parameter length scales must both be short and cannot
/// carry what a run on the ridge says to the rest of it. (A kernel on linear combinations of
/// the inputs: after Garnett, Osborne & Hennig 2014, here one fixed 45° turn of a pair chosen
/// by the likelihood rather than a learned projection.)
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Turn {
    pub i: usize,
    pub j: usize,
    pub wi: f64,
    pub wj: f64,
}

impl Turn {
    /// `u` with coordinates `i` and `j` replaced by the weighted sum and difference, both
    /// scaled back to the unit interval.
    fn apply(&self, u: &[f64]) -> Vec<f64> {
        let mut v = u.to_vec();
        let w = self.wi + self.wj;
        let (a, b) = (self.wi * u[self.i] / w, self.wj * u[self.j] / w);
        v[self.i] = a + b;
        v[self.j] = a - b + self.wj / w;
        v
    }
}

fn dist2(a: &[f64], b: &[f64], cat: &[bool], ls: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        let d = if cat[i] {
            if (a[i] - b[i]).abs() > 1e-9 {
                1.0
            } else {
                0.0
            }
        } else {
            a[i] - b[i]
        };
        s += (d / ls[i]).powi(2);
    }
    s
}

/// The covariance: `lambda` of a Matérn 5/2 over all parameters together plus the rest of
/// the mean of one Matérn 5/2 per parameter (an additive part, which lets one parameter's
/// effect seen in one region carry over to others; after CoCaBO, Ru et al. 2020).
fn kernel(a: &[f64], b: &[f64], cat: &[bool], ls: &[f64], lambda: f64) -> f64 {
    let joint = matern52(dist2(a, b, cat, ls));
    if lambda >= 1.0 {
        return joint;
    }
    let additive = (0..a.len())
        .map(|i| matern52(dist2(&a[i..=i], &b[i..=i], &cat[i..=i], &ls[i..=i])))
        .sum::<f64>()
        / a.len().max(1) as f64;
    lambda * joint + (1.0 - lambda) * additive
}

fn matern52(r2: f64) -> f64 {
    let r = (5.0 * r2).sqrt();
    (1.0 + r + r * r / 3.0) * (-r).exp()
}

fn cholesky(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut l = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = a[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            if i == j {
                if s <= 0.0 || !s.is_finite() {
                    return None;
                }
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    Some(l)
}

/// Solve L·z = b.
fn forward(l: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let mut z = vec![0.0; b.len()];
    for i in 0..b.len() {
        z[i] = (b[i] - (0..i).map(|k| l[i][k] * z[k]).sum::<f64>()) / l[i][i];
    }
    z
}

/// Solve Lᵀ·z = b.
fn backward(l: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let n = b.len();
    let mut z = vec![0.0; n];
    for i in (0..n).rev() {
        z[i] = (b[i] - (i + 1..n).map(|k| l[k][i] * z[k]).sum::<f64>()) / l[i][i];
    }
    z
}

impl Gp {
    /// Fit with given hyper-parameters (the model keeps its log posterior).
    fn fit(
        x: &[Vec<f64>],
        y: &[f64],
        cat: &[bool],
        hyper: Hyper,
        centre: (f64, f64),
        turn: Option<Turn>,
    ) -> Option<Gp> {
        let Hyper { ls, lambda, noise } = hyper;
        let (mean, scale) = centre;
        let yn: Vec<f64> = y.iter().map(|v| (v - mean) / scale).collect();
        let k: Vec<Vec<f64>> = x
            .iter()
            .enumerate()
            .map(|(i, a)| {
                x.iter()
                    .enumerate()
                    .map(|(j, b)| {
                        kernel(a, b, cat, ls, lambda) + if i == j { noise + 1e-8 } else { 0.0 }
                    })
                    .collect()
            })
            .collect();
        let l = cholesky(&k)?;
        let alpha = backward(&l, &forward(&l, &yn));
        let fit: f64 = yn.iter().zip(&alpha).map(|(a, b)| a * b).sum();
        let logdet: f64 = (0..l.len()).map(|i| l[i][i].ln()).sum();
        // Weak log-normal priors keep a handful of points from being explained by very
        // short length scales and no noise.
        let prior = -ls.iter().map(|v| (v / 0.5).ln().powi(2) / 2.0).sum::<f64>()
            - (noise / 0.05).ln().powi(2) / (2.0 * 1.5 * 1.5);
        Some(Gp {
            x: x.to_vec(),
            cat: cat.to_vec(),
            ls: ls.to_vec(),
            lambda,
            noise,
            l,
            alpha,
            mean,
            scale,
            turn,
            log_posterior: -0.5 * fit - logdet + prior,
        })
    }

    /// Fit, choosing hyper-parameters: a grid over a shared length scale and the noise,
    /// then one pass per parameter over scaled length scales. Once some configuration was
    /// measured more than once, the noise grid is the pooled spread of those repeats, half
    /// and twice it: with 6–15 points the likelihood alone barely tells noise from signal,
    /// and the repeats measure it directly (docs/tuning.md: more hits at 15 and 25 trials).
    pub(crate) fn fit_best(x: &[Vec<f64>], y: &[f64], cat: &[bool]) -> Option<Gp> {
        Gp::fit_best_centred(x, y, cat, (x, y))
    }

    /// `fit_best`, the scores standardised by the mean and spread of all the runs `all`
    /// (points, scores) and the noise grid centred on their repeats, rather than on `y`'s: a
    /// model fitted without some runs (`GpSampler::apart`'s collapsed ones) keeps the prior
    /// mean and scale those runs set, so the regions it has not seen still look as mediocre
    /// as the whole study says rather than as good as the runs kept, and keeps the noise
    /// their repeats measured (the default's A/A pair is often among them).
    pub(crate) fn fit_best_centred(
        x: &[Vec<f64>],
        y: &[f64],
        cat: &[bool],
        all: (&[Vec<f64>], &[f64]),
    ) -> Option<Gp> {
        Gp::fit_best_turned(x, y, cat, all, None)
    }

    /// `fit_best_centred` with two range coordinates seen through `turn`.
    pub(crate) fn fit_best_turned(
        x: &[Vec<f64>],
        y: &[f64],
        cat: &[bool],
        (all_x, all): (&[Vec<f64>], &[f64]),
        turn: Option<Turn>,
    ) -> Option<Gp> {
        let turned: Vec<Vec<f64>>;
        let x = match turn {
            Some(t) => {
                turned = x.iter().map(|u| t.apply(u)).collect();
                &turned[..]
            }
            None => x,
        };
        let d = cat.len();
        let n = all.len() as f64;
        let mean = all.iter().sum::<f64>() / n;
        let var = all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let (var, scale) = if var.sqrt() > 1e-9 {
            (var, var.sqrt())
        } else {
            (0.0, 1.0)
        };
        let centre = (mean, scale);
        let mut best: Option<Gp> = None;
        let noises = match repeat_noise(all_x, all).filter(|_| var > 1e-12) {
            Some(pooled) => {
                let est = pooled / var;
                let est = est.max(1e-4);
                vec![est / 2.0, est, est * 2.0]
            }
            None => vec![1e-4, 0.01, 0.05, 0.15, 0.4],
        };
        for &lambda in &[0.0, 0.5, 1.0] {
            for &l0 in &[0.1, 0.2, 0.35, 0.6, 1.0, 2.0] {
                for &noise in &noises {
                    if let Some(gp) = Gp::fit(
                        x,
                        y,
                        cat,
                        Hyper {
                            ls: &vec![l0; d],
                            lambda,
                            noise,
                        },
                        centre,
                        turn,
                    ) {
                        if best
                            .as_ref()
                            .is_none_or(|b| gp.log_posterior > b.log_posterior)
                        {
                            best = Some(gp);
                        }
                    }
                }
            }
        }
        let mut gp = best?;
        let (lambda, noise) = (gp.lambda, gp.noise);
        for i in 0..d {
            for &m in &[0.3, 0.6, 1.7, 3.0, 8.0] {
                let mut ls = gp.ls.clone();
                ls[i] *= m;
                if let Some(g) = Gp::fit(
                    x,
                    y,
                    cat,
                    Hyper {
                        ls: &ls,
                        lambda,
                        noise,
                    },
                    centre,
                    turn,
                ) {
                    if g.log_posterior > gp.log_posterior {
                        gp = g;
                    }
                }
            }
        }
        Some(gp)
    }

    /// The same model — length scales, mix, noise, prior mean and scale — conditioned on
    /// other runs (`x`, `y`) than those it was fitted to: `GpSampler::past_edge`'s posterior
    /// without the runs past an edge, whose hyper-parameters were chosen with them. None
    /// where the covariance is singular.
    pub(crate) fn conditioned_on(&self, x: &[Vec<f64>], y: &[f64]) -> Option<Gp> {
        let centre = (self.mean, self.scale);
        let x: Vec<Vec<f64>> = x.iter().map(|u| self.view(u)).collect();
        Gp::fit(
            &x,
            y,
            &self.cat,
            Hyper {
                ls: &self.ls,
                lambda: self.lambda,
                noise: self.noise,
            },
            centre,
            self.turn,
        )
    }

    /// A point of the unit cube as the kernel sees it (through `turn`, if any).
    fn view(&self, u: &[f64]) -> Vec<f64> {
        match &self.turn {
            Some(t) => t.apply(u),
            None => u.to_vec(),
        }
    }

    /// The log posterior of the fitted hyper-parameters.
    pub(crate) fn log_posterior(&self) -> f64 {
        self.log_posterior
    }

    /// The fitted length scales, one a parameter (unit-cube coordinates).
    pub(crate) fn length_scales(&self) -> &[f64] {
        &self.ls
    }

    /// Posterior mean and standard deviation of the latent function.
    pub(crate) fn predict(&self, u: &[f64]) -> (f64, f64) {
        let u = &self.view(u)[..];
        let k: Vec<f64> = self
            .x
            .iter()
            .map(|a| kernel(a, u, &self.cat, &self.ls, self.lambda))
            .collect();
        let mu: f64 = k.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        let v = forward(&self.l, &k);
        let var = (1.0 - v.iter().map(|z| z * z).sum::<f64>()).max(1e-12);
        (self.mean + self.scale * mu, self.scale * var.sqrt())
    }
}

pub(crate) fn norm_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// The objective model alone, for partial-dependence views of the trials.
pub struct Model {
    gp: Gp,
}

impl Model {
    /// Fit the objective (score) over the measured observations; None with fewer than two.
    pub fn fit(space: &Space, history: &[Observation]) -> Option<Model> {
        let cat: Vec<bool> = space.params.iter().map(|p| p.is_choice()).collect();
        let scored: Vec<&Observation> = history.iter().filter(|o| o.score.is_some()).collect();
        if scored.len() < 2 {
            return None;
        }
        let xs: Vec<Vec<f64>> = scored.iter().map(|o| space.encode(&o.config)).collect();
        let ys: Vec<f64> = scored.iter().filter_map(|o| o.score).collect();
        Gp::fit_best(&xs, &ys, &cat).map(|gp| Model { gp })
    }

    /// The posterior mean score at a point of the cube.
    pub fn predict(&self, u: &[f64]) -> f64 {
        self.gp.predict(u).0
    }

    /// The posterior mean and standard deviation of `mean f(a) − mean f(b)` (the latent
    /// function, without the noise of a run), from the joint posterior over all the points:
    /// the difference between two partial-dependence averages, with the points' covariance
    /// counted rather than assumed independent.
    pub fn difference(&self, a: &[Vec<f64>], b: &[Vec<f64>]) -> (f64, f64) {
        let gp = &self.gp;
        let points: Vec<(&Vec<f64>, f64)> = a
            .iter()
            .map(|u| (u, 1.0 / a.len().max(1) as f64))
            .chain(b.iter().map(|u| (u, -1.0 / b.len().max(1) as f64)))
            .collect();
        let mean: f64 = points.iter().map(|(u, w)| w * gp.predict(u).0).sum();
        // The points as the kernel sees them (through the fit's turn, if any).
        let seen: Vec<Vec<f64>> = points.iter().map(|(u, _)| gp.view(u)).collect();
        let points: Vec<(&Vec<f64>, f64)> =
            seen.iter().zip(&points).map(|(u, p)| (u, p.1)).collect();
        // v_p = L⁻¹ k(X, p): posterior cov(p, q) = k(p, q) − v_p·v_q (standardised units).
        let v: Vec<Vec<f64>> = points
            .iter()
            .map(|(u, _)| {
                let k: Vec<f64> =
                    gp.x.iter()
                        .map(|x| kernel(x, u, &gp.cat, &gp.ls, gp.lambda))
                        .collect();
                forward(&gp.l, &k)
            })
            .collect();
        let mut var = 0.0;
        for (p, (up, wp)) in points.iter().enumerate() {
            for (q, (uq, wq)) in points.iter().enumerate() {
                let prior = kernel(up, uq, &gp.cat, &gp.ls, gp.lambda);
                let explained: f64 = v[p].iter().zip(&v[q]).map(|(x, y)| x * y).sum();
                var += wp * wq * (prior - explained);
            }
        }
        (mean, gp.scale * var.max(0.0).sqrt())
    }
}

/// The pooled within-configuration variance of `y` over the points measured more than once
/// (the caller divides it by the variance of the scores it standardises by, for the GP's
/// noise in its units); None without a repeat.
fn repeat_noise(x: &[Vec<f64>], y: &[f64]) -> Option<f64> {
    let mut groups: Vec<(&Vec<f64>, Vec<f64>)> = Vec::new();
    for (xi, yi) in x.iter().zip(y) {
        match groups.iter_mut().find(|g| g.0 == xi) {
            Some(g) => g.1.push(*yi),
            None => groups.push((xi, vec![*yi])),
        }
    }
    let (mut ss, mut df) = (0.0, 0usize);
    for (_, v) in groups.iter().filter(|g| g.1.len() > 1) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        ss += v.iter().map(|a| (a - m).powi(2)).sum::<f64>();
        df += v.len() - 1;
    }
    (df > 0).then(|| ss / df as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_maps_the_cube_into_itself_through_sum_and_difference() {
        let t = Turn {
            i: 0,
            j: 2,
            wi: 2.0,
            wj: 6.0,
        };
        // Corners stay inside the unit interval; the untouched coordinate is kept.
        for (a, b) in [(0.0, 0.0), (1.0, 1.0), (1.0, 0.0), (0.0, 1.0)] {
            let v = t.apply(&[a, 0.3, b]);
            assert!(v.iter().all(|x| (0.0..=1.0).contains(x)), "{v:?}");
            assert_eq!(v[1], 0.3);
        }
        // Points of one weighted sum (2a + 6b) share the first coordinate, of one weighted
        // difference the second.
        let (p, q) = (t.apply(&[0.9, 0.0, 0.2]), t.apply(&[0.3, 0.0, 0.4]));
        assert!((p[0] - q[0]).abs() < 1e-12 && (p[2] - q[2]).abs() > 0.1);
        let (p, q) = (t.apply(&[0.9, 0.0, 0.2]), t.apply(&[0.6, 0.0, 0.1]));
        assert!((p[2] - q[2]).abs() < 1e-12 && (p[0] - q[0]).abs() > 0.1);
    }

    #[test]
    fn cholesky_solves() {
        let a = vec![vec![4.0, 2.0], vec![2.0, 3.0]];
        let l = cholesky(&a).unwrap();
        let x = backward(&l, &forward(&l, &[2.0, 1.0]));
        assert!((4.0 * x[0] + 2.0 * x[1] - 2.0).abs() < 1e-12);
        assert!((2.0 * x[0] + 3.0 * x[1] - 1.0).abs() < 1e-12);
        assert!(cholesky(&[vec![-1.0]]).is_none());
    }

    #[test]
    fn gp_interpolates_a_smooth_function() {
        let xs: Vec<Vec<f64>> = (0..8).map(|i| vec![i as f64 / 7.0]).collect();
        let ys: Vec<f64> = xs.iter().map(|x| (3.0 * x[0]).sin()).collect();
        let gp = Gp::fit_best(&xs, &ys, &[false]).unwrap();
        let (m, s) = gp.predict(&[0.5]);
        assert!((m - 1.5f64.sin()).abs() < 0.05, "{m}");
        assert!(s < 0.2);
        let (_, far) = gp.predict(&[3.0]);
        assert!(far > s);
    }

    #[test]
    fn the_noise_term_follows_the_repeated_measurements() {
        // Eight points of a line, the first two and the last two measured twice: the
        // repeats differ by ±0.1 around a spread of ~1, so the noise is ~0.01/var(y).
        let mut xs: Vec<Vec<f64>> = (0..8).map(|i| vec![i as f64 / 7.0]).collect();
        let mut ys: Vec<f64> = xs.iter().map(|x| 3.0 * x[0]).collect();
        for i in [0, 1, 6, 7] {
            xs.push(xs[i].clone());
            ys.push(ys[i] + 0.1);
            ys[i] -= 0.1;
        }
        let est = repeat_noise(&xs, &ys).unwrap();
        let n = ys.len() as f64;
        let mean = ys.iter().sum::<f64>() / n;
        let var = ys.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        // Each pair (a−0.1, a+0.1): its variance is 0.02 with one degree of freedom; the
        // fit's noise is in units of var(y).
        assert!((est - 0.02).abs() < 1e-12, "{est}");
        let est = est / var;
        let gp = Gp::fit_best(&xs, &ys, &[false]).unwrap();
        assert!(
            gp.noise >= est / 2.0 - 1e-12 && gp.noise <= est * 2.0 + 1e-12,
            "{} vs {est}",
            gp.noise
        );
        // No repeat, no estimate.
        assert_eq!(repeat_noise(&xs[..8], &ys[..8]), None);
    }
}
