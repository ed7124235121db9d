//! The interleaved search's figures on one scale (issue 34 item 2): a joint fit of every
//! paired trial's ratios. Each configuration c has an unknown log-level x_c per figure
//! (throughput, p50, p90, p99, p99.9, mean); every paired trial is an observation
//! x_B − x_A ≈ ln(ratio B/A), weighted by 1 / its variance (its pairs' spread, never less
//! than the pooled per-pair variance over its pairs; by its number of pairs in journals
//! written before the pairs' spread was kept: `weights`); the anchor (the configuration
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
//! Each level also has a standard error (`JointFit::spread`), from the trials' own pairs: a
//! figure told from two pairs against an incumbent itself told from two is not known to the
//! run-to-run noise of the study, and racing must know that to re-measure it.
//!
//! This module owns that arithmetic only (`fit`, `JointFit`): pure, no study, no journal.
//! Error ratios are not fitted: an SLO on errors bounds each arm's own share, so a trial
//! keeps its candidate's. The caller (webtune-tuner's `interleaved_search`) picks the anchor
//! and re-tells the study each paired trial's `JointFit::trial_figures` after every trial.
//!
//! The solve is a dense Cholesky factorisation of the weighted graph Laplacian with the
//! anchor's row and column removed (symmetric positive definite on a connected graph), and
//! for the spreads one solve per configuration against that factor. Hand-written, some
//! sixty lines: the workspace has no linear-algebra crate, the graph has
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

/// The number of pairs of one paired trial: its observation's weight when no trial's pairs
/// said how much they spread (`log_se`: journals written before it), and the divisor of the
/// pooled per-pair variance (`edge_variances`).
fn pairs_of(p: &PairedTrial) -> f64 {
    p.pairs.max(1) as f64
}

/// The weight of each used trial's observation: 1 / its variance (`edge_variances`), else
/// its number of pairs. Not 1 / the pairs' own variance alone: a search trial holds two to
/// five pairs, and a variance from one to four degrees of freedom is itself a chance figure
/// (χ² with one degree of freedom is below a tenth of its mean one time in four), so an edge
/// whose two pairs happened to agree would outweigh every other. With the pooled per-pair
/// variance over its pairs as the floor, no trial weighs more than its pairs say; one whose
/// pairs disagreed wildly (against a starved incumbent whose blocks swing ×10: the forum's
/// runs, docs/experiments.md) weighs less, where by pairs alone it counted as much as any.
fn weights(used: &[&PairedTrial], variances: Option<&[f64]>) -> Vec<f64> {
    match variances {
        Some(v) => v.iter().map(|v| 1.0 / v.max(1e-12)).collect(),
        None => used.iter().map(|p| pairs_of(p)).collect(),
    }
}

/// One configuration of the comparison graph, fitted.
#[derive(Debug, Clone, PartialEq)]
struct Node {
    config: Config,
    /// Its figures (NaN for a figure no usable observation reached).
    level: LevelSummary,
    /// Per figure, the mean residual of its trials as the candidate against another
    /// configuration (0 without one).
    offset: [f64; FIGURES],
    /// The standard error of its fitted ln level (`spread`).
    spread: Option<f64>,
}

/// Every configuration of the comparison graph on one scale.
#[derive(Debug, Clone, PartialEq)]
pub struct JointFit {
    /// Each configuration the anchor reaches through paired trials, the anchor first.
    nodes: Vec<Node>,
}

impl JointFit {
    fn node(&self, c: &Config) -> Option<&Node> {
        self.nodes.iter().find(|n| n.config == *c)
    }

    /// The fitted figures of configuration `c`, when the anchor reaches it.
    pub fn level(&self, c: &Config) -> Option<&LevelSummary> {
        self.node(c).map(|n| &n.level)
    }

    /// The standard error of configuration `c`'s fitted level on the log scale (≈ relative),
    /// relative to the anchor's: how far its figure may be off because the pairs on its
    /// paths to the anchor were few or disagreed. Each paired trial's ratio has the variance
    /// of its own pairs' mean (`PairedTrial::log_se`), never below the pooled per-pair
    /// variance of all trials over its number of pairs (two pairs that happened to agree
    /// are not a precise figure); the fit (weighted by 1 / those variances) carries them to each
    /// level (the sandwich: Var x̂ = L⁻¹ Bᵀ W V W B L⁻¹). Zero for the anchor; None when no
    /// trial had two pairs, or for a configuration the anchor does not reach. On a chain of
    /// incumbents it is the root of the sum of the links' variances: a candidate told ×12
    /// over two pairs against an incumbent itself told from two pairs is known to ±both.
    pub fn spread(&self, c: &Config) -> Option<f64> {
        self.node(c).and_then(|n| n.spread)
    }

    /// Each configuration the fit reaches with its spread (`spread`), the anchor first.
    pub fn spreads(&self) -> impl Iterator<Item = (&Config, f64)> {
        self.nodes
            .iter()
            .filter_map(|n| n.spread.map(|s| (&n.config, s)))
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
        if let (Some(a), Some(Node { offset, .. })) =
            (self.node(&p.incumbent), self.node(&p.candidate))
        {
            let a = figures(&a.level);
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
    let mut used: Vec<&PairedTrial> = Vec::new();
    for p in pairs {
        let Some(y) = log_ratios(p) else { continue };
        let a = index(&p.incumbent, &mut nodes);
        let b = index(&p.candidate, &mut nodes);
        if a != b {
            edges.push((a, b, 0.0, y));
            used.push(p);
        }
    }
    let variances = edge_variances(&used);
    for (e, w) in edges.iter_mut().zip(weights(&used, variances.as_deref())) {
        e.2 = w;
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
    let spreads = variances.map(|v| {
        let weighted: Vec<(usize, usize, f64, f64)> = edges
            .iter()
            .zip(v)
            .map(|(e, v)| (e.0, e.1, e.2, v))
            .collect();
        spread(nodes.len(), &weighted)
    });
    let anchor_level = figures(&base);
    let mut fitted = Vec::new();
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
        fitted.push(Node {
            config: (*c).clone(),
            level,
            offset: offsets[i],
            spread: spreads.as_ref().map(|s| s[i]).filter(|s| s.is_finite()),
        });
    }
    Some(JointFit { nodes: fitted })
}

/// The variance of each used trial's ln ratio (`JointFit::spread`): its own pairs' squared
/// standard error, never below the pooled per-pair variance over its pairs (pooled over the
/// trials with two pairs or more, each with pairs − 1 degrees of freedom); the pooled figure
/// alone for a trial without its own. None when no trial has two pairs.
fn edge_variances(used: &[&PairedTrial]) -> Option<Vec<f64>> {
    let (mut ss, mut df) = (0.0, 0.0);
    for p in used {
        if let Some(se) = p.log_se.filter(|s| s.is_finite() && p.pairs >= 2) {
            let n = p.pairs as f64;
            ss += se * se * n * (n - 1.0);
            df += n - 1.0;
        }
    }
    if df == 0.0 {
        return None;
    }
    let per_pair = ss / df;
    Some(
        used.iter()
            .map(|p| {
                let floor = per_pair / pairs_of(p);
                p.log_se
                    .filter(|s| s.is_finite())
                    .map_or(floor, |se| (se * se).max(floor))
            })
            .collect(),
    )
}

/// The component of node 0 and the weighted Laplacian of its nodes but node 0 (the normal
/// equations of the weighted least squares): which nodes are reached, the unknowns' nodes
/// in order, and the matrix (row-major).
fn laplacian(n: usize, edges: &[(usize, usize, f64, f64)]) -> (Vec<bool>, Vec<usize>, Vec<f64>) {
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
    let unknowns: Vec<usize> = (1..n).filter(|&i| reached[i]).collect();
    let m = unknowns.len();
    let mut lap = vec![0.0; m * m];
    for &(a, b, w, _) in edges.iter().filter(|e| reached[e.0]) {
        let (ia, ib) = (position(&unknowns, a), position(&unknowns, b));
        if let Some(i) = ia {
            lap[i * m + i] += w;
        }
        if let Some(j) = ib {
            lap[j * m + j] += w;
        }
        if let (Some(i), Some(j)) = (ia, ib) {
            lap[i * m + j] -= w;
            lap[j * m + i] -= w;
        }
    }
    (reached, unknowns, lap)
}

fn position(unknowns: &[usize], node: usize) -> Option<usize> {
    unknowns.iter().position(|&u| u == node)
}

/// The log-levels of `n` nodes from weighted observations x_b − x_a ≈ y, node 0 fixed at 0:
/// NaN for a node node 0 does not reach. On the component of node 0, less its row and
/// column, the Laplacian is symmetric positive definite.
fn solve(n: usize, edges: &[(usize, usize, f64, f64)]) -> Vec<f64> {
    let (reached, unknowns, mut lap) = laplacian(n, edges);
    let m = unknowns.len();
    let mut rhs = vec![0.0; m];
    for &(a, b, w, y) in edges.iter().filter(|e| reached[e.0]) {
        if let Some(i) = position(&unknowns, a) {
            rhs[i] -= w * y;
        }
        if let Some(j) = position(&unknowns, b) {
            rhs[j] += w * y;
        }
    }
    let mut out = vec![f64::NAN; n];
    out[0] = 0.0;
    if cholesky(&mut lap, m) {
        let x = substitute(&lap, m, rhs);
        for (i, &node) in unknowns.iter().enumerate() {
            out[node] = x[i];
        }
    }
    out
}

/// The standard error of each node's fitted log-level from edges (a, b, weight, variance of
/// the edge's observation): with z = L⁻¹ e_c, Var x̂_c = Σ_e w_e² v_e (z_b − z_a)². Node 0
/// is 0; NaN for a node it does not reach.
fn spread(n: usize, edges: &[(usize, usize, f64, f64)]) -> Vec<f64> {
    let (reached, unknowns, mut lap) = laplacian(n, edges);
    let m = unknowns.len();
    let mut out = vec![f64::NAN; n];
    out[0] = 0.0;
    if !cholesky(&mut lap, m) {
        return out;
    }
    for (i, &node) in unknowns.iter().enumerate() {
        let mut unit = vec![0.0; m];
        unit[i] = 1.0;
        let z = substitute(&lap, m, unit);
        let at = |k: usize| position(&unknowns, k).map_or(0.0, |j| z[j]);
        let var: f64 = edges
            .iter()
            .filter(|e| reached[e.0])
            .map(|&(a, b, w, v)| w * w * v * (at(b) - at(a)).powi(2))
            .sum();
        out[node] = var.sqrt();
    }
    out
}

/// The Cholesky factor of a symmetric positive definite `m`×`m` matrix (row-major), in place
/// (lower triangle). False when it is not positive definite.
fn cholesky(a: &mut [f64], m: usize) -> bool {
    for j in 0..m {
        let mut d = a[j * m + j];
        for k in 0..j {
            d -= a[j * m + k] * a[j * m + k];
        }
        if d <= 0.0 || !d.is_finite() {
            return false;
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
    true
}

/// x with L Lᵀ x = b, L the factor `cholesky` left in `l`.
fn substitute(l: &[f64], m: usize, mut b: Vec<f64>) -> Vec<f64> {
    for i in 0..m {
        for k in 0..i {
            b[i] -= l[i * m + k] * b[k];
        }
        b[i] /= l[i * m + i];
    }
    for i in (0..m).rev() {
        for k in i + 1..m {
            b[i] -= l[k * m + i] * b[k];
        }
        b[i] /= l[i * m + i];
    }
    b
}

#[cfg(test)]
#[path = "joint_tests.rs"]
mod tests;
