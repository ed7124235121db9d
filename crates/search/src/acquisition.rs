//! The model-based sampler: constrained expected improvement (expected improvement over the
//! best feasible posterior mean of the objective's GP, times the probability that a second GP
//! on the SLO margin says "met"; both GPs are `gp`'s), maximised over candidates — uniform
//! ones, axis-aligned steps around the best feasible points, and steps along a ridge that
//! move two parameters by opposite factors — the best three then hill-climbed over the other
//! choices of each categorical parameter and the integers next to each range's value. Ideas
//! from Gardner et al. 2014 (constrained EI) and Snoek et al. 2012 (noisy EI); code our own.
//! And one proposal outside EI (`second_look`): a second look at a categorical word measured
//! once whose run fell well below the model's curve, for mode × integer interactions. Runs
//! past an edge leave the objective's posterior (`past_edge`); a ridge of two parameters'
//! product is fitted through their sum and difference (`turn`). Runs collapsed past a cliff
//! may be fitted apart (`edge`; measured, off by default).

use crate::gp::{norm_cdf, Gp};
use crate::sampler::{random_config, random_point, Observation, Sampler};
use crate::space::{Config, Space};
use webtune_model::rng::Rng;

/// Gaussian-process sampler with constrained expected improvement.
#[derive(Debug, Clone, Copy)]
pub struct GpSampler {
    /// Uniform random candidates scored per ask (plus local ones around the best).
    pub candidates: usize,
    /// In a local candidate, the chance that a categorical is redrawn (else kept).
    pub switch: f64,
    /// In a local candidate, the scale of a range parameter's step on the unit scale (the
    /// step is this times a sum of three U(−½, ½)).
    pub step: f64,
    /// Local candidates per centre that move two range parameters in opposite directions,
    /// by the same factor on the log scale (along a ridge ln a + ln b = const, which
    /// axis-aligned steps cross rather than follow; measured on the generated family and
    /// the named servers: docs/tuning.md). 0: none (the search before issue 34 item 5).
    pub ridge: usize,
    /// Candidates on the segments between the incumbent and the other measured points
    /// (range parameters interpolated, the incumbent's categoricals kept): between the best
    /// feasible point and a collapsed or infeasible one lies the edge. 0: none.
    pub between: usize,
    /// Second looks at words measured once, while fewer than this many words other than the
    /// incumbent's have been measured at two or more configurations: the incumbent with such
    /// a word (drawn at random) and the most influential range parameter (the shortest
    /// length scale) at a random value away from the first look and from the incumbent's.
    /// For a mode × integer interaction: the word's one run, far from its own peak, looks
    /// poor and EI never returns (docs/tuning.md). 0: EI alone; 9 by default.
    pub second_look: usize,
    /// With `second_look`: only words whose one run scored this much below the model's
    /// prediction for the incumbent's word at the same point (on the objective's scale, the
    /// log of throughput: 0.2 is 18%) get a second look; a word that costs a few percent
    /// everywhere is not a mode that moves a peak. None: every word measured once; 0.2 by
    /// default.
    pub surprise: Option<f64>,
    /// Collapsed runs fitted apart (`edge`): with Some(depth), an infeasible run that scored
    /// more than `depth` (log scale) below what the feasible runs' GP predicts at its point —
    /// the far side of a cliff — is left out of the objective's GP (the constraint's GP
    /// still has it), so the collapse does not drag the model down on the good side. None:
    /// every run in both (measured on the family: docs/tuning.md).
    pub apart: Option<f64>,
    /// With `apart`: 7 candidates on the segment from the incumbent to each of its this many
    /// nearest collapsed runs (`edge::toward`), for EI to rank. 0: none.
    pub edge: usize,
    /// With `apart`: a collapsed run stays in the objective's GP, its score raised to the
    /// feasible runs' prediction there less the depth (the collapse made less extreme rather
    /// than left out). false: left out.
    pub cap: bool,
    /// With `apart`: only runs where the feasible runs' GP predicted better than the best
    /// feasible run count as collapsed (`edge::collapsed`). false: any.
    pub beyond: bool,
    /// Runs past an edge (`edge::past_edge`: infeasible, p99 more than half again past its
    /// SLO, and scoring more than this much below the best feasible run on the objective's
    /// log scale) stay in the objective GP's choice of hyper-parameters — they say which
    /// parameter matters, and how sharply — but are left out of the posterior that EI and
    /// the incumbent read: a stationary kernel would draw one smooth curve through them and
    /// the good runs beside the edge, so the mean falls before the edge and EI never climbs
    /// to it. The constraint's GP keeps them and stops the search at the edge. None: the
    /// posterior has every run (the search before this field); Some(0.3)
    /// by default (docs/tuning.md, "The cliff, mended").
    pub past_edge: Option<f64>,
    /// Two range parameters seen through their sum and difference (`gp::Turn`): the two
    /// with the shortest length scales in the objective's fit (both log ranges, or both
    /// linear) are refitted turned, and the turned fit is kept when its log posterior beats
    /// the plain one's by more than this (1: the runs e times likelier). A ridge along a
    /// product such as workers × threads then runs along one length scale, and a run on it
    /// tells the model about the rest of it. None: never turned (the search before this
    /// field); Some(1.0) by default (docs/tuning.md, "The ridge, turned").
    pub turn: Option<f64>,
}

impl Default for GpSampler {
    fn default() -> Self {
        GpSampler {
            candidates: 600,
            switch: 0.25,
            step: 0.15,
            ridge: 100,
            between: 0,
            second_look: 9,
            surprise: Some(0.2),
            apart: None,
            edge: 0,
            cap: false,
            beyond: false,
            past_edge: Some(0.3),
            turn: Some(1.0),
        }
    }
}

fn norm_pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

fn expected_improvement(mu: f64, sd: f64, best: f64) -> f64 {
    let z = (mu - best) / sd;
    (mu - best) * norm_cdf(z) + sd * norm_pdf(z)
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
        // Collapsed runs (`apart`, `edge`): infeasible runs far below what the feasible runs
        // predict there, left out of the objective's fit (the constraint's GP has them).
        let collapsed = match self.apart {
            Some(depth) => {
                let feasible_xs: Vec<Vec<f64>> = scored
                    .iter()
                    .zip(&xs)
                    .filter(|(o, _)| o.feasible())
                    .map(|(_, x)| x.clone())
                    .collect();
                let feasible_ys: Vec<f64> = scored
                    .iter()
                    .filter(|o| o.feasible())
                    .filter_map(|o| o.score)
                    .collect();
                let model = (feasible_ys.len() >= 2)
                    .then(|| Gp::fit_best_centred(&feasible_xs, &feasible_ys, &cat, (&xs, &ys)))
                    .flatten();
                crate::edge::collapsed(&scored, &xs, model.as_ref(), depth, self.beyond)
            }
            _ => vec![None; scored.len()],
        };
        // Left out of the fit, or with `cap` kept with their scores raised to the floor.
        let apart: Vec<bool> = collapsed.iter().map(|c| c.is_some() && !self.cap).collect();
        let fitted_x = without(&xs, &apart);
        let fitted_y: Vec<f64> = ys
            .iter()
            .zip(&collapsed)
            .zip(&apart)
            .filter(|(_, a)| !**a)
            .map(|((y, c), _)| c.map_or(*y, |floor| y.max(floor)))
            .collect();
        // Standardised by every run's scores and noise from every repeat, the collapsed ones
        // included (`fit_best_centred`).
        let Some(objective) = Gp::fit_best_centred(&fitted_x, &fitted_y, &cat, (&xs, &ys)) else {
            return random_config(space, rng);
        };
        // Each log range's span in nats (None for the rest): the turn's weights and the ridge
        // candidates' step ratio.
        let spans: Vec<Option<f64>> = (0..cat.len()).map(|i| log_span(space, i)).collect();
        // A ridge of two parameters' sum or difference (`turn`).
        let objective = match self.turn {
            Some(margin) => {
                let turned = turn_for(&objective, &cat, &spans).and_then(|t| {
                    Gp::fit_best_turned(&fitted_x, &fitted_y, &cat, (&xs, &ys), Some(t))
                });
                match turned {
                    Some(t) if t.log_posterior() > objective.log_posterior() + margin => t,
                    _ => objective,
                }
            }
            None => objective,
        };
        // Runs past an edge out of the posterior (`past_edge`), the hyper-parameters kept.
        let objective = match self.past_edge {
            Some(depth) => {
                // Per run in the fit (those not left `apart`), whether it is past an edge.
                let past: Vec<bool> = crate::edge::past_edge(&scored, depth)
                    .into_iter()
                    .zip(&apart)
                    .filter(|(_, a)| !**a)
                    .map(|(p, _)| p)
                    .collect();
                let kept_x = without(&fitted_x, &past);
                let kept_y = without(&fitted_y, &past);
                if kept_x.len() >= 2 && kept_x.len() < fitted_x.len() {
                    objective
                        .conditioned_on(&kept_x, &kept_y)
                        .unwrap_or(objective)
                } else {
                    objective
                }
            }
            None => objective,
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
            .zip(&apart)
            .filter(|((o, _), a)| o.feasible() && !**a)
            .map(|((_, x), _)| (objective.predict(x).0, x))
            .collect();
        feasible.sort_by(|a, b| b.0.total_cmp(&a.0));
        let best = feasible.first().map(|f| f.0);

        let d = space.dims();
        if self.second_look > 0 {
            if let Some(inc) = feasible.first().map(|f| f.1) {
                if let Some(c) = self.second_look(space, inc, &objective, history, rng) {
                    return c;
                }
            }
        }
        // Candidates: uniform ones, and perturbations of the best feasible points (or of
        // every point when none is feasible yet).
        let mut cands: Vec<Vec<f64>> = (0..self.candidates).map(|_| random_point(d, rng)).collect();
        let centres: Vec<&Vec<f64>> = if feasible.is_empty() {
            xs.iter().collect()
        } else {
            feasible.iter().take(4).map(|f| f.1).collect()
        };
        let ranges: Vec<usize> = (0..d).filter(|i| !cat[*i]).collect();
        if self.ridge > 0 && ranges.len() >= 2 {
            for c in &centres {
                for _ in 0..self.ridge {
                    cands.push(ridge_candidate(c, &ranges, &spans, self.step, rng));
                }
            }
        }
        if self.edge > 0 {
            if let Some(inc) = feasible.first().map(|f| f.1) {
                let bad: Vec<&Vec<f64>> = xs
                    .iter()
                    .zip(&collapsed)
                    .filter(|(_, c)| c.is_some())
                    .map(|(x, _)| x)
                    .collect();
                cands.extend(crate::edge::toward(inc, &bad, &cat, self.edge));
            }
        }
        if self.between > 0 && xs.len() >= 2 {
            if let Some(inc) = feasible.first().map(|f| f.1) {
                for _ in 0..self.between {
                    let other = &xs[rng.below(xs.len() as u64) as usize];
                    let t = rng.unit();
                    let u: Vec<f64> = (0..d)
                        .map(|i| {
                            if cat[i] {
                                inc[i]
                            } else {
                                inc[i] + t * (other[i] - inc[i])
                            }
                        })
                        .collect();
                    cands.push(u);
                }
            }
        }
        for c in centres {
            for _ in 0..100 {
                let u: Vec<f64> = c
                    .iter()
                    .zip(&cat)
                    .map(|(v, is_cat)| {
                        if *is_cat {
                            if rng.unit() < self.switch {
                                rng.unit()
                            } else {
                                *v
                            }
                        } else {
                            let g: f64 = (0..3).map(|_| rng.unit() - 0.5).sum();
                            (v.clamp(0.0, 1.0) + self.step * g).clamp(0.0, 1.0)
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

impl GpSampler {
    /// `GpSampler::second_look`: a word (of any categorical, other than the incumbent's
    /// `inc`) measured at exactly one configuration, looked at again; None when there is none
    /// (or `second_look` words have had two looks already).
    fn second_look(
        &self,
        space: &Space,
        inc: &[f64],
        objective: &Gp,
        history: &[Observation],
        rng: &mut Rng,
    ) -> Option<Config> {
        let cat: Vec<bool> = space.params.iter().map(|p| p.is_choice()).collect();
        let xs: Vec<Vec<f64>> = history
            .iter()
            .filter(|o| o.score.is_some())
            .map(|o| space.encode(&o.config))
            .collect();
        let ls = objective.length_scales();
        let main = (0..cat.len())
            .filter(|i| !cat[*i])
            .min_by(|a, b| ls[*a].total_cmp(&ls[*b]))?;
        // (categorical, word position, its distinct measured points)
        let mut words: Vec<(usize, f64, Vec<&Vec<f64>>)> = Vec::new();
        for i in (0..cat.len()).filter(|i| cat[*i]) {
            for w in choices(space, i) {
                if (inc[i] - w).abs() < 1e-9 {
                    continue;
                }
                let mut looks: Vec<&Vec<f64>> = Vec::new();
                for x in xs.iter().filter(|x| (x[i] - w).abs() < 1e-9) {
                    if !looks.contains(&x) {
                        looks.push(x);
                    }
                }
                // With `surprise`: only a word that did worse at its one point than the model
                // expects of the incumbent's word there, by more than a word's usual cost.
                if let (Some(s), [x]) = (self.surprise, looks.as_slice()) {
                    let mut same = x.to_vec();
                    same[i] = inc[i];
                    if objective.predict(&same).0 - objective.predict(x).0 < s {
                        continue;
                    }
                }
                words.push((i, w, looks));
            }
        }
        if words.iter().filter(|w| w.2.len() >= 2).count() >= self.second_look {
            return None;
        }
        let mut once: Vec<&(usize, f64, Vec<&Vec<f64>>)> =
            words.iter().filter(|w| w.2.len() == 1).collect();
        crate::sampler::shuffle(&mut once, rng);
        for (i, w, looks) in once {
            let first = looks[0][main];
            for _ in 0..50 {
                let v = rng.unit();
                if (v - first).abs() < 0.25 || (v - inc[main]).abs() < 0.15 {
                    continue;
                }
                let mut u = inc.to_vec();
                u[*i] = *w;
                u[main] = v;
                let c = space.decode(&u);
                if !history.iter().any(|o| o.config == c) {
                    return Some(c);
                }
            }
        }
        None
    }
}

/// The items whose `out` is false, in order.
fn without<T: Clone>(items: &[T], out: &[bool]) -> Vec<T> {
    items
        .iter()
        .zip(out)
        .filter(|(_, o)| !**o)
        .map(|(i, _)| i.clone())
        .collect()
}

/// The pair of range parameters to see turned (`GpSampler::turn`): the two with the shortest
/// length scales in `gp`, both log ranges (weighted by their spans `spans`) or both linear
/// (weighted alike); None when those two are one of each, or there are fewer than two.
/// (Trying every pair among the three or four shortest, the best log posterior kept, was
/// measured and moved nothing: docs/tuning.md.)
fn turn_for(gp: &Gp, cat: &[bool], spans: &[Option<f64>]) -> Option<crate::gp::Turn> {
    let ls = gp.length_scales();
    let mut ranges: Vec<usize> = (0..cat.len()).filter(|i| !cat[*i]).collect();
    ranges.sort_by(|a, b| ls[*a].total_cmp(&ls[*b]));
    let (&i, &j) = (ranges.first()?, ranges.get(1)?);
    let (wi, wj) = match (spans[i], spans[j]) {
        (Some(a), Some(b)) => (a, b),
        (None, None) => (1.0, 1.0),
        _ => return None,
    };
    Some(crate::gp::Turn { i, j, wi, wj })
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

/// A point near `c` moved along a ridge: two range parameters `a` ≠ `b` drawn at random,
/// ln a + δ and ln b − δ (the product kept, up to rounding to integers and the range's
/// bounds); unit steps in opposite directions where a range is linear. δ is twice the local
/// step's size on `a`'s unit scale.
fn ridge_candidate(
    c: &[f64],
    ranges: &[usize],
    spans: &[Option<f64>],
    step: f64,
    rng: &mut Rng,
) -> Vec<f64> {
    let a = ranges[rng.below(ranges.len() as u64) as usize];
    let mut b = ranges[rng.below(ranges.len() as u64 - 1) as usize];
    if b == a {
        b = ranges[ranges.len() - 1];
    }
    let g: f64 = (0..3).map(|_| rng.unit() - 0.5).sum();
    let da = 2.0 * step * g;
    let db = match (spans[a], spans[b]) {
        (Some(sa), Some(sb)) => da * sa / sb,
        _ => da,
    };
    let mut u = c.to_vec();
    u[a] = (u[a].clamp(0.0, 1.0) + da).clamp(0.0, 1.0);
    u[b] = (u[b].clamp(0.0, 1.0) - db).clamp(0.0, 1.0);
    u
}

/// ln(hi / lo) of a log-scaled integer range (its unit scale's length in nats), else None.
fn log_span(space: &Space, i: usize) -> Option<f64> {
    match space.params[i].kind {
        // As `space` encodes it: ln(x) between ln(max(lo − ½, ½)) and ln(hi + ½).
        crate::space::Kind::Int { lo, hi, log: true } => {
            Some((hi as f64 + 0.5).ln() - (lo as f64 - 0.5).max(0.5).ln())
        }
        _ => None,
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
#[path = "acquisition_tests.rs"]
mod tests;
