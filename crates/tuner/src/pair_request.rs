//! `lab compare` as a request: two arms from one template — a lab stack's built-in site,
//! seed 003's forum on a PHP stack (each arm on its own private database, `db.*` settings
//! going to it), or two private copies of a config of the user's — each with its own
//! `NAME=VALUE` settings (`a`, `b`), checked before anything starts, then compared by
//! `lab_pair` with the names and the note the report shows. The command fills it from its
//! flags and renders the outcome.

use crate::lab_pair::{self, Arm, PairOutcome};
use anyhow::{anyhow, bail};
use std::path::PathBuf;
use webtune_engine::{RunControl, Workload};
use webtune_lab::forum::{dbparams, DbConfig};
use webtune_lab::import::{Import, Server};
use webtune_lab::trial::path::{default_path, load_path, Served};
use webtune_lab::trial::{config_flag, import_config, App, ForumData, Target};
use webtune_lab::{settings_for, Settings as StackSettings, StackKind};
use webtune_model::RunSpec;
use webtune_search::interleave::Settings;

/// Two arms to compare.
#[derive(Debug, Clone, Default)]
pub struct PairRequest {
    /// A lab web stack; none with `config`.
    pub stack: Option<String>,
    /// The user's nginx, Apache or php-fpm config: both arms are private copies of it.
    pub config: Option<(Server, PathBuf)>,
    pub app: App,
    /// The forum's size and seed (`app` forum).
    pub data: ForumData,
    /// Arm A's and arm B's settings (none: the defaults, or the config as it is).
    pub a: Vec<String>,
    pub b: Vec<String>,
}

/// The two arms, checked, and what the report calls them.
pub struct Arms {
    kind: ArmsKind,
    /// Arm A's and arm B's names.
    pub names: [String; 2],
    data: ForumData,
}

enum ArmsKind {
    Stacks(StackKind, [StackSettings; 2]),
    Forums(StackKind, [(StackSettings, DbConfig); 2]),
    Imports(PathBuf, Box<[Import; 2]>),
}

impl PairRequest {
    /// The arms, every setting checked (a refusal names `--a` or `--b`); nothing starts.
    pub fn arms(&self) -> anyhow::Result<Arms> {
        if let Some((server, file)) = &self.config {
            return self.imports(*server, file);
        }
        let stack = self.stack.clone().unwrap_or_default();
        let kind = StackKind::from_name(&stack)?;
        if kind == StackKind::External || kind == StackKind::Postfix {
            bail!(
                "lab compare starts two stacks of the lab's web templates; {} is not one",
                kind.name()
            );
        }
        let name = |set: &[String]| {
            if set.is_empty() {
                format!("{stack} (defaults)")
            } else {
                format!("{stack} {}", set.join(" "))
            }
        };
        let names = [name(&self.a), name(&self.b)];
        let kind = match self.app {
            App::Forum => self.forums(kind)?,
            App::Site => {
                let sets = [
                    settings_for(kind, &self.a).map_err(|e| anyhow!("--a: {e}"))?,
                    settings_for(kind, &self.b).map_err(|e| anyhow!("--b: {e}"))?,
                ];
                for s in &sets {
                    webtune_lab::host::check_privilege(s)?;
                }
                ArmsKind::Stacks(kind, sets)
            }
        };
        Ok(Arms {
            kind,
            names,
            data: self.data,
        })
    }

    fn forums(&self, kind: StackKind) -> anyhow::Result<ArmsKind> {
        if !kind.has_php() {
            bail!(
                "--app forum needs a stack with PHP; {} serves its own site (use --app site, or apache-prefork, nginx-php-fpm …)",
                kind.name()
            );
        }
        let arm = |flag: &str, set: &[String]| -> anyhow::Result<(StackSettings, DbConfig)> {
            let (web, db) = dbparams::split_assignments(set);
            let web = settings_for(kind, &web).map_err(|e| anyhow!("{flag}: {e}"))?;
            let db = dbparams::settings_for(&db).map_err(|e| anyhow!("{flag}: {e}"))?;
            webtune_lab::host::check_privilege(&web)?;
            Ok((web, db.into()))
        };
        Ok(ArmsKind::Forums(
            kind,
            [arm("--a", &self.a)?, arm("--b", &self.b)?],
        ))
    }

    fn imports(&self, server: Server, file: &std::path::Path) -> anyhow::Result<Arms> {
        let imports = [
            import_config(server, file, &self.a).map_err(|e| anyhow!("--a: {e:#}"))?,
            import_config(server, file, &self.b).map_err(|e| anyhow!("--b: {e:#}"))?,
        ];
        let label = format!("{} {}", config_flag(server), file.display());
        let name = |set: &[String]| {
            if set.is_empty() {
                format!("{label} (as it is)")
            } else {
                format!("{label} {}", set.join(" "))
            }
        };
        Ok(Arms {
            names: [name(&self.a), name(&self.b)],
            kind: ArmsKind::Imports(file.to_path_buf(), Box::new(imports)),
            data: self.data,
        })
    }
}

impl Arms {
    /// The path both arms load: the one given after `--`, else the arms' own (the forum's
    /// page mix for the forum: no path).
    pub fn path(&self, given: Option<&str>, workload: &Workload) -> anyhow::Result<String> {
        let default = match &self.kind {
            ArmsKind::Stacks(kind, _) => default_path(Served::Stack(*kind), workload),
            ArmsKind::Forums(..) => "",
            ArmsKind::Imports(_, imports) => default_path(Served::Imported(&imports[0]), workload),
        };
        Ok(load_path(given, default)?)
    }

    /// Start both arms, compare them by `template` (its URL the path), stop both; the
    /// forum's dataset is built or taken from the cache first (`progress` hears a build's
    /// steps). Returns the outcome and the report's notes.
    pub fn compare(
        &self,
        template: &RunSpec,
        workload: &Workload,
        settings: Settings,
        control: &RunControl,
        say: &mut dyn FnMut(&str),
        progress: &mut dyn FnMut(&str),
    ) -> anyhow::Result<(PairOutcome, Vec<String>)> {
        let failed = |e: String| anyhow!("lab compare: {e}");
        let (pair, note) = match &self.kind {
            ArmsKind::Stacks(kind, sets) => {
                let pair =
                    lab_pair::compare(*kind, sets, template, workload, settings, control, say)
                        .map_err(failed)?;
                let note = "each block is a short run of its own: connections to the arm open \
                    in its discarded first part, and the idle arm holds none; each start begins \
                    with one uncounted block to each arm"
                    .to_string();
                (pair, note)
            }
            ArmsKind::Forums(kind, arms) => {
                let dataset = self.data.dataset(progress)?;
                let targets = arms.clone().map(|(web, db)| Target::Forum {
                    kind: *kind,
                    web,
                    db,
                    dataset: Box::new(dataset.clone()),
                });
                let pair =
                    lab_pair::compare_targets(&targets, template, workload, settings, control, say)
                        .map_err(failed)?;
                let note = format!(
                    "each arm is the forum ({} posts, seed {}) on its own private MariaDB, copied \
                     from the cached data at every start",
                    self.data.posts, self.data.seed
                );
                (pair, note)
            }
            ArmsKind::Imports(file, imports) => {
                let start = |arm: usize| {
                    let options = webtune_lab::StartOptions {
                        interrupt: Some(control.clone()),
                        ..webtune_lab::StartOptions::default()
                    };
                    webtune_lab::RunningStack::start_imported(&imports[arm], options)
                        .map(Arm::from_stack)
                        .map_err(|e| e.to_string())
                };
                let pair =
                    lab_pair::compare_with(&start, template, workload, settings, control, say)
                        .map_err(failed)?;
                let note = format!(
                    "both arms are private copies of {} (never the running server)",
                    file.display()
                );
                (pair, note)
            }
        };
        let notes = vec![pair.memory.clone(), note];
        Ok((pair, notes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(stack: &str, a: &[&str], b: &[&str]) -> PairRequest {
        PairRequest {
            stack: Some(stack.into()),
            a: a.iter().map(|s| s.to_string()).collect(),
            b: b.iter().map(|s| s.to_string()).collect(),
            ..PairRequest::default()
        }
    }

    fn refusal(request: &PairRequest) -> String {
        request.arms().err().expect("refused").to_string()
    }

    #[test]
    fn two_arms_of_a_stack_are_named_by_their_settings_and_load_its_own_path() {
        let arms = pair("nginx-apache", &["backend.MaxRequestWorkers=12"], &[])
            .arms()
            .unwrap();
        assert_eq!(
            arms.names,
            [
                "nginx-apache backend.MaxRequestWorkers=12",
                "nginx-apache (defaults)"
            ]
        );
        let plain = Workload::request();
        assert_eq!(arms.path(None, &plain).unwrap(), "/cpu/2000");
        assert_eq!(arms.path(Some("/cpu/1"), &plain).unwrap(), "/cpu/1");
        assert!(arms.path(Some("http://x/"), &plain).is_err());
    }

    #[test]
    fn what_cannot_be_compared_is_refused_naming_the_arm() {
        assert!(refusal(&pair("postfix", &[], &[])).contains("is not one"));
        assert!(refusal(&pair("external", &[], &[])).contains("is not one"));
        assert!(refusal(&pair("nginx", &[], &["NoSuch=1"])).starts_with("--b: "));
        let forum = PairRequest {
            app: App::Forum,
            ..pair("nginx", &[], &[])
        };
        assert!(refusal(&forum).contains("needs a stack with PHP"));
        let forum = PairRequest {
            app: App::Forum,
            ..pair("nginx-php-fpm", &["db.max_connections=5"], &[])
        };
        assert!(refusal(&forum).starts_with("--a: "));
    }
}
