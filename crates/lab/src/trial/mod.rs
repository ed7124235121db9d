//! The trial: the one library seam between measuring and deciding. A trial is a target (a
//! lab stack with typed settings, the forum on a PHP stack with its database, or a server
//! the user runs), a load (a `RunSpec` whose URL is a path on the target), and the levels
//! to load it at. Running it starts the target, loads it level after level while the /proc
//! sampler watches the server, records the configuration, what the servers logged and each
//! run's measured window (for per-response server figures) in each level's `server`
//! section, and stops the target leaving nothing behind — also when
//! the stop token is set or a step fails. `lab run`, `lab sweep`, `sweep` and the tuner are
//! callers of `run`; none of them goes through command-line words. `path` says what a
//! trial loads when no path is given; `shards` runs a load as several generator processes;
//! `RunRequest`, `ForumRequest`, `SweepRequest` and `MailRequest` are the lab commands'
//! trials as values (what a command fills from its flags and the lab turns into a trial).

mod mail;
pub mod path;
mod request;
pub mod shards;
mod sweep;
mod target;

pub use mail::{is_mail, MailRequest};
pub use request::{
    config_flag, import_config, is_database, App, ForumData, ForumRequest, RunRequest,
};
pub use sweep::{levels_of, SweepRequest, Swept};
pub use target::{start_target, Started, Target};

use crate::forum;
use crate::host::HostSettings;
use crate::servers::postfix::files::PostfixFiles;
use crate::servers::postfix::watch::MailWatch;
use crate::{LabError, ProcessSelector, RunningStack, ServerSampler};
use std::path::Path;
use std::time::Duration;
use target::start;
use webtune_engine::{Progress, Workload};
use webtune_model::server::LogMessage;
use webtune_model::window::Window;
use webtune_model::{LoadMode, RunResult, RunSpec, StopToken};

/// One load level of a trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    /// The load spec as given.
    AsSpecified,
    /// Closed loop with this many connections.
    Connections(u32),
    /// Open loop at this many requests per second (connections as given: the cap).
    Rate(f64),
}

impl Level {
    /// The number a sweep's table shows for this level (0 for `AsSpecified`).
    pub fn value(self) -> f64 {
        match self {
            Level::AsSpecified => 0.0,
            Level::Connections(c) => f64::from(c),
            Level::Rate(r) => r,
        }
    }

    /// "c=32", "rate=500/s", or "" for the spec as given.
    pub fn label(self) -> String {
        match self {
            Level::AsSpecified => String::new(),
            Level::Connections(c) => format!("c={c}"),
            Level::Rate(r) => format!("rate={r}/s"),
        }
    }

    /// The spec of this level.
    pub fn apply(self, spec: &RunSpec) -> RunSpec {
        let mut spec = spec.clone();
        match self {
            Level::AsSpecified => {}
            Level::Connections(c) => {
                spec.connections = c;
                spec.load = LoadMode::Closed;
            }
            Level::Rate(r) => {
                let arrival = match spec.load {
                    LoadMode::Open { arrival, .. } => arrival,
                    LoadMode::Closed => webtune_model::Arrival::Uniform,
                };
                spec.load = LoadMode::Open { rate: r, arrival };
            }
        }
        spec
    }
}

/// A target, the load, and the levels to load it at.
pub struct Trial {
    pub target: Target,
    /// The load of every level. Its `url` (and a probe's) is a path on the target, e.g.
    /// "/cpu/2000"; empty means the target's base URL (with a scenario: the scenario's
    /// requests carry the paths). A full URL is allowed for `External` only.
    pub load: RunSpec,
    /// What is sent: the load's own request, or a scenario. On a `Forum` target whose load
    /// has no path and no scenario, the forum's 20/20/60 page mix.
    pub workload: Workload,
    /// At least one; `Level::AsSpecified` runs the spec as given.
    pub levels: Vec<Level>,
    /// Runs per level, one after the other, merged into one result (`RunResult::merge`).
    pub repeat: u32,
    /// Rest between levels (the server drains its queues and TIME_WAIT).
    pub pause: Duration,
    /// Server-side sampling period.
    pub sample_interval: Duration,
    /// Keep the stack's private directory (configs, logs) after it stops.
    pub keep_dir: bool,
    /// CPU sets of the stack and the generator, and the front server's addresses (the
    /// `os.*` values are in the target's settings).
    pub host: HostSettings,
    /// Who runs each load: `None` is the engine in this process; a caller may run it in
    /// other processes (`lab run` starts shard processes when `-c` needs more files than
    /// one process may open). Called on the thread that is inside the stack's namespace
    /// and on the client CPUs, with the stack's private directory for its files.
    pub run_load: Option<RunLoad>,
    /// A mail stack: after each level's load, wait at most this long for its queue to
    /// drain before counting the deliveries (zero: count at once, the queue is kept for
    /// the next level).
    pub mail_drain: Duration,
}

/// Runs one load instead of the engine in this process (see `Trial::run_load`).
pub type RunLoad = fn(&RunSpec, &Workload, &StopToken, &Path) -> Result<RunResult, LabError>;

impl Trial {
    /// A trial of `load` on `target` at one level, as specified.
    pub fn new(target: Target, load: RunSpec) -> Trial {
        Trial {
            target,
            load,
            workload: Workload::request(),
            levels: vec![Level::AsSpecified],
            repeat: 1,
            pause: Duration::ZERO,
            sample_interval: crate::DEFAULT_INTERVAL,
            keep_dir: false,
            host: HostSettings::default(),
            run_load: None,
            mail_drain: Duration::from_secs(30),
        }
    }
}

/// What one level measured.
pub struct LevelResult {
    pub level: Level,
    /// With the `server` section filled in when the target's processes were sampled.
    pub result: RunResult,
}

/// What a trial measured: one result per level run, in order.
pub struct TrialOutcome {
    pub levels: Vec<LevelResult>,
    /// True when the stop token ended the trial early (the levels measured are kept).
    pub interrupted: bool,
    /// The target's base URL.
    pub base_url: String,
}

impl TrialOutcome {
    /// The levels as a sweep of `variable` (`generator` names the program that measured
    /// it); its knee is the caller's to ask `webtune_report::knee` for.
    pub fn into_sweep(
        self,
        generator: &str,
        variable: webtune_model::sweep::SweepVariable,
    ) -> webtune_model::sweep::SweepResult {
        let mut sweep = webtune_model::sweep::SweepResult::new(generator, variable);
        sweep.interrupted = self.interrupted;
        sweep.levels = self
            .levels
            .into_iter()
            .map(|l| webtune_model::sweep::SweepLevel {
                level: l.level.value(),
                result: l.result,
            })
            .collect();
        sweep
    }
}

/// What a caller hears while a trial runs (progress lines, logs). Every method has an
/// empty default.
pub trait TrialEvents {
    /// Before the target starts: what starts.
    fn starting(&mut self, _target: &Target) {}
    /// Stacks that a killed webtune left, reaped before this start.
    fn reaped(&mut self, _lines: &[String]) {}
    /// The target answers at `base_url`; `detail` says what runs (sessions, directory).
    fn ready(&mut self, _base_url: &str, _detail: &str) {}
    /// Run `run` of `runs` of level `index` (of `count`) begins.
    fn run_starting(&mut self, _index: usize, _count: usize, _level: Level, _run: u32, _runs: u32) {
    }
    /// The engine's live view, about once per interval.
    fn progress(&mut self, _progress: &Progress) {}
    /// A level is measured (all its runs merged).
    fn level_done(&mut self, _index: usize, _level: &LevelResult) {}
    /// The target was stopped; nothing of it is left.
    fn stopped(&mut self, _target: &Target) {}
}

/// Events nobody listens to.
pub struct Silent;

impl TrialEvents for Silent {}

/// Run a trial: start the target, load it at every level, stop it. A stop asked for
/// (`stop`) ends the trial after the run in progress, keeping what was measured; the
/// target is stopped on every path. A start abandoned by the stop token returns an outcome
/// with no level and `interrupted` set.
pub fn run(
    trial: &Trial,
    stop: &StopToken,
    events: &mut dyn TrialEvents,
) -> Result<TrialOutcome, LabError> {
    let mut fixed = trial.levels.clone().into_iter();
    run_adaptive(trial, stop, events, &mut |_| fixed.next())
}

/// Run a trial whose levels are chosen as it goes (a capacity search): `next_level` gets
/// the levels measured so far and returns the next one, or None to end; `trial.levels` is
/// only checked to be non-empty. The target is started once for all levels.
pub fn run_adaptive(
    trial: &Trial,
    stop: &StopToken,
    events: &mut dyn TrialEvents,
    next_level: &mut dyn FnMut(&[LevelResult]) -> Option<Level>,
) -> Result<TrialOutcome, LabError> {
    if trial.levels.is_empty() || trial.repeat == 0 {
        return Err(LabError::Inconsistent(
            "a trial needs at least one level and one run".into(),
        ));
    }
    events.starting(&trial.target);
    let started = match start(trial, stop, events) {
        Ok(started) => started,
        Err(LabError::Interrupted) => {
            return Ok(TrialOutcome {
                levels: Vec::new(),
                interrupted: true,
                base_url: String::new(),
            })
        }
        Err(e) => return Err(e),
    };
    let (base_url, started) = started;
    let measured = load_levels(trial, &started, &base_url, stop, events, next_level);
    let stopped = started.stop();
    if stopped.is_ok() && !matches!(trial.target, Target::External { .. }) {
        events.stopped(&trial.target);
    }
    let (levels, interrupted) = measured?;
    stopped?;
    Ok(TrialOutcome {
        levels,
        interrupted,
        base_url,
    })
}

/// The load's full URL on a target at `base`: `path` joined to it, or a scenario's base.
fn full_url(base: &str, path: &str) -> String {
    if path.contains("://") {
        path.to_string()
    } else {
        format!("{}{path}", base.trim_end_matches('/'))
    }
}

/// What a load of `workload` at `path` sends to `target`: the forum's page mix when the
/// forum was given no other workload (no scenario, no path), else `workload` itself.
pub fn target_workload(
    target: &Target,
    path: &str,
    workload: &Workload,
) -> Result<Workload, LabError> {
    if let Target::Forum { dataset, .. } = target {
        if workload.scenario().is_none() && path.is_empty() {
            // The scenario's own base URL is never used (the spec's URL is), so a fixed one
            // keeps the text, and its hash in every result, the same from run to run.
            let text = forum::app::scenario(&dataset.summary.shape, "http://127.0.0.1");
            return Workload::from_scenario_text(&text, Path::new("."), FORUM_SCENARIO)
                .map_err(|e| LabError::Inconsistent(format!("the forum's scenario: {e}")));
        }
    }
    Ok(workload.clone())
}

/// The spec of the whole trial on the started target (URLs made absolute) and what it
/// sends (the forum's page mix when the forum was given no other workload).
fn absolute_spec(
    trial: &Trial,
    started: &Started,
    base: &str,
) -> Result<(RunSpec, Workload), LabError> {
    let mut spec = trial.load.clone();
    let mut workload = target_workload(&trial.target, &spec.url, &trial.workload)?;
    spec.url = full_url(base, &spec.url);
    if let Some(stack) = started.stack() {
        // `--addresses N`: the generator spreads its connections over every address.
        let addresses = stack.front_addresses();
        if addresses.len() > 1 && spec.connect_to.is_empty() {
            spec.connect_to = addresses.iter().map(|a| a.to_string()).collect();
        }
        // A TLS stack's load trusts the lab's own certificate unless told otherwise.
        if !spec.tls.insecure && spec.tls.cacert.is_none() {
            spec.tls.cacert = stack.certificate().map(|p| p.display().to_string());
        }
    }
    if let Some(probe) = spec.probe.as_mut() {
        probe.url = full_url(base, &probe.url);
    }
    if let Some(files) = mail_files(started) {
        // The mail stack's load sends to the mailboxes it generated, unless given a list.
        if workload.mailbox_list().is_none() {
            let text = std::fs::read_to_string(&files.users)
                .map_err(|e| LabError::io(format!("reading {}", files.users.display()), e))?;
            let name = files.users.display().to_string();
            let list = webtune_engine::smtp::Mailboxes::parse(&text, &name)
                .map_err(LabError::Inconsistent)?;
            workload = Workload::mailboxes(list, &name);
        }
    }
    Ok((spec, workload))
}

/// The name results give the forum's own page mix.
pub const FORUM_SCENARIO: &str = "forum (seed 003: 20% forum list, 20% topic list, 60% thread)";

type Levels = (Vec<LevelResult>, bool);

fn load_levels(
    trial: &Trial,
    started: &Started,
    base: &str,
    stop: &StopToken,
    events: &mut dyn TrialEvents,
    next_level: &mut dyn FnMut(&[LevelResult]) -> Option<Level>,
) -> Result<Levels, LabError> {
    let (spec, workload) = absolute_spec(trial, started, base)?;
    let selector = started.selector(&trial.target)?;
    let mut logged_before: Vec<LogMessage> = Vec::new();
    let mut levels = Vec::new();
    let count = trial.levels.len();
    while let Some(level) = next_level(&levels) {
        let index = levels.len();
        if stop.stop_requested() {
            return Ok((levels, true));
        }
        if index > 0 && !trial.pause.is_zero() {
            sleep_unless_stopped(trial.pause, stop);
        }
        let level_spec = level.apply(&spec);
        // The sampler and the engine's threads start inside the stack's namespace and on
        // the client CPUs; this thread leaves both when the level is done.
        let side = started.load_side(&trial.host)?;
        let sampler = (!matches!(selector, ProcessSelector::Nothing)).then(|| {
            ServerSampler::start(trial.target.name(), selector.clone(), trial.sample_interval)
        });
        let mail = mail_files(started).map(|f| MailWatch::start(f, trial.sample_interval));
        let mut runs: Vec<RunResult> = Vec::new();
        let mut run_error = None;
        for run in 1..=trial.repeat {
            events.run_starting(index, count, level, run, trial.repeat);
            let outcome = match trial.run_load {
                Some(run_load) => {
                    let dir = started
                        .stack()
                        .map_or_else(std::env::temp_dir, |s| s.private_dir().to_path_buf());
                    run_load(&level_spec, &workload, stop, &dir)
                }
                None => {
                    webtune_engine::run(&level_spec, &workload, stop, &mut |p| events.progress(p))
                        .map_err(LabError::Engine)
                }
            };
            match outcome {
                Ok(result) => runs.push(result),
                Err(e) => {
                    run_error = Some(e);
                    break;
                }
            }
            if stop.stop_requested() {
                break;
            }
        }
        let mail = mail.map(|mut watch| {
            watch.load_ended();
            let drain = match run_error {
                None => watch.drain(trial.mail_drain, stop),
                Some(_) => Duration::ZERO,
            };
            let accepted = runs
                .iter()
                .filter_map(|r| r.smtp.as_ref())
                .map(|s| s.accepted)
                .sum();
            watch.finish(accepted, drain)
        });
        // Each run's measured window on the samples' clock: per-response server figures
        // count only the samples' share inside them, as the responses do.
        let windows: Vec<Window> = sampler
            .as_ref()
            .map(|s| runs.iter().map(|r| s.window_of(r)).collect())
            .unwrap_or_default();
        let samples = sampler.map(ServerSampler::finish);
        drop(side);
        if let Some(e) = run_error {
            return Err(e);
        }
        let Some(mut result) = RunResult::merge_repeats(runs) else {
            return Ok((levels, true));
        };
        if let Some(mut samples) = samples {
            samples.measured = windows;
            samples.parameters = trial.target.parameters().into_iter().collect();
            samples.parameters_set = trial.target.parameters_set();
            samples.host = started.stack().and_then(RunningStack::host_section);
            // The servers' logs grow over the trial: each level keeps what it added.
            let logged = started.log_messages();
            samples.log_messages = new_messages(&logged, &logged_before);
            logged_before = logged;
            samples.mail = mail;
            result.server = Some(samples);
        }
        let interrupted = result.interrupted || stop.stop_requested();
        let level_result = LevelResult { level, result };
        events.level_done(index, &level_result);
        levels.push(level_result);
        if interrupted {
            return Ok((levels, true));
        }
    }
    Ok((levels, false))
}

/// The private Postfix's files, when the target is the mail stack.
fn mail_files(started: &Started) -> Option<PostfixFiles> {
    started
        .stack()
        .filter(|s| s.stack() == crate::StackKind::Postfix)
        .map(|s| PostfixFiles::in_dir(s.private_dir()))
}

fn sleep_unless_stopped(length: Duration, stop: &StopToken) {
    let end = std::time::Instant::now() + length;
    while !stop.stop_requested() {
        let now = std::time::Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

/// The messages of `now` minus what `before` already counted.
pub fn new_messages(now: &[LogMessage], before: &[LogMessage]) -> Vec<LogMessage> {
    now.iter()
        .filter_map(|m| {
            let seen = before
                .iter()
                .filter(|b| b.server == m.server && b.level == m.level && b.message == m.message)
                .map(|b| b.count)
                .sum::<u64>();
            (m.count > seen).then(|| LogMessage {
                count: m.count - seen,
                ..m.clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str, count: u64) -> LogMessage {
        LogMessage {
            server: "mariadbd".into(),
            level: "warn".into(),
            message: text.into(),
            count,
        }
    }

    #[test]
    fn each_level_keeps_only_the_log_lines_it_added() {
        let before = vec![message("a", 2), message("b", 1)];
        let now = vec![message("a", 5), message("b", 1), message("c", 1)];
        let added = new_messages(&now, &before);
        assert_eq!(added, vec![message("a", 3), message("c", 1)]);
        assert!(new_messages(&before, &before).is_empty());
    }

    #[test]
    fn levels_set_connections_or_rate() {
        let spec = RunSpec {
            connections: 10,
            ..RunSpec::default()
        };
        assert_eq!(Level::AsSpecified.apply(&spec).connections, 10);
        let c = Level::Connections(64).apply(&spec);
        assert_eq!(c.connections, 64);
        assert!(!c.is_open_loop());
        let r = Level::Rate(500.0).apply(&spec);
        assert!(r.is_open_loop());
        assert_eq!(r.connections, 10);
        assert_eq!(Level::Rate(500.0).label(), "rate=500/s");
        assert_eq!(Level::Connections(8).value(), 8.0);
    }

    #[test]
    fn paths_join_the_base_and_urls_stay() {
        assert_eq!(
            full_url("http://127.0.0.1:8080/", "/cpu/1"),
            "http://127.0.0.1:8080/cpu/1"
        );
        assert_eq!(
            full_url("http://127.0.0.1:8080", ""),
            "http://127.0.0.1:8080"
        );
        assert_eq!(full_url("http://a:1", "http://b:2/x"), "http://b:2/x");
    }

    #[test]
    fn a_lab_stack_is_named_in_the_reports_first_line_and_an_external_server_is_not() {
        let stack = Target::Stack {
            kind: crate::StackKind::Nginx,
            settings: crate::stacks::settings_for(crate::StackKind::Nginx, &[]).unwrap(),
        };
        let line = stack.headline("http://127.0.0.1:8080");
        assert!(line.starts_with("Lab stack: nginx ("), "{line}");
        assert!(line.ends_with(") at http://127.0.0.1:8080\n"), "{line}");
        assert_eq!(Target::external("http://h:1").headline("http://h:1"), "");
    }

    #[test]
    fn a_trial_without_levels_is_refused_before_anything_starts() {
        let mut trial = Trial::new(
            Target::External {
                base_url: "http://127.0.0.1:1".into(),
                processes: Vec::new(),
                pids: Vec::new(),
            },
            RunSpec::default(),
        );
        trial.levels.clear();
        let e = run(&trial, &StopToken::new(), &mut Silent)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("at least one level"), "{e}");
    }
}
