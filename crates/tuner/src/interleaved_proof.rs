//! `tune --protocol interleaved`: the proof after the search as a decisive comparison — the
//! default (A) and the winner (B) as two lab stacks running at once, the load alternating
//! between them in blocks until the always-valid interval decides or the proof's budget
//! ends (`lab_pair`, `webtune_search::interleave`). It needs a lab stack or the forum (each
//! arm with its own private database; not a file system or an external server), one load
//! level, and an objective the protocol decides on (throughput, p50, p90, p99); otherwise
//! the proof stays sequential.

use crate::job::{level_label, Job, Listener};
use crate::subject::Subject;
use webtune_lab::trial::Target;
use webtune_lab::LabError;
use webtune_model::StopToken;
use webtune_search::interleave::as_proof::{metric_of, to_proof};
use webtune_search::interleave::render::Report;
use webtune_search::interleave::Settings;
use webtune_search::report::{LevelProof, ProofReport};
use webtune_search::space::Config;

/// Why the interleaved proof cannot run for `job`; None when it can.
pub fn unavailable(job: &Job) -> Option<String> {
    if !matches!(job.subject, Subject::Stack { .. } | Subject::Forum { .. }) {
        return Some(
            "it needs a lab stack or the forum; fs and external are proved in sequence".into(),
        );
    }
    if job.levels.len() != 1 {
        return Some("it proves one load level; give one".into());
    }
    if job.capacity.is_some() || metric_of(&job.objective).is_none() {
        return Some(
            "it decides on throughput, p50, p90 or p99; this objective is proved in sequence"
                .into(),
        );
    }
    None
}

/// Run the interleaved proof of `winner` against `default`. The report and whether a stop
/// cut it short.
pub fn run(
    job: &Job,
    (default, winner): (&Config, &Config),
    mut settings: Settings,
    search_gain: Option<f64>,
    stop: &StopToken,
    listener: &mut dyn Listener,
) -> Result<(ProofReport, bool), LabError> {
    let metric = metric_of(&job.objective).expect("checked by `unavailable`");
    settings.decide_on = metric;
    let target = |config: &Config| match job.subject.target(config) {
        Ok(Target::External { .. }) => Err(LabError::Inconsistent(
            "the interleaved proof needs a lab stack or the forum".into(),
        )),
        Ok(target) => Ok(target),
        Err(why) => Err(LabError::Inconsistent(why)),
    };
    let targets = [target(default)?, target(winner)?];
    let level = job.levels[0];
    let template = level.apply(&job.load);
    let pair = crate::lab_pair::compare_targets(
        &targets,
        &template,
        &job.workload,
        settings,
        stop,
        &mut |line| listener.trial_done(&format!("proof: {line}")),
    )
    .map_err(|e| LabError::Inconsistent(format!("the interleaved proof: {e}")))?;
    let mut report = Report::new(
        ("default", "winner"),
        &pair.outcome.protocol,
        pair.outcome.elapsed_s,
        pair.outcome.interrupted,
    );
    report.notes.push(pair.memory);
    let proof = to_proof(&report, "the default");
    listener.trial_done(&format!("proof: {}", report.headline()));
    let mut out = ProofReport::new(
        proof.clone(),
        vec![LevelProof {
            level: level_label(level),
            proof,
        }],
        search_gain,
        metric.higher_is_better(),
    );
    out.interleaved = Some(Box::new(report));
    Ok((out, pair.outcome.interrupted))
}
