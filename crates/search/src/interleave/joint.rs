//! The interleaved search's figures on one scale (issue 34 item 2): a joint fit of every
//! paired trial's ratios. Each configuration c has an unknown log-level x_c per figure
//! (throughput, p50, p90, p99, p99.9, mean); every paired trial is an observation
//! x_B − x_A ≈ ln(ratio B/A), weighted by its number of pairs; the anchor (the configuration
//! measured alone, whose runs set the scale: the default, normally) has x = 0 and the level
//! of its runs. Weighted least squares over the comparison graph (configurations are nodes,
//! paired trials edges) gives every x_c, and each configuration's level is anchor × exp(x_c);
//! a trial is told its incumbent's level × its own ratio, less its candidate's mean residual
//! (`JointFit::trial_figures`). Chaining instead — each candidate told as "the incumbent's figure
//! times the ratio" — lets one noisy ratio at a change of incumbent move every later figure
//! (docs/experiments.md, seed 003's forum, third run: a trial put at ×6 of what the proof
//! measured); with more than one path between two configurations the fit spreads that error
//! over the paths, and with one path (a tree) it equals the chained figures exactly.
//!
//! This module owns that arithmetic only (`fit`, `JointFit`): pure, no study, no journal.
//! Error ratios are not fitted: an SLO on errors bounds each arm's own share, so a trial
//! keeps its candidate's. The caller (webtune-tuner's `interleaved_search`) picks the anchor
//! and re-tells the study each paired trial's `JointFit::trial_figures` after every trial.
//!
//! The solve is a dense Cholesky factorisation of the weighted graph Laplacian with the
//! anchor's row and column removed (symmetric positive definite on a connected graph).
//! Hand-written, some forty lines: the workspace has no linear-algebra crate, the graph has
//! at most a few hundred nodes (one per measured configuration), and nalgebra's build for
//! one small solve is not worth it on this project's machines.

use super::search::{reference, PairedTrial};
use crate::objective::LevelSummary;
use crate::space::Config;

/// The figures the fit places on one scale, in this order.
const FIGURES: usize = 6;

fn figures(s: &LevelSummary) -> [f64; FIGURES] {
    [
        s.throughput,
        s.p50_ms,
        s.p90_ms,
        s.p99_ms,
        s.p999_ms,
        s.mean_ms,
    ]
}

fn with_figures(base: &LevelSummary, f: [f64; FIGURES]) -> LevelSummary {
    LevelSummary {
        level: base.level.clone(),
        throughput: f[0],
        p50_ms: f[1],
        p90_ms: f[2],
        p99_ms: f[3],
        p999_ms: f[4],
        mean_ms: f[5],
        error_ratio: base.error_ratio,
        mail: None,
    }
}

/// ln(told / reference) per figure: what the trial's pairs said of B/A (the told figures are
/// the reference's times the pairs' ratios, `search::on_reference_scale`). NaN where either
/// figure is not a positive number.
fn log_ratios(p: &PairedTrial) -> Option<[f64; FIGURES]> {
    let told = figures(p.told.as_ref()?);
    let reference = figures(&p.reference);
    let mut out = [f64::NAN; FIGURES];
    for k in 0..FIGURES {
        let (b, a) = (told[k], reference[k]);
        if b > 0.0 && a > 0.0 && b.is_finite() && a.is_finite() {
            out[k] = (b / a).ln();
        }
    }
    Some(out)
}

/// The weight of one paired trial's observation: its number of pairs. Not 1/variance from
/// the pairs' spread: a search trial holds two to five pairs, and a variance from one to
/// four degrees of freedom is itself a chance figure (χ² with one degree of freedom is below
/// a tenth of its mean one time in four), so an edge whose two pairs happened to agree would
/// outweigh every other; the number of pairs assumes the same noise per pair for every
/// configuration, which the shared machine makes roughly true.
fn weight(p: &PairedTrial) -> f64 {
    p.pairs.max(1) as f64
}

/// Every configuration of the comparison graph on one scale.
#[derive(Debug, Clone, PartialEq)]
pub struct JointFit {
    /// Each configuration the anchor reaches through paired trials, the anchor first, with
    /// its figures (NaN for a figure no usable observation reached) and, per figure, the mean
    /// residual of its trials as the candidate against another configuration (0 without one).
    levels: Vec<(Config, LevelSummary, [f64; FIGURES])>,
}

impl JointFit {
    /// The fitted figures of configuration `c`, when the anchor reaches it.
    pub fn level(&self, c: &Config) -> Option<&LevelSummary> {
        self.levels.iter().find(|(x, ..)| x == c).map(|(_, l, _)| l)
    }

    /// The figures to tell the study for paired trial `p`: its incumbent's fitted figures
    /// times the trial's own ratios, less the mean residual of its candidate's trials — so
    /// that the mean (on the log scale) of a configuration's trials is its fitted level, and
    /// their spread is what its pairs measured, as the study's racing and noise estimate
    /// expect of repeated measurements. With one trial of a configuration that is its fitted
    /// level; where nothing disagrees (a tree, or repeats against one incumbent) it is what
    /// the trial was told on the incumbent's fitted level. A trial of the incumbent against
    /// itself (the A/A trial, a race of the incumbent) says nothing of its level but measures
    /// the noise: its own ratio on the fitted level. The error ratio is the candidate's own,
    /// the level's name the trial's; a figure the fit does not reach keeps what the trial
    /// was told. None for a trial without told figures.
    pub fn trial_figures(&self, p: &PairedTrial) -> Option<LevelSummary> {
        let told = p.told.as_ref()?;
        let mut out = figures(told);
        let own = log_ratios(p)?;
        let found = |c: &Config| self.levels.iter().find(|(x, ..)| x == c);
        if let (Some((_, a, _)), Some((_, _, offset))) = (found(&p.incumbent), found(&p.candidate))
        {
            let a = figures(a);
            for k in 0..FIGURES {
                let shift = if p.candidate == p.incumbent {
                    0.0
                } else {
                    offset[k]
                };
                let v = a[k] * (own[k] - shift).exp();
                if v.is_finite() && v > 0.0 {
                    out[k] = v;
                }
            }
        }
        Some(with_figures(told, out))
    }
}

/// The joint fit of `pairs` anchored at `anchor`, whose level on every figure is the
/// geometric mean of `anchor_runs` (`search::reference`: what was measured of it alone).
/// Pairs without told figures, and those the anchor does not reach, are left out. None
/// without an anchor run.
pub fn fit(
    anchor: &Config,
    anchor_runs: &[&LevelSummary],
    pairs: &[&PairedTrial],
) -> Option<JointFit> {
    let base = reference(anchor_runs)?;
    // The nodes: the anchor, then every configuration in the order the pairs name them.
    let mut nodes: Vec<&Config> = vec![anchor];
    fn index<'a>(c: &'a Config, nodes: &mut Vec<&'a Config>) -> usize {
        match nodes.iter().position(|x| *x == c) {
            Some(i) => i,
            None => {
                nodes.push(c);
                nodes.len() - 1
            }
        }
    }
    let mut edges: Vec<(usize, usize, f64, [f64; FIGURES])> = Vec::new();
    for p in pairs {
        let Some(y) = log_ratios(p) else { continue };
        let a = index(&p.incumbent, &mut nodes);
        let b = index(&p.candidate, &mut nodes);
        if a != b {
            edges.push((a, b, weight(p), y));
        }
    }
    let mut x = vec![[f64::NAN; FIGURES]; nodes.len()];
    for k in 0..FIGURES {
        let usable: Vec<(usize, usize, f64, f64)> = edges
            .iter()
            .filter(|e| e.3[k].is_finite())
            .map(|e| (e.0, e.1, e.2, e.3[k]))
            .collect();
        for (xi, v) in x.iter_mut().zip(solve(nodes.len(), &usable)) {
            xi[k] = v;
        }
    }
    // Each configuration's mean residual as the candidate against another, per figure.
    let mut offsets = vec![[0.0; FIGURES]; nodes.len()];
    for (i, offset) in offsets.iter_mut().enumerate() {
        for (k, o) in offset.iter_mut().enumerate() {
            let residuals: Vec<f64> = edges
                .iter()
                .filter(|e| e.1 == i)
                .map(|e| e.3[k] - (x[i][k] - x[e.0][k]))
                .filter(|r| r.is_finite())
                .collect();
            if !residuals.is_empty() {
                *o = residuals.iter().sum::<f64>() / residuals.len() as f64;
            }
        }
    }
    let anchor_level = figures(&base);
    let mut levels = Vec::new();
    for (i, (c, xi)) in nodes.iter().zip(&x).enumerate() {
        if xi.iter().all(|v| !v.is_finite()) {
            continue;
        }
        let f: [f64; FIGURES] = std::array::from_fn(|k| anchor_level[k] * xi[k].exp());
        // Errors are not fitted: the anchor's runs' share, else the mean of what the
        // configuration's own trials measured of it.
        let mut level = with_figures(&base, f);
        if i > 0 {
            let own: Vec<f64> = pairs
                .iter()
                .filter(|p| p.candidate == **c)
                .filter_map(|p| p.told.as_ref().map(|t| t.error_ratio))
                .collect();
            level.error_ratio = own.iter().sum::<f64>() / own.len().max(1) as f64;
        }
        levels.push(((*c).clone(), level, offsets[i]));
    }
    Some(JointFit { levels })
}

/// The log-levels of `n` nodes from weighted observations x_b − x_a ≈ y, node 0 fixed at 0:
/// NaN for a node node 0 does not reach. The normal equations of the weighted least squares
/// are the graph Laplacian's; on the component of node 0, less its row and column, it is
/// symmetric positive definite.
fn solve(n: usize, edges: &[(usize, usize, f64, f64)]) -> Vec<f64> {
    // The component of node 0.
    let mut reached = vec![false; n];
    reached[0] = true;
    let mut grew = true;
    while grew {
        grew = false;
        for &(a, b, _, _) in edges {
            if reached[a] != reached[b] {
                reached[a] = true;
                reached[b] = true;
                grew = true;
            }
        }
    }
    // Unknowns: the reached nodes but node 0.
    let unknowns: Vec<usize> = (1..n).filter(|&i| reached[i]).collect();
    let at = |node: usize| unknowns.iter().position(|&u| u == node);
    let m = unknowns.len();
    let mut lap = vec![0.0; m * m];
    let mut rhs = vec![0.0; m];
    for &(a, b, w, y) in edges.iter().filter(|e| reached[e.0]) {
        let (ia, ib) = (at(a), at(b));
        if let Some(i) = ia {
            lap[i * m + i] += w;
            rhs[i] -= w * y;
        }
        if let Some(j) = ib {
            lap[j * m + j] += w;
            rhs[j] += w * y;
        }
        if let (Some(i), Some(j)) = (ia, ib) {
            lap[i * m + j] -= w;
            lap[j * m + i] -= w;
        }
    }
    let mut out = vec![f64::NAN; n];
    out[0] = 0.0;
    if let Some(x) = cholesky_solve(&mut lap, m, rhs) {
        for (i, &node) in unknowns.iter().enumerate() {
            out[node] = x[i];
        }
    }
    out
}

/// x with a·x = b for a symmetric positive definite `m`×`m` matrix (row-major, overwritten
/// by its Cholesky factor). None when it is not positive definite.
fn cholesky_solve(a: &mut [f64], m: usize, mut b: Vec<f64>) -> Option<Vec<f64>> {
    for j in 0..m {
        let mut d = a[j * m + j];
        for k in 0..j {
            d -= a[j * m + k] * a[j * m + k];
        }
        if d <= 0.0 || !d.is_finite() {
            return None;
        }
        let d = d.sqrt();
        a[j * m + j] = d;
        for i in j + 1..m {
            let mut s = a[i * m + j];
            for k in 0..j {
                s -= a[i * m + k] * a[j * m + k];
            }
            a[i * m + j] = s / d;
        }
    }
    // L y = b, then Lᵀ x = y.
    for i in 0..m {
        for k in 0..i {
            b[i] -= a[i * m + k] * b[k];
        }
        b[i] /= a[i * m + i];
    }
    for i in (0..m).rev() {
        for k in i + 1..m {
            b[i] -= a[k * m + i] * b[k];
        }
        b[i] /= a[i * m + i];
    }
    Some(b)
}

#[cfg(test)]
#[path = "joint_tests.rs"]
mod tests;
