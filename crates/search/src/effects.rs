//! The "why": the effect of each parameter on the objective across the trials, as a partial
//! dependence from the model — for each group of a parameter's values (each choice, or the
//! low / middle / high third of a range on its own scale), the objective the fitted GP
//! predicts with that parameter set to the group's centre, averaged over the measured
//! configurations (so parameters that moved together do not share credit, as they would in
//! a raw per-group average). The spread between the best and the worst group is the
//! parameter's effect. Sorted, largest effect first. With fewer than two measured trials,
//! every effect is 0; with none, there are none. A default outside the searched range is in no group.
//! A parameter is judged only over the trials where it does something (`Space::inert_in`:
//! KeepAliveTimeout over the KeepAlive-on trials), so an inert value is never credited.
//!
//! Each effect knows what it does not know: the spread carries a 90% interval from the
//! GP's joint posterior over the two groups' averages (the model's own uncertainty, without
//! a run's noise), and an effect is `clear` only when that interval excludes zero and both
//! the best and the worst group rest on at least two measured runs. Only a clear effect
//! names its best group: a value the search ran once is never called "best" (a 10-trial
//! tune once said "mode … (best c)" of a mode measured once, the server's slowest).

use crate::gp::Model;
use crate::objective::Objective;
use crate::space::{Kind, Space};
use crate::study::Trial;
use crate::Observation;
use serde::{Deserialize, Serialize};

/// One group of a parameter's values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// `event`, or `2..9` (the values of that third of the range).
    pub label: String,
    /// Measured trials whose value falls in the group.
    pub trials: usize,
    /// The model's objective with the parameter in this group, averaged over the trials.
    pub objective: f64,
    /// How many of the group's trials met every SLO.
    pub feasible: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Effect {
    pub param: String,
    /// Best group over worst group, minus one, in the better direction (0.25 = 25%).
    pub spread: f64,
    /// The best group, named only when the effect is `clear` (empty otherwise): a choice,
    /// or for a range the span of the values that ran in that group.
    pub best: String,
    pub bins: Vec<Bin>,
    /// The 90% interval of `spread` from the model's posterior (may go below zero).
    #[serde(default)]
    pub spread_low: f64,
    #[serde(default)]
    pub spread_high: f64,
    /// The interval excludes zero and the best and worst groups each rest on ≥ 2 runs.
    #[serde(default)]
    pub clear: bool,
    /// Measured runs in the model's best group (the group `best` would name).
    #[serde(default)]
    pub measured_times: usize,
    /// The model's best group, named or not (for a reader who wants to measure it again).
    #[serde(default)]
    pub model_best: String,
}

/// The normal quantile of a two-sided 90% interval.
const Z90: f64 = 1.6449;

/// Fewer measured runs than this in the best or worst group leave an effect unclear.
const MIN_RUNS: usize = 2;

impl Effect {
    /// No measured trial where the parameter does something: nothing to say.
    fn none(param: &str, bins: Vec<Bin>) -> Effect {
        Effect {
            param: param.to_string(),
            spread: 0.0,
            best: String::new(),
            bins,
            spread_low: 0.0,
            spread_high: 0.0,
            clear: false,
            measured_times: 0,
            model_best: String::new(),
        }
    }

    /// Whether any measured trial informs this effect.
    pub fn measured(&self) -> bool {
        !self.model_best.is_empty() || !self.best.is_empty()
    }

    /// Why an effect is not clear, in a few words; None when it is.
    pub fn unclear_because(&self) -> Option<String> {
        if self.clear {
            return None;
        }
        if !self.measured() {
            return Some("no measured run".to_string());
        }
        Some(match self.measured_times {
            _ if self.spread_low <= 0.0 => "its interval spans zero".to_string(),
            0 => format!("{} never ran", self.model_best),
            1 => format!("{} ran once", self.model_best),
            // Clear but for the other end.
            _ => "its worst group has under two runs".to_string(),
        })
    }
}

/// The groups of one parameter: (label, centre in the cube, lower edge, upper edge).
fn groups(space: &Space, i: usize) -> Vec<(String, f64, f64, f64)> {
    let p = &space.params[i];
    match &p.kind {
        Kind::Choice(c) => (0..c.len())
            .map(|k| {
                let w = 1.0 / c.len() as f64;
                (
                    c[k].to_string(),
                    (k as f64 + 0.5) * w,
                    k as f64 * w,
                    (k + 1) as f64 * w,
                )
            })
            .collect(),
        Kind::Int { .. } => (0..3)
            .map(|k| {
                let (lo, hi) = (k as f64 / 3.0, (k + 1) as f64 / 3.0);
                let (a, b) = (p.decode(lo), p.decode(hi - 1e-9));
                let label = if a == b {
                    a.to_string()
                } else {
                    format!("{a}..{b}")
                };
                (label, (lo + hi) / 2.0, lo, hi)
            })
            .collect(),
    }
}

/// What a group's runs measured: for a range, the span of the values that ran in it
/// (`342..370`, not the whole third `342..512`, whose untried top may fall off a cliff);
/// for a choice, its label.
fn measured_span(
    space: &Space,
    i: usize,
    points: &[(Vec<f64>, bool)],
    groups: &[(String, f64, f64, f64)],
    label: &str,
) -> String {
    let p = &space.params[i];
    let Some((_, _, lo, hi)) = groups.iter().find(|g| g.0 == label) else {
        return label.to_string();
    };
    let values: Vec<i64> = points
        .iter()
        .filter(|(u, _)| u[i] >= *lo && u[i] < hi + if *hi >= 1.0 { 1e-9 } else { 0.0 })
        .filter_map(|(u, _)| match p.decode(u[i]) {
            crate::space::Value::Int(v) => Some(v),
            crate::space::Value::Word(_) => None,
        })
        .collect();
    match (values.iter().min(), values.iter().max()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a}..{b}"),
        _ => label.to_string(),
    }
}

/// `u` with its `i`th coordinate set to `v`.
fn at(u: &[f64], i: usize, v: f64) -> Vec<f64> {
    let mut u = u.to_vec();
    u[i] = v;
    u
}

/// Effects of every parameter over the measured trials, largest first.
pub fn effects(space: &Space, objective: Objective, trials: &[Trial]) -> Vec<Effect> {
    let history: Vec<Observation> = trials
        .iter()
        .filter_map(|t| {
            t.evaluation.map(|e| Observation {
                config: t.config.clone(),
                score: Some(objective.score(e.objective)),
                margin: e.margin,
            })
        })
        .collect();
    if history.is_empty() {
        // Nothing was measured (every trial failed): there is no effect to speak of.
        return Vec::new();
    }
    let model = Model::fit(space, &history);
    let all: Vec<(Vec<f64>, bool, Vec<String>)> = trials
        .iter()
        .filter_map(|t| {
            t.evaluation.map(|e| {
                (
                    space.encode(&t.config),
                    e.feasible,
                    space.inert_in(&t.config),
                )
            })
        })
        .collect();
    let mut out: Vec<Effect> = (0..space.dims())
        .map(|i| {
            let name = &space.params[i].name;
            // Only the trials where this parameter does something.
            let points: Vec<(Vec<f64>, bool)> = all
                .iter()
                .filter(|(_, _, inert)| !inert.contains(name))
                .map(|(u, f, _)| (u.clone(), *f))
                .collect();
            let groups = groups(space, i);
            let bins: Vec<Bin> = groups
                .iter()
                .map(|(label, centre, lo, hi)| {
                    let inside: Vec<&(Vec<f64>, bool)> = points
                        .iter()
                        .filter(|(u, _)| {
                            u[i] >= *lo && u[i] < hi + if *hi >= 1.0 { 1e-9 } else { 0.0 }
                        })
                        .collect();
                    let score = match &model {
                        Some(m) if !points.is_empty() => {
                            points
                                .iter()
                                .map(|(u, _)| m.predict(&at(u, i, *centre)))
                                .sum::<f64>()
                                / points.len() as f64
                        }
                        _ => 0.0,
                    };
                    Bin {
                        label: label.clone(),
                        trials: inside.len(),
                        objective: objective.unscore(score),
                        feasible: inside.iter().filter(|(_, f)| *f).count(),
                    }
                })
                .collect();
            let Some(m) = model.as_ref().filter(|_| !points.is_empty()) else {
                return Effect::none(name, bins);
            };
            let key = |b: &Bin| objective.score(b.objective);
            let by_key = |a: &&Bin, b: &&Bin| key(a).total_cmp(&key(b));
            let (Some(best), Some(worst)) =
                (bins.iter().max_by(by_key), bins.iter().min_by(by_key))
            else {
                return Effect::none(name, bins);
            };
            let centre = |b: &Bin| groups.iter().find(|g| g.0 == b.label).map_or(0.5, |g| g.1);
            let (a, w): (Vec<Vec<f64>>, Vec<Vec<f64>>) = points
                .iter()
                .map(|(u, _)| (at(u, i, centre(best)), at(u, i, centre(worst))))
                .unzip();
            let (diff, sd) = m.difference(&a, &w);
            let spread = (key(best) - key(worst)).exp() - 1.0;
            let spread_low = (diff - Z90 * sd).exp() - 1.0;
            let spread_high = (diff + Z90 * sd).exp() - 1.0;
            let clear = spread_low > 0.0 && best.trials >= MIN_RUNS && worst.trials >= MIN_RUNS;
            Effect {
                param: name.clone(),
                spread,
                best: if clear {
                    measured_span(space, i, &points, &groups, &best.label)
                } else {
                    String::new()
                },
                measured_times: best.trials,
                model_best: best.label.clone(),
                spread_low,
                spread_high,
                clear,
                bins,
            }
        })
        .collect();
    out.sort_by(|a, b| b.spread.total_cmp(&a.spread));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::{Next, Study, StudySettings, Why};
    use crate::{synthetic, GpSampler, Slo};

    #[test]
    fn the_parameter_that_matters_comes_first() {
        let sp = synthetic::space();
        let mut s = Study::new(
            sp.clone(),
            Objective::MaximizeThroughput,
            vec![Slo::parse(synthetic::SLO).unwrap()],
            vec![],
            StudySettings {
                trials: 20,
                space_filling: 12,
                seed: 3,
                ..StudySettings::default()
            },
            Box::new(GpSampler::default()),
        );
        let mut rng = webtune_model::rng::Rng::seeded(1);
        while let Next::Measure(c, why) = s.next() {
            let o = synthetic::measure(&c, &mut rng);
            s.record(c, why, o);
        }
        let e = effects(&sp, Objective::MaximizeThroughput, s.trials());
        assert_eq!(e.len(), 5);
        // Workers swing throughput by far the most; the buffer size hardly at all.
        assert_eq!(e[0].param, "workers", "{e:#?}");
        let buffer = e.iter().find(|x| x.param == "buffer_kb").unwrap();
        assert!(buffer.spread < e[0].spread / 3.0, "{e:#?}");
        assert!(e.windows(2).all(|w| w[0].spread >= w[1].spread));
        let total: usize = e[0].bins.iter().map(|b| b.trials).sum();
        assert_eq!(total, 20);
    }

    #[test]
    fn an_inert_parameter_is_credited_nothing() {
        let mut sp = synthetic::space();
        let mut s = Study::new(
            sp.clone(),
            Objective::MaximizeThroughput,
            vec![],
            vec![],
            StudySettings {
                trials: 12,
                seed: 3,
                ..StudySettings::default()
            },
            Box::new(GpSampler::default()),
        );
        let mut rng = webtune_model::rng::Rng::seeded(1);
        while let Next::Measure(c, why) = s.next() {
            let o = synthetic::measure(&c, &mut rng);
            s.record(c, why, o);
        }
        // Workers matter most; said to do nothing in every trial, they get no effect.
        sp.inert = vec![crate::space::Inert {
            param: "workers".into(),
            when: None,
        }];
        let e = effects(&sp, Objective::MaximizeThroughput, s.trials());
        let workers = e.iter().find(|x| x.param == "workers").unwrap();
        assert_eq!(workers.spread, 0.0);
        assert!(workers.best.is_empty());
        assert!(workers.bins.iter().all(|b| b.trials == 0));
    }

    /// A hand-made study: each (workers, mpm, ok/s) is one measured run.
    fn hand_study(runs: &[(i64, &str, f64)]) -> (Space, Vec<Trial>) {
        let sp = synthetic::space();
        let mut s = Study::new(
            sp.clone(),
            Objective::MaximizeThroughput,
            vec![],
            vec![],
            StudySettings {
                trials: runs.len(),
                seed: 1,
                ..StudySettings::default()
            },
            Box::new(GpSampler::default()),
        );
        for (w, mpm, tp) in runs {
            let c = sp.config_from_text(&[
                ("workers".into(), w.to_string()),
                ("mpm".into(), mpm.to_string()),
            ]);
            let summary = crate::LevelSummary {
                level: "c=64".into(),
                throughput: *tp,
                p50_ms: 1.0,
                p90_ms: 2.0,
                p99_ms: 3.0,
                p999_ms: 4.0,
                mean_ms: 1.0,
                error_ratio: 0.0,
                mail: None,
            };
            s.record(c, Why::Model, crate::Outcome::Measured(vec![summary]));
        }
        (sp, s.trials().to_vec())
    }

    #[test]
    fn a_value_run_once_is_never_named_best() {
        // Ten runs: event ran once, luckily high (a noisy single run); prefork and worker
        // ran several times each and differ by less than the noise.
        let runs = [
            (8, "prefork", 1000.0),
            (16, "worker", 1060.0),
            (32, "prefork", 960.0),
            (8, "worker", 1010.0),
            (64, "prefork", 1040.0),
            (16, "prefork", 990.0),
            (32, "worker", 1000.0),
            (64, "worker", 970.0),
            (4, "event", 1500.0),
            (4, "worker", 1020.0),
        ];
        let (sp, trials) = hand_study(&runs);
        let e = effects(&sp, Objective::MaximizeThroughput, &trials);
        let mpm = e.iter().find(|x| x.param == "mpm").unwrap();
        // The model may well think event is best; it ran once, so it is not named.
        assert_eq!(mpm.model_best, "event", "{mpm:#?}");
        assert_eq!(mpm.measured_times, 1);
        assert!(!mpm.clear, "{mpm:#?}");
        assert!(mpm.best.is_empty(), "{mpm:#?}");
        assert_eq!(mpm.unclear_because().unwrap(), "event ran once");
        assert!(mpm.spread_low <= mpm.spread && mpm.spread <= mpm.spread_high);
        // The report's why says so, and never "best event".
        let mut report = crate::report::TuneReport::from_study(
            &{
                let mut s = Study::new(
                    sp.clone(),
                    Objective::MaximizeThroughput,
                    vec![],
                    vec![],
                    StudySettings {
                        trials: 10,
                        ..StudySettings::default()
                    },
                    Box::new(GpSampler::default()),
                );
                for t in &trials {
                    s.record(t.config.clone(), t.why, t.outcome.clone());
                }
                s
            },
            vec!["c=64".into()],
            None,
        );
        report.snippet.clear();
        let text = report.render_text();
        assert!(!text.contains("best event"), "{text}");
        assert!(
            text.contains("unclear: ") && text.contains("event ran once"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&report.to_json_pretty()).unwrap();
        let j = v["effects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["param"] == "mpm")
            .unwrap();
        assert_eq!(j["best"], "");
        assert_eq!(j["clear"], false);
        assert_eq!(j["measured_times"], 1);
        assert!(j["spread_low"].is_f64() && j["spread_high"].is_f64());
    }

    #[test]
    fn a_clear_effect_names_its_best_and_noise_alone_is_unclear() {
        // Workers matter (the low third twice as fast, four runs each third); mpm is noise.
        let runs = [
            (2, "prefork", 2000.0),
            (3, "worker", 2100.0),
            (2, "worker", 1950.0),
            (3, "prefork", 2050.0),
            (12, "prefork", 1010.0),
            (14, "worker", 990.0),
            (12, "worker", 1000.0),
            (14, "prefork", 1020.0),
            (100, "prefork", 500.0),
            (110, "worker", 520.0),
            (100, "worker", 480.0),
            (120, "prefork", 510.0),
        ];
        let (sp, trials) = hand_study(&runs);
        let e = effects(&sp, Objective::MaximizeThroughput, &trials);
        let workers = e.iter().find(|x| x.param == "workers").unwrap();
        assert!(workers.clear, "{workers:#?}");
        // The best group is the low third; named by the values that ran in it.
        assert!(workers.model_best.starts_with("1.."), "{workers:#?}");
        assert_eq!(workers.best, "2..3", "{workers:#?}");
        assert_eq!(workers.measured_times, 4);
        assert!(workers.spread_low > 0.0);
        let mpm = e.iter().find(|x| x.param == "mpm").unwrap();
        assert!(!mpm.clear, "{mpm:#?}");
        assert!(mpm.best.is_empty());
    }

    #[test]
    fn too_few_trials_give_no_effect() {
        let sp = synthetic::space();
        let e = effects(&sp, Objective::MaximizeThroughput, &[]);
        assert!(e.is_empty(), "nothing measured, no effect");
    }
}
