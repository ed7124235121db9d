//! The tuning loop with a fake trial (issue 36, item 2): a "server" that is a function of
//! its one parameter, measured without starting anything, so that what the loop owns — the
//! journal before and after each trial, the trial count, a stop mid-search, the sequential
//! proof, a resume — is checked on its own.

use super::*;
use crate::interleaved_search::{told, trial_settings, Incumbent, PairedRun};
use crate::job::SearchProtocol;
use crate::request::{Load, TuneRequest};
use webtune_model::RunSpec;
use webtune_search::interleave::block::Metric;
use webtune_search::interleave::{judge, Block, Settings, Side};
use webtune_search::objective::LevelSummary;
use webtune_search::space::Value;

/// Throughput peaks at `w = 6` (of 1..16, on the log scale); every call is kept. With
/// `stop_at`, the call of that number stops the tune as Ctrl-C would, mid-trial.
struct Fake {
    calls: Vec<(Config, f64)>,
    /// How many of the calls measured a configuration alone.
    alone: usize,
    stop_at: Option<(usize, StopToken)>,
}

impl Fake {
    fn new() -> Fake {
        Fake {
            calls: Vec::new(),
            alone: 0,
            stop_at: None,
        }
    }
}

impl MeasureTrial for Fake {
    fn measure(
        &mut self,
        job: &Job,
        config: &Config,
        fidelity: f64,
        _stop: &StopToken,
        _listener: &mut dyn Listener,
    ) -> Result<Measured, TuneError> {
        self.calls.push((config.clone(), fidelity));
        self.alone += 1;
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
        let throughput = truth(config);
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

    fn against(
        &mut self,
        job: &Job,
        base: &Settings,
        incumbent: &Incumbent,
        config: &Config,
        seconds: f64,
        seed: u64,
        _first: bool,
        _stop: &StopToken,
        _listener: &mut dyn Listener,
    ) -> Result<PairedRun, TuneError> {
        self.calls.push((config.clone(), 1.0));
        if let Some((n, token)) = &self.stop_at {
            if self.calls.len() == *n {
                token.request_stop();
                return Ok(PairedRun::interrupted());
            }
        }
        let settings = trial_settings(base, Metric::Throughput, seconds, seed).unwrap();
        let blocks = self.paired_blocks(truth(&incumbent.config), truth(config), seed);
        let judgement = judge(&blocks, &settings);
        Ok(told(job, incumbent, config, blocks, &judgement))
    }
}

/// The fake server's throughput: a peak at `w = 6`.
fn truth(config: &Config) -> f64 {
    let w = match config.get("w") {
        Some(Value::Int(w)) => *w as f64,
        other => panic!("w: {other:?}"),
    };
    1000.0 * (-(w.ln() - 6f64.ln()).powi(2)).exp()
}

/// The interleaved search's trial, faked: three pairs of blocks whose shared level drifts
/// (a neighbour) and whose ratio B/A is the true one with ±15% noise per pair drawn from the
/// trial's seed — the same blocks for the same trial in a resumed tune.
impl Fake {
    fn paired_blocks(&self, a: f64, b: f64, seed: u64) -> Vec<Block> {
        let mut rng = webtune_model::rng::Rng::seeded(seed);
        let mut out = Vec::new();
        for p in 0..3 {
            let shared = 1.0 + 0.3 * ((p as f64 + seed as f64) * 1.7).sin();
            let noise = 1.0 + 0.3 * (rng.unit() - 0.5);
            for (side, tp) in [(Side::A, a * shared), (Side::B, b * shared * noise)] {
                let lat = 1000.0 / tp;
                let mut block = Block::from_figures(side, 0.9, tp, [lat, 2.0 * lat, 4.0 * lat]);
                block.pair = p;
                block.index = out.len();
                out.push(block);
            }
        }
        out
    }
}

struct Quiet;
impl webtune_lab::trial::TrialEvents for Quiet {}
impl Listener for Quiet {}

/// Keeps every progress line.
#[derive(Default)]
struct Lines(Vec<String>);
impl webtune_lab::trial::TrialEvents for Lines {}
impl Listener for Lines {
    fn trial_done(&mut self, line: &str) {
        self.0.push(line.to_string());
    }
}

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

/// An interleaved search of `trials` trials, run by `fake` (`stop`: its token).
fn interleaved(trials: usize) -> Job {
    let mut job = job(trials, 0);
    job.search = SearchProtocol::Interleaved(Settings::new(Metric::Throughput));
    job
}

/// Each trial's configuration and objective, in order.
fn figures(report: &TuneReport) -> Vec<(Config, Option<f64>)> {
    report
        .trials
        .iter()
        .map(|t| (t.params.clone(), t.objective))
        .collect()
}

#[test]
fn the_interleaved_search_refits_after_each_trial_and_a_resume_or_show_comes_to_the_same_figures() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, cut) = (dir.path().join("whole.db"), dir.path().join("cut.db"));
    let job = interleaved(12);
    let mut journal = Journal::create(&whole, "{}", job.settings.seed).unwrap();
    let mut fake = Fake::new();
    let mut lines = Lines::default();
    let done = run_with(
        &mut fake,
        &job,
        &mut journal,
        None,
        &StopToken::new(),
        &mut lines,
    )
    .unwrap();
    // The first run alone (it sets the scale), every later one against the incumbent.
    assert_eq!((fake.alone, fake.calls.len()), (1, 12), "{:?}", fake.calls);
    let report = done.report;
    let told = figures(&report);
    assert!(report.trials[0].paired.is_none());
    let paired: Vec<_> = report
        .trials
        .iter()
        .filter(|t| t.paired.is_some())
        .collect();
    assert_eq!(paired.len(), 11);
    let w = |v: i64| Config::from([("w".to_string(), Value::Int(v))]);
    // The incumbent (w=4, trial 3, ×21 over three pairs) led within noise and was raced:
    // against the scale (the default, measured alone), not against itself, so its level
    // has two paths from the default and the fit pools them.
    let raced = paired
        .iter()
        .find(|t| t.why == "race" && t.params == w(4))
        .expect("the incumbent raced");
    let p = raced.paired.as_ref().unwrap();
    assert_eq!(
        (&p.incumbent, p.became_incumbent, p.stand_in),
        (&w(1), false, true)
    );
    let row = report
        .render_text()
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with(&format!("{}  race", raced.number))
        })
        .map(str::to_string)
        .unwrap_or_default();
    assert!(row.contains("vs the scale"), "{row}");
    assert!(paired
        .iter()
        .filter(|t| t.why != "race" && t.params != w(4))
        .all(|t| !t.paired.as_ref().unwrap().stand_in));
    assert!(
        lines
            .0
            .iter()
            .any(|l| l.contains("against the scale (trial 1's configuration)")),
        "{:#?}",
        lines.0
    );
    let of = |c: &Config| -> Vec<f64> {
        paired
            .iter()
            .filter(|t| t.params == *c)
            .map(|t| t.objective.unwrap())
            .collect()
    };
    let four = of(&w(4));
    assert_eq!(four.len(), 2);
    // A configuration's trials' geometric mean is its fitted level.
    let fitted = (four[0] * four[1]).sqrt();
    // Every configuration measured once against w=4 moves with w=4's level, and those
    // measured once against the default keep what their pairs told.
    for t in paired.iter().filter(|t| of(&t.params).len() == 1) {
        let p = t.paired.as_ref().unwrap();
        let told = p.told.as_ref().expect("the pair keeps what it was told");
        let moved = if p.incumbent == w(4) {
            fitted / p.reference.throughput
        } else {
            1.0
        };
        assert!(
            (t.objective.unwrap() / told.throughput / moved - 1.0).abs() < 1e-9,
            "{t:?}"
        );
    }
    // A trial the fit moved says both figures on its progress line.
    let p = paired[6].paired.as_ref().unwrap();
    let mut moved = p.told.clone().unwrap();
    moved.throughput *= 1.25;
    let words = crate::interleaved_search::joint_words(&job, p, &Outcome::Measured(vec![moved]));
    assert!(
        words.ends_with("ok/s on the joint fit of all pairs"),
        "{words}"
    );
    let same = Outcome::Measured(vec![p.told.clone().unwrap()]);
    assert_eq!(crate::interleaved_search::joint_words(&job, p, &same), "");
    // `--show` re-fits from the journal to the same figures.
    drop(journal);
    let (_, resumed) = Journal::open(&whole).unwrap();
    assert_eq!(figures(&report_so_far(&job, &resumed)), told);

    // Stopped during the seventh trial and resumed: the same trials, told the same figures.
    let stop = StopToken::new();
    let mut journal = Journal::create(&cut, "{}", job.settings.seed).unwrap();
    let mut first = Fake::new();
    first.stop_at = Some((7, stop.clone()));
    assert!(
        run_with(&mut first, &job, &mut journal, None, &stop, &mut Quiet)
            .unwrap()
            .interrupted
    );
    drop(journal);
    let (mut journal, resumed) = Journal::open(&cut).unwrap();
    assert_eq!(resumed.trials.len(), 6);
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
    assert_eq!((again.alone, again.calls.len()), (0, 6));
    let after = figures(&done.report);
    assert_eq!(after.len(), told.len());
    for ((c, a), (d, b)) in told.iter().zip(&after) {
        assert_eq!(c, d);
        let (a, b) = (a.unwrap(), b.unwrap());
        assert!((a / b - 1.0).abs() < 1e-9, "{a} against {b}");
    }
}
