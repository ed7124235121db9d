//! The rules: each family reads the layers (host facts, the configs read, what the trees
//! are for, the measured evidence, the live counters) and returns findings. A rule that
//! lacks what it needs stays silent. `plan` runs them front to back, so that each layer is
//! sized for the layer in front of it as planned, not as found.

mod apache;
mod chain;
mod fastcgi;
mod live;
mod mariadb;
mod measured;
mod memory;
mod php;
mod proxy;
mod queues;
mod structure;
mod timeouts;
mod topology;
mod tree;

use crate::change::Constraint;
use crate::evidence::Evidence;
use crate::facts::Facts;
use crate::finding::Finding;
use crate::host_facts::HostFacts;
use crate::plan::Plan;
use std::path::Path;
use webtune_conf::apache::ApacheConfig;
use webtune_conf::config::{Directive, Parsed};
use webtune_conf::ini;
use webtune_conf::mycnf::{Release, Server};
use webtune_conf::nginx::NginxConfig;

pub(crate) use topology::Topology;

/// Everything the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct Layers<'a> {
    pub host: &'a HostFacts,
    pub apache: Option<&'a ApacheConfig>,
    pub nginx: Option<&'a NginxConfig>,
    pub php_fpm: Option<&'a Parsed>,
    pub mysql: Option<&'a Parsed>,
    pub evidence: Option<&'a Evidence>,
    /// What the trees are for beyond their text (release, data, compiled-in modules).
    pub facts: &'a Facts,
    /// The running servers' counters (`--live`).
    pub live: Option<&'a crate::live::Live>,
}

impl<'a> Layers<'a> {
    /// The database's tree with the server that reads it.
    pub(crate) fn db(&self) -> Option<Db<'a>> {
        let m = self.mysql?;
        let release = self.facts.database.as_ref().map(|k| k.value);
        Some(Db {
            m,
            server: release.map_or_else(|| webtune_conf::mycnf::flavor(m).server, |r| r.server),
            release,
        })
    }

    /// Who connects to whom: proxies to backends, backends to php-fpm pools.
    pub(crate) fn topology(&self) -> Topology<'a> {
        Topology::of(self)
    }
}

/// A my.cnf with the server that reads it (its defaults, its release when known).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Db<'a> {
    pub m: &'a Parsed,
    pub server: Server,
    pub release: Option<Release>,
}

impl<'a> Db<'a> {
    /// A size or count with the server's default: (value, the directive when set). An
    /// InnoDB buffer with InnoDB off takes nothing (and names no line: no rule may write
    /// over `skip-innodb`).
    pub fn int(&self, key: &str, default: u64) -> (u64, Option<&'a Directive>) {
        if key.starts_with("innodb_") && self.innodb_off().is_some() {
            return (0, None);
        }
        let default = webtune_conf::mycnf::default_of(self.server, key).unwrap_or(default);
        match webtune_conf::mycnf::mysqld_value(self.m, key) {
            Some(d) => (ini::parse_size(d.value()).unwrap_or(default), Some(d)),
            None => (default, None),
        }
    }

    /// The directive in effect for `key`, if set.
    pub fn get(&self, key: &str) -> Option<&'a Directive> {
        webtune_conf::mycnf::mysqld_value(self.m, key)
    }

    /// `skip-innodb` (or `innodb = OFF`): InnoDB is not loaded.
    pub fn innodb_off(&self) -> Option<&'a Directive> {
        webtune_conf::mycnf::innodb_disabled(self.m)
    }

    pub fn main(&self) -> &'a Path {
        &self.m.main
    }

    /// "MariaDB 10.11" when known, else the flavor with "(release unknown)".
    pub fn label(&self) -> String {
        match self.release {
            Some(r) => r.label(),
            None => format!("{} (release unknown)", self.server.label()),
        }
    }

    pub fn is_mariadb(&self) -> bool {
        self.server == Server::MariaDb
    }
}

/// Run every rule, most severe first (stable within a severity).
pub fn run(l: &Layers) -> Vec<Finding> {
    plan(l).0
}

/// Run every rule and reconcile their constraints into one plan per directive, front to
/// back: first the rules on the directives chosen for their own sake (workers against
/// cores and evidence, open files, connections, the database's own settings, the live
/// counters); then the memory budget on that plan (cuts where the memory is); then what
/// follows the front's planned concurrency (php-fpm's children never above the Apache
/// workers that send to them; ServerLimit, StartServers and the spares from the planned
/// MaxRequestWorkers); then the database for the web tier's planned concurrency and the
/// redo log for the planned buffer pool; then one plan of everything. Each finding that
/// bounds a directive says the planned value, so no two findings recommend different
/// values.
pub fn plan(l: &Layers) -> (Vec<Finding>, Plan) {
    plan_with_others(l, &[])
}

/// `plan`, with more nginx trees beside the layers (several nginx masters running): each
/// other nginx gets its own findings (its own files, so its own plan entries), the layers'
/// cross-layer rules stay with the nginx in `l` (the one in front of them).
pub fn plan_with_others(l: &Layers, others: &[&NginxConfig]) -> (Vec<Finding>, Plan) {
    let (mut out, mut structural) = layer_findings(l);
    for n in others {
        let alone = Layers {
            nginx: Some(n),
            apache: None,
            php_fpm: None,
            mysql: None,
            live: None,
            ..*l
        };
        let (theirs, bounds) = layer_findings(&alone);
        out.extend(
            theirs
                .into_iter()
                .filter(|f| f.component.starts_with("nginx")),
        );
        structural.extend(bounds);
    }
    let plan = Plan::reconcile(&collect(&out, &structural));
    annotate(&mut out, &plan);
    out.sort_by_key(|f| f.severity);
    (out, plan)
}

/// Every rule's findings on the layers, front to back, and the servers' own bounds.
fn layer_findings(l: &Layers) -> (Vec<Finding>, Vec<Constraint>) {
    let mut out = Vec::new();
    out.extend(apache::rules(l));
    out.extend(proxy::rules(l));
    out.extend(queues::rules(l));
    out.extend(measured::rules(l));
    out.extend(chain::own_rules(l));
    out.extend(mariadb::rules(l));
    out.extend(php::rules(l));
    out.extend(fastcgi::rules(l));
    out.extend(timeouts::rules(l));
    out.extend(live::rules(l));
    out.extend(tree::rules(l));
    let structural = structure::constraints(l);
    let first = Plan::reconcile(&collect(&out, &structural));
    out.extend(memory::rules(l, &first));
    let second = Plan::reconcile(&collect(&out, &structural));
    out.extend(chain::from_front(l, &second));
    out.extend(apache::derived(l, &second));
    let third = Plan::reconcile(&collect(&out, &structural));
    out.extend(chain::rules(l, &third));
    out.extend(mariadb::derived(l, &third));
    (out, structural)
}

/// Every finding's constraints, named after it, and the server's own bounds.
fn collect(findings: &[Finding], structural: &[Constraint]) -> Vec<Constraint> {
    let mut all: Vec<Constraint> = findings
        .iter()
        .flat_map(|f| {
            f.constraints.iter().map(|c| Constraint {
                finding: f.id.clone(),
                ..c.clone()
            })
        })
        .collect();
    all.extend(structural.iter().cloned());
    all
}

/// Each finding's recommendation ends with the planned value of what it bounds, and its
/// changes are the plan's (so `--verify` sets what the patch writes).
fn annotate(findings: &mut [Finding], plan: &Plan) {
    for f in findings.iter_mut() {
        let mut said: Vec<String> = Vec::new();
        for c in f.constraints.iter().filter(|c| !c.structural) {
            let Some(p) = plan.knob_of(c) else {
                continue;
            };
            if let Some(change) = &p.change {
                if !f.changes.contains(change) {
                    f.changes.push(change.clone());
                }
            }
            if let Some(v) = p.value {
                // Said already when the finding's own value is the plan's.
                if f.recommended == p.text(v).trim_end_matches(';') {
                    continue;
                }
            }
            let line = match (p.value, &p.conflict) {
                (Some(v), _) if v == p.current => format!("planned: {} (unchanged)", p.text(v)),
                (Some(v), _) => format!("planned: {}", p.text(v)),
                (None, Some(why)) => format!("CONFLICT, not written: {why}"),
                (None, None) => continue,
            };
            if !said.contains(&line) {
                said.push(line);
            }
        }
        if !said.is_empty() {
            f.recommended = format!("{} → {}", f.recommended, said.join("; "));
        }
    }
}

/// Apache's MPM settings in effect, with the defaults of the 2.4 manual filled in; None
/// when the MPM is not known (no `LoadModule mpm_*`, and the binary was not asked or has
/// none built in): then nothing MPM-specific is sized.
#[derive(Debug, Clone)]
pub(crate) struct ApacheMpm<'a> {
    pub mpm: String,
    pub threaded: bool,
    pub max_workers: i64,
    pub max_workers_at: Option<&'a Directive>,
    pub server_limit: i64,
    pub server_limit_at: Option<&'a Directive>,
    pub threads_per_child: i64,
    pub threads_per_child_at: Option<&'a Directive>,
    pub mod_php: bool,
}

impl<'a> ApacheMpm<'a> {
    pub fn of(a: &'a ApacheConfig) -> Option<ApacheMpm<'a>> {
        let mpm = a.mpm()?.0.to_string();
        let threaded = mpm != "prefork";
        let get = |n: &str| a.get_int(n);
        let (sl_default, tpc_default) = if threaded { (16, 25) } else { (256, 1) };
        let server_limit = get("ServerLimit");
        let tpc = if threaded {
            get("ThreadsPerChild")
        } else {
            None
        };
        let sl = server_limit.map_or(sl_default, |(v, _)| v);
        let t = tpc.map_or(tpc_default, |(v, _)| v).max(1);
        let mrw = get("MaxRequestWorkers");
        Some(ApacheMpm {
            threaded,
            max_workers: mrw.map_or(sl * t, |(v, _)| v),
            max_workers_at: mrw.map(|(_, d)| d),
            server_limit: sl,
            server_limit_at: server_limit.map(|(_, d)| d),
            threads_per_child: t,
            threads_per_child_at: tpc.map(|(_, d)| d),
            mod_php: a.mod_php().is_some(),
            mpm,
        })
    }

    /// The name MaxRequestWorkers is written under in this config (2.2: MaxClients).
    pub fn max_workers_name(&self) -> &str {
        self.max_workers_at
            .map_or("MaxRequestWorkers", |d| d.name.as_str())
    }
}

/// "the MPM is unknown" said once, for findings and budget lines that skip MPM sizing.
pub(crate) fn mpm_unknown(l: &Layers) -> String {
    format!(
        "MPM unknown: no LoadModule mpm_* in the tree{}; nothing MPM-specific is sized",
        match &l.facts.apache_compiled_in {
            Some(k) => format!(", none compiled in ({})", k.from),
            None if l.facts.copied() =>
                ", and a copied tree's httpd is not asked (compiled in? `httpd -V` says)"
                    .to_string(),
            None => ", and no httpd here to ask (`httpd -V` says)".to_string(),
        }
    )
}

/// php-fpm's pools summed.
pub(crate) fn fpm_children(fpm: &Parsed) -> Option<(i64, Vec<&Directive>)> {
    let mut sum = 0;
    let mut at = Vec::new();
    for d in fpm
        .directives
        .iter()
        .filter(|d| d.name == "pm.max_children")
    {
        // The last one of each pool wins.
        let pool = d.context.first();
        if fpm
            .directives
            .iter()
            .rfind(|x| x.name == "pm.max_children" && x.context.first() == pool)
            == Some(d)
        {
            sum = d.count().unwrap_or(0).max(0).saturating_add(sum);
            at.push(d);
        }
    }
    (!at.is_empty()).then_some((sum, at))
}

/// `file:line` of a directive, or "(default)".
pub(crate) fn at(d: Option<&Directive>, name: &str, default: impl std::fmt::Display) -> String {
    match d {
        Some(d) => format!("{} {}: {}", d.name, d.joined(), d.at()),
        None => format!("{name} {default} (default: not set)"),
    }
}

pub(crate) fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}
