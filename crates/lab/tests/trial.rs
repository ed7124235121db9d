//! The trial API end to end on real servers: a trial starts a stack with typed settings,
//! loads it at each level (repeats merged), fills each level's server section with the
//! configuration, stops the stack with nothing left, and honours the stop token.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use webtune_lab::trial::{self, Level, LevelResult, Target, Trial, TrialEvents};
use webtune_lab::{settings_for, StackKind};
use webtune_model::{RunSpec, StopCondition, StopToken};

/// Records what the trial told its caller, and where the stack lived.
#[derive(Default)]
struct Seen {
    ready: Vec<String>,
    runs: Vec<(usize, u32)>,
    levels: Vec<f64>,
    stopped: bool,
    dir: Option<String>,
}

struct Recorder(Arc<Mutex<Seen>>);

impl TrialEvents for Recorder {
    fn ready(&mut self, base_url: &str, detail: &str) {
        let mut seen = self.0.lock().unwrap();
        seen.ready.push(base_url.to_string());
        seen.dir = detail.split("dir ").nth(1).map(str::to_string);
    }
    fn run_starting(&mut self, index: usize, _count: usize, _level: Level, run: u32, _runs: u32) {
        self.0.lock().unwrap().runs.push((index, run));
    }
    fn level_done(&mut self, _index: usize, level: &LevelResult) {
        self.0.lock().unwrap().levels.push(level.level.value());
    }
    fn stopped(&mut self, _target: &Target) {
        self.0.lock().unwrap().stopped = true;
    }
}

fn short_load(path: &str) -> RunSpec {
    RunSpec {
        url: path.to_string(),
        connections: 2,
        threads: 1,
        stop: StopCondition::Duration { seconds: 0.5 },
        ..RunSpec::default()
    }
}

#[test]
fn a_trial_loads_each_level_records_the_config_and_leaves_nothing() {
    let kind = StackKind::from_name("nginx").unwrap();
    let settings = settings_for(kind, &["worker_processes=2".to_string()]).unwrap();
    let mut trial = Trial::new(Target::Stack { kind, settings }, short_load("/empty.gif"));
    trial.levels = vec![Level::Connections(1), Level::Connections(4)];
    trial.repeat = 2;
    trial.sample_interval = Duration::from_millis(100);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let outcome = trial::run(&trial, &StopToken::new(), &mut Recorder(Arc::clone(&seen)))
        .expect("the trial runs");
    assert!(!outcome.interrupted);
    assert_eq!(outcome.levels.len(), 2);
    for (level, expected_c) in outcome.levels.iter().zip([1, 4]) {
        let r = &level.result;
        assert_eq!(r.spec.connections, expected_c);
        assert!(r.responses > 0, "level {expected_c} got answers");
        assert!(r.duration_s >= 0.9, "two runs merged: {}", r.duration_s);
        assert!(r.spec.url.ends_with("/empty.gif"), "{}", r.spec.url);
        let server = r.server.as_ref().expect("sampled");
        assert_eq!(server.target, "nginx");
        assert_eq!(
            server
                .parameters
                .get("worker_processes")
                .map(String::as_str),
            Some("2")
        );
        assert_eq!(server.parameters_set, vec!["worker_processes".to_string()]);
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.runs, vec![(0, 1), (0, 2), (1, 1), (1, 2)]);
    assert_eq!(seen.levels, vec![1.0, 4.0]);
    assert!(seen.stopped);
    let dir = seen.dir.clone().expect("the private dir was named");
    assert!(
        webtune_testkit::procs::processes_naming(std::path::Path::new(&dir)).is_empty(),
        "nothing of the stack is left"
    );
    assert!(!std::path::Path::new(&dir).exists(), "private dir removed");
}

#[test]
fn a_stop_token_set_before_the_start_runs_nothing() {
    let kind = StackKind::from_name("nginx").unwrap();
    let settings = settings_for(kind, &[]).unwrap();
    let trial = Trial::new(Target::Stack { kind, settings }, short_load("/empty.gif"));
    let stop = StopToken::new();
    stop.request_stop();
    let outcome = trial::run(&trial, &stop, &mut trial::Silent).expect("no error");
    assert!(outcome.interrupted);
    assert!(outcome.levels.is_empty());
}

#[test]
fn a_stop_during_the_load_keeps_the_level_measured() {
    let kind = StackKind::from_name("nginx").unwrap();
    let settings = settings_for(kind, &[]).unwrap();
    let mut load = short_load("/empty.gif");
    load.stop = StopCondition::Duration { seconds: 30.0 };
    let mut trial = Trial::new(Target::Stack { kind, settings }, load);
    trial.levels = vec![Level::Connections(2), Level::Connections(4)];
    let stop = StopToken::new();
    // Stopped once the first level has responses, not after a guessed delay.
    struct StopOnResponses(StopToken);
    impl TrialEvents for StopOnResponses {
        fn progress(&mut self, progress: &webtune_engine::Progress) {
            if progress.responses > 0 {
                self.0.request_stop();
            }
        }
    }
    let outcome =
        trial::run(&trial, &stop, &mut StopOnResponses(stop.clone())).expect("the trial runs");
    assert!(outcome.interrupted);
    assert_eq!(outcome.levels.len(), 1, "the second level never started");
    assert!(outcome.levels[0].result.interrupted);
    assert!(outcome.levels[0].result.responses > 0);
}

#[test]
fn per_response_server_figures_cover_the_measured_window_only() {
    // Issue 33 item 5: `lab run nginx -- --warmup 2s` printed 112 µs of server CPU per
    // response against 37 µs without the warm-up: the samples' counters covered the warm-up,
    // the responses did not. Two runs of 3 s with 2 s of warm-up each: each run's measured
    // second is recorded on the samples' clock, and per-response figures count only it.
    let kind = StackKind::from_name("nginx").unwrap();
    let settings = settings_for(kind, &[]).unwrap();
    let mut load = short_load("/empty.gif");
    load.connections = 4;
    load.stop = StopCondition::Duration { seconds: 3.0 };
    load.warmup_s = 2.0;
    let mut trial = Trial::new(Target::Stack { kind, settings }, load);
    trial.repeat = 2;
    trial.sample_interval = Duration::from_millis(100);
    let outcome = trial::run(&trial, &StopToken::new(), &mut trial::Silent).expect("it runs");
    let r = &outcome.levels[0].result;
    let server = r.server.as_ref().expect("sampled");
    // One window per run, each as long as that run's measurement, after its warm-up.
    assert_eq!(server.measured.len(), 2, "{:?}", server.measured);
    let sampled: f64 = server.samples.iter().map(|s| s.length_s).sum();
    for (w, run) in server.measured.iter().zip(&r.repeats) {
        assert!(
            (w.length_s() - run.duration_s).abs() < 1e-6,
            "{w:?} {run:?}"
        );
        // (The run's start is on the wall clock to the millisecond.)
        assert!(
            w.from_s >= 1.99 && w.to_s <= sampled + 0.2,
            "{w:?} of {sampled} s"
        );
    }
    let first_end = server.measured[0].to_s;
    assert!(
        server.measured[1].from_s >= first_end + 2.0 - 0.01,
        "the second run's warm-up comes between: {:?}",
        server.measured
    );
    // The warm-ups' CPU (4 of the 6 loaded seconds) is left out of the per-response figure.
    // (Its share of the whole is about a third; 0.7 leaves room for a busy machine.)
    let all: f64 = server
        .samples
        .iter()
        .map(|s| s.cpu_user_s + s.cpu_system_s)
        .sum();
    let measured = server.measured();
    // The runs' measured seconds (each about 1 s, more when its drain lasted) are sampled.
    assert!(
        (measured.seconds - r.duration_s).abs() < 0.05,
        "{measured:?} of {} s measured",
        r.duration_s
    );
    assert!(
        measured.cpu_s() > 0.0 && measured.cpu_s() < all * 0.7,
        "measured {:.3} s of {all:.3} s",
        measured.cpu_s()
    );
    let text = webtune_report::server_summary::summarise(server, r.responses);
    let per = format!(
        "= {:.0} µs per response",
        measured.cpu_s() * 1e6 / r.responses as f64
    );
    assert!(text.contains("in the measured window"), "{text}");
    assert!(text.contains(&per), "{per}\n{text}");
}
