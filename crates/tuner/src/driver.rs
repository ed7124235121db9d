//! The tuning loop: ask the study for a configuration, journal it, measure it — alone as a
//! lab trial (`measure`: the stack started with it, loaded at every level, sampled,
//! stopped — or the user's `--apply` command for a server webtune does not start), or at
//! once with the incumbent (`interleaved_search`, `--search-protocol interleaved`, its pair
//! and blocks journaled, then every paired trial re-told on the joint fit's scale,
//! `interleaved_search::refit`) — journal what it measured, tell the study; then the proof
//! — both stacks at once in alternating blocks (`interleaved_proof`), or sequential pairs A B
//! B A …
//! judged by `sequential_proof` with the server-side evidence that changed between them. It
//! is the one place where the study meets the lab; it starts nothing itself and reads no
//! command-line words.

use crate::job::{level_label, Job, Listener, ProofProtocol, SearchProtocol};
use crate::measure::{describe, full_seconds, measure, Measured};
pub use crate::measure::{fs_summary, screening};
use crate::sequential_proof::{analyze_proof, proof_runs, server_evidence};
use crate::subject::snippet;
pub use crate::subject::{external_catalogue, Subject};
use std::time::Instant;
use webtune_model::StopToken;
use webtune_search::interleave::search::PairedTrial;
use webtune_search::journal::{Journal, Phase, Resumed};
use webtune_search::paired::{self, Ran};
use webtune_search::proof::Arm;
use webtune_search::report::{minutes, HalvingReport, ProofReport, TimeReport, TuneReport};
use webtune_search::space::Config;
use webtune_search::study::{Next, Outcome, Study};
use webtune_search::GpSampler;

/// The journal's name for the interleaved proof (`Journal::record_proof`).
const INTERLEAVED: &str = "interleaved";

pub use crate::error::TuneError;

/// The report and whether the stop token cut the tune short.
pub struct Finished {
    pub report: TuneReport,
    pub interrupted: bool,
}

/// The job's study, before any trial: the same for a run, a resume and `--show`, so a study
/// replayed from the journal asks for what the uninterrupted one would have.
pub fn new_study(job: &Job) -> Study {
    Study::new(
        job.space.clone(),
        job.objective,
        job.slos.clone(),
        job.seeds.clone(),
        job.settings.clone(),
        Box::new(GpSampler::default()),
    )
}

/// How the loop measures a trial: a configuration alone (a search trial of the sequential
/// search, a run of the sequential proof: the lab's trial or the user's `--apply`,
/// `measure`) or against the incumbent (`against`), or a test's fake, so that the loop —
/// the journal before and after each trial, the budget, a stop, the proof — is tested
/// without a server.
pub(crate) trait MeasureTrial {
    fn measure(
        &mut self,
        job: &Job,
        config: &Config,
        fidelity: f64,
        stop: &StopToken,
        listener: &mut dyn Listener,
    ) -> Result<Measured, TuneError>;

    /// Run `config` against the incumbent for `seconds` (the interleaved search's trial):
    /// the lab's two stacks (`interleaved_search::measure`), or a test's fake blocks.
    #[allow(clippy::too_many_arguments)]
    fn against(
        &mut self,
        job: &Job,
        base: &webtune_search::interleave::Settings,
        incumbent: &crate::interleaved_search::Incumbent,
        config: &Config,
        seconds: f64,
        seed: u64,
        first: bool,
        stop: &StopToken,
        listener: &mut dyn Listener,
    ) -> Result<crate::interleaved_search::PairedRun, TuneError> {
        crate::interleaved_search::measure(
            job, base, incumbent, config, seconds, seed, first, stop, listener,
        )
    }
}

/// The real one: `measure::measure`.
struct ByTheLab;

impl MeasureTrial for ByTheLab {
    fn measure(
        &mut self,
        job: &Job,
        config: &Config,
        fidelity: f64,
        stop: &StopToken,
        listener: &mut dyn Listener,
    ) -> Result<Measured, TuneError> {
        measure(job, config, fidelity, stop, listener)
    }
}

/// Run the tune (or resume it from `resumed`), journaling every trial before it starts and
/// after it ends.
pub fn run(
    job: &Job,
    journal: &mut Journal,
    resumed: Option<&Resumed>,
    stop: &StopToken,
    listener: &mut dyn Listener,
) -> Result<Finished, TuneError> {
    run_with(&mut ByTheLab, job, journal, resumed, stop, listener)
}

/// `run`, each trial measured by `trials`.
pub(crate) fn run_with(
    trials: &mut dyn MeasureTrial,
    job: &Job,
    journal: &mut Journal,
    resumed: Option<&Resumed>,
    stop: &StopToken,
    listener: &mut dyn Listener,
) -> Result<Finished, TuneError> {
    let started = Instant::now();
    let mut study = new_study(job);
    let mut proof_done: Vec<(Arm, Outcome)> = Vec::new();
    if let Some(r) = resumed {
        r.replay_into(&mut study);
        proof_done = proof_runs(r);
    }
    let levels: Vec<String> = job.levels.iter().map(|l| level_label(*l)).collect();
    // Seconds of the earlier runs of this tune, from the journal.
    let before = |phase| resumed.map_or(0.0, |r| r.seconds(phase));
    let mut search_s = before(Some(Phase::Search));

    // The search. Each configuration's trial number, for "best so far (trial N)".
    let mut numbers: Vec<(Config, usize)> = study
        .trials()
        .iter()
        .map(|t| (t.config.clone(), t.number))
        .collect();
    let mut interrupted = false;
    let mut budget_spent = false;
    // The interleaved search's pairs, by the study's trial number (a resume's from the
    // journal), and whether the memory check's sentence was said.
    let mut pairs = match (&job.search, resumed) {
        (SearchProtocol::Interleaved(_), Some(r)) => paired_so_far(r),
        _ => Vec::new(),
    };
    // The journal holds what each paired trial was told; the study holds the joint fit's.
    crate::interleaved_search::refit(&mut study, &pairs);
    let mut said_memory = false;
    if let Some(why) = &job.search_note {
        listener.trial_done(&format!("search: each candidate measured alone: {why}"));
    }
    while !stop.stop_requested() {
        if job.time_budget.is_some_and(|b| search_s >= b.as_secs_f64()) {
            budget_spent = true;
            break;
        }
        let Next::Measure(config, why) = study.next() else {
            break;
        };
        let trial_started = Instant::now();
        let number = study.trials().len() + 1;
        let fidelity = webtune_search::halving::fidelity_for(study.settings.screen, why);
        let short = !webtune_search::halving::is_full(fidelity);
        let phase = if short { "screen" } else { "trial" };
        // Under --budget the trial cap is no horizon ("trial 1/200"): 0 says "open-ended",
        // and each finished trial says the time spent of the budget.
        let of = if job.time_budget.is_some() {
            0
        } else {
            job.settings.trials
        };
        listener.trial_starting(phase, number, of, &config);
        let rules = job
            .advice
            .as_ref()
            .map(|a| a.rules_of(&config))
            .unwrap_or_default();
        let id = journal.begin_trial_with(Phase::Search, &config, why.as_str(), &rules)?;
        if short {
            journal.set_fidelity(id, fidelity, full_seconds(job) * fidelity)?;
        }
        let incumbent = match &job.search {
            SearchProtocol::Interleaved(_) => {
                crate::interleaved_search::opponent(&study, &pairs, &config, why)
            }
            SearchProtocol::Sequential => None,
        };
        let (m, pair) = match (&job.search, &incumbent) {
            (SearchProtocol::Interleaved(base), Some(inc)) => {
                let run = trials.against(
                    job,
                    base,
                    inc,
                    &config,
                    full_seconds(job) * fidelity,
                    job.settings.seed.wrapping_add(number as u64),
                    !said_memory,
                    stop,
                    listener,
                )?;
                said_memory |= run.pair.is_some();
                (run.measured, run.pair)
            }
            _ => (
                trials.measure(job, &config, fidelity, stop, listener)?,
                None,
            ),
        };
        if m.interrupted {
            // Left pending in the journal: `--resume` runs it again.
            interrupted = true;
            break;
        }
        if let Some((p, blocks)) = &pair {
            // Before the trial is marked finished: a finished trial always has its pair.
            journal.record_search_pair(id, p, blocks)?;
        }
        match &m.outcome {
            Outcome::Measured(levels) => journal.finish_trial(id, levels, &m.runs)?,
            Outcome::Failed(why) => journal.fail_trial(id, why)?,
        }
        search_s += trial_started.elapsed().as_secs_f64();
        let mut line = describe(job, &m);
        if !rules.is_empty() {
            line = format!("{line} [advice: {}]", rules.join(", "));
        }
        if short {
            line = format!(
                "{line} (screening run of {:.0}s)",
                full_seconds(job) * fidelity
            );
        }
        match (&pair, &incumbent, &job.search) {
            (Some((p, _)), Some(inc), _) => {
                line.push_str(&crate::interleaved_search::describe(p, inc))
            }
            (None, None, SearchProtocol::Interleaved(_)) if m.outcome_measured() => {
                line.push_str(" (measured alone: the scale later candidates are told on)")
            }
            _ => {}
        }
        if let Some((p, _)) = pair {
            pairs.push((number, p));
        }
        numbers.push((config.clone(), number));
        study.record_at(config.clone(), why, m.outcome, fidelity);
        if let Some((_, p)) = pairs.last().filter(|(n, _)| *n == number) {
            crate::interleaved_search::refit(&mut study, &pairs);
            if let Some(t) = study.trials().last() {
                line.push_str(&crate::interleaved_search::joint_words(job, p, &t.outcome));
            }
        }
        // The configuration was printed when the trial started: name the best by its trial
        // (issue 39: each line printed the whole configuration twice).
        let best = study
            .best()
            .map(|b| {
                // The best is a configuration (its measurements' mean), maybe measured again.
                let which = if b.config == config {
                    "this configuration".to_string()
                } else {
                    numbers.iter().find(|(c, _)| *c == b.config).map_or_else(
                        || webtune_search::space::render(&b.config),
                        |(_, n)| format!("trial {n}'s configuration"),
                    )
                };
                format!(
                    "; best so far {:.1} {} ({which})",
                    b.objective,
                    job.objective.unit()
                )
            })
            .unwrap_or_default();
        let spent = job.time_budget.map_or(String::new(), |b| {
            format!(
                "; {} of --budget {}",
                minutes(search_s),
                minutes(b.as_secs_f64())
            )
        });
        listener.trial_done(&format!("{line}{best}{spent}"));
    }
    interrupted |= stop.stop_requested();

    // The proof: the default against the winner, interleaved.
    let default = study.default_config().clone();
    let winner = study.best().map(|b| b.config).filter(|c| *c != default);
    let mut proof_report = None;
    let mut evidence = Vec::new();
    let mut sequential = true;
    if let (Some(winner), false, true, ProofProtocol::Interleaved(p)) =
        (winner.clone(), interrupted, job.confirm > 0, &job.protocol)
    {
        match crate::interleaved_proof::unavailable(job) {
            None => {
                sequential = false;
                let gain = TuneReport::from_study(&study, Vec::new(), None)
                    .best
                    .and_then(|b| b.search_gain);
                // A resumed tune whose interleaved proof of this default and winner ended
                // already reuses it (every block is in the journal); else it runs, and its
                // whole report is kept when it ends.
                let pair = (&default, &winner);
                let kept = journal
                    .recorded_proof(INTERLEAVED, pair)?
                    .and_then(|json| serde_json::from_str::<ProofReport>(&json).ok());
                if let Some(report) = kept {
                    listener.trial_done("proof: the interleaved proof of this winner is in the journal; not run again");
                    proof_report = Some(report);
                } else {
                    let (report, cut) =
                        crate::interleaved_proof::run(job, pair, p.clone(), gain, stop, listener)?;
                    interrupted |= cut;
                    if !cut {
                        let json = serde_json::to_string(&report).unwrap_or_default();
                        journal.record_proof(INTERLEAVED, pair, &json)?;
                    }
                    proof_report = (!cut).then_some(report);
                }
            }
            Some(why) => {
                listener.trial_done(&format!("proof: sequential pairs, not interleaved: {why}"))
            }
        }
    }
    if let (Some(winner), false, true, true) =
        (winner.clone(), interrupted, job.confirm > 0, sequential)
    {
        let done = proof_done
            .into_iter()
            .map(|(a, o)| (a, (o, Vec::new())))
            .collect();
        let proof = paired::run(job.confirm, done, stop, |arm, number, of| {
            let config = if arm == Arm::Default {
                &default
            } else {
                &winner
            };
            listener.trial_starting(&format!("proof {}", arm.letter()), number, of, config);
            let id = journal.begin_trial(Phase::Proof, config, arm.letter())?;
            let m = trials.measure(job, config, 1.0, stop, listener)?;
            if m.interrupted {
                return Ok::<_, TuneError>(Ran::Interrupted);
            }
            match &m.outcome {
                Outcome::Measured(levels) => journal.finish_trial(id, levels, &m.runs)?,
                Outcome::Failed(why) => journal.fail_trial(id, why)?,
            }
            listener.trial_done(&describe(job, &m));
            Ok(Ran::Measured((m.outcome, m.runs)))
        })?;
        interrupted |= proof.interrupted;
        if !interrupted {
            let outcomes: Vec<(Arm, Outcome)> = proof
                .runs
                .iter()
                .map(|(a, (o, _))| (*a, o.clone()))
                .collect();
            proof_report = Some(analyze_proof(job, &study, &outcomes));
            evidence = server_evidence(&proof.runs);
        }
    }
    if let Subject::External {
        restore: Some(restore),
        timeout,
        ..
    } = &job.subject
    {
        // Always, also after a stop: the user's server goes back as it was.
        let values: Vec<(String, String)> = default
            .iter()
            .map(|(n, v)| (n.clone(), v.to_string()))
            .collect();
        let command = webtune_lab::hook::fill(restore, &values)?;
        webtune_lab::hook::run("--restore", &command, *timeout, &StopToken::new())?;
    }
    let mut report = finish_report(job, &study, levels, proof_report);
    attach_pairs(&mut report, pairs);
    report.evidence = evidence;
    report.time = Some(TimeReport {
        wall_s: before(None) + started.elapsed().as_secs_f64(),
        search_s,
        budget_s: job.time_budget.map(|b| b.as_secs_f64()),
        budget_spent,
        halving: halving_report(job, &study),
    });
    Ok(Finished {
        report,
        interrupted,
    })
}

/// The interleaved search's pairs in the journal of a resumed tune, by the study's trial
/// number (the search trials' order, failed ones included, as `replay_into` records them);
/// a pair whose trial never finished is left out. A pair journaled before pairs kept what
/// they were told takes it from its trial's journaled figures (the same figures).
fn paired_so_far(resumed: &Resumed) -> Vec<(usize, PairedTrial)> {
    let search: Vec<&webtune_search::journal::JournaledTrial> = resumed
        .trials
        .iter()
        .filter(|t| t.phase == Phase::Search)
        .collect();
    resumed
        .search_pairs
        .iter()
        .filter_map(|(id, p)| {
            let i = search.iter().position(|t| t.id == *id)?;
            let mut p = p.clone();
            if p.told.is_none() {
                if let Outcome::Measured(levels) = &search[i].outcome {
                    p.told = levels.first().cloned();
                }
            }
            Some((i + 1, p))
        })
        .collect()
}

/// Each trial of the report with its pair against the incumbent, where it had one.
fn attach_pairs(report: &mut TuneReport, pairs: Vec<(usize, PairedTrial)>) {
    for (number, p) in pairs {
        if let Some(t) = report.trials.iter_mut().find(|t| t.number == number) {
            t.paired = Some(p);
        }
    }
}

/// The report of a study (and its proof, when there is one), with the winner's directives.
fn finish_report(
    job: &Job,
    study: &Study,
    levels: Vec<String>,
    proof: Option<ProofReport>,
) -> TuneReport {
    let verdict = proof.as_ref().map(|p| p.verdict().to_string());
    let mut report = TuneReport::from_study(study, levels, proof);
    if let Some(advice) = &job.advice {
        for t in &mut report.trials {
            t.rules = advice.rules_of(&t.params);
        }
        report.advice = Some(webtune_search::advised::judge(
            study,
            advice,
            verdict.as_deref(),
        ));
    }
    if let Some(capacity) = &job.capacity {
        // The SLOs are the capacity search's, not the study's.
        report.slos = capacity.slos.iter().map(|t| t.text.clone()).collect();
    }
    report.snippet = job
        .subject
        .stack_kind()
        .zip(report.best.as_ref())
        .map(|(kind, best)| {
            let inert = study.space.inert_in(&best.params);
            snippet(kind, study.default_config(), &best.params, &inert)
        })
        .unwrap_or_default();
    report
}

/// `tune --show`: the report of the trials journaled so far, with the proof's verdict
/// when every proof run is in the journal.
pub fn report_so_far(job: &Job, resumed: &Resumed) -> TuneReport {
    let mut study = new_study(job);
    resumed.replay_into(&mut study);
    let pairs = paired_so_far(resumed);
    crate::interleaved_search::refit(&mut study, &pairs);
    let levels = job.levels.iter().map(|l| level_label(*l)).collect();
    let runs = proof_runs(resumed);
    let proof = (job.confirm > 0 && runs.len() >= 2 * job.confirm)
        .then(|| analyze_proof(job, &study, &runs[..2 * job.confirm]));
    let mut report = finish_report(job, &study, levels, proof);
    attach_pairs(&mut report, pairs);
    report.time = Some(TimeReport {
        wall_s: resumed.seconds(None),
        search_s: resumed.seconds(Some(Phase::Search)),
        budget_s: job.time_budget.map(|b| b.as_secs_f64()),
        budget_spent: job
            .time_budget
            .is_some_and(|b| resumed.seconds(Some(Phase::Search)) >= b.as_secs_f64()),
        halving: halving_report(job, &study),
    });
    report
}

/// How the search split its runs between screening and full durations (None without
/// screening).
fn halving_report(job: &Job, study: &Study) -> Option<HalvingReport> {
    let f = study.settings.screen?;
    let full = full_seconds(job);
    let trials = study.trials();
    let screened = trials
        .iter()
        .filter(|t| !webtune_search::halving::is_full(t.fidelity))
        .count();
    Some(HalvingReport {
        screen_s: full * f,
        full_s: full,
        screened,
        full: trials.len() - screened,
        promoted: trials
            .iter()
            .filter(|t| t.why == webtune_search::Why::Promote)
            .count(),
    })
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
