//! What a tune tunes: a lab stack, the forum on one, or a server the user runs through an
//! `--apply` command; how each turns a configuration into a lab trial target (the lab's
//! dependent limits filled in), its catalogue of parameters with their real ranges, its
//! default space and rules of thumb, and the winner's directives as the server writes them.

use webtune_lab::forum::dataset::Dataset;
use webtune_lab::trial::Target;
use webtune_lab::{settings_for, ParamKind, StackKind};
use webtune_search::space::{Config, Inert, KnownKind, KnownParam, Space, Value};

/// What is tuned: a lab stack, the forum on one, or a server the user runs.
pub enum Subject {
    /// A lab stack; `fixed` are `--set` values every trial keeps.
    Stack {
        kind: StackKind,
        fixed: Vec<(String, String)>,
    },
    /// Seed 003's forum on a PHP stack with its database (`db.*` parameters too).
    Forum {
        kind: StackKind,
        fixed: Vec<(String, String)>,
        dataset: Box<Dataset>,
    },
    /// A server webtune does not start: `apply` (with `{name}` placeholders) makes a
    /// configuration live and exits 0 when the target is ready; `restore` runs at the end.
    /// Each is killed (with its process group) after `timeout`.
    External {
        base_url: String,
        processes: Vec<String>,
        apply: String,
        restore: Option<String>,
        timeout: std::time::Duration,
    },
    /// A lab file system (`tune fs`): every trial makes one with the configuration (and
    /// `fixed`), runs `spec`'s workload on it and removes it (`lab::filesystem`).
    Fs {
        fixed: Vec<(String, String)>,
        spec: Box<webtune_model::fs::FsSpec>,
        host_sysctl: bool,
    },
}

impl Subject {
    /// The parameters the lab can set on this subject, with their real ranges (empty for
    /// `External`, whose parameters are the user's own).
    pub fn catalogue(&self) -> Vec<KnownParam> {
        let specs = match self {
            Subject::Stack { kind, .. } => kind.parameters(),
            Subject::Forum { kind, .. } => [
                kind.parameters(),
                webtune_lab::forum::dbparams::parameters(),
            ]
            .concat(),
            Subject::Fs { .. } => webtune_lab::filesystem::params::parameters(),
            Subject::External { .. } => Vec::new(),
        };
        specs
            .into_iter()
            .filter_map(|p| {
                let kind = match p.kind {
                    ParamKind::Int { min, max, keyword } => KnownKind::Int {
                        min,
                        max,
                        keywords: keyword.map(|k| vec![k.to_string()]).unwrap_or_default(),
                    },
                    ParamKind::Switch => KnownKind::Choice(vec!["on".into(), "off".into()]),
                    ParamKind::Choice(words) => {
                        KnownKind::Choice(words.iter().map(|w| w.to_string()).collect())
                    }
                    ParamKind::Float { .. } => return None,
                };
                Some(KnownParam {
                    name: p.name.clone(),
                    kind,
                    default: p.default.to_string(),
                })
            })
            .collect()
    }

    /// The default search space of a lab stack as `--param` texts (lab::tuning).
    pub fn default_params(&self, cores: u32) -> Vec<String> {
        let (kind, forum) = match self {
            Subject::Stack { kind, .. } => (*kind, false),
            Subject::Forum { kind, .. } => (*kind, true),
            Subject::Fs { fixed, .. } => {
                let kind = fixed
                    .iter()
                    .find(|(n, _)| n == "kind")
                    .map(|(_, v)| v.as_str())
                    .unwrap_or("ext4");
                return webtune_lab::filesystem::tuning_space(kind);
            }
            Subject::External { .. } => return Vec::new(),
        };
        webtune_lab::tuning::default_space(kind, forum, cores)
            .into_iter()
            .map(|t| match t.range {
                webtune_lab::tuning::TuneRange::Int { lo, hi, log } => {
                    format!("{}={lo}..{hi}{}", t.name, if log { ":log" } else { "" })
                }
                webtune_lab::tuning::TuneRange::Choice(words) => {
                    format!("{}={}", t.name, words.join(","))
                }
            })
            .collect()
    }

    /// The rule-of-thumb configurations for this subject that fall inside `space`.
    pub fn rules_of_thumb(&self, space: &Space, cores: u32) -> Vec<Config> {
        let kind = match self {
            Subject::Stack { kind, .. } | Subject::Forum { kind, .. } => *kind,
            Subject::External { .. } | Subject::Fs { .. } => return Vec::new(),
        };
        webtune_lab::tuning::rules_of_thumb(kind, cores)
            .into_iter()
            .filter(|(_, pairs)| {
                pairs
                    .iter()
                    .all(|(n, _)| space.params.iter().any(|p| p.name == *n))
            })
            .map(|(_, pairs)| space.config_from_text(&pairs))
            .collect()
    }

    /// Which searched parameters of `space` do nothing under which values of another (the
    /// server modules' rules); a rule whose other parameter is not searched holds always
    /// or never, by its `--set` value or its default.
    pub fn inert_rules(&self, space: &Space) -> Vec<Inert> {
        let (rules, fixed) = match self {
            Subject::Stack { kind, fixed } | Subject::Forum { kind, fixed, .. } => {
                (kind.inert_rules(), fixed)
            }
            Subject::Fs { fixed, .. } => (webtune_lab::filesystem::params::inert_rules(), fixed),
            Subject::External { .. } => return Vec::new(),
        };
        let catalogue = self.catalogue();
        rules
            .into_iter()
            .filter(|r| space.params.iter().any(|p| p.name == r.param))
            .filter_map(|r| {
                if space.params.iter().any(|p| p.name == r.when) {
                    let values = r.values.iter().map(|v| v.to_string()).collect();
                    return Some(Inert {
                        param: r.param,
                        when: Some((r.when, values)),
                    });
                }
                let value = fixed
                    .iter()
                    .find(|(n, _)| *n == r.when)
                    .map(|(_, v)| v.clone())
                    .or_else(|| {
                        catalogue
                            .iter()
                            .find(|p| p.name == r.when)
                            .map(|p| p.default.clone())
                    })?;
                r.applies(&value).then_some(Inert {
                    param: r.param,
                    when: None,
                })
            })
            .collect()
    }

    pub(crate) fn stack_kind(&self) -> Option<StackKind> {
        match self {
            Subject::Stack { kind, .. } | Subject::Forum { kind, .. } => Some(*kind),
            Subject::External { .. } | Subject::Fs { .. } => None,
        }
    }

    /// A file system's settings for `config` over the fixed values, or why the lab refuses
    /// them (a failed trial).
    pub(crate) fn fs_settings(&self, config: &Config) -> Result<webtune_lab::Settings, String> {
        let Subject::Fs {
            fixed, host_sysctl, ..
        } = self
        else {
            return Err("not a file system".into());
        };
        let mut all: Vec<(String, String)> = fixed.clone();
        for (name, value) in config {
            all.retain(|(n, _)| n != name);
            all.push((name.clone(), value.to_string()));
        }
        let words: Vec<String> = all.iter().map(|(n, v)| format!("{n}={v}")).collect();
        webtune_lab::filesystem::settings_for(&words, *host_sysctl).map_err(|e| e.to_string())
    }

    /// The trial target for `config`, or why the lab refuses it (a failed trial).
    pub(crate) fn target(&self, config: &Config) -> Result<Target, String> {
        let pairs = |fixed: &[(String, String)]| -> Vec<(String, String)> {
            let mut all: Vec<(String, String)> = fixed.to_vec();
            for (name, value) in config {
                all.retain(|(n, _)| n != name);
                all.push((name.clone(), value.to_string()));
            }
            all
        };
        let words = |list: &[(String, String)]| -> Vec<String> {
            list.iter().map(|(n, v)| format!("{n}={v}")).collect()
        };
        match self {
            Subject::Stack { kind, fixed } => {
                let all = webtune_lab::tuning::complete(*kind, &pairs(fixed));
                let settings = settings_for(*kind, &words(&all)).map_err(|e| e.to_string())?;
                Ok(Target::Stack {
                    kind: *kind,
                    settings,
                })
            }
            Subject::Forum {
                kind,
                fixed,
                dataset,
            } => {
                let (db, web): (Vec<_>, Vec<_>) = pairs(fixed)
                    .into_iter()
                    .partition(|(n, _)| n.starts_with("db."));
                let web = webtune_lab::tuning::complete(*kind, &web);
                let web = settings_for(*kind, &words(&web)).map_err(|e| e.to_string())?;
                let db = webtune_lab::forum::dbparams::settings_for(&words(&db))
                    .map_err(|e| e.to_string())?;
                Ok(Target::Forum {
                    kind: *kind,
                    web,
                    db: db.into(),
                    dataset: dataset.clone(),
                })
            }
            Subject::External {
                base_url,
                processes,
                ..
            } => Ok(Target::External {
                base_url: base_url.clone(),
                processes: processes.clone(),
                // Found again at every trial: --apply may restart the server.
                pids: Vec::new(),
            }),
            Subject::Fs { .. } => Err("a file system is no trial target".into()),
        }
    }
}

/// The catalogue of an external server's parameters, made from the `--param` texts
/// themselves (webtune does not know their real ranges): `NAME=LO..HI[:log]` is any
/// integer, `NAME=a,b,c` those words. The default is `baseline`'s value, else the first.
pub fn external_catalogue(texts: &[String], baseline: &[(String, String)]) -> Vec<KnownParam> {
    texts
        .iter()
        .filter_map(|text| {
            let (name, range) = text.split_once('=')?;
            let name = name.trim().to_string();
            let range = range.trim().trim_end_matches(":log");
            let (kind, first) = match range.split_once("..") {
                Some((lo, _)) => (
                    KnownKind::Int {
                        min: i64::MIN / 4,
                        max: i64::MAX / 4,
                        keywords: Vec::new(),
                    },
                    lo.trim().to_string(),
                ),
                None => {
                    let words: Vec<String> =
                        range.split(',').map(|w| w.trim().to_string()).collect();
                    let first = words.first().cloned().unwrap_or_default();
                    (KnownKind::Choice(words), first)
                }
            };
            let default = baseline
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
                .unwrap_or(first);
            Some(KnownParam {
                name,
                kind,
                default,
            })
        })
        .collect()
}

/// The winner's directives that differ from the default, as the server reads them, less
/// those that do nothing in the winner's configuration (`inert`: KeepAliveTimeout under
/// KeepAlive off).
pub(crate) fn snippet(
    kind: StackKind,
    default: &Config,
    best: &Config,
    inert: &[String],
) -> Vec<String> {
    let db = webtune_lab::forum::dbparams::parameters();
    best.iter()
        .filter(|(name, value)| default.get(*name) != Some(*value))
        .filter(|(name, _)| !inert.contains(name))
        .map(|(name, value)| {
            let value = match value {
                Value::Int(n) => n.to_string(),
                Value::Word(w) => w.clone(),
            };
            let line = match db.iter().find(|p| p.name == *name) {
                // my.cnf's syntax.
                Some(p) => format!("{} = {value}", p.directive),
                None => kind
                    .directive_line(name, &value)
                    .unwrap_or_else(|| format!("{name} {value}")),
            };
            let component = name
                .split_once('.')
                .filter(|(prefix, _)| matches!(*prefix, "frontend" | "backend" | "db"))
                .map(|(prefix, _)| format!("{prefix}: "))
                .unwrap_or_default();
            format!("{component}{line}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_external_catalogue_comes_from_the_params_and_the_baseline() {
        let texts = vec![
            "workers=1..64:log".to_string(),
            "keepalive=on,off".to_string(),
        ];
        let cat = external_catalogue(&texts, &[("workers".into(), "8".into())]);
        assert_eq!(cat[0].name, "workers");
        assert_eq!(cat[0].default, "8");
        assert_eq!(cat[1].default, "on");
        let space = Space::parse(&texts, &cat).unwrap();
        assert_eq!(space.default_config()["workers"], Value::Int(8));
    }

    #[test]
    fn a_stack_subject_knows_its_parameters_and_default_space() {
        let subject = Subject::Stack {
            kind: StackKind::from_name("nginx-apache").unwrap(),
            fixed: Vec::new(),
        };
        let catalogue = subject.catalogue();
        let texts = subject.default_params(2);
        let space = Space::parse(&texts, &catalogue).expect("the default space parses");
        assert!(space
            .params
            .iter()
            .any(|p| p.name == "backend.MaxRequestWorkers"));
        let seeds = subject.rules_of_thumb(&space, 2);
        assert_eq!(seeds.len(), 1, "two backend processes per core");
        // A configuration the lab refuses is a failed trial, not a panic.
        let mut bad = space.default_config();
        bad.insert("backend.KeepAliveTimeout".into(), Value::Int(-5));
        assert!(subject.target(&bad).is_err());
    }

    #[test]
    fn the_snippet_names_the_servers_directives() {
        let kind = StackKind::from_name("nginx-apache").unwrap();
        let mut default = Config::new();
        default.insert("backend.MaxRequestWorkers".into(), Value::Int(150));
        default.insert("frontend.worker_processes".into(), Value::Int(2));
        let mut best = default.clone();
        best.insert("backend.MaxRequestWorkers".into(), Value::Int(4));
        assert_eq!(
            snippet(kind, &default, &best, &[]),
            vec!["backend: MaxRequestWorkers 4".to_string()]
        );
    }

    #[test]
    fn an_inert_parameter_is_left_out_of_the_snippet_and_lines_read_as_the_server_reads_them() {
        let subject = Subject::Stack {
            kind: StackKind::from_name("nginx-apache").unwrap(),
            fixed: Vec::new(),
        };
        let texts: Vec<String> = [
            "backend.KeepAlive=on,off",
            "backend.KeepAliveTimeout=1..30",
            "frontend.listen_backlog=64..4096",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut space = Space::parse(&texts, &subject.catalogue()).unwrap();
        space.inert = subject.inert_rules(&space);
        let default = space.default_config();
        let mut best = default.clone();
        best.insert("backend.KeepAlive".into(), Value::Word("off".into()));
        best.insert("backend.KeepAliveTimeout".into(), Value::Int(13));
        best.insert("frontend.listen_backlog".into(), Value::Int(2115));
        assert_eq!(space.inert_in(&best), vec!["backend.KeepAliveTimeout"]);
        assert!(space.inert_in(&default).is_empty());
        let kind = StackKind::from_name("nginx-apache").unwrap();
        assert_eq!(
            snippet(kind, &default, &best, &space.inert_in(&best)),
            vec![
                "backend: KeepAlive off".to_string(),
                "frontend: listen 80 backlog=2115;  # backlog=2115 on each listen line".into(),
            ]
        );
        // KeepAlive fixed off: its timeout is inert in every trial.
        let fixed_off = Subject::Stack {
            kind,
            fixed: vec![("backend.KeepAlive".into(), "off".into())],
        };
        let space = Space::parse(&texts[1..], &fixed_off.catalogue()).unwrap();
        let rules = fixed_off.inert_rules(&space);
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].when, None);
    }
}
