//! The model-based sampler: a Gaussian process over the unit cube (Matérn 5/2, one length
//! scale per parameter, a Hamming distance for categorical parameters, and a learned noise
//! term, its grid centred on the spread of the repeated measurements when there are some),
//! fitted by maximum a-posteriori over a small grid, and constrained expected
//! improvement (expected improvement over the best feasible posterior mean, times the
//! probability that a second GP on the SLO margin says "met"), maximised over random and
//! local candidates, the best three then hill-climbed over the other choices of each
//! categorical parameter and the integers next to each range's value. Ideas from Gardner et al.
//! 2014 (constrained EI) and Snoek et al. 2012 (Matérn 5/2, noisy EI); code our own.
//! Sizes are tens of points, so plain O(n³) Cholesky is instant.

use crate::sampler::{random_config, random_point, Observation, Sampler};
use crate::space::{Config, Space};
use statrs::function::erf::erfc;
use webtune_engine::rng::Rng;

/// Gaussian-process sampler with constrained expected improvement.
#[derive(Debug, Clone, Copy)]
pub struct GpSampler {
    /// Uniform random candidates scored per ask (plus local ones around the best).
    pub candidates: usize,
}

impl Default for GpSampler {
    fn default() -> Self {
        GpSampler { candidates: 600 }
    }
}

/// A fitted Gaussian process.
struct Gp {
    x: Vec<Vec<f64>>,
    cat: Vec<bool>,
    ls: Vec<f64>,
    lambda: f64,
    /// The noise variance (standardised units); read by the unit tests.
    #[allow(dead_code)]
    noise: f64,
    /// Lower Cholesky factor of K + noise·I (standardised units).
    l: Vec<Vec<f64>>,
    alpha: Vec<f64>,
    mean: f64,
    scale: f64,
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
    /// Fit with given hyper-parameters; returns the model and its log posterior.
    fn fit(
        x: &[Vec<f64>],
        y: &[f64],
        cat: &[bool],
        ls: &[f64],
        lambda: f64,
        noise: f64,
    ) -> Option<(Gp, f64)> {
        let n = y.len() as f64;
        let mean = y.iter().sum::<f64>() / n;
        let var = y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let scale = if var.sqrt() > 1e-9 { var.sqrt() } else { 1.0 };
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
        let lp = -0.5 * fit - logdet + prior;
        Some((
            Gp {
                x: x.to_vec(),
                cat: cat.to_vec(),
                ls: ls.to_vec(),
                lambda,
                noise,
                l,
                alpha,
                mean,
                scale,
            },
            lp,
        ))
    }

    /// Fit, choosing hyper-parameters: a grid over a shared length scale and the noise,
    /// then one pass per parameter over scaled length scales. Once some configuration was
    /// measured more than once, the noise grid is the pooled spread of those repeats, half
    /// and twice it: with 6–15 points the likelihood alone barely tells noise from signal,
    /// and the repeats measure it directly (docs/tuning.md: more hits at 15 and 25 trials).
    fn fit_best(x: &[Vec<f64>], y: &[f64], cat: &[bool]) -> Option<Gp> {
        let d = cat.len();
        let mut best: Option<(Gp, f64, f64)> = None;
        let noises = match repeat_noise(x, y) {
            Some(est) => {
                let est = est.max(1e-4);
                vec![est / 2.0, est, est * 2.0]
            }
            None => vec![1e-4, 0.01, 0.05, 0.15, 0.4],
        };
        for &lambda in &[0.0, 0.5, 1.0] {
            for &l0 in &[0.1, 0.2, 0.35, 0.6, 1.0, 2.0] {
                for &noise in &noises {
                    if let Some((gp, lp)) = Gp::fit(x, y, cat, &vec![l0; d], lambda, noise) {
                        if best.as_ref().is_none_or(|b| lp > b.1) {
                            best = Some((gp, lp, noise));
                        }
                    }
                }
            }
        }
        let (mut gp, mut lp, noise) = best?;
        let lambda = gp.lambda;
        for i in 0..d {
            for &m in &[0.3, 0.6, 1.7, 3.0, 8.0] {
                let mut ls = gp.ls.clone();
                ls[i] *= m;
                if let Some((g, p)) = Gp::fit(x, y, cat, &ls, lambda, noise) {
                    if p > lp {
                        gp = g;
                        lp = p;
                    }
                }
            }
        }
        Some(gp)
    }

    /// Posterior mean and standard deviation of the latent function.
    fn predict(&self, u: &[f64]) -> (f64, f64) {
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

fn norm_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

fn norm_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

fn expected_improvement(mu: f64, sd: f64, best: f64) -> f64 {
    let z = (mu - best) / sd;
    (mu - best) * norm_cdf(z) + sd * norm_pdf(z)
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

impl Sampler for GpSampler {
    fn name(&self) -> &'static str {
        "gp"
    }

    fn ask(&mut self, space: &Space, history: &[Observation], rng: &mut Rng) -> Config {
        let cat: Vec<bool> = space.params.iter().map(|p| p.is_choice()).collect();
        let scored: Vec<&Observation> = history.iter().filter(|o| o.score.is_some()).collect();
        if scored.len() < 2 {
            return random_config(space, rng);
        }
        let xs: Vec<Vec<f64>> = scored.iter().map(|o| space.encode(&o.config)).collect();
        let ys: Vec<f64> = scored.iter().filter_map(|o| o.score).collect();
        let Some(objective) = Gp::fit_best(&xs, &ys, &cat) else {
            return random_config(space, rng);
        };
        // The constraint model, only when some measurement missed an SLO.
        let constraint = if history.iter().any(|o| o.margin > 0.0) {
            let xm: Vec<Vec<f64>> = history.iter().map(|o| space.encode(&o.config)).collect();
            let ym: Vec<f64> = history.iter().map(|o| o.margin).collect();
            Gp::fit_best(&xm, &ym, &cat)
        } else {
            None
        };
        let pof = |u: &[f64]| match &constraint {
            Some(gp) => {
                let (m, s) = gp.predict(u);
                norm_cdf(-m / s)
            }
            None => 1.0,
        };
        // Incumbent: the best posterior mean among feasible measurements.
        let mut feasible: Vec<(f64, &Vec<f64>)> = scored
            .iter()
            .zip(&xs)
            .filter(|(o, _)| o.feasible())
            .map(|(_, x)| (objective.predict(x).0, x))
            .collect();
        feasible.sort_by(|a, b| b.0.total_cmp(&a.0));
        let best = feasible.first().map(|f| f.0);

        // Candidates: uniform ones, and perturbations of the best feasible points (or of
        // every point when none is feasible yet).
        let d = space.dims();
        let mut cands: Vec<Vec<f64>> = (0..self.candidates).map(|_| random_point(d, rng)).collect();
        let centres: Vec<&Vec<f64>> = if feasible.is_empty() {
            xs.iter().collect()
        } else {
            feasible.iter().take(4).map(|f| f.1).collect()
        };
        for c in centres {
            for _ in 0..100 {
                let u: Vec<f64> = c
                    .iter()
                    .zip(&cat)
                    .map(|(v, is_cat)| {
                        if *is_cat {
                            if rng.unit() < 0.25 {
                                rng.unit()
                            } else {
                                *v
                            }
                        } else {
                            let g: f64 = (0..3).map(|_| rng.unit() - 0.5).sum();
                            (v.clamp(0.0, 1.0) + 0.15 * g).clamp(0.0, 1.0)
                        }
                    })
                    .collect();
                cands.push(u);
            }
        }
        let acq = |u: &[f64]| {
            let (mu, sd) = objective.predict(u);
            match best {
                Some(b) => expected_improvement(mu, sd, b) * pof(u),
                None => pof(u),
            }
        };
        let mut scored_cands: Vec<(f64, Vec<f64>)> = Vec::new();
        for u in cands {
            let config = space.decode(&u);
            if history.iter().any(|o| o.config == config) {
                continue;
            }
            let snapped = space.encode(&config);
            scored_cands.push((acq(&snapped), snapped));
        }
        scored_cands.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored_cands.dedup_by(|a, b| a.1 == b.1);
        // Local refinement of the three best: hill-climb the acquisition over every other
        // value of each categorical parameter and the integers next to each range's value.
        // An SLO edge is one integer step wide, finer than random candidates land, and the
        // best feasible worker count of one class says little about another's: random
        // perturbations rarely try the same point under another choice. (Sweeping whole
        // ranges as well was measured and rejected: docs/tuning.md.)
        let sweeps: Vec<Vec<f64>> = (0..d).map(|i| choices(space, i)).collect();
        let mut choice: Option<(f64, Vec<f64>)> = scored_cands.first().cloned();
        for (a0, u0) in scored_cands.iter().take(3) {
            let (mut a, mut u) = (*a0, u0.clone());
            for _ in 0..2 {
                let before = a;
                for (i, values) in sweeps.iter().enumerate() {
                    let near = neighbours(space, i, u[i]);
                    for v in values.iter().chain(&near) {
                        if (u[i] - v).abs() < 1e-12 {
                            continue;
                        }
                        let mut w = u.clone();
                        w[i] = *v;
                        let config = space.decode(&w);
                        if history.iter().any(|o| o.config == config) {
                            continue;
                        }
                        let x = acq(&w);
                        if x > a {
                            a = x;
                            u = w;
                        }
                    }
                }
                if a <= before {
                    break;
                }
            }
            if choice.as_ref().is_none_or(|c| a > c.0) {
                choice = Some((a, u));
            }
        }
        match choice {
            Some((_, u)) => space.decode(&u),
            None => random_config(space, rng),
        }
    }
}

/// The pooled within-configuration variance of `y` over the points measured more than once,
/// over the variance of all of `y` (the GP's noise in its standardised units); None
/// without a repeat.
fn repeat_noise(x: &[Vec<f64>], y: &[f64]) -> Option<f64> {
    let n = y.len() as f64;
    let mean = y.iter().sum::<f64>() / n;
    let var = y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
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
    (df > 0 && var > 1e-12).then(|| ss / df as f64 / var)
}

/// The positions of the integers next to the one at `u` (±1, ±2), for a range.
fn neighbours(space: &Space, i: usize, u: f64) -> Vec<f64> {
    let p = &space.params[i];
    match (&p.kind, p.decode(u)) {
        (crate::space::Kind::Int { lo, hi, .. }, crate::space::Value::Int(x)) => [-2, -1, 1, 2]
            .iter()
            .map(|k| x + k)
            .filter(|y| (*lo..=*hi).contains(y))
            .map(|y| p.encode(&crate::space::Value::Int(y)))
            .collect(),
        _ => Vec::new(),
    }
}

/// The positions of every value of a categorical parameter (none for a range).
fn choices(space: &Space, i: usize) -> Vec<f64> {
    match &space.params[i].kind {
        crate::space::Kind::Choice(c) => (0..c.len())
            .map(|j| (j as f64 + 0.5) / c.len() as f64)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Each pair (a−0.1, a+0.1): its variance is 0.02 with one degree of freedom.
        assert!((est - 0.02 / var).abs() < 1e-12, "{est}");
        let gp = Gp::fit_best(&xs, &ys, &[false]).unwrap();
        assert!(
            gp.noise >= est / 2.0 - 1e-12 && gp.noise <= est * 2.0 + 1e-12,
            "{} vs {est}",
            gp.noise
        );
        // No repeat, no estimate.
        assert_eq!(repeat_noise(&xs[..8], &ys[..8]), None);
    }

    #[test]
    fn the_refinement_tries_the_next_integers_and_every_choice() {
        use crate::space::{Kind, ParamSpec, Value};
        let space = Space {
            params: vec![
                ParamSpec {
                    name: "w".into(),
                    kind: Kind::Int {
                        lo: 1,
                        hi: 128,
                        log: true,
                    },
                    default: Value::Int(4),
                },
                ParamSpec {
                    name: "k".into(),
                    kind: Kind::Choice(vec![Value::Word("a".into()), Value::Word("b".into())]),
                    default: Value::Word("a".into()),
                },
            ],
            inert: Vec::new(),
        };
        let p = &space.params[0];
        let at = |x: i64| p.encode(&Value::Int(x));
        let near: Vec<Value> = neighbours(&space, 0, at(22))
            .into_iter()
            .map(|u| p.decode(u))
            .collect();
        let want: Vec<Value> = [20, 21, 23, 24].into_iter().map(Value::Int).collect();
        assert_eq!(near, want);
        // At the end of the range only the integers inside it.
        assert_eq!(neighbours(&space, 0, at(128)).len(), 2);
        assert!(neighbours(&space, 1, 0.25).is_empty());
        let words: Vec<Value> = choices(&space, 1)
            .into_iter()
            .map(|u| space.params[1].decode(u))
            .collect();
        assert_eq!(
            words,
            vec![Value::Word("a".into()), Value::Word("b".into())]
        );
        assert!(choices(&space, 0).is_empty());
    }

    #[test]
    fn expected_improvement_prefers_mean_and_uncertainty() {
        assert!(expected_improvement(1.0, 0.1, 0.0) > expected_improvement(0.5, 0.1, 0.0));
        assert!(expected_improvement(0.0, 1.0, 0.0) > expected_improvement(0.0, 0.1, 0.0));
        assert!(expected_improvement(-5.0, 0.1, 0.0) >= 0.0);
    }
}
