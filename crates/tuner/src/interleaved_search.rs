//! `tune --search-protocol interleaved` (issue 34 item 2): each search trial runs the
//! candidate at once with the incumbent — two lab stacks (`lab_pair`, whose memory check
//! says whether two fit), the load alternating between them in blocks for the trial's
//! duration — and the study is told the candidate's figures on the incumbent's scale
//! (`webtune_search::interleave::search`). The incumbent is the default at first; a candidate
//! replaces it only when the pairs' interval says it is better and it meets every SLO. The
//! first measured run (the default's, normally) is a plain lab trial: it sets the scale.
//! After each paired trial every paired trial is re-told on one scale, a joint fit of all
//! pairs' ratios anchored at that run (`refit`, `webtune_search::interleave::joint`): a
//! chained figure moved with one noisy ratio at every change of incumbent.
//! This module picks the incumbent from the study and the journal's pairs, runs one trial
//! and re-tells the study; the driver journals the trial.

use crate::error::TuneError;
use crate::job::{level_label, Job, Listener};
use crate::measure::Measured;
use crate::subject::Subject;
use webtune_lab::trial::Target;
use webtune_model::StopToken;
use webtune_search::interleave::as_proof::metric_of;
use webtune_search::interleave::block::Metric;
use webtune_search::interleave::joint::{self, JointFit};
use webtune_search::interleave::search::{self, PairedTrial};
use webtune_search::interleave::{Block, Judgement, Settings, Side};
use webtune_search::objective::{evaluate, LevelSummary};
use webtune_search::space::Config;
use webtune_search::study::{Outcome, Study, Trial, Why};

/// Why the search cannot interleave for `job`; None when it can.
pub fn unavailable(job: &Job) -> Option<String> {
    match job.subject {
        Subject::External { .. } => {
            return Some(
                "it needs two servers at once; tune external has one (use sequential)".into(),
            )
        }
        Subject::Fs { .. } => return Some("it runs web stacks; tune fs is sequential".into()),
        Subject::Stack {
            kind: webtune_lab::StackKind::Postfix,
            ..
        } => return Some("it loads HTTP; tune postfix is sequential".into()),
        _ => {}
    }
    if job.levels.len() != 1 {
        return Some("it compares at one load level; give one (or none) in --levels".into());
    }
    if job.capacity.is_some() || metric_of(&job.objective).is_none() {
        return Some("it decides on throughput, p50, p90 or p99; not on this objective".into());
    }
    if crate::measure::full_seconds(job) <= 0.0 {
        return Some("each trial alternates for its duration: give -d, not -n".into());
    }
    None
}

/// The arm every candidate is measured against now.
#[derive(Debug, Clone, PartialEq)]
pub struct Incumbent {
    pub config: Config,
    /// Its figures (`search::reference` over its measured runs in the study).
    pub reference: LevelSummary,
    /// The study's number of its first measured run (for the progress line).
    pub trial: usize,
    /// Not the incumbent but the scale's configuration standing in as arm A, for a race or
    /// a trial of the incumbent itself (`opponent`): winning there replaces nothing.
    pub stand_in: bool,
}

/// The incumbent after the trials in `study` and their pairs (`pairs`: the study's trial
/// number and its pair, in trial order): the last candidate that became the incumbent, else
/// the default; a default that was never measured (it did not start) gives way to the first
/// configuration that was. Its reference is its level in the joint fit (`joint_fit`), else
/// the geometric mean of what the study holds for it. None before any measured run: that
/// run is measured alone and sets the scale.
pub fn incumbent(study: &Study, pairs: &[(usize, PairedTrial)]) -> Option<Incumbent> {
    let default = study.default_config();
    let default_measured = study
        .trials()
        .iter()
        .any(|t| t.config == *default && first(t).is_some());
    let replaced = pairs
        .iter()
        .rev()
        .find(|(_, p)| p.became_incumbent)
        .map(|(_, p)| &p.candidate);
    let config = match replaced {
        Some(c) => c.clone(),
        None if default_measured => default.clone(),
        None => study
            .trials()
            .iter()
            .find(|t| first(t).is_some())?
            .config
            .clone(),
    };
    arm(study, pairs, config, false)
}

/// Arm A for a trial of `config` (asked for because `why`): the incumbent (`incumbent`) —
/// but for a race, and for a trial of the incumbent itself, the configuration that sets the
/// scale (`anchor`: the default, measured alone). A race re-measures a leader whose figure
/// is not yet sure (`Study::set_spreads`), and the surest figure to measure it against is the
/// scale's own: against the incumbent the new link would carry the incumbent's own error,
/// which on a chain of incumbents told from two pairs each is the larger part (the forum,
/// docs/experiments.md: a search figure +76% where the proof measured +15%); against itself
/// the incumbent would measure only the noise. The anchor itself is measured against the
/// incumbent, or against itself while it is the incumbent (the A/A trial).
pub fn opponent(
    study: &Study,
    pairs: &[(usize, PairedTrial)],
    config: &Config,
    why: Why,
) -> Option<Incumbent> {
    let current = incumbent(study, pairs)?;
    if why != Why::Race && current.config != *config {
        return Some(current);
    }
    match anchor(study, pairs).filter(|a| a != config) {
        Some(a) => arm(study, pairs, a, true).or(Some(current)),
        None => Some(current),
    }
}

/// `config` as arm A: its level in the joint fit, else the geometric mean of what the study
/// holds for it. None when the study holds no measured run of it.
fn arm(
    study: &Study,
    pairs: &[(usize, PairedTrial)],
    config: Config,
    stand_in: bool,
) -> Option<Incumbent> {
    let runs: Vec<(usize, &LevelSummary)> = study
        .trials()
        .iter()
        .filter(|t| t.config == config)
        .filter_map(|t| first(t).map(|l| (t.number, l)))
        .collect();
    let levels: Vec<&LevelSummary> = runs.iter().map(|(_, l)| *l).collect();
    let fitted = joint_fit(study, pairs).and_then(|f| f.level(&config).cloned());
    Some(Incumbent {
        reference: fitted.or_else(|| search::reference(&levels))?,
        trial: runs.first()?.0,
        config,
        stand_in,
    })
}

/// The joint fit of the study's paired trials (`pairs`, by trial number), anchored at the
/// configuration of the first run measured alone — the scale's — whose level is the
/// geometric mean of its runs measured alone. Only those: its arm's figures in the paired
/// trials were measured beside a second stack, in blocks, and are not on the scale of a
/// run alone. None before that run.
pub fn joint_fit(study: &Study, pairs: &[(usize, PairedTrial)]) -> Option<JointFit> {
    let anchor = anchor(study, pairs)?;
    let runs: Vec<&LevelSummary> = study
        .trials()
        .iter()
        .filter(|t| alone(t, pairs))
        .filter(|t| t.config == anchor)
        .filter_map(first)
        .collect();
    let paired: Vec<&PairedTrial> = pairs.iter().map(|(_, p)| p).collect();
    joint::fit(&anchor, &runs, &paired)
}

/// The configuration that sets the scale: that of the first run measured alone with a
/// figure (the default, normally). None before that run.
pub fn anchor(study: &Study, pairs: &[(usize, PairedTrial)]) -> Option<Config> {
    study
        .trials()
        .iter()
        .filter(|t| alone(t, pairs))
        .find(|t| first(t).is_some())
        .map(|t| t.config.clone())
}

/// Trial `t` was measured alone (no pair of it is kept).
fn alone(t: &Trial, pairs: &[(usize, PairedTrial)]) -> bool {
    !pairs.iter().any(|(n, _)| *n == t.number)
}

/// The figures of a trial's first level, when it was measured.
fn first(t: &Trial) -> Option<&LevelSummary> {
    match &t.outcome {
        Outcome::Measured(levels) => levels.first(),
        Outcome::Failed(_) => None,
    }
}

/// Re-tell the study every paired trial's figures on the joint fit's scale (after each
/// paired trial, and after a resume replayed the journal's told figures: the fit depends on
/// the journaled pairs alone, so a resumed study equals the uninterrupted one).
pub fn refit(study: &mut Study, pairs: &[(usize, PairedTrial)]) {
    let Some(fit) = joint_fit(study, pairs) else {
        return;
    };
    for (number, p) in pairs {
        if let Some(figures) = fit.trial_figures(p) {
            study.retell(*number, vec![figures]);
        }
    }
    // How well each level is known, for racing (`Study::set_spreads`); on the score's log
    // scale, where a ratio's error is the same for a larger-is-better figure and a latency.
    study.set_spreads(fit.spreads().map(|(c, s)| (c.clone(), s)).collect());
}

/// What one paired trial came to: the study's outcome and, when the pairs ran, what the
/// journal keeps.
pub(crate) struct PairedRun {
    pub(crate) measured: Measured,
    pub(crate) pair: Option<(PairedTrial, Vec<Block>)>,
}

impl PairedRun {
    /// A trial that could not run its pairs, and why.
    fn failed(why: String) -> PairedRun {
        PairedRun {
            measured: Measured {
                outcome: Outcome::Failed(why),
                runs: Vec::new(),
                interrupted: false,
            },
            pair: None,
        }
    }

    /// A trial the stop token ended (Ctrl-C): nothing of it is kept.
    pub(crate) fn interrupted() -> PairedRun {
        PairedRun {
            measured: Measured {
                outcome: Outcome::Failed("interrupted".into()),
                runs: Vec::new(),
                interrupted: true,
            },
            pair: None,
        }
    }
}

/// The settings of one trial: `base`'s, blocks short enough for at least two pairs in the
/// trial's duration (1 s at most), and the trial's own seed. The protocol's clock also runs
/// through the uncounted block to each arm that warms them, so its budget is the trial's
/// duration plus those two blocks and half a pair's slack for the blocks' own start-up
/// (without it the last pair would not start): `seconds` of counted pairs.
pub fn trial_settings(
    base: &Settings,
    metric: Metric,
    seconds: f64,
    seed: u64,
) -> Option<Settings> {
    let mut s = base.clone();
    s.decide_on = metric;
    s.block_s = base.block_s.min(seconds / 4.0);
    s.budget_s = seconds + 3.0 * s.block_s;
    s.discard_s = base.discard_s.min(s.block_s / 5.0);
    s.starts = 1;
    s.seed = seed;
    s.validate().ok()?;
    Some(s)
}

/// Run `config` (B) against the incumbent (A) for `seconds`. `first` says the memory check's
/// sentence (the first paired trial of a run says it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn measure(
    job: &Job,
    base: &Settings,
    incumbent: &Incumbent,
    config: &Config,
    seconds: f64,
    seed: u64,
    first: bool,
    stop: &StopToken,
    listener: &mut dyn Listener,
) -> Result<PairedRun, TuneError> {
    let failed = PairedRun::failed;
    let target = |c: &Config| match job.subject.target(c) {
        Ok(Target::External { .. }) => Err("an interleaved trial needs a lab stack".to_string()),
        other => other,
    };
    let targets = match (target(&incumbent.config), target(config)) {
        (Ok(a), Ok(b)) => [a, b],
        (Err(why), _) | (_, Err(why)) => return Ok(failed(why)),
    };
    let settings =
        metric_of(&job.objective).and_then(|metric| trial_settings(base, metric, seconds, seed));
    let Some(settings) = settings else {
        return Ok(failed(format!(
            "{seconds:.1}s is too short for a pair of blocks"
        )));
    };
    let template = job.levels[0].apply(&job.load);
    let mut say = |line: &str| {
        if first && line.starts_with("memory") {
            listener.trial_done(line);
        }
    };
    let pair = match crate::lab_pair::compare_targets(
        &targets,
        &template,
        &job.workload,
        settings.clone(),
        stop,
        &mut say,
    ) {
        Ok(pair) => pair,
        // A configuration the server refuses, or two stacks that do not fit: a failed trial
        // with the words, not the end of the tune.
        Err(why) if !stop.stop_requested() => return Ok(failed(why)),
        Err(_) => return Ok(PairedRun::interrupted()),
    };
    let protocol = &pair.outcome.protocol;
    if pair.outcome.interrupted {
        return Ok(PairedRun::interrupted());
    }
    Ok(told(
        job,
        incumbent,
        config,
        protocol.blocks().to_vec(),
        &protocol.judgement(),
    ))
}

/// What a paired trial of `config` against `incumbent` tells the study from its blocks and
/// their judgement: the candidate's figures on the incumbent's reference scale (which the
/// joint fit then re-tells), whether it replaces the incumbent, and what the journal keeps.
pub(crate) fn told(
    job: &Job,
    incumbent: &Incumbent,
    config: &Config,
    blocks: Vec<Block>,
    judgement: &Judgement,
) -> PairedRun {
    let mut reference = incumbent.reference.clone();
    reference.level = level_label(job.levels[0]);
    let Some(told) = search::on_reference_scale(&reference, &blocks, judgement) else {
        return PairedRun::failed("no pair of blocks in which both arms answered".to_string());
    };
    let feasible =
        evaluate(job.objective, &job.slos, std::slice::from_ref(&told)).is_some_and(|e| e.feasible);
    let deciding = judgement.metrics.get(&judgement.metric);
    let paired = PairedTrial {
        incumbent: incumbent.config.clone(),
        candidate: config.clone(),
        became_incumbent: !incumbent.stand_in
            && *config != incumbent.config
            && search::replaces_incumbent(judgement, feasible),
        reference,
        metric: judgement.metric.clone(),
        verdict: judgement.verdict,
        ratio: deciding.map_or(f64::NAN, |m| m.ratio),
        ci_low: deciding.and_then(|m| m.ci_low),
        ci_high: deciding.and_then(|m| m.ci_high),
        pairs: judgement.pairs,
        blocks: blocks.len(),
        incumbent_measured: search::arm_summary(&told.level, &blocks, Side::A),
        candidate_measured: search::arm_summary(&told.level, &blocks, Side::B),
        told: Some(told.clone()),
        log_se: metric_of(&job.objective).and_then(|m| search::log_se(&blocks, m)),
        stand_in: incumbent.stand_in,
    };
    PairedRun {
        measured: Measured {
            outcome: Outcome::Measured(vec![told]),
            runs: Vec::new(),
            interrupted: false,
        },
        pair: Some((paired, blocks)),
    }
}

/// The progress line's words for a paired trial against `arm` (its arm A).
pub fn describe(p: &PairedTrial, arm: &Incumbent) -> String {
    let whom = if arm.stand_in {
        "the scale"
    } else {
        "the incumbent"
    };
    format!(
        "; {} {}",
        p.metric,
        p.ratio_words(&format!(
            " against {whom} (trial {}'s configuration)",
            arm.trial
        ))
    )
}

/// The progress line's words for a paired trial whose figure on the joint fit (`fitted`,
/// what the study now holds) differs from what its pairs alone told (by more than 0.05%):
/// "; 1043.6 req/s on the joint fit of all pairs". Empty when they agree.
pub fn joint_words(job: &Job, p: &PairedTrial, fitted: &Outcome) -> String {
    let (Some(told), Outcome::Measured(levels)) = (&p.told, fitted) else {
        return String::new();
    };
    let worst = |l: &[LevelSummary]| job.objective.worst(l);
    match (worst(std::slice::from_ref(told)), worst(levels)) {
        (Some(a), Some(b)) if a > 0.0 && b.is_finite() && (b / a - 1.0).abs() > 5e-4 => {
            format!(
                "; {b:.1} {} on the joint fit of all pairs",
                job.objective.unit()
            )
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_search::interleave::Verdict;
    use webtune_search::objective::Objective;
    use webtune_search::space::{Kind, ParamSpec, Space, Value};
    use webtune_search::study::{Next, StudySettings};
    use webtune_search::GpSampler;

    fn level(tp: f64) -> Outcome {
        Outcome::Measured(vec![LevelSummary {
            level: "c=4".into(),
            throughput: tp,
            p50_ms: 1.0,
            p90_ms: 1.0,
            p99_ms: 1.0,
            p999_ms: 1.0,
            mean_ms: 1.0,
            error_ratio: 0.0,
            mail: None,
        }])
    }

    fn study() -> Study {
        let space = Space {
            params: vec![ParamSpec {
                name: "w".into(),
                kind: Kind::Int {
                    lo: 1,
                    hi: 8,
                    log: false,
                },
                default: Value::Int(1),
            }],
            inert: Vec::new(),
        };
        Study::new(
            space,
            Objective::MaximizeThroughput,
            Vec::new(),
            Vec::new(),
            StudySettings::default(),
            Box::new(GpSampler::default()),
        )
    }

    fn w(v: i64) -> Config {
        Config::from([("w".to_string(), Value::Int(v))])
    }

    fn pair(candidate: Config, became_incumbent: bool) -> PairedTrial {
        PairedTrial {
            incumbent: w(1),
            candidate,
            reference: match level(1.0) {
                Outcome::Measured(l) => l[0].clone(),
                Outcome::Failed(_) => unreachable!(),
            },
            metric: "throughput".into(),
            verdict: if became_incumbent {
                Verdict::BBetter
            } else {
                Verdict::Undecided
            },
            ratio: 1.0,
            ci_low: None,
            ci_high: None,
            pairs: 2,
            blocks: 4,
            incumbent_measured: None,
            candidate_measured: None,
            became_incumbent,
            told: None,
            log_se: None,
            stand_in: false,
        }
    }

    #[test]
    fn the_incumbent_is_the_default_until_a_candidate_replaces_it() {
        let mut s = study();
        // Nothing measured: the first run is measured alone.
        assert_eq!(incumbent(&s, &[]), None);
        s.record(w(1), Why::Baseline, level(1000.0));
        s.record(w(1), Why::Baseline, level(1210.0));
        let i = incumbent(&s, &[]).unwrap();
        assert_eq!((i.config.clone(), i.trial), (w(1), 1));
        assert!((i.reference.throughput - 1100.0).abs() < 1e-6, "{i:?}");
        // A better point estimate inside the noise changes nothing; a replacement does.
        s.record(w(4), Why::Seed, level(1300.0));
        assert_eq!(
            incumbent(&s, &[(3, pair(w(4), false))]).unwrap().config,
            w(1)
        );
        let i = incumbent(&s, &[(3, pair(w(4), true)), (4, pair(w(6), false))]).unwrap();
        assert_eq!((i.config, i.trial), (w(4), 3));
        assert!((i.reference.throughput - 1300.0).abs() < 1e-6);
        // A default that never started gives way to the first configuration measured.
        let mut s = study();
        s.record(w(1), Why::Baseline, Outcome::Failed("did not start".into()));
        assert_eq!(incumbent(&s, &[]), None);
        s.record(w(3), Why::Seed, level(900.0));
        assert_eq!(incumbent(&s, &[]).unwrap().config, w(3));
    }

    /// `candidate` measured against `incumbent`, whose reference was `reference` ok/s, at
    /// `ratio` of it: the pair and what the study was told.
    fn told_pair(
        incumbent: Config,
        candidate: Config,
        reference: f64,
        ratio: f64,
        became: bool,
    ) -> (PairedTrial, Outcome) {
        let mut p = pair(candidate, became);
        p.incumbent = incumbent;
        let (Outcome::Measured(r), Outcome::Measured(t)) =
            (level(reference), level(reference * ratio))
        else {
            unreachable!()
        };
        p.reference = r[0].clone();
        p.told = Some(t[0].clone());
        (p, Outcome::Measured(t))
    }

    fn figure(s: &Study, number: usize) -> f64 {
        match &s.trials()[number - 1].outcome {
            Outcome::Measured(l) => l[0].throughput,
            Outcome::Failed(_) => unreachable!(),
        }
    }

    #[test]
    fn the_study_holds_the_joint_fit_and_the_incumbent_its_fitted_level() {
        let mut s = study();
        let mut pairs = Vec::new();
        s.record(w(1), Why::Baseline, level(1000.0));
        // The A/A trial, the default against itself at ×1.1.
        let (p, o) = told_pair(w(1), w(1), 1000.0, 1.1, false);
        s.record(w(1), Why::Baseline, o);
        pairs.push((2, p));
        // 4 beats the default on a ×3 link and becomes the incumbent; 6 is measured against
        // the default (×1.2), then against 4 (×0.6 of 4's chained 3,000: 1,800).
        let (p, o) = told_pair(w(1), w(4), 1000.0, 3.0, true);
        s.record(w(4), Why::Seed, o);
        pairs.push((3, p));
        let (p, o) = told_pair(w(1), w(6), 1000.0, 1.2, false);
        s.record(w(6), Why::Seed, o);
        pairs.push((4, p));
        let (p, o) = told_pair(w(4), w(6), 3000.0, 0.6, false);
        s.record(w(6), Why::Model, o);
        pairs.push((5, p));
        refit(&mut s, &pairs);
        // The default is its run alone; its A/A trial keeps its noise on that level.
        assert!((figure(&s, 1) - 1000.0).abs() < 1e-9);
        assert!((figure(&s, 2) - 1100.0).abs() < 1e-9);
        // A cycle 1 → 4 → 6 → 1 of equal weights, ×1.5 inconsistent: each link takes a third.
        let four = figure(&s, 3);
        assert!((four - 3000.0 / 1.5f64.cbrt()).abs() < 1e-6, "{four}");
        // 6's two trials: their geometric mean its fitted level, their ratio what their pairs
        // said of 6 against 1 and against 4 at its fitted level.
        let fit = joint_fit(&s, &pairs).unwrap();
        let six = fit.level(&w(6)).unwrap().throughput;
        assert!(((figure(&s, 4) * figure(&s, 5)).sqrt() / six - 1.0).abs() < 1e-9);
        let said = (1000.0 * 1.2) / (four * 0.6);
        assert!((figure(&s, 4) / figure(&s, 5) / said - 1.0).abs() < 1e-9);
        let i = incumbent(&s, &pairs).unwrap();
        assert_eq!((i.config, i.trial), (w(4), 3));
        assert!((i.reference.throughput - four).abs() < 1e-9);
        // Fitting again changes nothing; a study replayed from what was told comes to the same.
        let before: Vec<f64> = (1..=5).map(|n| figure(&s, n)).collect();
        refit(&mut s, &pairs);
        assert_eq!((1..=5).map(|n| figure(&s, n)).collect::<Vec<_>>(), before);
        let mut replayed = study();
        replayed.record(w(1), Why::Baseline, level(1000.0));
        for (n, p) in &pairs {
            let told = Outcome::Measured(vec![p.told.clone().unwrap()]);
            replayed.record(p.candidate.clone(), Why::Model, told);
            assert_eq!(replayed.trials().len(), *n);
        }
        refit(&mut replayed, &pairs);
        assert_eq!(
            (1..=5).map(|n| figure(&replayed, n)).collect::<Vec<_>>(),
            before
        );
    }

    #[test]
    fn a_leader_told_from_few_noisy_pairs_is_raced_against_the_scale() {
        let mut s = study();
        let mut pairs = Vec::new();
        s.record(w(1), Why::Baseline, level(1000.0));
        let (p, o) = told_pair(w(1), w(1), 1000.0, 1.02, false);
        s.record(w(1), Why::Baseline, o);
        pairs.push((2, p));
        // 4 beats the default ×1.5 on pairs that agree (±2%): the new incumbent.
        let (mut p, o) = told_pair(w(1), w(4), 1000.0, 1.5, true);
        p.log_se = Some(0.02);
        s.record(w(4), Why::Seed, o);
        pairs.push((3, p));
        // 6 is told ×1.4 of 4 over two pairs that disagreed wildly (±0.5 in ln).
        let (mut p, o) = told_pair(w(4), w(6), 1500.0, 1.4, false);
        p.log_se = Some(0.5);
        s.record(w(6), Why::Model, o);
        pairs.push((4, p));
        refit(&mut s, &pairs);
        let fit = joint_fit(&s, &pairs).unwrap();
        assert!(fit.spread(&w(6)).unwrap() > 0.5, "{fit:?}");
        // 2,100 against 1,500 is 34% in ln, beyond the runs' noise, within 6's spread: the
        // leader is measured again before it is believed…
        assert_eq!(s.next(), Next::Measure(w(6), Why::Race));
        // …against the scale's configuration (the default, measured alone), not against
        // the incumbent whose own level would add its error to the new link.
        assert_eq!(anchor(&s, &pairs), Some(w(1)));
        let arm = opponent(&s, &pairs, &w(6), Why::Race).unwrap();
        assert_eq!((arm.config.clone(), arm.stand_in), (w(1), true));
        assert!(describe(&pairs[2].1, &arm).contains("against the scale (trial 1's configuration)"));
        // Any other trial runs against the incumbent, as before…
        let arm = opponent(&s, &pairs, &w(6), Why::Model).unwrap();
        assert_eq!((arm.config, arm.stand_in), (w(4), false));
        // …but the incumbent itself runs against the scale too (against itself it would
        // measure only the noise), and the default, raced, against the incumbent.
        let arm = opponent(&s, &pairs, &w(4), Why::Model).unwrap();
        assert_eq!((arm.config, arm.stand_in), (w(1), true));
        let arm = opponent(&s, &pairs, &w(1), Why::Race).unwrap();
        assert_eq!((arm.config, arm.stand_in), (w(4), false));
        // While the default is the incumbent it runs against itself: the A/A trial.
        let mut s0 = study();
        s0.record(w(1), Why::Baseline, level(1000.0));
        let arm = opponent(&s0, &[], &w(1), Why::Baseline).unwrap();
        assert_eq!((arm.config, arm.stand_in), (w(1), false));
    }

    #[test]
    fn a_trials_blocks_fit_its_duration() {
        let base = Settings::new(Metric::Throughput);
        let s = trial_settings(&base, Metric::P99, 10.0, 7).unwrap();
        assert_eq!((s.block_s, s.discard_s, s.budget_s), (1.0, 0.1, 13.0));
        assert_eq!((s.decide_on, s.seed, s.starts), (Metric::P99, 7, 1));
        // A one-second trial still holds two pairs of shorter blocks.
        let s = trial_settings(&base, Metric::Throughput, 1.0, 7).unwrap();
        assert_eq!((s.block_s, s.discard_s), (0.25, 0.05));
        assert!(s.planned_pairs() >= 2.0);
        assert!(trial_settings(&base, Metric::Throughput, 0.0, 7).is_none());
    }
}
