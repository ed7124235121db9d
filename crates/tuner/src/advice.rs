//! `tune --from-advice`: the advisor (`webtune_advise`, its library API) run on the config
//! the lab renders for the subject's default configuration (the same files a trial
//! writes, in a private temporary directory), and its advice mapped onto the searched
//! parameters: the plan's value of each sizing directive (`advise::plan`), and the other
//! findings' changed lines. A value outside the searched range is clamped into it with a
//! note; one the space cannot hold (a word that is not a choice, a directive the tune does
//! not search) is dropped with a note.
//!
//! All of it becomes **one** seed trial: the advisor's values are reconciled with one
//! another (ServerLimit follows MaxRequestWorkers, php-fpm's spare servers follow
//! max_children), so they are meant together, as `webtune advise` would write them; one
//! trial of the budget tests the advice as a user would apply it, and the report judges
//! it against the default and the winner. (One trial per finding would spend a third of a
//! 15-trial budget on a typical stack's three or four findings.)

use crate::subject::Subject;
use std::path::Path;
use webtune_advise::{Advice as Advised, Inputs};
use webtune_lab::servers::{Component, Programs, RenderContext};
use webtune_lab::{settings_for, Layout, StackKind};
use webtune_search::advised::{Advice, AdvisedChange, AdvisedSeed};
use webtune_search::space::{Config, Kind, Space, Value};

/// The advice for `subject`'s default configuration, as seeds of `space`. `Err` when the
/// advisor could not run (the tune goes on without it; the caller says why).
pub fn advice_seeds(subject: &Subject, space: &Space) -> Result<Advice, String> {
    let (kind, fixed, forum) = match subject {
        Subject::Stack { kind, fixed } => (*kind, fixed.clone(), false),
        Subject::Forum { kind, fixed, .. } => (*kind, fixed.clone(), true),
        Subject::External { .. } => {
            return Err("tune external: the advisor needs a lab stack's config".into())
        }
        Subject::Fs { .. } => return Err("the advisor reads no file system options".into()),
    };
    let dir = tempfile::Builder::new()
        .prefix("webtune-advice-")
        .tempdir()
        .map_err(|e| format!("a temporary directory: {e}"))?;
    let servers = render_default(kind, &fixed, forum, dir.path())?;
    let mut inputs = Inputs::default();
    for (server, file) in &servers {
        let path = Some(dir.path().join(file));
        match server.as_str() {
            "nginx" => inputs.nginx = path,
            "apache2" => inputs.apache = path,
            "php-fpm" => inputs.php_fpm = path,
            _ => inputs.mysql = path,
        }
    }
    let advised = webtune_advise::advise(&inputs).map_err(|e| e.to_string())?;
    Ok(map_advice(kind, forum, &advised, space))
}

/// The server name the advisor gives a component.
fn server_of(c: Component) -> &'static str {
    match c {
        Component::Nginx(_) => "nginx",
        Component::Apache(_) => "apache2",
        Component::PhpFpm => "php-fpm",
        Component::MariaDb => "mariadb",
        Component::Postfix => "postfix",
        Component::Caddy => "caddy",
    }
}

/// Render the default configuration (with the `--set` values) into `dir`; the servers
/// rendered, with their main file's name.
fn render_default(
    kind: StackKind,
    fixed: &[(String, String)],
    forum: bool,
    dir: &Path,
) -> Result<Vec<(String, String)>, String> {
    let (db, web): (Vec<_>, Vec<_>) = fixed
        .iter()
        .cloned()
        .partition(|(n, _)| n.starts_with("db."));
    let words = |list: &[(String, String)]| -> Vec<String> {
        list.iter().map(|(n, v)| format!("{n}={v}")).collect()
    };
    let web = webtune_lab::tuning::complete(kind, &web);
    let settings = settings_for(kind, &words(&web)).map_err(|e| e.to_string())?;
    let components = kind.components();
    let layout = Layout {
        dir: dir.to_path_buf(),
        docroot: dir.join("www"),
        ports: (0..components.len() as u16 + 1).map(|i| 8080 + i).collect(),
        privileged: false,
        addresses: 1,
    };
    let programs = Programs::discover();
    let rendered =
        webtune_lab::render(kind, &settings, &layout, &programs).map_err(|e| e.to_string())?;
    let mut configs = rendered.configs;
    if forum {
        let db =
            webtune_lab::forum::dbparams::settings_for(&words(&db)).map_err(|e| e.to_string())?;
        let r = Component::MariaDb
            .server()
            .render(&RenderContext {
                stack: "forum",
                prefix: webtune_lab::forum::dbparams::PREFIX,
                settings: &db,
                layout: &layout,
                programs: &programs,
                port: 3306,
                backend_port: 0,
                front: false,
                tls: false,
                account: None,
            })
            .map_err(|e| e.to_string())?;
        configs.extend(r.configs);
    }
    let mut servers = Vec::new();
    for (name, text) in &configs {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        let server = match name.as_str() {
            "nginx.conf" => "nginx",
            "apache2.conf" => "apache2",
            "php-fpm.conf" => "php-fpm",
            "my.cnf" => "mariadb",
            _ => continue,
        };
        servers.push((server.to_string(), name.clone()));
    }
    Ok(servers)
}

/// The parameter prefix of a server in the stack (`backend.`, `frontend.`, `db.`, or "").
fn prefix_of(kind: StackKind, forum: bool, server: &str) -> Option<String> {
    if server == "mariadb" {
        return forum.then(|| webtune_lab::forum::dbparams::PREFIX.to_string());
    }
    kind.components()
        .into_iter()
        .find(|(_, c)| server_of(*c) == server)
        .map(|(p, _)| p.to_string())
}

/// Directive names as the advisor and the lab may spell them differently: case, `-` for
/// `_` (my.cnf), and Apache 2.2's MaxClients for MaxRequestWorkers.
fn same_name(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        let s = s.to_ascii_lowercase().replace('-', "_");
        match s.as_str() {
            "maxclients" => "maxrequestworkers".to_string(),
            "maxrequestsperchild" => "maxconnectionsperchild".to_string(),
            _ => s,
        }
    };
    norm(a) == norm(b)
}

/// One advised value before it is mapped: server, directive, value text, rules.
struct Wanted {
    server: String,
    directive: String,
    value: String,
    rules: Vec<String>,
}

/// The advice on one configuration of the stack, as one seed of `space` and notes.
pub fn map_advice(kind: StackKind, forum: bool, advised: &Advised, space: &Space) -> Advice {
    let mut wanted: Vec<Wanted> = Vec::new();
    let mut notes = Vec::new();
    // The plan: one reconciled value per sizing directive.
    for k in &advised.plan.knobs {
        let rules: Vec<String> = k.findings().iter().map(|s| s.to_string()).collect();
        match k.value {
            Some(v) if v != k.current => wanted.push(Wanted {
                server: k.server.clone(),
                directive: k.directive.clone(),
                value: format!("{v}{}", k.unit),
                rules,
            }),
            Some(_) => {}
            None => notes.push(format!(
                "{} {}: {} (not seeded)",
                k.server,
                k.directive,
                k.conflict.as_deref().unwrap_or("no value")
            )),
        }
    }
    // The other findings' changed lines (the plan's directives come from the plan).
    for f in &advised.findings {
        for c in &f.changes {
            let Some(read) = advised.configs.iter().find(|r| r.files.contains(&c.file)) else {
                continue;
            };
            let text = c.text.trim().trim_end_matches(';').trim();
            let split = match read.server.as_str() {
                "nginx" | "apache2" => text.split_once(char::is_whitespace),
                _ => text.split_once('='),
            };
            let Some((name, value)) = split else { continue };
            let (name, value) = (name.trim(), value.trim());
            if wanted
                .iter()
                .any(|w| w.server == read.server && same_name(&w.directive, name))
            {
                continue;
            }
            wanted.push(Wanted {
                server: read.server.clone(),
                directive: name.to_string(),
                value: value.to_string(),
                rules: vec![f.id.clone()],
            });
        }
    }
    let mut config = space.default_config();
    let mut changes: Vec<AdvisedChange> = Vec::new();
    for w in wanted {
        let rules = w.rules.join(", ");
        let Some(prefix) = prefix_of(kind, forum, &w.server) else {
            continue;
        };
        let spec = space.params.iter().find(|p| {
            p.name
                .strip_prefix(prefix.as_str())
                .is_some_and(|rest| same_name(rest, &w.directive))
        });
        let Some(spec) = spec else {
            notes.push(format!(
                "{} {} {} [{rules}]: not a searched parameter (dropped)",
                w.server, w.directive, w.value
            ));
            continue;
        };
        let (value, note) = match &spec.kind {
            Kind::Int { lo, hi, .. } => match w.value.parse::<i64>() {
                Ok(v) if v < *lo || v > *hi => {
                    let c = v.clamp(*lo, *hi);
                    let note = format!(
                        "{} {v} [{rules}] is outside the searched {lo}..{hi}: clamped to {c}",
                        spec.name
                    );
                    notes.push(note.clone());
                    (Value::Int(c), Some(note))
                }
                Ok(v) => (Value::Int(v), None),
                Err(_) => {
                    notes.push(format!(
                        "{} {} [{rules}]: not a whole number as the tune searches it (dropped)",
                        spec.name, w.value
                    ));
                    continue;
                }
            },
            Kind::Choice(choices) => {
                match choices
                    .iter()
                    .find(|c| c.to_string().eq_ignore_ascii_case(&w.value))
                {
                    Some(c) => (c.clone(), None),
                    None => {
                        notes.push(format!(
                            "{} {} [{rules}]: not among the searched values (dropped)",
                            spec.name, w.value
                        ));
                        continue;
                    }
                }
            }
        };
        if config.get(&spec.name) == Some(&value) {
            continue;
        }
        config.insert(spec.name.clone(), value.clone());
        changes.push(AdvisedChange {
            param: spec.name.clone(),
            value,
            rules: w.rules,
            note,
        });
    }
    let seeds = if changes.is_empty() {
        notes.push("the advice changes none of the searched parameters: no seed".into());
        Vec::new()
    } else {
        vec![AdvisedSeed { config, changes }]
    };
    Advice { seeds, notes }
}

/// The seeds of a tune: the advised one first (it is what a user would try first), then
/// the rules of thumb, each once.
pub fn with_advice(advice: &Advice, rules_of_thumb: Vec<Config>) -> Vec<Config> {
    let mut seeds: Vec<Config> = advice.seeds.iter().map(|s| s.config.clone()).collect();
    for c in rules_of_thumb {
        if !seeds.contains(&c) {
            seeds.push(c);
        }
    }
    seeds
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_search::study::{Next, Study, StudySettings, Why};

    fn nginx_apache() -> Subject {
        Subject::Stack {
            kind: StackKind::from_name("nginx-apache").unwrap(),
            fixed: Vec::new(),
        }
    }

    #[test]
    fn the_advice_for_a_lab_stack_becomes_a_seed_trial_with_its_rule_names() {
        let subject = nginx_apache();
        let space = Space::parse(&subject.default_params(2), &subject.catalogue()).unwrap();
        let advice = advice_seeds(&subject, &space).expect("the advisor reads the lab's config");
        assert_eq!(advice.seeds.len(), 1, "{advice:?}");
        let seed = &advice.seeds[0];
        // Seed 000's rule: about two busy backend processes per core behind a proxy.
        let workers = seed
            .changes
            .iter()
            .find(|c| c.param == "backend.MaxRequestWorkers")
            .expect("the backend's workers are advised");
        assert_eq!(workers.rules, vec!["proxy.backend_per_core".to_string()]);
        assert!(seed.rules().contains(&"proxy.backend_per_core".to_string()));
        assert_eq!(advice.rules_of(&seed.config), seed.rules());
        // A directive the tune does not search is dropped, with a note naming its rule.
        assert!(
            advice
                .notes
                .iter()
                .any(|n| n.contains("[apache.max_connections_per_child]") && n.contains("dropped")),
            "{advice:?}"
        );
        // The study measures it right after the A/A pair.
        let seeds = with_advice(&advice, subject.rules_of_thumb(&space, 2));
        let mut study = Study::new(
            space,
            webtune_search::Objective::MaximizeThroughput,
            Vec::new(),
            seeds,
            StudySettings::default(),
            Box::new(webtune_search::RandomSampler),
        );
        let mut asked = Vec::new();
        for _ in 0..3 {
            let Next::Measure(c, why) = study.next() else {
                panic!("done early")
            };
            let level = webtune_search::LevelSummary {
                level: "c=8".into(),
                throughput: 1000.0 * (asked.len() + 1) as f64,
                p50_ms: 1.0,
                p90_ms: 1.0,
                p99_ms: 1.0,
                p999_ms: 1.0,
                mean_ms: 1.0,
                error_ratio: 0.0,
                mail: None,
            };
            study.record(
                c.clone(),
                why,
                webtune_search::Outcome::Measured(vec![level]),
            );
            asked.push((c, why));
        }
        assert_eq!(asked[2], (seed.config.clone(), Why::Seed));
    }

    #[test]
    fn an_advised_value_outside_the_space_is_clamped_with_a_note_and_a_word_dropped() {
        let subject = nginx_apache();
        let texts = vec![
            "backend.MaxRequestWorkers=100..128".to_string(),
            "backend.KeepAlive=on,off".to_string(),
        ];
        let space = Space::parse(&texts, &subject.catalogue()).unwrap();
        let advice = advice_seeds(&subject, &space).unwrap();
        let change = &advice.seeds[0].changes[0];
        assert_eq!(change.value, Value::Int(100), "{advice:?}");
        assert!(change.note.as_deref().unwrap().contains("clamped to 100"));
        assert!(advice.notes.iter().any(|n| n.contains("clamped to 100")));
        // External has no config to read.
        let external = Subject::External {
            base_url: "http://127.0.0.1:1/".into(),
            processes: Vec::new(),
            apply: "true".into(),
            restore: None,
            timeout: std::time::Duration::from_secs(1),
        };
        assert!(advice_seeds(&external, &space).is_err());
    }
}
