//! One search or proof run of one configuration, measured alone (`Measured`): a lab trial
//! (`webtune_lab::trial`) at every level, `tune external`'s `--apply` first, a file system
//! made and loaded for `tune fs`, a capacity search for `--maximize capacity`; with the
//! share of the duration successive halving screens with (`screening`) and the progress
//! line's words (`describe`). The driver calls it; `interleaved_search` measures a
//! candidate with the incumbent instead.

use crate::error::TuneError;
use crate::job::{level_label, CapacityObjective, Job, Listener};
use crate::subject::Subject;
use webtune_lab::trial::{self, Level, Trial};
use webtune_lab::LabError;
use webtune_model::{RunResult, RunSpec, StopToken};
use webtune_search::objective::LevelSummary;
use webtune_search::space::Config;
use webtune_search::study::Outcome;

/// One measured run of one configuration: a summary per level and the full results.
pub(crate) struct Measured {
    pub(crate) outcome: Outcome,
    pub(crate) runs: Vec<RunResult>,
    pub(crate) interrupted: bool,
}

/// The share of the full duration successive halving screens new candidates with: under a
/// `--budget` of time, for a load that runs for a duration (not a request count) and is not
/// a capacity search; a third of the duration, at least 2 s (and past the warm-up), when
/// that saves at least half of a run (`webtune_search::halving::screen_fraction`).
pub fn screening(load: &RunSpec, time_budget: bool, capacity: bool) -> Option<f64> {
    let webtune_model::StopCondition::Duration { seconds } = load.stop else {
        return None;
    };
    if !time_budget || capacity {
        return None;
    }
    let min = 2.0f64.max(load.warmup_s + 1.0);
    webtune_search::halving::screen_fraction(seconds, min)
}

/// The full duration of the job's load, in seconds (0 for a count of requests).
pub(crate) fn full_seconds(job: &Job) -> f64 {
    match job.load.stop {
        webtune_model::StopCondition::Duration { seconds } => seconds,
        webtune_model::StopCondition::Requests { .. } => 0.0,
    }
}

/// Run one configuration as a trial, its load `fidelity` of the full duration.
pub(crate) fn measure(
    job: &Job,
    config: &Config,
    fidelity: f64,
    stop: &StopToken,
    listener: &mut dyn Listener,
) -> Result<Measured, TuneError> {
    let failed = |why: String| Measured {
        outcome: Outcome::Failed(why),
        runs: Vec::new(),
        interrupted: false,
    };
    if let Subject::Fs {
        spec, host_sysctl, ..
    } = &job.subject
    {
        return measure_fs(job, config, spec, *host_sysctl, stop);
    }
    let target = match job.subject.target(config) {
        Ok(t) => t,
        Err(why) => return Ok(failed(why)),
    };
    if let Subject::External { apply, timeout, .. } = &job.subject {
        let values: Vec<(String, String)> = config
            .iter()
            .map(|(n, v)| (n.clone(), v.to_string()))
            .collect();
        let command = webtune_lab::hook::fill(apply, &values)?;
        match webtune_lab::hook::run("--apply", &command, *timeout, stop) {
            Ok(()) => {}
            Err(LabError::Interrupted) => {
                return Ok(Measured {
                    outcome: Outcome::Failed("interrupted".into()),
                    runs: Vec::new(),
                    interrupted: true,
                })
            }
            Err(e) => return Ok(failed(e.to_string())),
        }
    }
    let mut load = job.load.clone();
    if !webtune_search::halving::is_full(fidelity) {
        load.stop = webtune_model::StopCondition::Duration {
            seconds: full_seconds(job) * fidelity,
        };
    }
    let mut trial = Trial::new(target, load);
    trial.workload = job.workload.clone();
    trial.levels = job.levels.clone();
    trial.sample_interval = job.sample_interval;
    if let Some(capacity) = &job.capacity {
        return measure_capacity(capacity, trial, stop, listener);
    }
    let outcome = match trial::run(&trial, stop, listener) {
        Ok(outcome) => outcome,
        // A configuration the server refuses, or one that does not start: a failed trial
        // with the server's words, not the end of the tune.
        Err(e) => return Ok(failed(e.to_string())),
    };
    let complete = !outcome.interrupted && outcome.levels.len() == job.levels.len();
    let summaries = outcome
        .levels
        .iter()
        .map(|l| LevelSummary::from_run(&level_label(l.level), &l.result))
        .collect();
    Ok(Measured {
        outcome: Outcome::Measured(summaries),
        runs: outcome.levels.into_iter().map(|l| l.result).collect(),
        interrupted: !complete,
    })
}

/// One trial of `tune fs`: make the file system, run the workload, remove it. Its one level
/// is the workload; throughput is transactions/s, and the latencies are the fsync's when the
/// workload syncs (an SLO such as `p99<=20ms` then bounds fsync's p99), else the
/// transaction's; errors are failed operations over all operations.
fn measure_fs(
    job: &Job,
    config: &Config,
    spec: &webtune_model::fs::FsSpec,
    host_sysctl: bool,
    stop: &StopToken,
) -> Result<Measured, TuneError> {
    let failed = |why: String| Measured {
        outcome: Outcome::Failed(why),
        runs: Vec::new(),
        interrupted: false,
    };
    let settings = match job.subject.fs_settings(config) {
        Ok(s) => s,
        Err(why) => return Ok(failed(why)),
    };
    let fs = match webtune_lab::filesystem::RunningFs::start(&settings, host_sysctl, false) {
        Ok(fs) => fs,
        Err(e) => return Ok(failed(e.to_string())),
    };
    let result = webtune_lab::filesystem::run_workload(&fs, spec, stop, job.sample_interval);
    fs.stop()?;
    let r = match result {
        Ok(r) => r,
        Err(e) => return Ok(failed(e.to_string())),
    };
    // Figures of a file system that filled up or turned read-only are no configuration's.
    if let Some(why) = r.storage_failure() {
        return Ok(failed(why));
    }
    let label = job
        .levels
        .first()
        .map(|l| level_label(*l))
        .unwrap_or_default();
    Ok(Measured {
        outcome: Outcome::Measured(vec![fs_summary(&label, &r)]),
        runs: Vec::new(),
        interrupted: r.interrupted || stop.stop_requested(),
    })
}

/// An fs result as the objective and SLOs read a level.
pub fn fs_summary(level: &str, r: &webtune_model::fs::FsResult) -> LevelSummary {
    let op = if r.spec.fsync == webtune_model::fs::FsyncMode::None {
        r.op("transaction")
    } else {
        r.op("fsync")
    };
    let ms = |us: u64| us as f64 / 1e3;
    let attempted: u64 = r.ops.values().map(|o| o.count + o.errors).sum();
    LevelSummary {
        level: level.to_string(),
        throughput: r.transactions_per_s,
        p50_ms: ms(op.latency.p50_us),
        p90_ms: ms(op.latency.p90_us),
        p99_ms: ms(op.latency.p99_us),
        p999_ms: ms(op.latency.p999_us),
        mean_ms: op.latency.mean_us / 1e3,
        error_ratio: if attempted > 0 {
            r.errors() as f64 / attempted as f64
        } else {
            0.0
        },
        mail: None,
    }
}

/// One trial of `--maximize capacity`: a capacity search on the configuration; its figure
/// is the capacity (reported as the level `capacity`'s throughput).
fn measure_capacity(
    capacity: &CapacityObjective,
    mut trial: Trial,
    stop: &StopToken,
    listener: &mut dyn Listener,
) -> Result<Measured, TuneError> {
    trial.levels = vec![Level::Rate(capacity.search.start_rps)];
    let spec = crate::capacity_run::CapacitySpec {
        trial,
        slos: capacity.slos.clone(),
        search: capacity.search,
        tool: concat!("webtune ", env!("CARGO_PKG_VERSION")).to_string(),
    };
    let result = match crate::capacity_run::run(&spec, stop, listener, &mut |_, _| {}) {
        Ok(r) => r,
        Err(e) => {
            return Ok(Measured {
                outcome: Outcome::Failed(e.to_string()),
                runs: Vec::new(),
                interrupted: false,
            })
        }
    };
    let runs: Vec<RunResult> = result.steps.iter().map(|s| s.result.clone()).collect();
    if result.interrupted {
        return Ok(Measured {
            outcome: Outcome::Failed("interrupted".into()),
            runs,
            interrupted: true,
        });
    }
    let outcome = match result.capacity_rps {
        Some(rps) => Outcome::Measured(vec![LevelSummary {
            level: "capacity".into(),
            throughput: rps,
            p50_ms: 0.0,
            p90_ms: 0.0,
            p99_ms: 0.0,
            p999_ms: 0.0,
            mean_ms: 0.0,
            error_ratio: 0.0,
            mail: None,
        }]),
        None => Outcome::Failed(format!(
            "no capacity: {}",
            crate::capacity_run::summary(&result)
        )),
    };
    Ok(Measured {
        outcome,
        runs,
        interrupted: false,
    })
}

pub(crate) fn describe(job: &Job, m: &Measured) -> String {
    match &m.outcome {
        Outcome::Failed(why) => format!("failed: {why}"),
        Outcome::Measured(levels) if job.capacity.is_some() => format!(
            "capacity {:.1} req/s",
            job.objective.worst(levels).unwrap_or(f64::NAN)
        ),
        Outcome::Measured(levels) => {
            let value = job.objective.worst(levels).unwrap_or(f64::NAN);
            let feasible = job
                .slos
                .iter()
                .all(|s| levels.iter().all(|l| s.margin(l) <= 0.0));
            format!(
                "{} {:.1} {}{}",
                job.objective,
                value,
                job.objective.unit(),
                if feasible { "" } else { " (breaks an SLO)" }
            )
        }
    }
}

impl Measured {
    pub(crate) fn outcome_measured(&self) -> bool {
        matches!(self.outcome, Outcome::Measured(_))
    }
}
