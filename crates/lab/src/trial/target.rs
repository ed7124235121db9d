//! What a trial runs against: its `Target` (a lab stack, the forum with its database, a
//! user's imported config, or an external server), what results record of it, and how it
//! is started and stopped (`Started`; `start_target` outside a trial, for the arms of a
//! decisive pair that run at once).

use super::Trial;
use super::TrialEvents;
use crate::forum::dataset::Dataset;
use crate::forum::{DbConfig, DbOptions, ForumStack};
use crate::host::HostSettings;
use crate::supervisor::LoadSide;
use crate::{LabError, ProcessSelector, RunningStack, Settings, StackKind, StartOptions};
use webtune_model::server::LogMessage;
use webtune_model::StopToken;

/// What a trial loads.
pub enum Target {
    /// A lab stack, started with these settings for the trial and stopped after it.
    Stack { kind: StackKind, settings: Settings },
    /// Seed 003's forum on a PHP stack, with its private database (`db.*` settings, or a
    /// copy of the user's my.cnf).
    Forum {
        kind: StackKind,
        web: Settings,
        db: DbConfig,
        dataset: Box<Dataset>,
    },
    /// The user's own nginx, Apache or php-fpm config, run on a private copy (`import`);
    /// `--set` overrides are in the import.
    Imported { import: Box<crate::import::Import> },
    /// A server the user runs, at `base_url`. The sampler watches the process tree that
    /// listens on its port among those named `processes`, or the trees of `pids`
    /// (`external::selector`); neither given: no server-side sampling.
    External {
        base_url: String,
        processes: Vec<String>,
        pids: Vec<i32>,
    },
}

impl Target {
    /// A server the user runs at `base_url`, sampled by nothing: what `sweep URL` and
    /// `capacity URL` load.
    pub fn external(base_url: &str) -> Target {
        Target::External {
            base_url: base_url.to_string(),
            processes: Vec::new(),
            pids: Vec::new(),
        }
    }

    /// The line a lab command's report opens with: what ran, with which settings, where
    /// ("Lab stack: nginx (defaults) at http://127.0.0.1:8080\n"); none for a server the
    /// user runs.
    pub fn headline(&self, base_url: &str) -> String {
        match self {
            Target::External { .. } => String::new(),
            target => format!(
                "Lab stack: {} ({}) at {base_url}\n",
                target.name(),
                target.describe_settings()
            ),
        }
    }

    /// The name results carry (`server.target`): the stack's name, or "external".
    pub fn name(&self) -> &'static str {
        match self {
            Target::Stack { kind, .. } | Target::Forum { kind, .. } => kind.name(),
            Target::Imported { import } => import.target_name(),
            Target::External { .. } => StackKind::External.name(),
        }
    }

    /// Every parameter's value (web and database), as results record them.
    pub(super) fn parameters(&self) -> Vec<(String, String)> {
        let list = |s: &Settings| -> Vec<(String, String)> {
            s.iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect()
        };
        match self {
            Target::Stack { settings, .. } => list(settings),
            Target::Forum { web, db, .. } => [list(web), db.parameters()].concat(),
            Target::Imported { import } => import.overrides().to_vec(),
            Target::External { .. } => Vec::new(),
        }
    }

    /// The parameters set explicitly, in the order given.
    pub(super) fn parameters_set(&self) -> Vec<String> {
        match self {
            Target::Stack { settings, .. } => settings.explicitly_set().to_vec(),
            Target::Forum { web, db, .. } => {
                [web.explicitly_set().to_vec(), db.explicitly_set()].concat()
            }
            Target::Imported { import } => {
                import.overrides().iter().map(|(n, _)| n.clone()).collect()
            }
            Target::External { .. } => Vec::new(),
        }
    }

    /// "defaults", or the settings that differ from them.
    pub fn describe_settings(&self) -> String {
        match self {
            Target::Stack { settings, .. } => settings.describe_changes(),
            Target::Forum { web, db, .. } => {
                let (web, db) = (web.describe_changes(), db.describe());
                match (web.as_str(), db.as_str()) {
                    (_, "defaults") => web,
                    ("defaults", _) => db,
                    _ => format!("{web} {db}"),
                }
            }
            Target::Imported { import } => format!("your config {}", import.describe()),
            Target::External { .. } => "not configured by webtune".into(),
        }
    }
}

/// What a running target offers the loop: its base URL, the processes to sample and the
/// servers' logs.
pub enum Started {
    Stack(Box<RunningStack>),
    Forum(Box<ForumStack>),
    External,
}

impl Started {
    /// The processes the sampler watches: a started stack's sessions, or an external
    /// server's process tree (an error when its candidates are several, or none).
    pub(super) fn selector(&self, target: &Target) -> Result<ProcessSelector, LabError> {
        Ok(match (self, target) {
            (Started::Stack(s), _) => ProcessSelector::Sessions(s.sessions()),
            (Started::Forum(f), _) => ProcessSelector::Sessions(f.sessions()),
            (
                Started::External,
                Target::External {
                    base_url,
                    processes,
                    pids,
                },
            ) => crate::external::selector(base_url, processes, pids)?,
            (Started::External, _) => ProcessSelector::Nothing,
        })
    }

    pub(super) fn log_messages(&self) -> Vec<LogMessage> {
        match self {
            Started::Stack(s) => s.log_messages(),
            Started::Forum(f) => f.log_messages(),
            Started::External => Vec::new(),
        }
    }

    /// Every live process of the target's servers now (the forum's database included);
    /// none for an external server.
    pub fn processes(&self) -> Vec<i32> {
        match self {
            Started::Stack(s) => s.processes(),
            Started::Forum(f) => f.processes(),
            Started::External => Vec::new(),
        }
    }

    /// The web stack (the forum's too); none for an external server.
    pub fn stack(&self) -> Option<&RunningStack> {
        match self {
            Started::Stack(s) => Some(s),
            Started::Forum(f) => f.stack(),
            Started::External => None,
        }
    }

    /// Where the generator runs: in the stack's namespace, on the client CPUs.
    pub(super) fn load_side(&self, host: &HostSettings) -> Result<LoadSide, LabError> {
        match self.stack() {
            Some(stack) => stack.load_side(),
            None => LoadSide::client_only(host),
        }
    }

    /// Stop every server of the target (an external one is left alone).
    pub fn stop(self) -> Result<(), LabError> {
        match self {
            Started::Stack(s) => (*s).stop(),
            Started::Forum(f) => (*f).stop(),
            Started::External => Ok(()),
        }
    }
}

/// Start the trial's target: its base URL and what the loop needs of it.
pub(super) fn start(
    trial: &Trial,
    stop: &StopToken,
    events: &mut dyn TrialEvents,
) -> Result<(String, Started), LabError> {
    let options = StartOptions {
        keep_dir: trial.keep_dir,
        interrupt: Some(stop.clone()),
        host: trial.host.clone(),
        ..StartOptions::default()
    };
    let db_options = DbOptions {
        keep_dir: trial.keep_dir,
        interrupt: Some(stop.clone()),
        ..DbOptions::database()
    };
    start_with(&trial.target, options, db_options, events)
}

/// Start `target` outside a trial, with the lab's default options (an arm of a decisive
/// pair, which runs beside another): its base URL and the running servers. An external
/// server is not started; its URL is given back.
pub fn start_target(target: &Target, stop: &StopToken) -> Result<(String, Started), LabError> {
    struct Quiet;
    impl TrialEvents for Quiet {}
    let options = StartOptions {
        interrupt: Some(stop.clone()),
        ..StartOptions::default()
    };
    let db_options = DbOptions {
        interrupt: Some(stop.clone()),
        ..DbOptions::database()
    };
    start_with(target, options, db_options, &mut Quiet)
}

fn start_with(
    target: &Target,
    options: StartOptions,
    db_options: DbOptions,
    events: &mut dyn TrialEvents,
) -> Result<(String, Started), LabError> {
    match target {
        Target::Stack { kind, settings } => {
            let running = RunningStack::start(*kind, settings, options)?;
            events.reaped(&running.reaped().reaped);
            let base = running.base_url();
            events.ready(
                &base,
                &format!(
                    "sessions {:?}, dir {}",
                    running.sessions(),
                    running.private_dir().display()
                ),
            );
            Ok((base, Started::Stack(Box::new(running))))
        }
        Target::Forum {
            kind,
            web,
            db,
            dataset,
        } => {
            let forum = ForumStack::start(*kind, web, db, dataset, options, db_options)?;
            let base = forum.base_url();
            // The socket is what `webtune advise --live --mysql-socket` needs while it runs.
            let socket = forum
                .database()
                .map(|d| format!("; database socket {}", d.database().socket().display()))
                .unwrap_or_default();
            events.ready(&base, &format!("sessions {:?}{socket}", forum.sessions()));
            Ok((base, Started::Forum(Box::new(forum))))
        }
        Target::Imported { import } => {
            let running = RunningStack::start_imported(import, options)?;
            events.reaped(&running.reaped().reaped);
            let base = running.base_url();
            let detail = format!("dir {}", running.private_dir().display());
            events.ready(
                &base,
                &format!("sessions {:?}, {detail}", running.sessions()),
            );
            Ok((base, Started::Stack(Box::new(running))))
        }
        Target::External { base_url, .. } => Ok((base_url.clone(), Started::External)),
    }
}
