//! The study: ask/tell state of one search, free of I/O (Optuna's study seam). It decides
//! what to measure next — the default twice (A/A, the noise floor; once when its first run
//! breaks an SLO), the rule-of-thumb seeds,
//! a Latin-hypercube start, re-measurements where two leaders are within noise (racing),
//! then the sampler's proposals — within a budget of measured runs, and keeps the best
//! feasible configuration. Every decision is a function of the recorded trials and the
//! seed, so a study replayed from its journal asks for the same next configuration.

use crate::objective::{evaluate, LevelSummary, Objective, Slo};
use crate::sampler::{latin_hypercube, Observation, Sampler};
use crate::space::{Config, Space};
use webtune_model::rng::Rng;

// A trial's vocabulary is a leaf below the study and its successive halving (`trial`), so
// halving reads trials without reaching back into the study; the paths `study::Why`,
// `study::Outcome` and `study::Trial` stay.
pub use crate::trial::{Outcome, Trial, Why};

/// Knobs of the search, defaults in one place.
#[derive(Debug, Clone, PartialEq)]
pub struct StudySettings {
    /// Measured runs in the search (a count: `trials`; a duration is a `budget`),
    /// re-measurements and the A/A pair included.
    pub trials: usize,
    /// Seeds the space-filling start and every sampler call.
    pub seed: u64,
    /// Latin-hypercube points after the default and the seeds.
    pub space_filling: usize,
    /// The most measurements racing spends on one configuration.
    pub max_measurements: usize,
    /// Two means closer than `z` standard errors are "within noise".
    pub z: f64,
    /// Relative noise assumed before any configuration was measured twice.
    pub assumed_noise: f64,
    /// The noise estimate never goes below this (a lucky A/A is not a quiet machine).
    pub min_noise: f64,
    /// Successive halving (`tune --budget`, `halving`): new candidates are screened with
    /// runs of this share of the full duration, the promising ones measured again in
    /// full. None: every run is full.
    pub screen: Option<f64>,
}

impl Default for StudySettings {
    fn default() -> Self {
        StudySettings {
            trials: 15,
            seed: 0,
            space_filling: 3,
            max_measurements: 3,
            z: 2.0,
            assumed_noise: 0.05,
            min_noise: 0.01,
            screen: None,
        }
    }
}

/// The study's answer to "what now?".
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Measure(Config, Why),
    Done,
}

/// The measurements of one distinct configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigStats {
    pub config: Config,
    /// Successful measurements.
    pub n: usize,
    /// Mean score (the optimizer's scale: log, larger is better).
    pub mean_score: f64,
    /// Every measurement met every SLO (and none failed).
    pub feasible: bool,
    /// Trial numbers.
    pub trials: Vec<usize>,
}

/// The best feasible configuration so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Best {
    pub config: Config,
    /// The objective's figure: the mean of its measurements on the log scale.
    pub objective: f64,
    pub measurements: usize,
    pub trials: Vec<usize>,
}

pub struct Study {
    pub space: Space,
    pub objective: Objective,
    pub slos: Vec<Slo>,
    pub settings: StudySettings,
    default: Config,
    init: Vec<(Config, Why)>,
    trials: Vec<Trial>,
    sampler: Box<dyn Sampler>,
    /// Configurations whose figure is known less well than its runs' noise says, with the
    /// standard error of their mean score (`set_spreads`).
    spreads: Vec<(Config, f64)>,
}

impl Study {
    /// A fresh study. `seeds` are the rule-of-thumb configurations, measured right after
    /// the A/A pair.
    pub fn new(
        space: Space,
        objective: Objective,
        slos: Vec<Slo>,
        seeds: Vec<Config>,
        settings: StudySettings,
        sampler: Box<dyn Sampler>,
    ) -> Study {
        let default = space.default_config();
        let mut rng = Rng::seeded(settings.seed);
        let mut init: Vec<(Config, Why)> = Vec::new();
        let lhs = latin_hypercube(&space, settings.space_filling, &mut rng);
        let candidates = seeds
            .into_iter()
            .map(|c| (c, Why::Seed))
            .chain(lhs.into_iter().map(|c| (c, Why::SpaceFilling)));
        for (c, why) in candidates {
            if c != default && !init.iter().any(|(x, _)| *x == c) {
                init.push((c, why));
            }
        }
        Study {
            space,
            objective,
            slos,
            settings,
            default,
            init,
            trials: Vec::new(),
            sampler,
            spreads: Vec::new(),
        }
    }

    pub fn default_config(&self) -> &Config {
        &self.default
    }

    pub fn trials(&self) -> &[Trial] {
        &self.trials
    }

    pub fn sampler_name(&self) -> &'static str {
        self.sampler.name()
    }

    /// What to measure next. (Not an iterator: the caller records each outcome between
    /// calls.)
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Next {
        if self.trials.len() >= self.settings.trials {
            return Next::Done;
        }
        let baseline: Vec<&Trial> = self
            .trials
            .iter()
            .filter(|t| t.why == Why::Baseline)
            .collect();
        // The A/A pair, unless the default's first run broke an SLO or failed: it can then
        // never win (every run of a winner meets every SLO), so a second run would only
        // measure the noise, which the first re-measured configuration measures as well.
        let default_out = baseline
            .first()
            .is_some_and(|t| !t.evaluation.is_some_and(|e| e.feasible));
        if baseline.is_empty() || (baseline.len() < 2 && !default_out) {
            return Next::Measure(self.default.clone(), Why::Baseline);
        }
        if let Some(c) = self.race() {
            return Next::Measure(c, Why::Race);
        }
        if let Some(c) =
            crate::halving::promotion(&self.trials, self.objective, self.settings.screen)
        {
            return Next::Measure(c, Why::Promote);
        }
        if let Some((c, why)) = self
            .init
            .iter()
            .find(|(c, _)| !self.trials.iter().any(|t| t.config == *c))
        {
            return Next::Measure(c.clone(), *why);
        }
        let mut rng = Rng::seeded(
            self.settings.seed ^ (self.trials.len() as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        let history = self.observations();
        let c = self.sampler.ask(&self.space, &history, &mut rng);
        Next::Measure(c, Why::Model)
    }

    /// Record a finished trial.
    pub fn record(&mut self, config: Config, why: Why, outcome: Outcome) {
        self.record_at(config, why, outcome, 1.0);
    }

    /// Record a finished trial that ran `fidelity` of the full duration.
    pub fn record_at(&mut self, config: Config, why: Why, outcome: Outcome, fidelity: f64) {
        let evaluation = match &outcome {
            Outcome::Measured(levels) => evaluate(self.objective, &self.slos, levels),
            Outcome::Failed(_) => None,
        };
        self.trials.push(Trial {
            number: self.trials.len() + 1,
            config,
            why,
            outcome,
            evaluation,
            fidelity,
        });
    }

    /// Tell measured trial `number` new figures: the interleaved search re-tells its paired
    /// trials on one scale as its joint fit of their ratios changes (`interleave::joint`).
    /// Sound because nothing is derived from a trial's figures but on demand (the sampler,
    /// racing and the best read them at each ask). False, and nothing changed, for a failed
    /// or unknown trial.
    pub fn retell(&mut self, number: usize, levels: Vec<LevelSummary>) -> bool {
        let Some(t) = self.trials.iter_mut().find(|t| t.number == number) else {
            return false;
        };
        if matches!(t.outcome, Outcome::Failed(_)) {
            return false;
        }
        t.evaluation = evaluate(self.objective, &self.slos, &levels);
        t.outcome = Outcome::Measured(levels);
        true
    }

    /// Tell the study how well each configuration's figure is known, where its caller knows
    /// better than the runs' spread: the standard error of its mean score (the log scale).
    /// The interleaved search tells each configuration's spread in its joint fit
    /// (`interleave::joint`): a figure told from two pairs against an incumbent itself told
    /// from two may be far off while the study's pooled noise is ±5%. Racing then re-measures
    /// a leader whose lead is within that spread. Replaces what was told before.
    pub fn set_spreads(&mut self, spreads: Vec<(Config, f64)>) {
        self.spreads = spreads
            .into_iter()
            .filter(|(_, s)| s.is_finite() && *s >= 0.0)
            .collect();
    }

    /// The standard error of a configuration's mean score: the run-to-run noise over √n, or
    /// the spread its caller told (`set_spreads`) where that is larger.
    fn score_se(&self, s: &ConfigStats, noise: f64) -> f64 {
        let runs = noise / (s.n.max(1) as f64).sqrt();
        self.spreads
            .iter()
            .find(|(c, _)| *c == s.config)
            .map_or(runs, |(_, spread)| spread.max(runs))
    }

    /// Every trial as the sampler sees it.
    pub fn observations(&self) -> Vec<Observation> {
        self.trials
            .iter()
            .zip(crate::halving::model_scores(
                &self.trials,
                self.objective,
                self.noise(),
            ))
            .map(|(t, score)| Observation {
                config: t.config.clone(),
                score,
                margin: t.evaluation.map_or(3.0, |e| e.margin),
            })
            .collect()
    }

    /// Per distinct configuration, in order of first measurement: its full-duration runs
    /// only (a screening run never wins, races or sets the noise).
    pub fn stats(&self) -> Vec<ConfigStats> {
        let mut out: Vec<ConfigStats> = Vec::new();
        for t in self
            .trials
            .iter()
            .filter(|t| crate::halving::is_full(t.fidelity))
        {
            let i = match out.iter().position(|s| s.config == t.config) {
                Some(i) => i,
                None => {
                    out.push(ConfigStats {
                        config: t.config.clone(),
                        n: 0,
                        mean_score: 0.0,
                        feasible: true,
                        trials: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let s = &mut out[i];
            s.trials.push(t.number);
            match t.evaluation {
                Some(e) => {
                    let score = self.objective.score(e.objective);
                    s.mean_score = (s.mean_score * s.n as f64 + score) / (s.n + 1) as f64;
                    s.n += 1;
                    s.feasible &= e.feasible;
                }
                None => s.feasible = false,
            }
        }
        out
    }

    /// The relative difference of the A/A pair (|a−b| / mean), once both are measured.
    pub fn aa_difference(&self) -> Option<f64> {
        let v: Vec<f64> = self
            .trials
            .iter()
            .filter(|t| t.why == Why::Baseline)
            .filter_map(|t| t.evaluation.map(|e| e.objective))
            .collect();
        match v.as_slice() {
            [a, b, ..] if a + b > 0.0 => Some((a - b).abs() / ((a + b) / 2.0)),
            _ => None,
        }
    }

    /// The run-to-run noise (standard deviation of the log objective, ≈ relative), pooled
    /// over every configuration measured more than once.
    pub fn noise(&self) -> f64 {
        let mut ss = 0.0;
        let mut df = 0usize;
        for s in self.stats() {
            let scores: Vec<f64> = self
                .trials
                .iter()
                .filter(|t| s.trials.contains(&t.number))
                .filter_map(|t| t.evaluation.map(|e| self.objective.score(e.objective)))
                .collect();
            if scores.len() >= 2 {
                ss += scores
                    .iter()
                    .map(|x| (x - s.mean_score).powi(2))
                    .sum::<f64>();
                df += scores.len() - 1;
            }
        }
        let sd = if df == 0 {
            self.settings.assumed_noise
        } else {
            (ss / df as f64).sqrt()
        };
        sd.max(self.settings.min_noise)
    }

    /// Feasible configurations, best mean first.
    fn ranked(&self) -> Vec<ConfigStats> {
        let mut v: Vec<ConfigStats> = self
            .stats()
            .into_iter()
            .filter(|s| s.feasible && s.n > 0)
            .collect();
        v.sort_by(|a, b| b.mean_score.total_cmp(&a.mean_score));
        v
    }

    /// Racing: the leader (best feasible mean) is re-measured while it has fewer than
    /// `max_measurements` and the runner-up is within noise of it — unless it already has
    /// as many measurements as the runner-up and at least two (two close configurations,
    /// both measured, are not worth more of the budget). "Within noise": closer than `z`
    /// standard errors of the difference, each mean's from the runs' noise or its told
    /// spread (`score_se`), whichever is larger.
    fn race(&self) -> Option<Config> {
        let ranked = self.ranked();
        let (a, b) = (ranked.first()?, ranked.get(1)?);
        let noise = self.noise();
        let se = self.score_se(a, noise).hypot(self.score_se(b, noise));
        let close = a.mean_score - b.mean_score < self.settings.z * se;
        let settled = a.n >= 2 && a.n >= b.n;
        (close && !settled && a.n < self.settings.max_measurements).then(|| a.config.clone())
    }

    /// The best feasible configuration: the highest mean; racing has re-measured it where
    /// a rival was within noise.
    pub fn best(&self) -> Option<Best> {
        self.ranked().into_iter().next().map(|s| Best {
            objective: self.objective.unscore(s.mean_score),
            config: s.config,
            measurements: s.n,
            trials: s.trials,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::objective::{LevelSummary, Stat};
    use crate::sampler::RandomSampler;
    use crate::space::{Kind, ParamSpec, Value};

    fn space() -> Space {
        one_int_space(4)
    }

    /// A space of one integer parameter `w` in 1..=64 with the given default, for this
    /// crate's tests.
    pub(crate) fn one_int_space(default: i64) -> Space {
        Space {
            params: vec![ParamSpec {
                name: "w".into(),
                kind: Kind::Int {
                    lo: 1,
                    hi: 64,
                    log: false,
                },
                default: Value::Int(default),
            }],
            inert: Vec::new(),
        }
    }

    /// One measured level at throughput `tp` and p99 `p99` ms (the other figures 1 ms), for
    /// this crate's tests.
    pub(crate) fn level(tp: f64, p99: f64) -> Outcome {
        Outcome::Measured(vec![LevelSummary {
            level: "c=8".into(),
            throughput: tp,
            p50_ms: 1.0,
            p90_ms: 1.0,
            p99_ms: p99,
            p999_ms: p99,
            mean_ms: 1.0,
            error_ratio: 0.0,
            mail: None,
        }])
    }

    fn study(budget: usize) -> Study {
        let settings = StudySettings {
            trials: budget,
            space_filling: 2,
            ..StudySettings::default()
        };
        Study::new(
            space(),
            Objective::MaximizeThroughput,
            vec![Slo::parse("p99<=100ms").unwrap()],
            vec![space().config_from_text(&[("w".into(), "8".into())])],
            settings,
            Box::new(RandomSampler),
        )
    }

    fn measure(s: &mut Study) -> Option<(Config, Why)> {
        match s.next() {
            Next::Measure(c, w) => Some((c, w)),
            Next::Done => None,
        }
    }

    #[test]
    fn starts_with_aa_then_seeds_then_space_filling_within_budget() {
        let mut s = study(6);
        let mut whys = Vec::new();
        while let Some((c, why)) = measure(&mut s) {
            let w = match c["w"] {
                Value::Int(w) => w as f64,
                _ => unreachable!(),
            };
            // Clearly different figures: no racing.
            s.record(c, why, level(100.0 * w, 10.0));
            whys.push(why);
        }
        assert_eq!(whys.len(), 6);
        assert_eq!(&whys[..3], &[Why::Baseline, Why::Baseline, Why::Seed]);
        assert_eq!(&whys[3..5], &[Why::SpaceFilling, Why::SpaceFilling]);
        assert_eq!(s.aa_difference(), Some(0.0));
    }

    #[test]
    fn a_candidate_within_noise_is_re_measured_before_it_wins() {
        let mut s = study(10);
        let d = s.default_config().clone();
        s.record(d.clone(), Why::Baseline, level(1000.0, 10.0));
        s.record(d.clone(), Why::Baseline, level(1040.0, 10.0));
        // The seed measures 3% better than the default: within noise.
        let (seed, why) = measure(&mut s).unwrap();
        assert_eq!(why, Why::Seed);
        s.record(seed.clone(), why, level(1050.0, 10.0));
        assert_eq!(measure(&mut s), Some((seed.clone(), Why::Race)));
        s.record(seed.clone(), Why::Race, level(980.0, 10.0));
        // Now the default leads (1020 vs 1015), with as many runs as the seed: settled, the
        // search moves on.
        assert_eq!(measure(&mut s).map(|m| m.1), Some(Why::SpaceFilling));
        let best = s.best().unwrap();
        assert_eq!(best.config, d);
        assert_eq!(best.measurements, 2);
    }

    #[test]
    fn a_leader_told_with_a_wide_spread_is_re_measured_though_its_lead_beats_the_noise() {
        let mut s = study(10);
        let d = s.default_config().clone();
        s.record(d.clone(), Why::Baseline, level(1000.0, 10.0));
        s.record(d.clone(), Why::Baseline, level(1010.0, 10.0));
        let (seed, why) = measure(&mut s).unwrap();
        // 25% better: far beyond the A/A's 1% (and the 1% floor), so believed at once.
        s.record(seed.clone(), why, level(1250.0, 10.0));
        assert_ne!(measure(&mut s).map(|m| m.1), Some(Why::Race));
        // Its figure rests on two pairs against a starved incumbent: ±20% on the log scale.
        s.set_spreads(vec![(seed.clone(), 0.2)]);
        assert_eq!(measure(&mut s), Some((seed.clone(), Why::Race)));
        // Re-measured, it has two runs and the default two: settled, the search moves on.
        s.record(seed.clone(), Why::Race, level(1200.0, 10.0));
        assert_eq!(measure(&mut s).map(|m| m.1), Some(Why::SpaceFilling));
        // A spread below the runs' noise changes nothing; a new telling replaces the old.
        let mut s = study(10);
        s.record(d.clone(), Why::Baseline, level(1000.0, 10.0));
        s.record(d.clone(), Why::Baseline, level(1010.0, 10.0));
        s.record(seed.clone(), Why::Seed, level(1250.0, 10.0));
        s.set_spreads(vec![(seed.clone(), 0.2)]);
        s.set_spreads(vec![(seed.clone(), 0.001), (d, f64::NAN)]);
        assert_eq!(measure(&mut s).map(|m| m.1), Some(Why::SpaceFilling));
    }

    #[test]
    fn clearly_better_is_believed_and_infeasible_never_wins() {
        let mut s = study(10);
        let d = s.default_config().clone();
        s.record(d.clone(), Why::Baseline, level(1000.0, 10.0));
        s.record(d.clone(), Why::Baseline, level(1010.0, 10.0));
        let (seed, why) = measure(&mut s).unwrap();
        // Twice the throughput but p99 over the SLO: infeasible.
        s.record(seed.clone(), why, level(2000.0, 150.0));
        assert_eq!(s.best().unwrap().config, d);
        let (c, why) = measure(&mut s).unwrap();
        assert_eq!(why, Why::SpaceFilling);
        s.record(c.clone(), why, level(1500.0, 50.0));
        assert_ne!(measure(&mut s).map(|m| m.1), Some(Why::Race));
        assert_eq!(s.best().unwrap().config, c);
        // A failed trial counts against the budget and never wins.
        let (f, why) = measure(&mut s).unwrap();
        s.record(f.clone(), why, Outcome::Failed("did not start".into()));
        assert_eq!(s.trials().len(), 5);
        assert_ne!(s.best().unwrap().config, f);
    }

    #[test]
    fn a_default_that_breaks_the_slo_is_measured_once() {
        let mut s = study(10);
        let d = s.default_config().clone();
        assert_eq!(measure(&mut s), Some((d.clone(), Why::Baseline)));
        s.record(d, Why::Baseline, level(1000.0, 150.0));
        assert_eq!(measure(&mut s).map(|m| m.1), Some(Why::Seed));
        assert_eq!(s.aa_difference(), None);
        // A default that did not start is not run twice either.
        let mut s = study(10);
        let d = s.default_config().clone();
        s.record(d, Why::Baseline, Outcome::Failed("did not start".into()));
        assert_eq!(measure(&mut s).map(|m| m.1), Some(Why::Seed));
    }

    #[test]
    fn a_trial_retold_is_evaluated_anew_and_a_failed_one_stays_failed() {
        let mut s = study(10);
        let d = s.default_config().clone();
        let w = |v: &str| space().config_from_text(&[("w".into(), v.into())]);
        s.record(d.clone(), Why::Baseline, level(1000.0, 10.0));
        s.record(w("8"), Why::Seed, level(3000.0, 10.0));
        s.record(w("9"), Why::Seed, Outcome::Failed("did not start".into()));
        assert_eq!(s.best().unwrap().config, w("8"));
        let Outcome::Measured(mut l) = level(2000.0, 150.0) else {
            unreachable!()
        };
        assert!(s.retell(2, l.clone()));
        // Now over the p99 SLO: the configuration is infeasible.
        assert!(!s.trials()[1].evaluation.unwrap().feasible);
        assert_eq!(s.best().unwrap().config, d);
        l[0].p99_ms = 10.0;
        assert!(s.retell(2, l.clone()));
        let best = s.best().unwrap();
        assert_eq!(best.config, w("8"));
        assert!((best.objective - 2000.0).abs() < 1e-9);
        assert!(!s.retell(3, l.clone()) && !s.retell(9, l));
        assert!(matches!(s.trials()[2].outcome, Outcome::Failed(_)));
    }

    #[test]
    fn minimize_latency_prefers_lower() {
        let mut s = Study::new(
            space(),
            Objective::Minimize(Stat::P99),
            vec![],
            vec![],
            StudySettings::default(),
            Box::new(RandomSampler),
        );
        let d = s.default_config().clone();
        s.record(d.clone(), Why::Baseline, level(1.0, 50.0));
        s.record(d.clone(), Why::Baseline, level(1.0, 50.0));
        let (c, why) = measure(&mut s).unwrap();
        s.record(c.clone(), why, level(1.0, 10.0));
        let best = s.best().unwrap();
        assert_eq!(best.config, c);
        assert!((best.objective - 10.0).abs() < 1e-9);
    }
}
