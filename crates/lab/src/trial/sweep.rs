//! `lab sweep STACK -c A,B,…` as a request: one start of a lab stack (seed 003's forum on a
//! stack with PHP unless told otherwise, else its built-in site) loaded at each connection
//! level with the sweep's own load (seed 003's protocol: each level's warm-up and cool-down
//! left out, a pause between levels). The knee of the resulting sweep is `report::knee`'s
//! (it reads stalls the renderer finds); the command asks it. `levels_of` gives the levels
//! of a sweep of a server the user runs (`webtune sweep URL`).

use super::request::{path_of, App, ForumData, ForumRequest};
use super::{path::default_path, path::Served, Level, Target, Trial};
use crate::host;
use crate::stacks::{settings_for, StackKind};
use crate::LabError;
use std::path::PathBuf;
use std::time::Duration;
use webtune_engine::Workload;
use webtune_model::sweep::SweepVariable;
use webtune_model::{RunSpec, StopCondition};

/// The levels of a sweep of a server the user runs (`webtune sweep URL`): connections
/// (closed loop), or request rates (open loop) when any are given.
pub fn levels_of(
    connections: &[u32],
    rates: &[f64],
) -> Result<(SweepVariable, Vec<Level>), LabError> {
    let refused = |text: &str| Err(LabError::Inconsistent(text.to_string()));
    if !rates.is_empty() {
        if rates.iter().any(|r| !r.is_finite() || *r <= 0.0) {
            return refused("--rates must be positive numbers, e.g. --rates 1000,2000,4000");
        }
        return Ok((
            SweepVariable::Rate,
            rates.iter().map(|&r| Level::Rate(r)).collect(),
        ));
    }
    if connections.is_empty() {
        return refused(
            "give the levels: -c 8,32,128 (connections) or --rates 1000,2000 (open loop)",
        );
    }
    if connections.contains(&0) {
        return refused("-c levels must be at least 1");
    }
    Ok((
        SweepVariable::Connections,
        connections.iter().map(|&c| Level::Connections(c)).collect(),
    ))
}

/// A lab sweep over connection levels.
#[derive(Debug, Clone)]
pub struct SweepRequest {
    pub stack: String,
    /// None: the stack's own (`App::default_for`).
    pub app: Option<App>,
    /// `NAME=VALUE`: the stack's, and with the forum the database's (`db.*`).
    pub set: Vec<String>,
    pub data: ForumData,
    /// A scenario file instead of the forum's own page mix (or the site's path).
    pub scenario: Option<PathBuf>,
    /// The site's path [default: the stack's own, as `lab run`'s].
    pub path: Option<String>,
    /// The levels: connections, each at least 1.
    pub connections: Vec<u32>,
    /// Each level's length, of which `warmup` and `cooldown` are left out of its figures.
    pub duration: Duration,
    pub warmup: Duration,
    pub cooldown: Duration,
    /// Rest between levels.
    pub pause: Duration,
    /// The generator's threads [default: the cores available].
    pub threads: Option<u32>,
    /// A response given up on after this long.
    pub timeout: Duration,
    pub sample_interval: Duration,
    /// Keep the stack's and the database's directories after the stop.
    pub keep: bool,
}

/// What a sweep's trial serves: the app and the path loaded (empty: the forum's page mix or
/// a scenario).
pub struct Swept {
    pub trial: Trial,
    pub app: App,
    pub path: String,
}

impl Default for SweepRequest {
    /// Seed 003's protocol: 10 s levels, the first 2 s and the last 1 s left out, 1 s apart.
    fn default() -> SweepRequest {
        SweepRequest {
            stack: String::new(),
            app: None,
            set: Vec::new(),
            data: ForumData::default(),
            scenario: None,
            path: None,
            connections: Vec::new(),
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(2),
            cooldown: Duration::from_secs(1),
            pause: Duration::from_secs(1),
            threads: None,
            timeout: Duration::from_secs(30),
            sample_interval: crate::DEFAULT_INTERVAL,
            keep: false,
        }
    }
}

impl SweepRequest {
    /// The levels are each at least one connection.
    pub fn check_levels(&self) -> Result<(), LabError> {
        if self.connections.contains(&0) {
            return Err(LabError::Inconsistent(
                "-c levels must be at least 1, e.g. -c 8,32,128".into(),
            ));
        }
        Ok(())
    }

    /// The app swept: the one given, else the stack's own (issue 39: `lab sweep nginx -c …`
    /// sweeps nginx's site, `lab sweep apache-prefork -c …` seed 003's forum).
    pub fn app(&self) -> Result<App, LabError> {
        match self.app {
            Some(app) => Ok(app),
            None => Ok(App::default_for(StackKind::from_name(&self.stack)?)),
        }
    }

    /// The load of every level at `path` (the levels set its connections).
    pub fn load(&self, path: &str) -> Result<RunSpec, LabError> {
        let spec = RunSpec {
            url: path.to_string(),
            connections: self.connections.first().copied().unwrap_or(1),
            threads: self.threads.unwrap_or_else(webtune_engine::available_cores),
            stop: StopCondition::Duration {
                seconds: self.duration.as_secs_f64(),
            },
            warmup_s: self.warmup.as_secs_f64(),
            cooldown_s: self.cooldown.as_secs_f64(),
            timeout_ms: self.timeout.as_millis() as u64,
            ..RunSpec::default()
        };
        spec.validate()
            .map_err(|e| LabError::Inconsistent(e.to_string()))?;
        Ok(spec)
    }

    /// The trial: the target (the forum's dataset built or taken from the cache, `progress`
    /// hearing a build's steps), its load and every level; all checked before anything
    /// starts.
    pub fn trial(&self, progress: &mut dyn FnMut(&str)) -> Result<Swept, LabError> {
        self.check_levels()?;
        let app = self.app()?;
        if app == App::Forum && self.path.is_some() {
            return Err(LabError::Inconsistent(
                "--path is for --app site; the forum loads its own page mix (or --scenario)".into(),
            ));
        }
        let workload = match &self.scenario {
            Some(path) => Workload::from_scenario_file(path)
                .map_err(|e| LabError::Inconsistent(e.to_string()))?,
            None => Workload::request(),
        };
        let (target, path) = match app {
            // Without --scenario the forum's own page mix (the trial's default for the forum).
            App::Forum => {
                let forum = ForumRequest {
                    stack: self.stack.clone(),
                    set: self.set.clone(),
                    data: self.data,
                    mysql_config: None,
                };
                (forum.target(progress)?, String::new())
            }
            App::Site => self.site(&workload)?,
        };
        let mut trial = Trial::new(target, self.load(&path)?);
        trial.workload = workload;
        trial.levels = self
            .connections
            .iter()
            .map(|&c| Level::Connections(c))
            .collect();
        trial.pause = self.pause;
        trial.sample_interval = self.sample_interval;
        trial.keep_dir = self.keep;
        Ok(Swept { trial, app, path })
    }

    fn site(&self, workload: &Workload) -> Result<(Target, String), LabError> {
        let stack = StackKind::from_name(&self.stack)?;
        if stack == StackKind::External {
            return Err(LabError::Inconsistent(
                "lab sweep starts its stack; for a server you run use `webtune sweep URL`".into(),
            ));
        }
        let settings = settings_for(stack, &self.set)?;
        host::check_privilege(&settings)?;
        // As `lab run`: the given path, else the stack's own default (the empty GIF on a
        // stack without PHP); a scenario's requests carry their own paths.
        let path = if workload.scenario().is_some() {
            String::new()
        } else {
            path_of(
                self.path.as_deref(),
                default_path(Served::Stack(stack), workload),
            )?
        };
        Ok((
            Target::Stack {
                kind: stack,
                settings,
            },
            path,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(stack: &str, connections: &[u32]) -> SweepRequest {
        SweepRequest {
            stack: stack.into(),
            connections: connections.to_vec(),
            threads: Some(2),
            ..SweepRequest::default()
        }
    }

    #[test]
    fn a_levels_load_comes_from_the_sweeps_own_settings() {
        let spec = sweep("apache-prefork", &[8, 32]).load("/cpu/2000").unwrap();
        assert_eq!(spec.url, "/cpu/2000");
        assert_eq!(spec.threads, 2);
        assert_eq!(spec.connections, 8);
        assert_eq!(spec.stop, StopCondition::Duration { seconds: 10.0 });
        assert_eq!(spec.warmup_s, 2.0);
        assert_eq!(spec.cooldown_s, 1.0);
        let short = SweepRequest {
            duration: Duration::from_secs(2),
            ..sweep("nginx", &[2])
        };
        let e = short.load("/").unwrap_err().to_string();
        assert!(e.contains("leave nothing to measure"), "{e}");
    }

    #[test]
    fn a_stack_without_php_sweeps_its_site_at_its_own_path_level_by_level() {
        let swept = sweep("nginx", &[1, 4]).trial(&mut |_| {}).unwrap();
        assert_eq!(swept.app, App::Site);
        assert_eq!(swept.path, "/empty.gif");
        assert_eq!(
            swept.trial.levels,
            [Level::Connections(1), Level::Connections(4)]
        );
        assert_eq!(swept.trial.pause, Duration::from_secs(1));
        assert_eq!(sweep("apache-event", &[1]).app().unwrap(), App::Forum);
    }

    #[test]
    fn a_sweep_of_a_server_is_over_connections_or_rates() {
        let (variable, levels) = levels_of(&[1, 8], &[]).unwrap();
        assert_eq!(variable, SweepVariable::Connections);
        assert_eq!(levels, [Level::Connections(1), Level::Connections(8)]);
        let (variable, levels) = levels_of(&[], &[100.0, 200.0]).unwrap();
        assert_eq!(variable, SweepVariable::Rate);
        assert_eq!(levels, [Level::Rate(100.0), Level::Rate(200.0)]);
        let e = |c: &[u32], r: &[f64]| levels_of(c, r).unwrap_err().to_string();
        assert!(e(&[], &[]).contains("give the levels"));
        assert!(e(&[0], &[]).contains("at least 1"));
        assert!(e(&[], &[f64::NAN]).contains("positive"));
        assert!(e(&[], &[-1.0]).contains("positive"));
    }

    #[test]
    fn what_a_sweep_cannot_do_is_refused_before_anything_starts() {
        let e = |r: SweepRequest| r.trial(&mut |_| {}).err().unwrap().to_string();
        assert!(e(sweep("nginx", &[8, 0])).contains("at least 1"));
        assert!(e(sweep("external", &[1])).contains("webtune sweep URL"));
        let forum_path = SweepRequest {
            app: Some(App::Forum),
            path: Some("/x".into()),
            ..sweep("nginx-php-fpm", &[1])
        };
        assert!(e(forum_path).contains("--path is for --app site"));
    }
}
