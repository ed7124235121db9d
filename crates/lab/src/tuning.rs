//! What is worth tuning on each stack: the default search space (the parameters that
//! matter, with ranges a search can cover in tens of trials, and why each is there), the
//! rule-of-thumb configurations from the seeds, and `complete`, which adds the dependent
//! limits a tuned value needs so that the servers accept the configuration (Apache refuses
//! or silently lowers MaxRequestWorkers above ServerLimit, for example).
//!
//! This module knows servers, not search: the tuner (`crates/tune`) gets the space as data.

use crate::stacks::{Component, Mpm};
use crate::StackKind;

/// The range a search covers for one parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum TuneRange {
    /// Whole numbers in `lo..=hi`, searched on a log scale when `log`.
    Int { lo: i64, hi: i64, log: bool },
    /// One of these words.
    Choice(Vec<String>),
}

/// One parameter of a default search space.
#[derive(Debug, Clone, PartialEq)]
pub struct Tunable {
    pub name: String,
    pub range: TuneRange,
    /// Why it is in the space: what it changes and which seed or lab note says it matters.
    pub why: &'static str,
}

fn int(name: String, lo: i64, hi: i64, log: bool, why: &'static str) -> Tunable {
    Tunable {
        name,
        range: TuneRange::Int { lo, hi, log },
        why,
    }
}

fn switch(name: String, why: &'static str) -> Tunable {
    Tunable {
        name,
        range: TuneRange::Choice(vec!["on".into(), "off".into()]),
        why,
    }
}

const WHY_APACHE_WORKERS: &str = "requests served at once: too few queue clients, too many \
    thrash the CPU and memory (seed 000: 12 -> 4 processes behind nginx cut p90 by 43%)";
const WHY_KEEPALIVE: &str = "keep-alive saves a connect per request but holds a worker per idle \
    client (seed 001: KeepAliveTimeout 15 -> 2)";
const WHY_KEEPALIVE_TIMEOUT: &str = "how long an idle client holds its worker (seed 001)";
const WHY_BACKLOG: &str = "the listen queue that absorbs bursts of connects; overflows are \
    dropped SYNs and resets (seed 004: somaxconn 4096)";
const WHY_THREADS: &str = "threads per process: the worker/event MPMs serve a request per \
    thread (seed 001: ServerLimit x ThreadsPerChild)";
const WHY_NGINX_WORKERS: &str = "nginx worker processes; about one per core (seed 002: more \
    than the cores made it worse)";
const WHY_NGINX_CONNECTIONS: &str = "connections each nginx worker may hold, clients and \
    upstreams together; too few fail under high concurrency (seed 003 at 1024 connections)";
const WHY_UPSTREAM_KEEPALIVE: &str = "idle backend connections nginx keeps: a connect per \
    request saved on the backend";
const WHY_PHP_CHILDREN: &str = "PHP processes: requests run at once (seed 000's rule: about \
    two busy processes per core behind a proxy)";
const WHY_PM: &str = "how php-fpm sizes its pool: static avoids forking under load";
const WHY_DB_CONNECTIONS: &str = "database connections allowed; every PHP process holds one \
    (seed 003: untuned stacks failed at 1024 clients)";
const WHY_DB_BACKLOG: &str = "the database's listen queue for bursts of PHP connects (seed 003)";

/// The parameters of the Apache component at `prefix` worth tuning.
fn apache_space(prefix: &str, mpm: Mpm, cores: i64) -> Vec<Tunable> {
    let p = |n: &str| format!("{prefix}{n}");
    let mut space = match mpm {
        Mpm::Prefork => vec![int(
            p("MaxRequestWorkers"),
            1,
            (cores * 64).clamp(16, 512),
            true,
            WHY_APACHE_WORKERS,
        )],
        Mpm::Worker | Mpm::Event => vec![
            int(
                p("ServerLimit"),
                1,
                (cores * 4).clamp(4, 32),
                true,
                WHY_APACHE_WORKERS,
            ),
            int(p("ThreadsPerChild"), 1, 64, true, WHY_THREADS),
        ],
    };
    space.push(switch(p("KeepAlive"), WHY_KEEPALIVE));
    space.push(int(
        p("KeepAliveTimeout"),
        1,
        15,
        false,
        WHY_KEEPALIVE_TIMEOUT,
    ));
    space.push(int(p("ListenBacklog"), 64, 4096, true, WHY_BACKLOG));
    space
}

fn nginx_space(prefix: &str, cores: i64, proxy: bool) -> Vec<Tunable> {
    let p = |n: &str| format!("{prefix}{n}");
    let mut space = vec![
        int(
            p("worker_processes"),
            1,
            (cores * 2).max(2),
            false,
            WHY_NGINX_WORKERS,
        ),
        int(
            p("worker_connections"),
            256,
            8192,
            true,
            WHY_NGINX_CONNECTIONS,
        ),
        int(p("listen_backlog"), 64, 4096, true, WHY_BACKLOG),
    ];
    if proxy {
        space.push(int(
            p("upstream_keepalive"),
            0,
            64,
            false,
            WHY_UPSTREAM_KEEPALIVE,
        ));
    }
    space
}

/// The default search space of a stack (with `forum`: and its database's `db.*`), for a
/// host with `cores` CPUs. Empty for `external`.
pub fn default_space(stack: StackKind, forum: bool, cores: u32) -> Vec<Tunable> {
    let cores = i64::from(cores.max(1));
    let proxy = stack.components().len() > 1;
    let mut space = Vec::new();
    for (prefix, component) in stack.components() {
        match component {
            Component::Apache(mpm) => space.extend(apache_space(prefix, mpm, cores)),
            Component::Nginx(_) => space.extend(nginx_space(prefix, cores, proxy)),
            Component::PhpFpm => {
                space.push(int(
                    format!("{prefix}pm.max_children"),
                    1,
                    (cores * 32).clamp(8, 256),
                    true,
                    WHY_PHP_CHILDREN,
                ));
                space.push(Tunable {
                    name: format!("{prefix}pm"),
                    range: TuneRange::Choice(vec!["static".into(), "dynamic".into()]),
                    why: WHY_PM,
                });
            }
        }
    }
    if forum {
        space.push(int(
            "db.max_connections".into(),
            50,
            2000,
            true,
            WHY_DB_CONNECTIONS,
        ));
        space.push(int("db.back_log".into(), 50, 4096, true, WHY_DB_BACKLOG));
    }
    space
}

/// The rule-of-thumb configurations worth measuring first, named by their rule: seed 000's
/// "about two busy backend processes per core behind a proxy". (Seed 001's "free RAM / per-
/// process PSS" needs the default's measured PSS: the tuner derives it after the first
/// trial.)
pub fn rules_of_thumb(stack: StackKind, cores: u32) -> Vec<(String, Vec<(String, String)>)> {
    let two_per_core = (cores.max(1) * 2).to_string();
    let proxy = stack.components().len() > 1;
    let mut rules = Vec::new();
    for (prefix, component) in stack.components() {
        let name = match component {
            Component::Apache(Mpm::Prefork) if proxy => "MaxRequestWorkers",
            Component::PhpFpm => "pm.max_children",
            _ => continue,
        };
        rules.push((
            "seed 000: two busy backend processes per core behind a proxy".to_string(),
            vec![(format!("{prefix}{name}"), two_per_core.clone())],
        ));
    }
    rules
}

/// Add to `assignments` the dependent limits its values need, for every one the caller did
/// not set itself: Apache's ServerLimit at least MaxRequestWorkers (prefork) or
/// MaxRequestWorkers / ThreadsPerChild (worker, event), ThreadLimit at least
/// ThreadsPerChild, MaxRequestWorkers a multiple of ThreadsPerChild; php-fpm's spare and
/// start servers within max_children.
pub fn complete(stack: StackKind, assignments: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = assignments.to_vec();
    let given = |out: &[(String, String)], name: &str| -> Option<i64> {
        out.iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.parse().ok())
    };
    let set_default = |out: &mut Vec<(String, String)>, name: String, value: i64| {
        if !assignments.iter().any(|(n, _)| *n == name) {
            out.retain(|(n, _)| *n != name);
            out.push((name, value.to_string()));
        }
    };
    let defaults = stack.parameters();
    let default_of = |name: &str| -> Option<i64> {
        defaults
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.default.as_int())
    };
    for (prefix, component) in stack.components() {
        let p = |n: &str| format!("{prefix}{n}");
        match component {
            Component::Apache(Mpm::Prefork) => {
                if let Some(workers) = given(&out, &p("MaxRequestWorkers")) {
                    let limit = default_of(&p("ServerLimit")).unwrap_or(256).max(workers);
                    set_default(&mut out, p("ServerLimit"), limit);
                    for spare in ["StartServers", "MinSpareServers", "MaxSpareServers"] {
                        if let Some(d) = default_of(&p(spare)) {
                            set_default(&mut out, p(spare), d.min(workers));
                        }
                    }
                }
            }
            Component::Apache(Mpm::Worker | Mpm::Event) => {
                let threads = given(&out, &p("ThreadsPerChild"))
                    .or_else(|| default_of(&p("ThreadsPerChild")))
                    .unwrap_or(25)
                    .max(1);
                let thread_limit = default_of(&p("ThreadLimit")).unwrap_or(64).max(threads);
                set_default(&mut out, p("ThreadLimit"), thread_limit);
                let servers = given(&out, &p("ServerLimit"));
                match given(&out, &p("MaxRequestWorkers")) {
                    Some(workers) => {
                        let rounded = (workers / threads).max(1) * threads;
                        set_default(&mut out, p("MaxRequestWorkers"), rounded);
                        let needed = rounded / threads;
                        let limit = servers.unwrap_or(0).max(needed);
                        set_default(&mut out, p("ServerLimit"), limit);
                    }
                    None => {
                        let servers = servers
                            .or_else(|| default_of(&p("ServerLimit")))
                            .unwrap_or(16);
                        set_default(&mut out, p("MaxRequestWorkers"), servers * threads);
                    }
                }
                let workers = given(&out, &p("MaxRequestWorkers")).unwrap_or(threads);
                for (name, cap) in [
                    ("MinSpareThreads", workers),
                    ("MaxSpareThreads", workers),
                    ("StartServers", workers / threads),
                ] {
                    if let Some(d) = default_of(&p(name)) {
                        set_default(&mut out, p(name), d.min(cap.max(1)));
                    }
                }
            }
            Component::PhpFpm => {
                if let Some(children) = given(&out, &p("pm.max_children")) {
                    for spare in [
                        "pm.start_servers",
                        "pm.min_spare_servers",
                        "pm.max_spare_servers",
                    ] {
                        if let Some(d) = default_of(&p(spare)) {
                            set_default(&mut out, p(spare), d.min(children));
                        }
                    }
                }
            }
            Component::Nginx(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings_for;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn words(list: &[(String, String)]) -> Vec<String> {
        list.iter().map(|(n, v)| format!("{n}={v}")).collect()
    }

    /// Every default space names real parameters with ranges inside their real ranges: the
    /// lab accepts both ends of every range.
    #[test]
    fn default_spaces_are_accepted_at_both_ends() {
        for &stack in StackKind::all() {
            for forum in [false, stack.has_php()] {
                let space = default_space(stack, forum, 2);
                if stack == StackKind::External {
                    assert!(space.is_empty());
                    continue;
                }
                assert!(!space.is_empty(), "{}", stack.name());
                for end in [0, 1] {
                    let assignments: Vec<(String, String)> = space
                        .iter()
                        .map(|t| {
                            let value = match &t.range {
                                TuneRange::Int { lo, hi, .. } => {
                                    if end == 0 { *lo } else { *hi }.to_string()
                                }
                                TuneRange::Choice(c) => c[end.min(c.len() - 1)].clone(),
                            };
                            (t.name.clone(), value)
                        })
                        .collect();
                    let (web, db): (Vec<_>, Vec<_>) = assignments
                        .into_iter()
                        .partition(|(n, _)| !n.starts_with("db."));
                    let completed = complete(stack, &web);
                    settings_for(stack, &words(&completed))
                        .unwrap_or_else(|e| panic!("{} {:?}: {e}", stack.name(), completed));
                    crate::forum::dbparams::settings_for(&words(&db))
                        .unwrap_or_else(|e| panic!("{db:?}: {e}"));
                }
            }
        }
    }

    #[test]
    fn complete_raises_the_limits_a_value_needs_and_keeps_what_was_set() {
        let stack = StackKind::from_name("apache-prefork").unwrap();
        let out = complete(stack, &pairs(&[("MaxRequestWorkers", "400")]));
        assert!(
            out.contains(&("ServerLimit".into(), "400".into())),
            "{out:?}"
        );
        let kept = complete(
            stack,
            &pairs(&[("MaxRequestWorkers", "400"), ("ServerLimit", "500")]),
        );
        assert!(kept.contains(&("ServerLimit".into(), "500".into())));
        let event = StackKind::from_name("apache-event").unwrap();
        let out = complete(
            event,
            &pairs(&[("ServerLimit", "3"), ("ThreadsPerChild", "40")]),
        );
        assert!(
            out.contains(&("MaxRequestWorkers".into(), "120".into())),
            "{out:?}"
        );
        assert!(
            out.contains(&("ThreadLimit".into(), "64".into())),
            "{out:?}"
        );
        settings_for(event, &words(&out)).unwrap();
    }

    #[test]
    fn rules_of_thumb_are_two_backend_processes_per_core_behind_a_proxy() {
        let rules = rules_of_thumb(StackKind::from_name("nginx-apache").unwrap(), 2);
        assert_eq!(rules[0].1, pairs(&[("backend.MaxRequestWorkers", "4")]));
        let php = rules_of_thumb(StackKind::from_name("nginx-php-fpm").unwrap(), 2);
        assert_eq!(php[0].1, pairs(&[("pm.max_children", "4")]));
        assert!(rules_of_thumb(StackKind::from_name("nginx").unwrap(), 2).is_empty());
    }
}
