//! webtune-advise: a read-only advisor. It reads the configs of Apache, nginx, php-fpm
//! and MariaDB/MySQL (given, or found from the running servers' command lines, or at
//! Debian's stock paths), the host's facts from /proc and /sys, and optionally a saved
//! run's measurements, and explains every setting that matters with the calculation
//! shown and the `file:line` it rests on. It never changes a file or a sysctl; it can
//! write suggested copies of the config files into a directory of the user's choice.
//! The configs are read with the readers of crates/conf (`webtune_conf`), which the lab
//! shares; this crate holds the rules and their explanations.

pub mod change;
pub mod check;
mod error;
pub mod evidence;
pub mod facts;
pub mod finding;
pub mod host_facts;
pub mod live;
pub mod output;
pub mod plan;
pub mod rules;

pub use change::Change;
pub use error::AdviseError;
pub use evidence::Evidence;
pub use facts::Facts;
pub use finding::{Finding, Severity};
pub use host_facts::HostFacts;
pub use plan::Plan;
pub use rules::Layers;

use serde::Serialize;
use std::path::{Path, PathBuf};
use webtune_conf::config::{NoteLevel, Options, ReadNote};
use webtune_conf::{apache, config, ini, nginx};

/// What to read. Config paths left out are discovered (running server, else stock path)
/// when `discover` is set.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub apache: Option<PathBuf>,
    pub nginx: Option<PathBuf>,
    pub php_fpm: Option<PathBuf>,
    pub mysql: Option<PathBuf>,
    pub result: Option<PathBuf>,
    pub discover: bool,
    /// A copied tree's root (`--root DIR`): the configs' absolute paths (includes,
    /// ServerRoot, the given and stock config paths) are read under it, never from this
    /// host, and no running server is taken as the tree's.
    pub root: Option<PathBuf>,
    /// The machine to judge for, when it is not this one (`--cores`, `--ram`,
    /// `--host-from`).
    pub host: host_facts::HostChoice,
    /// The database server's release as the user says it (`--mysql-version`).
    pub mysql_version: Option<String>,
    /// The running servers' counters (`--live`), read before the rules run: they are
    /// bounds in the plan like any other finding's, and tell the database's release and
    /// data size.
    pub live: Option<live::Live>,
}

/// One config tree read, and how it was found.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigRead {
    /// "apache2", "nginx", "php-fpm", "mariadb".
    pub server: String,
    pub main: PathBuf,
    /// "given", "running (pid N)", "stock path".
    pub found: String,
    pub files: Vec<PathBuf>,
    /// What the reader could not follow (`warning`: a file not read, the findings on this
    /// server may be incomplete) or did on the host's behalf (`note`), at `file:line`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<ReadNote>,
    /// The version the tree is written for and why, or that it was assumed: "Apache 2.2
    /// (NameVirtualHost at FILE:LINE)", "MariaDB assumed (…)". The rules use its names
    /// and defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
}

impl ConfigRead {
    /// The notes that leave what was read incomplete.
    pub fn warnings(&self) -> impl Iterator<Item = &ReadNote> {
        self.notes.iter().filter(|n| n.level == NoteLevel::Warning)
    }
}

/// A finding that rests on a tree not read in full.
#[derive(Debug, Clone, Serialize)]
pub struct Incomplete {
    /// The finding's id.
    pub finding: String,
    /// `file:line` of each include not read in the trees it rests on.
    pub because: Vec<String>,
}

/// The configurations read.
#[derive(Debug, Clone, Default)]
pub struct Configs {
    pub apache: Option<apache::ApacheConfig>,
    pub nginx: Option<nginx::NginxConfig>,
    pub php_fpm: Option<config::Parsed>,
    pub mysql: Option<config::Parsed>,
    /// More running nginx masters' trees, beside `nginx` (the one in front of the other
    /// layers read, when one is).
    pub nginx_others: Vec<nginx::NginxConfig>,
    pub read: Vec<ConfigRead>,
    /// What discovery skipped, and why (one line each).
    pub notes: Vec<String>,
}

/// The advice: findings with the facts they rest on.
#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    pub host: HostFacts,
    pub configs: Vec<ConfigRead>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    pub findings: Vec<Finding>,
    /// One value per sizing directive, with every bound on it (`plan`).
    pub plan: plan::Plan,
    /// What the servers said about the patches (`check`), when they were checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patch_checks: Vec<check::PatchCheck>,
    /// The running servers' counters (`advise --live`), when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<live::Live>,
    /// The findings that may be incomplete: a file of a tree they rest on was not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<Incomplete>,
    /// The Apache version the tree was read as (its patches use that version's names).
    #[serde(skip)]
    pub apache_version: Option<webtune_conf::apache::ApacheVersion>,
    /// What the trees are for beyond their text (release, data, compiled-in modules), and
    /// the copied tree's root.
    pub facts: Facts,
}

impl Advice {
    /// Why finding `id` may be incomplete (the includes not read), if it may.
    pub fn incomplete(&self, id: &str) -> Option<&Incomplete> {
        self.incomplete.iter().find(|i| i.finding == id)
    }
}

/// Stock config paths (Debian's, then upstream's).
const STOCK_APACHE: &[&str] = &["/etc/apache2/apache2.conf", "/etc/httpd/conf/httpd.conf"];
const STOCK_NGINX: &[&str] = &["/etc/nginx/nginx.conf"];
const STOCK_MYSQL: &[&str] = &["/etc/mysql/my.cnf", "/etc/my.cnf"];

/// Read everything, run the rules.
pub fn advise(inputs: &Inputs) -> Result<Advice, AdviseError> {
    advise_for(inputs, HostFacts::choose(&inputs.host)?)
}

/// `advise` for host facts read already (this host's, another machine's; tests give
/// their own running servers).
pub fn advise_for(inputs: &Inputs, host: HostFacts) -> Result<Advice, AdviseError> {
    let evidence = inputs
        .result
        .as_deref()
        .map(Evidence::from_file)
        .transpose()?;
    let mut facts = Facts {
        root: inputs.root.clone(),
        ..Facts::default()
    };
    if let Some(v) = &inputs.mysql_version {
        // A release the user gives that cannot be read is bad input, said at once.
        facts::database_release(Some(v), None, false).map_err(AdviseError::Input)?;
    }
    let mut configs = read_configs(inputs, &host, &mut facts)?;
    front_nginx(&mut configs, &host, &facts);
    let layers = Layers {
        host: &host,
        apache: configs.apache.as_ref(),
        nginx: configs.nginx.as_ref(),
        php_fpm: configs.php_fpm.as_ref(),
        mysql: configs.mysql.as_ref(),
        evidence: evidence.as_ref(),
        facts: &facts,
        live: inputs.live.as_ref(),
    };
    let others: Vec<&nginx::NginxConfig> = configs.nginx_others.iter().collect();
    let (findings, plan) = rules::plan_with_others(&layers, &others);
    let incomplete = incomplete(&findings, &configs.read);
    let mut notes = configs.notes.clone();
    if let Some(l) = &inputs.live {
        notes.extend(l.notes.iter().cloned());
    }
    Ok(Advice {
        plan,
        patch_checks: Vec::new(),
        live: inputs.live.clone(),
        configs: configs.read.clone(),
        notes,
        host,
        evidence,
        findings,
        incomplete,
        apache_version: configs.apache.as_ref().map(|a| a.dialect.version),
        facts,
    })
}

/// With several nginx trees read (running masters), the one whose `proxy_pass` or
/// `fastcgi_pass` reaches the Apache or php-fpm read is the front the cross-layer rules
/// judge; a note names every one.
fn front_nginx(c: &mut Configs, host: &HostFacts, facts: &Facts) {
    if c.nginx_others.is_empty() {
        return;
    }
    let reaches = |n: &nginx::NginxConfig| {
        let l = Layers {
            host,
            apache: c.apache.as_ref(),
            nginx: Some(n),
            php_fpm: c.php_fpm.as_ref(),
            mysql: None,
            evidence: None,
            facts,
            live: None,
        };
        let t = l.topology();
        t.nginx_apache.is_some() || t.nginx_fpm.is_some()
    };
    let front_ok = c.nginx.as_ref().is_some_and(reaches);
    if !front_ok {
        if let Some(i) = c.nginx_others.iter().position(reaches) {
            if let Some(first) = c.nginx.take() {
                let other = c.nginx_others.remove(i);
                c.nginx_others.insert(i, first);
                c.nginx = Some(other);
            }
        }
    }
    let named: Vec<String> = c
        .read
        .iter()
        .filter(|r| r.server == "nginx")
        .map(|r| format!("{} ({})", r.main.display(), r.found))
        .collect();
    let front = c
        .nginx
        .as_ref()
        .map(|n| n.parsed.main.display().to_string())
        .unwrap_or_default();
    c.notes.push(format!(
        "nginx: {} running masters read: {}; each has its own findings, and the other layers are judged behind {front}{}",
        named.len(),
        named.join(", "),
        if c.nginx.as_ref().is_some_and(reaches) {
            " (its proxy_pass reaches them)"
        } else {
            " (no nginx read passes to them)"
        }
    ));
}

/// The findings whose component is a server whose tree was not read in full.
fn incomplete(findings: &[Finding], read: &[ConfigRead]) -> Vec<Incomplete> {
    let mut out = Vec::new();
    for f in findings {
        let mut because: Vec<String> = Vec::new();
        for c in read
            .iter()
            .filter(|c| f.component.contains(c.server.as_str()))
        {
            for n in c.warnings() {
                if !because.contains(&n.at) {
                    because.push(n.at.clone());
                }
            }
        }
        if !because.is_empty() {
            out.push(Incomplete {
                finding: f.id.clone(),
                because,
            });
        }
    }
    out
}

/// Read the given configs, and (with `discover`) the others from the running servers or
/// the stock paths. A given file that cannot be read is an error; a discovered one that
/// cannot be read is skipped with a note.
pub fn read_configs(
    inputs: &Inputs,
    host: &HostFacts,
    facts: &mut Facts,
) -> Result<Configs, AdviseError> {
    let mut c = Configs::default();
    for server in ["apache2", "nginx", "php-fpm", "mariadb"] {
        let given = match server {
            "apache2" => &inputs.apache,
            "nginx" => &inputs.nginx,
            "php-fpm" => &inputs.php_fpm,
            _ => &inputs.mysql,
        };
        let mut candidates: Vec<(PathBuf, String, Vec<String>)> = Vec::new();
        let opts = Options {
            root: inputs.root.clone(),
            ..Options::default()
        };
        if let Some(p) = given {
            candidates.push((opts.rooted(p), "given".into(), Vec::new()));
        } else if inputs.discover {
            // Under --root, this host's running servers are not the tree's.
            let running = if inputs.root.is_some() {
                &[][..]
            } else {
                &host.servers[..]
            };
            for s in running.iter().filter(|s| s.kind == server) {
                if let Some(cfg) = &s.config {
                    if cfg.to_string_lossy().contains("/webtune-lab-") {
                        c.notes.push(format!(
                            "{server}: pid {} skipped: a webtune lab's own server ({})",
                            s.master_pid,
                            cfg.display()
                        ));
                        continue;
                    }
                    candidates.push((
                        cfg.clone(),
                        format!("running (pid {})", s.master_pid),
                        s.defines.clone(),
                    ));
                }
            }
            for p in stock_paths(server, inputs.root.as_deref()) {
                candidates.push((p, "stock path".into(), Vec::new()));
            }
        }
        let mut read_one_already = false;
        for (path, found, defines) in candidates {
            let strict = found == "given";
            if !strict && !path.is_file() {
                continue;
            }
            // Several running nginx masters are each read (issue 35, item 3); otherwise
            // the first tree read is the server's.
            let running = found.starts_with("running");
            if read_one_already && !(server == "nginx" && running) {
                break;
            }
            if c.read.iter().any(|r| r.server == server && r.main == path) {
                continue;
            }
            let opts = Options {
                defines,
                ..opts.clone()
            };
            match read_one(server, &path, &opts, &mut c, inputs, facts) {
                Ok((files, notes, dialect)) => {
                    c.read.push(ConfigRead {
                        server: server.into(),
                        main: path,
                        found,
                        files,
                        notes,
                        dialect,
                    });
                    read_one_already = true;
                    if !running {
                        break;
                    }
                }
                Err(e) if strict => return Err(e),
                Err(e) => c.notes.push(format!(
                    "{server}: skipped {} ({found}): {e}",
                    path.display()
                )),
            }
        }
    }
    Ok(c)
}

fn stock_paths(server: &str, root: Option<&Path>) -> Vec<PathBuf> {
    let under = |p: &str| match root {
        Some(r) => r.join(p.trim_start_matches('/')),
        None => PathBuf::from(p),
    };
    match server {
        "apache2" => STOCK_APACHE.iter().map(|p| under(p)).collect(),
        "nginx" => STOCK_NGINX.iter().map(|p| under(p)).collect(),
        "mariadb" => STOCK_MYSQL.iter().map(|p| under(p)).collect(),
        _ => {
            // /etc/php/X.Y/fpm/php-fpm.conf, newest version first.
            let pattern = under("/etc/php/*/fpm/php-fpm.conf");
            let mut found: Vec<PathBuf> = glob::glob(&pattern.to_string_lossy())
                .map(|g| g.filter_map(Result::ok).collect())
                .unwrap_or_default();
            found.sort();
            found.reverse();
            found.push(under("/etc/php-fpm.conf"));
            found
        }
    }
}

/// What reading one tree gives the report: its files, its notes, its dialect.
type TreeRead = (Vec<PathBuf>, Vec<ReadNote>, Option<String>);

/// Read one server's tree: its files and notes.
fn read_one(
    server: &str,
    path: &Path,
    opts: &Options,
    c: &mut Configs,
    inputs: &Inputs,
    facts: &mut Facts,
) -> Result<TreeRead, AdviseError> {
    Ok(match server {
        "apache2" => {
            if facts.apache_compiled_in.is_none() {
                facts.apache_compiled_in = facts::apache_compiled_in(facts.copied());
            }
            let opts = Options {
                compiled_in: facts.apache_compiled_in.as_ref().map(|k| k.value.clone()),
                ..opts.clone()
            };
            let mut a = apache::read_with(path, &opts)?;
            if let Some(note) = mpm_not_read(&a) {
                a.parsed.notes.push(note);
            }
            let out = (
                a.parsed.files.clone(),
                a.parsed.notes.clone(),
                Some(a.dialect.to_string()),
            );
            c.apache = Some(a);
            out
        }
        "nginx" => {
            let n = nginx::read_with(path, opts)?;
            let out = (n.parsed.files.clone(), n.parsed.notes.clone(), None);
            if c.nginx.is_none() {
                c.nginx = Some(n);
            } else {
                c.nginx_others.push(n);
            }
            out
        }
        "php-fpm" => {
            let p = ini::read_with(path, ini::Dialect::PhpFpm, opts)?;
            let out = (p.files.clone(), p.notes.clone(), None);
            c.php_fpm = Some(p);
            out
        }
        _ => {
            let mut p = ini::read_with(path, ini::Dialect::MyCnf, opts)?;
            let flavor = webtune_conf::mycnf::flavor(&p);
            let release = facts::database_release(
                inputs.mysql_version.as_deref(),
                inputs.live.as_ref(),
                facts.copied(),
            )
            .and_then(|r| {
                // This host's binary is not the server of a tree written for another one.
                let mariadb = |s| s == webtune_conf::mycnf::Server::MariaDb;
                if r.from.ends_with("--version")
                    && !flavor.assumed
                    && mariadb(flavor.server) != mariadb(r.value.server)
                {
                    Err(format!(
                        "the tree is {}'s ({}), and this host's server ({}: {}) is not",
                        flavor.server.label(),
                        flavor.why,
                        r.from,
                        r.value
                    ))
                } else {
                    Ok(r)
                }
            });
            let dialect = match &release {
                Ok(r) => format!("{} ({})", r.value, r.from),
                Err(why) => format!("{flavor}; release unknown ({why})"),
            };
            let unknown = release.as_ref().err().cloned().unwrap_or_default();
            webtune_conf::mycnf::settle_release(
                &mut p,
                release.as_ref().ok().map(|k| &k.value),
                &unknown,
            );
            facts.database = release.ok();
            facts.database_unknown = unknown;
            facts.innodb_data = facts::innodb_data(&p, inputs.live.as_ref(), facts);
            let out = (p.files.clone(), p.notes.clone(), Some(dialect));
            c.mysql = Some(p);
            out
        }
    })
}

/// "MPM settings not read; defaults assumed", when an include not read is where the tree
/// keeps its MPM (a file or wildcard naming `mpm`, or any, when no MPM was loaded).
fn mpm_not_read(a: &apache::ApacheConfig) -> Option<ReadNote> {
    let missed = a
        .parsed
        .notes
        .iter()
        .filter(|n| n.level == NoteLevel::Warning);
    let carrier = missed.clone().find(|n| {
        n.target
            .to_string_lossy()
            .to_ascii_lowercase()
            .contains("mpm")
            || n.message.to_ascii_lowercase().contains("mpm")
    });
    let carrier = carrier.or_else(|| a.mpm().is_none().then(|| missed.clone().next()).flatten())?;
    let m = match rules::ApacheMpm::of(a) {
        Some(m) if m.threaded => format!(
            "{}: {} {}, ServerLimit {}, ThreadsPerChild {}",
            m.mpm,
            m.max_workers_name(),
            m.max_workers,
            m.server_limit,
            m.threads_per_child
        ),
        Some(m) => format!(
            "{}: {} {}, ServerLimit {}",
            m.mpm,
            m.max_workers_name(),
            m.max_workers,
            m.server_limit
        ),
        None => {
            return Some(ReadNote {
                level: NoteLevel::Warning,
                at: carrier.at.clone(),
                target: carrier.target.clone(),
                message: "MPM not known: the include here was not read, and what was read loads \
                          no MPM; nothing MPM-specific is sized"
                    .into(),
            })
        }
    };
    Some(ReadNote {
        level: NoteLevel::Warning,
        at: carrier.at.clone(),
        target: carrier.target.clone(),
        message: format!(
            "MPM settings not read; defaults assumed ({m}): the include here was not read"
        ),
    })
}
