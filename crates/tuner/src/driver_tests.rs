//! The tuning loop with a fake trial (issue 36, item 2): a "server" that is a function of
//! its one parameter, measured without starting anything, so that what the loop owns — the
//! journal before and after each trial, the trial count, a stop mid-search, the sequential
//! proof, a resume — is checked on its own.

use super::*;
use crate::request::{Load, TuneRequest};
use webtune_model::RunSpec;
use webtune_search::objective::LevelSummary;
use webtune_search::space::Value;

/// Throughput peaks at `w = 6` (of 1..16, on the log scale); every call is kept. With
/// `stop_at`, the call of that number stops the tune as Ctrl-C would, mid-trial.
struct Fake {
    calls: Vec<(Config, f64)>,
    stop_at: Option<(usize, StopToken)>,
}

impl Fake {
    fn new() -> Fake {
        Fake {
            calls: Vec::new(),
            stop_at: None,
        }
    }
}

impl MeasureAlone for Fake {
    fn measure(
        &mut self,
        job: &Job,
        config: &Config,
        fidelity: f64,
        _stop: &StopToken,
        _listener: &mut dyn Listener,
    ) -> Result<Measured, TuneError> {
        self.calls.push((config.clone(), fidelity));
        if let Some((n, token)) = &self.stop_at {
            if self.calls.len() == *n {
                token.request_stop();
                return Ok(Measured {
                    outcome: Outcome::Failed("stopped".into()),
                    runs: Vec::new(),
                    interrupted: true,
                });
            }
        }
        let w = match config.get("w") {
            Some(Value::Int(w)) => *w as f64,
            other => panic!("w: {other:?}"),
        };
        let throughput = 1000.0 * (-(w.ln() - 6f64.ln()).powi(2)).exp();
        Ok(Measured {
            outcome: Outcome::Measured(vec![LevelSummary {
                level: level_label(job.levels[0]),
                throughput,
                p50_ms: 1.0,
                p90_ms: 2.0,
                p99_ms: 3.0,
                p999_ms: 4.0,
                mean_ms: 1.0,
                error_ratio: 0.0,
                mail: None,
            }]),
            runs: Vec::new(),
            interrupted: false,
        })
    }
}

struct Quiet;
impl webtune_lab::trial::TrialEvents for Quiet {}
impl Listener for Quiet {}

/// `tune external --apply true --param w=1..16`: a job whose trials the fake measures.
fn job(trials: usize, confirm: usize) -> Job {
    let mut job = TuneRequest {
        stack: Some("external".into()),
        params: vec!["w=1..16".into()],
        apply: Some("true".into()),
        load: Load::Http {
            spec: RunSpec::default(),
            url: Some("http://127.0.0.1:1/".into()),
            scenario: None,
            connections: None,
            body: None,
            body_file: None,
        },
        ..TuneRequest::default()
    }
    .job(&mut |_| {})
    .unwrap();
    job.settings.trials = trials;
    job.confirm = confirm;
    job
}

#[test]
fn every_trial_is_journaled_measured_and_told_and_the_proof_runs_on_the_same_trials() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let job = job(8, 2);
    let mut journal = Journal::create(&path, "{}", job.settings.seed).unwrap();
    let mut fake = Fake::new();
    let done = run_with(
        &mut fake,
        &job,
        &mut journal,
        None,
        &StopToken::new(),
        &mut Quiet,
    )
    .unwrap();
    assert!(!done.interrupted);
    // Eight search trials, then the proof's two pairs (A B B A) of the default and the best.
    assert_eq!(fake.calls.len(), 8 + 4, "{:?}", fake.calls);
    let report = &done.report;
    let best = report.best.as_ref().expect("a best configuration");
    assert!(
        best.objective > 700.0,
        "the best is near the peak: {best:?}"
    );
    assert!(report.proof.is_some(), "the proof ran");
    // The journal holds every trial as finished, the search's and the proof's.
    drop(journal);
    let (_, resumed) = Journal::open(&path).unwrap();
    assert!(resumed.lost.is_empty());
    let search = resumed
        .trials
        .iter()
        .filter(|t| t.phase == Phase::Search)
        .count();
    let proof = resumed
        .trials
        .iter()
        .filter(|t| t.phase == Phase::Proof)
        .count();
    assert_eq!((search, proof), (8, 4));
}

#[test]
fn a_stop_mid_trial_leaves_it_pending_and_a_resume_measures_only_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let job = job(6, 0);
    let stop = StopToken::new();
    let mut journal = Journal::create(&path, "{}", job.settings.seed).unwrap();
    let mut fake = Fake::new();
    fake.stop_at = Some((4, stop.clone()));
    let done = run_with(&mut fake, &job, &mut journal, None, &stop, &mut Quiet).unwrap();
    assert!(done.interrupted);
    assert_eq!(fake.calls.len(), 4);
    drop(journal);
    // Three finished; the fourth began and never ended: lost, not counted.
    let (mut journal, resumed) = Journal::open(&path).unwrap();
    assert_eq!((resumed.trials.len(), resumed.lost.len()), (3, 1));
    let mut again = Fake::new();
    let done = run_with(
        &mut again,
        &job,
        &mut journal,
        Some(&resumed),
        &StopToken::new(),
        &mut Quiet,
    )
    .unwrap();
    assert!(!done.interrupted);
    // The resume measures the three trials left, the interrupted one first again.
    assert_eq!(again.calls.len(), 3, "{:?}", again.calls);
    assert_eq!(again.calls[0].0, fake.calls[3].0);
    assert!(done.report.proof.is_none(), "--confirm 0: no proof");
}
