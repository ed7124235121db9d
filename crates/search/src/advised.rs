//! Seeds from the advisor (`tune --from-advice`): the configuration `webtune advise` would
//! write, mapped onto the searched parameters with the rule names behind each value, and
//! after the search the judgement of that configuration against the default and the
//! winner — whether the rules of thumb were right on this machine. Free of I/O: the
//! tuner makes the seed (it reads the stack's rendered config with the advise library),
//! the study measures it like any seed, and this module reads the study.

use crate::space::{render, Config, Value};
use crate::study::Study;
use serde::{Deserialize, Serialize};

/// One searched parameter the advice sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdvisedChange {
    pub param: String,
    pub value: Value,
    /// The advisor's findings behind the value (rule names, e.g. `proxy-backend-workers`).
    pub rules: Vec<String>,
    /// Set when the advised value lay outside the searched range and was clamped into it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The advice as one configuration of the space (the default elsewhere).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdvisedSeed {
    pub config: Config,
    pub changes: Vec<AdvisedChange>,
}

impl AdvisedSeed {
    /// Every rule behind the seed, each once, in the order of the changes.
    pub fn rules(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in self.changes.iter().flat_map(|c| &c.rules) {
            if !out.contains(r) {
                out.push(r.clone());
            }
        }
        out
    }
}

/// The advice a tune started from: its seeds and what could not be used (values outside
/// the space dropped, directives the tune does not search).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    pub seeds: Vec<AdvisedSeed>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Advice {
    /// The rules behind `config` when it is one of the advised seeds.
    pub fn rules_of(&self, config: &Config) -> Vec<String> {
        self.seeds
            .iter()
            .find(|s| s.config == *config)
            .map(AdvisedSeed::rules)
            .unwrap_or_default()
    }
}

/// How one advised seed did in the tune.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdvisedResult {
    pub rules: Vec<String>,
    /// The parameters it changes from the default.
    pub params: Config,
    /// Its trial numbers in the search.
    pub trials: Vec<usize>,
    /// Mean of its measurements (geometric); None when it never measured.
    pub objective: Option<f64>,
    pub feasible: bool,
    /// Relative difference to the default's mean in the search (positive = better).
    pub vs_default: Option<f64>,
    /// Relative difference to the winner's mean (positive = better; 0 when it is the
    /// winner).
    pub vs_winner: Option<f64>,
    /// It is the search's best.
    pub is_winner: bool,
    /// `right`, `partly right`, `no better than the default`, `wrong`, or `not measured`.
    pub outcome: String,
    /// One line: the outcome with its figures.
    pub verdict: String,
}

/// The advice section of the report: each seed's result and the notes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AdviceReport {
    pub seeds: Vec<AdvisedResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Judge every advised seed by the study's measurements; `proof` is the proof's verdict
/// when one ran (it speaks for the seed when the seed is the winner).
pub fn judge(study: &Study, advice: &Advice, proof: Option<&str>) -> AdviceReport {
    AdviceReport {
        seeds: advice
            .seeds
            .iter()
            .map(|s| judge_one(study, s, proof))
            .collect(),
        notes: advice.notes.clone(),
    }
}

fn judge_one(study: &Study, seed: &AdvisedSeed, proof: Option<&str>) -> AdvisedResult {
    let objective = study.objective;
    let stats = study.stats();
    let of = |c: &Config| stats.iter().find(|s| s.config == *c).cloned();
    let default = study.default_config().clone();
    let params: Config = seed
        .config
        .iter()
        .filter(|(k, v)| default.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mine = of(&seed.config);
    let base = of(&default).filter(|s| s.n > 0);
    let best = study.best();
    let is_winner = best.as_ref().is_some_and(|b| b.config == seed.config);
    let mut result = AdvisedResult {
        rules: seed.rules(),
        params,
        trials: mine.as_ref().map(|s| s.trials.clone()).unwrap_or_default(),
        objective: None,
        feasible: false,
        vs_default: None,
        vs_winner: None,
        is_winner,
        outcome: "not measured".into(),
        verdict: "not measured: the search ended before it".into(),
    };
    let Some(mine) = mine else {
        return result;
    };
    if mine.n == 0 {
        result.outcome = "wrong".into();
        result.verdict = "wrong here: the advised configuration failed".into();
        return result;
    }
    result.objective = Some(objective.unscore(mine.mean_score));
    result.feasible = mine.feasible;
    let noise = study.noise();
    let gain = |other: f64| (mine.mean_score - other).exp() - 1.0;
    // Beyond the run-to-run noise: z standard errors of the difference of two means.
    let beyond = |n_other: usize, diff: f64| {
        diff.abs() > study.settings.z * noise * (1.0 / mine.n as f64 + 1.0 / n_other as f64).sqrt()
    };
    result.vs_default = base.as_ref().map(|b| gain(b.mean_score));
    result.vs_winner = best.as_ref().map(|b| gain(objective.score(b.objective)));
    let d_diff = base.as_ref().map(|b| (mine.mean_score - b.mean_score, b.n));
    let w_diff = best.as_ref().map(|b| {
        (
            mine.mean_score - objective.score(b.objective),
            b.measurements,
        )
    });
    let pct = |g: Option<f64>| g.map_or("?".to_string(), |g| format!("{:+.1}%", 100.0 * g));
    let figures = format!(
        "{} vs the default, {} vs the winner; noise ±{:.1}%",
        pct(result.vs_default),
        if is_winner {
            "it is the winner".to_string()
        } else {
            pct(result.vs_winner)
        },
        100.0 * noise
    );
    let (outcome, words) = if !mine.feasible {
        (
            "wrong",
            "wrong here: the advised configuration breaks an SLO",
        )
    } else {
        match d_diff {
            Some((d, n)) if beyond(n, d) && d < 0.0 => (
                "wrong",
                "wrong here: worse than the default beyond the noise",
            ),
            Some((d, n)) if !beyond(n, d) => (
                "no better than the default",
                "no better than the default here: within the noise of it",
            ),
            _ => match w_diff {
                Some((w, n)) if !is_winner && beyond(n, w) => (
                    "partly right",
                    "partly right here: better than the default, clearly short of the winner",
                ),
                _ => (
                    "right",
                    "right here: better than the default, as good as the best found",
                ),
            },
        }
    };
    result.outcome = outcome.into();
    result.verdict = match (is_winner, proof) {
        (true, Some(p)) => format!("{words} ({figures}); the proof of it: {p}"),
        _ => format!("{words} ({figures})"),
    };
    result
}

impl AdviceReport {
    /// The text lines of the report's advice section (no heading).
    pub fn lines(&self, unit: &str) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.seeds {
            let trials = s
                .trials
                .iter()
                .map(|t| format!("#{t}"))
                .collect::<Vec<_>>()
                .join(",");
            let value = s
                .objective
                .map_or(String::new(), |v| format!(" {v:.1} {unit};"));
            out.push(format!(
                "{} [{}] {}:{value} {}",
                if trials.is_empty() { "-" } else { &trials },
                s.rules.join(", "),
                render(&s.params),
                s.verdict
            ));
        }
        for n in &self.notes {
            out.push(format!("note: {n}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objective::Objective;
    use crate::sampler::RandomSampler;
    use crate::study::{Next, Outcome, StudySettings};

    fn run(tp: f64) -> Outcome {
        crate::study::tests::level(tp, 1.0)
    }

    fn seed(w: i64) -> AdvisedSeed {
        let mut config = Config::new();
        config.insert("w".into(), Value::Int(w));
        AdvisedSeed {
            config,
            changes: vec![AdvisedChange {
                param: "w".into(),
                value: Value::Int(w),
                rules: vec!["two-per-core".into()],
                note: None,
            }],
        }
    }

    fn study(advice: &Advice, tp: impl Fn(i64) -> f64) -> Study {
        let space = crate::study::tests::one_int_space(32);
        let mut s = Study::new(
            space,
            Objective::MaximizeThroughput,
            Vec::new(),
            advice.seeds.iter().map(|s| s.config.clone()).collect(),
            StudySettings {
                trials: 6,
                ..StudySettings::default()
            },
            Box::new(RandomSampler),
        );
        while let Next::Measure(c, why) = s.next() {
            let Value::Int(w) = c["w"] else {
                unreachable!()
            };
            s.record(c, why, run(tp(w)));
        }
        s
    }

    #[test]
    fn advice_that_wins_is_right_and_advice_that_loses_is_wrong() {
        let advice = Advice {
            seeds: vec![seed(4)],
            notes: vec!["x dropped".into()],
        };
        // Throughput peaks at w = 4.
        let s = study(&advice, |w| 1000.0 / (1.0 + (w - 4).abs() as f64 / 8.0));
        assert_eq!(
            s.trials()[2].config,
            advice.seeds[0].config,
            "measured third"
        );
        let r = judge(&s, &advice, Some("better: +40%"));
        let one = &r.seeds[0];
        assert_eq!(one.rules, vec!["two-per-core".to_string()]);
        assert!(one.is_winner, "{one:?}");
        assert_eq!(one.outcome, "right");
        assert!(one.vs_default.unwrap() > 0.5, "{one:?}");
        assert!(one.verdict.contains("the proof of it: better"), "{one:?}");
        assert!(r.lines("ok/s")[0].starts_with("#3 [two-per-core] w=4: 1000.0 ok/s; right here"));
        assert_eq!(r.lines("ok/s")[1], "note: x dropped");
        // The same advice where small w starves the server.
        let s = study(&advice, |w| 100.0 * w as f64);
        let one = &judge(&s, &advice, None).seeds[0];
        assert_eq!(one.outcome, "wrong", "{one:?}");
        assert!(one.vs_default.unwrap() < -0.5);
    }
}
