//! `lab run` as a request: what the user named (a stack, the forum on one, a config of
//! their own, or a server they run) and how the lab runs it, turned into the trial's
//! target and the path it loads, every combination checked before anything starts. The
//! forum's part (`ForumRequest`: its stack with PHP, the settings split between the web
//! stack and the database, the user's my.cnf, the dataset built or taken from the cache)
//! is shared by `lab run`, `lab sweep` and `lab compare`. Commands fill these from their
//! flags; the flag names in the refusals are theirs.

use super::path::{default_path, load_path, Served};
use super::{Target, Trial};
use crate::forum::dataset::{self, Dataset};
use crate::forum::{data, dbparams, DbConfig, DbOptions};
use crate::host::{self, HostSettings};
use crate::import::{ConfigTree, Import, Server};
use crate::params::parse_assignment;
use crate::stacks::{settings_for, StackKind};
use crate::LabError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;
use webtune_engine::Workload;
use webtune_model::RunSpec;

/// What a lab stack serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum App {
    /// The built-in site: /empty.gif, /index.html, /cpu/N.
    #[default]
    Site,
    /// Seed 003's PHP forum on a private MariaDB.
    Forum,
}

impl App {
    /// The app a stack serves when none is named: the forum where PHP can run it.
    pub fn default_for(stack: StackKind) -> App {
        if stack.has_php() {
            App::Forum
        } else {
            App::Site
        }
    }
}

/// Which forum: its size and seed (seed 003's by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForumData {
    pub posts: u64,
    pub seed: u64,
}

impl Default for ForumData {
    fn default() -> ForumData {
        ForumData {
            posts: data::SEED_003_POSTS,
            seed: data::DEFAULT_SEED,
        }
    }
}

impl ForumData {
    /// The dataset: from the cache, or built now (`progress` hears each step).
    pub fn dataset(self, progress: &mut dyn FnMut(&str)) -> Result<Dataset, LabError> {
        dataset::ensure(self.posts, self.seed, &DbOptions::database(), progress)
    }
}

/// Is this name the forum's database, for `lab params`?
pub fn is_database(name: &str) -> bool {
    matches!(name, "mariadb" | "db" | "database")
}

/// The forum on a PHP stack with its database.
#[derive(Debug, Clone, Default)]
pub struct ForumRequest {
    /// A stack with PHP.
    pub stack: String,
    /// `NAME=VALUE`: the web stack's, and the database's (`db.*`).
    pub set: Vec<String>,
    pub data: ForumData,
    /// The user's my.cnf, copied, instead of the lab's (`db.*` then set its options).
    pub mysql_config: Option<PathBuf>,
}

impl ForumRequest {
    /// The target, the settings checked and the dataset built or taken from the cache
    /// (`progress` hears a build's steps): everything checked before anything starts.
    pub fn target(&self, progress: &mut dyn FnMut(&str)) -> Result<Target, LabError> {
        let stack = StackKind::from_name(&self.stack)?;
        if !stack.has_php() {
            return Err(LabError::Inconsistent(format!(
                "--app forum needs a stack with PHP; {} has none: give --app site to load its built-in site, or a PHP stack (apache-prefork, apache-worker, apache-event, nginx-apache or nginx-php-fpm)",
                stack.name()
            )));
        }
        let (web, db) = dbparams::split_assignments(&self.set);
        let web = settings_for(stack, &web)?;
        host::check_privilege(&web)?;
        let db = match &self.mysql_config {
            None => DbConfig::Generated(dbparams::settings_for(&db)?),
            // `db.NAME=VALUE` sets the server option NAME in the copy.
            Some(file) => DbConfig::Imported(Box::new(import_config(Server::MariaDb, file, &db)?)),
        };
        Ok(Target::Forum {
            kind: stack,
            web,
            db,
            dataset: Box::new(self.data.dataset(progress)?),
        })
    }
}

/// Read a config tree of the user's (a syntax error names its file and line) and check the
/// `NAME=VALUE` overrides against it.
pub fn import_config(server: Server, file: &Path, set: &[String]) -> Result<Import, LabError> {
    let tree = ConfigTree::read(server, file).map_err(|e| LabError::Inconsistent(e.to_string()))?;
    let pairs: Vec<(String, String)> = set
        .iter()
        .map(|a| parse_assignment(a))
        .collect::<Result<_, _>>()?;
    Import::new(tree, &pairs)
}

/// The flag that names a config of the user's for `server`.
pub fn config_flag(server: Server) -> &'static str {
    match server {
        Server::Nginx => "--nginx-config",
        Server::Apache => "--apache-config",
        Server::PhpFpm => "--php-fpm-config",
        Server::MariaDb => "--mysql-config",
    }
}

/// `lab run` (and `lab capacity`): what runs and how, before the load is known.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// A stack from `lab stacks`; none with `config`.
    pub stack: Option<String>,
    /// The user's nginx, Apache or php-fpm config, run on a private copy.
    pub config: Option<(Server, PathBuf)>,
    /// With the forum: the user's my.cnf for its database.
    pub mysql_config: Option<PathBuf>,
    /// The external stack's base URL.
    pub url: Option<String>,
    /// `NAME=VALUE` parameters.
    pub set: Vec<String>,
    /// The external server's command names and pids to sample.
    pub processes: Vec<String>,
    pub pids: Vec<i32>,
    pub app: App,
    pub data: ForumData,
    /// CPU sets and the front server's addresses.
    pub host: HostSettings,
    pub sample_interval: Duration,
    /// Keep the stack's private directory after the stop.
    pub keep: bool,
}

impl RunRequest {
    /// The target and the path to load on it (`given`: the path after `--`), everything
    /// checked before anything starts; the forum's dataset is built or taken from the
    /// cache (`progress` hears a build's steps).
    pub fn target(
        &self,
        given: Option<&str>,
        workload: &Workload,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(Target, String), LabError> {
        match self.app {
            App::Forum => self.forum_target(given, workload, progress),
            App::Site => self.site_target(given, workload),
        }
    }

    fn forum_target(
        &self,
        given: Option<&str>,
        workload: &Workload,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(Target, String), LabError> {
        if self.url.is_some() || !self.processes.is_empty() || !self.pids.is_empty() {
            return Err(refused(
                "--app forum starts its own stack: no URL, no --process and no --pid",
            ));
        }
        if self.config.is_some() {
            return Err(refused(
                "--app forum runs on a lab stack, not on your own config",
            ));
        }
        // Without a path or a scenario, the forum's own page mix (the trial's default).
        let path = match (given, workload.scenario()) {
            (None, None) => String::new(),
            (given, _) => path_of(given, "")?,
        };
        let forum = ForumRequest {
            stack: self.stack.clone().unwrap_or_default(),
            set: self.set.clone(),
            data: self.data,
            mysql_config: self.mysql_config.clone(),
        };
        Ok((forum.target(progress)?, path))
    }

    fn site_target(
        &self,
        given: Option<&str>,
        workload: &Workload,
    ) -> Result<(Target, String), LabError> {
        if self.mysql_config.is_some() {
            return Err(refused(
                "--mysql-config goes with --app forum: the forum is what uses the database",
            ));
        }
        if let Some((server, file)) = &self.config {
            return self.imported_target(*server, file, given, workload);
        }
        let stack = StackKind::from_name(self.stack.as_deref().unwrap_or_default())?;
        let settings = settings_for(stack, &self.set)?;
        host::check_privilege(&settings)?;
        if stack == StackKind::External {
            return self.external_target(given);
        }
        if self.url.is_some() {
            return Err(LabError::Inconsistent(format!(
                "a URL only goes with the external stack; for {} give the path after --, e.g. -- /cpu/2000",
                stack.name()
            )));
        }
        if !self.processes.is_empty() || !self.pids.is_empty() {
            return Err(refused(
                "--process and --pid are for the external stack; lab stacks sample their own processes",
            ));
        }
        let path = path_of(given, default_path(Served::Stack(stack), workload))?;
        Ok((
            Target::Stack {
                kind: stack,
                settings,
            },
            path,
        ))
    }

    fn external_target(&self, given: Option<&str>) -> Result<(Target, String), LabError> {
        if !self.set.is_empty() {
            return Err(refused(
                "--set does not apply to the external stack: the lab does not configure it",
            ));
        }
        if self.host.server_cpus.is_some() || self.host.addresses > 1 {
            return Err(refused(
                "--server-cpus and --addresses need a stack the lab starts, not external",
            ));
        }
        let base_url = self.url.clone().ok_or_else(|| {
            refused(
                "the external stack needs its URL: webtune lab run external http://HOST:PORT -- ...",
            )
        })?;
        let path = match given {
            Some(given) => path_of(Some(given), "/")?,
            None => String::new(),
        };
        let target = Target::External {
            base_url,
            processes: self.processes.clone(),
            pids: self.pids.clone(),
        };
        Ok((target, path))
    }

    fn imported_target(
        &self,
        server: Server,
        file: &Path,
        given: Option<&str>,
        workload: &Workload,
    ) -> Result<(Target, String), LabError> {
        let flag = config_flag(server);
        if let Some(stack) = &self.stack {
            return Err(LabError::Inconsistent(format!(
                "give a stack ({stack}) or {flag}, not both"
            )));
        }
        if self.url.is_some() || !self.processes.is_empty() || !self.pids.is_empty() {
            return Err(LabError::Inconsistent(format!(
                "{flag} runs a private copy the lab starts: no URL, no --process and no --pid"
            )));
        }
        if self.host.addresses > 1 {
            return Err(LabError::Inconsistent(format!(
                "--addresses does not apply to {flag}: the private copy listens on 127.0.0.1 only"
            )));
        }
        let import = import_config(server, file, &self.set)?;
        let path = path_of(given, default_path(Served::Imported(&import), workload))?;
        Ok((
            Target::Imported {
                import: Box::new(import),
            },
            path,
        ))
    }

    /// The trial of `load` (its URL the path `target` came with) on `target`: `repeat`
    /// runs, sampled and kept as asked; a probe's path is relative to the stack, as the
    /// load's is.
    pub fn trial(&self, target: Target, load: RunSpec, workload: Workload, repeat: u32) -> Trial {
        let mut load = load;
        if let Some(probe) = load.probe.as_mut() {
            probe.url = load_path(Some(&probe.url), "/").unwrap_or_else(|_| probe.url.clone());
        }
        let mut trial = Trial::new(target, load);
        trial.workload = workload;
        trial.repeat = repeat;
        trial.sample_interval = self.sample_interval;
        trial.keep_dir = self.keep;
        trial.host = self.host.clone();
        trial
    }

    /// `lab run postfix`: the mail stack is the lab's own and listens on 127.0.0.1 only.
    pub fn check_mail(&self) -> Result<(), LabError> {
        if self.url.is_some() || !self.processes.is_empty() || !self.pids.is_empty() {
            return Err(refused(
                "the postfix stack is the lab's own: no URL, no --process and no --pid",
            ));
        }
        if self.config.is_some() {
            return Err(refused("the postfix stack takes no web server config"));
        }
        if self.host.addresses > 1 {
            return Err(refused(
                "--addresses is for the web stacks; Postfix listens on 127.0.0.1",
            ));
        }
        Ok(())
    }
}

fn refused(text: &str) -> LabError {
    LabError::Inconsistent(text.to_string())
}

/// `load_path` with its refusal as the lab's error.
pub(super) fn path_of(given: Option<&str>, default: &str) -> Result<String, LabError> {
    load_path(given, default).map_err(|e| LabError::Inconsistent(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stack: &str) -> RunRequest {
        RunRequest {
            stack: Some(stack.to_string()),
            sample_interval: crate::DEFAULT_INTERVAL,
            host: HostSettings {
                addresses: 1,
                ..HostSettings::default()
            },
            ..RunRequest::default()
        }
    }

    fn refusal(request: &RunRequest, given: Option<&str>) -> String {
        request
            .target(given, &Workload::request(), &mut |_| {})
            .err()
            .expect("refused")
            .to_string()
    }

    #[test]
    fn a_stack_loads_the_path_given_or_its_own() {
        let (target, path) = run("nginx")
            .target(None, &Workload::request(), &mut |_| {})
            .unwrap();
        assert_eq!(target.name(), "nginx");
        assert_eq!(path, "/empty.gif");
        let php = run("nginx-php-fpm");
        let (_, path) = php.target(None, &Workload::request(), &mut |_| {}).unwrap();
        assert_eq!(path, "/cpu/2000");
        let (_, path) = php
            .target(Some("/cpu/50"), &Workload::request(), &mut |_| {})
            .unwrap();
        assert_eq!(path, "/cpu/50");
        assert!(refusal(&php, Some("http://x/")).contains("not a URL"));
    }

    #[test]
    fn combinations_that_make_no_sense_are_refused_before_anything_starts() {
        let mut with_url = run("nginx");
        with_url.url = Some("http://127.0.0.1:8080".into());
        assert!(refusal(&with_url, None).contains("only goes with the external stack"));
        let mut external = run("external");
        assert!(refusal(&external, None).contains("needs its URL"));
        external.host.addresses = 2;
        assert!(refusal(&external, None).contains("need a stack the lab starts"));
        let mut db = run("nginx");
        db.mysql_config = Some("/etc/mysql/my.cnf".into());
        assert!(refusal(&db, None).contains("--mysql-config goes with --app forum"));
        let mut both = run("nginx");
        both.config = Some((Server::Nginx, "/etc/nginx/nginx.conf".into()));
        assert!(refusal(&both, None).contains("give a stack (nginx) or --nginx-config"));
        let mut forum = run("nginx");
        forum.app = App::Forum;
        assert!(refusal(&forum, None).contains("needs a stack with PHP"));
        forum.pids = vec![1];
        assert!(refusal(&forum, None).contains("starts its own stack"));
        let mut mail = run("postfix");
        mail.host.addresses = 2;
        assert!(mail
            .check_mail()
            .unwrap_err()
            .to_string()
            .contains("--addresses"));
    }

    #[test]
    fn an_external_server_loads_its_base_and_keeps_a_given_path() {
        let mut external = run("external");
        external.url = Some("http://127.0.0.1:8080".into());
        external.processes = vec!["nginx".into()];
        let (target, path) = external
            .target(None, &Workload::request(), &mut |_| {})
            .unwrap();
        assert!(
            matches!(target, Target::External { ref processes, .. } if processes == &["nginx"])
        );
        assert_eq!(path, "");
        let (_, path) = external
            .target(Some("/x"), &Workload::request(), &mut |_| {})
            .unwrap();
        assert_eq!(path, "/x");
    }

    #[test]
    fn a_trial_takes_the_requests_host_settings_and_a_probe_path_stays_a_path() {
        let mut request = run("nginx");
        request.keep = true;
        request.host.addresses = 3;
        let (target, path) = request
            .target(None, &Workload::request(), &mut |_| {})
            .unwrap();
        let mut load = RunSpec {
            url: path,
            ..RunSpec::default()
        };
        load.probe = Some(webtune_model::spec::ProbeSpec {
            url: "/health".into(),
            rate_per_s: 1.0,
        });
        let trial = request.trial(target, load, Workload::request(), 2);
        assert!(trial.keep_dir);
        assert_eq!(trial.repeat, 2);
        assert_eq!(trial.host.addresses, 3);
        assert_eq!(trial.load.probe.unwrap().url, "/health");
    }

    #[test]
    fn the_forum_is_the_default_where_php_runs() {
        assert_eq!(
            App::default_for(StackKind::from_name("apache-prefork").unwrap()),
            App::Forum
        );
        assert_eq!(App::default_for(StackKind::Nginx), App::Site);
        assert!(is_database("mariadb") && !is_database("nginx"));
    }
}
