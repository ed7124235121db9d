//! The acquisition's view of a cliff (issue 34 item 5; `GpSampler::apart`, `cap` and
//! `edge`, measured on the generated family and off by default: docs/tuning.md). Which
//! measured runs are *collapsed* — infeasible, p99 far past its SLO and far below what a GP
//! of the feasible runs predicts at their point, as past an edge where the server falls
//! apart — so the objective's GP is fitted without them (a stationary kernel smooths a
//! step: the runs past the edge pull the predicted mean down on the good side too, and EI
//! then never climbs to the edge) or with their scores raised to a floor, while the
//! constraint's GP keeps them; and candidates on the segments from the incumbent toward its
//! nearest collapsed runs (a bisection toward the edge, for EI to rank). The idea of
//! treating a region where the objective collapses as a constraint rather than as low
//! values is Gelbart, Snoek & Adams 2014 ("Bayesian Optimization with Unknown
//! Constraints"); the code is our own.

use crate::gp::Gp;
use crate::sampler::Observation;

/// How many of the feasible model's standard deviations a collapsed run must fall below
/// its prediction: a run far from every feasible one (where the model only knows its prior)
/// is not called collapsed.
const SURE: f64 = 2.0;

/// How far past its SLO a collapsed run's p99 must be (a relative margin): past a cliff p99
/// jumps (×1.5–5 on the generated family), where near a smooth SLO edge (a starved default,
/// a queue's knee) it creeps over.
const JUMP: f64 = 0.5;

/// Per run of `scored` (runs with a score), whether it is collapsed: infeasible, and more
/// than `depth` (on the objective's log scale) and more than `SURE` standard deviations
/// below what `feasible_model` — the objective's GP fitted to the feasible runs alone —
/// predicts at its point. A run just past a cliff falls far below its feasible neighbours;
/// a run in a region that is poor and infeasible alike (a starved default, the far side of
/// a smooth SLO edge), or far from any feasible run, does not, and stays in the objective's
/// fit, where it says that the region is poor. With `beyond`, only where that prediction
/// is better than the best feasible run (past an edge the trend the feasible runs show
/// promised more; a starved default was never promised more than the seed). For a collapsed run, Some(the prediction
/// less `depth`: the floor `GpSampler::cap` raises its score to); all None without a model.
pub(crate) fn collapsed(
    scored: &[&Observation],
    xs: &[Vec<f64>],
    feasible_model: Option<&Gp>,
    depth: f64,
    beyond: bool,
) -> Vec<Option<f64>> {
    let best = best_feasible(scored);
    scored
        .iter()
        .zip(xs)
        .map(|(o, x)| match (feasible_model, o.score) {
            (Some(gp), Some(s)) if o.margin > JUMP => {
                let (mu, sd) = gp.predict(x);
                let promised = !beyond || mu > best;
                (promised && mu - s > depth && mu - s > SURE * sd).then_some(mu - depth)
            }
            _ => None,
        })
        .collect()
}

/// Candidates between the incumbent `inc` and each of its `k` nearest `bad` points (unit
/// cube; a differing categorical counts 1), at 1/8, 2/8, … 7/8 of the segment: the range
/// parameters interpolated, the incumbent's categoricals kept. The edge lies on such a
/// segment; EI (with the constraint) decides where.
pub(crate) fn toward(inc: &[f64], bad: &[&Vec<f64>], cat: &[bool], k: usize) -> Vec<Vec<f64>> {
    let dist = |x: &[f64]| -> f64 {
        x.iter()
            .zip(inc)
            .zip(cat)
            .map(|((a, b), c)| {
                if *c {
                    f64::from(u8::from((a - b).abs() > 1e-9))
                } else {
                    (a - b).powi(2)
                }
            })
            .sum()
    };
    let mut near: Vec<&Vec<f64>> = bad.to_vec();
    near.sort_by(|a, b| dist(a).total_cmp(&dist(b)));
    near.dedup();
    let mut out = Vec::new();
    for x in near.into_iter().take(k) {
        for j in 1..8 {
            let t = j as f64 / 8.0;
            out.push(
                (0..inc.len())
                    .map(|i| {
                        if cat[i] {
                            inc[i]
                        } else {
                            inc[i] + t * (x[i] - inc[i])
                        }
                    })
                    .collect(),
            );
        }
    }
    out
}

/// Per run of `scored`, whether it lies past an edge (`GpSampler::past_edge`): infeasible,
/// p99 more than `JUMP` past its SLO, and scoring more than `depth` below the best feasible
/// run (on the objective's log scale: 0.3 is 26% less). Unlike `collapsed`, no model
/// judges whether the run is surprising: the run keeps its say in the hyper-parameters, so
/// a starved default still makes its parameter matter, and only the posterior mean is
/// spared its pull. None of them when no run is feasible yet.
pub(crate) fn past_edge(scored: &[&Observation], depth: f64) -> Vec<bool> {
    let best = best_feasible(scored);
    scored
        .iter()
        .map(|o| {
            best.is_finite()
                && !o.feasible()
                && o.margin > JUMP
                && o.score.is_some_and(|s| s < best - depth)
        })
        .collect()
}

/// The best feasible run's score; −∞ when no run is feasible.
fn best_feasible(scored: &[&Observation]) -> f64 {
    scored
        .iter()
        .filter(|o| o.feasible())
        .filter_map(|o| o.score)
        .fold(f64::NEG_INFINITY, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::{Config, Value};

    fn run(x: i64, score: f64, margin: f64) -> Observation {
        let mut c = Config::new();
        c.insert("x".into(), Value::Int(x));
        Observation {
            config: c,
            score: Some(score),
            margin,
        }
    }

    #[test]
    fn an_infeasible_run_far_below_its_feasible_neighbours_is_collapsed() {
        // Feasible runs climb with x up to 60 (scores 1 … 6); past 60 the server collapses
        // (infeasible, score 2 at x = 70); at x = 1 an infeasible run scores about what its
        // neighbours do (a starved default: poor and infeasible alike).
        let mut h: Vec<Observation> = (1..=6).map(|i| run(10 * i, i as f64, -0.5)).collect();
        h.push(run(70, 2.0, 1.5));
        h.push(run(1, 0.9, 2.0));
        h.push(run(30, 3.1, -0.4));
        let p = crate::space::ParamSpec {
            name: "x".into(),
            kind: crate::space::Kind::Int {
                lo: 1,
                hi: 100,
                log: false,
            },
            default: Value::Int(1),
        };
        let xs: Vec<Vec<f64>> = h.iter().map(|o| vec![p.encode(&o.config["x"])]).collect();
        let scored: Vec<&Observation> = h.iter().collect();
        let fx: Vec<Vec<f64>> = (0..6).chain([8]).map(|i| xs[i].clone()).collect();
        let fy: Vec<f64> = (0..6).chain([8]).map(|i| h[i].score.unwrap()).collect();
        let all: Vec<f64> = h.iter().map(|o| o.score.unwrap()).collect();
        let gp = Gp::fit_best_centred(&fx, &fy, &[false], (&xs, &all)).unwrap();
        let c = collapsed(&scored, &xs, Some(&gp), 1.0, false);
        let flagged: Vec<bool> = c.iter().map(Option::is_some).collect();
        assert_eq!(
            flagged,
            [false, false, false, false, false, false, true, false, false]
        );
        // Its floor: the feasible runs' prediction at x = 70 (about 6 or more) less the depth.
        assert!(c[6].is_some_and(|f| f > 4.0), "{c:?}");
        // Without a model of the feasible runs nothing is collapsed.
        assert!(collapsed(&scored, &xs, None, 1.0, false)
            .iter()
            .all(Option::is_none));
    }

    #[test]
    fn candidates_toward_the_edge_lie_on_the_segments_to_the_nearest_bad_points() {
        let inc = vec![0.2, 0.5, 0.25];
        let cat = [false, false, true];
        let near = vec![0.6, 0.5, 0.75];
        let far = vec![1.0, 0.0, 0.75];
        let c = toward(&inc, &[&far, &near], &cat, 1);
        assert_eq!(c.len(), 7);
        for (j, u) in c.iter().enumerate() {
            let t = (j + 1) as f64 / 8.0;
            assert!((u[0] - (0.2 + 0.4 * t)).abs() < 1e-12, "{u:?}");
            assert!((u[1] - 0.5).abs() < 1e-12);
            // The incumbent's word, not the bad point's.
            assert_eq!(u[2], 0.25);
        }
        assert_eq!(toward(&inc, &[&far, &near], &cat, 2).len(), 14);
    }
}
