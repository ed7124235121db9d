//! webtune-advise: a read-only advisor. It reads the configs of Apache, nginx, php-fpm
//! and MariaDB/MySQL (given, or found from the running servers' command lines, or at
//! Debian's stock paths), the host's facts from /proc and /sys, and optionally a saved
//! run's measurements, and explains every setting that matters with the calculation
//! shown and the `file:line` it rests on. It never changes a file or a sysctl; it can
//! write suggested copies of the config files into a directory of the user's choice.
//! The configs are read with the readers of crates/conf (`webtune_conf`), which the lab
//! shares; this crate holds the rules and their explanations.

pub mod check;
mod error;
pub mod evidence;
pub mod finding;
pub mod host;
pub mod live;
pub mod output;
pub mod plan;
pub mod rules;

pub use error::AdviseError;
pub use evidence::Evidence;
pub use finding::{Change, Finding, Severity};
pub use host::HostFacts;
pub use plan::Plan;
pub use rules::Layers;

use serde::Serialize;
use std::path::{Path, PathBuf};
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
}

/// The configurations read.
#[derive(Debug, Clone, Default)]
pub struct Configs {
    pub apache: Option<apache::ApacheConfig>,
    pub nginx: Option<nginx::NginxConfig>,
    pub php_fpm: Option<config::Parsed>,
    pub mysql: Option<config::Parsed>,
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
}

impl Advice {
    /// Add what `--live` read: its findings join the others (most severe first), its
    /// unanswered sources become notes.
    pub fn add_live(&mut self, live: live::Live) {
        self.findings.extend(live.findings.iter().cloned());
        self.findings.sort_by_key(|f| f.severity);
        self.notes.extend(live.notes.iter().cloned());
        self.live = Some(live);
    }
}

/// Stock config paths (Debian's, then upstream's).
const STOCK_APACHE: &[&str] = &["/etc/apache2/apache2.conf", "/etc/httpd/conf/httpd.conf"];
const STOCK_NGINX: &[&str] = &["/etc/nginx/nginx.conf"];
const STOCK_MYSQL: &[&str] = &["/etc/mysql/my.cnf", "/etc/my.cnf"];

/// Read everything, run the rules.
pub fn advise(inputs: &Inputs) -> Result<Advice, AdviseError> {
    let host = HostFacts::read();
    let evidence = inputs
        .result
        .as_deref()
        .map(Evidence::from_file)
        .transpose()?;
    let configs = read_configs(inputs, &host)?;
    let layers = Layers {
        host: &host,
        apache: configs.apache.as_ref(),
        nginx: configs.nginx.as_ref(),
        php_fpm: configs.php_fpm.as_ref(),
        mysql: configs.mysql.as_ref(),
        evidence: evidence.as_ref(),
    };
    let (findings, plan) = rules::plan(&layers);
    Ok(Advice {
        plan,
        patch_checks: Vec::new(),
        live: None,
        configs: configs.read.clone(),
        notes: configs.notes.clone(),
        host,
        evidence,
        findings,
    })
}

/// Read the given configs, and (with `discover`) the others from the running servers or
/// the stock paths. A given file that cannot be read is an error; a discovered one that
/// cannot be read is skipped with a note.
pub fn read_configs(inputs: &Inputs, host: &HostFacts) -> Result<Configs, AdviseError> {
    let mut c = Configs::default();
    for server in ["apache2", "nginx", "php-fpm", "mariadb"] {
        let given = match server {
            "apache2" => &inputs.apache,
            "nginx" => &inputs.nginx,
            "php-fpm" => &inputs.php_fpm,
            _ => &inputs.mysql,
        };
        let mut candidates: Vec<(PathBuf, String, Vec<String>)> = Vec::new();
        if let Some(p) = given {
            candidates.push((p.clone(), "given".into(), Vec::new()));
        } else if inputs.discover {
            for s in host.servers.iter().filter(|s| s.kind == server) {
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
            for p in stock_paths(server) {
                candidates.push((p, "stock path".into(), Vec::new()));
            }
        }
        for (path, found, defines) in candidates {
            let strict = found == "given";
            if !strict && !path.is_file() {
                continue;
            }
            match read_one(server, &path, &defines, &mut c) {
                Ok(files) => {
                    c.read.push(ConfigRead {
                        server: server.into(),
                        main: path,
                        found,
                        files,
                    });
                    break;
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

fn stock_paths(server: &str) -> Vec<PathBuf> {
    match server {
        "apache2" => STOCK_APACHE.iter().map(PathBuf::from).collect(),
        "nginx" => STOCK_NGINX.iter().map(PathBuf::from).collect(),
        "mariadb" => STOCK_MYSQL.iter().map(PathBuf::from).collect(),
        _ => {
            // /etc/php/X.Y/fpm/php-fpm.conf, newest version first.
            let mut found: Vec<PathBuf> = glob::glob("/etc/php/*/fpm/php-fpm.conf")
                .map(|g| g.filter_map(Result::ok).collect())
                .unwrap_or_default();
            found.sort();
            found.reverse();
            found.push(PathBuf::from("/etc/php-fpm.conf"));
            found
        }
    }
}

fn read_one(
    server: &str,
    path: &Path,
    defines: &[String],
    c: &mut Configs,
) -> Result<Vec<PathBuf>, AdviseError> {
    Ok(match server {
        "apache2" => {
            let a = apache::read(path, defines)?;
            let files = a.parsed.files.clone();
            c.apache = Some(a);
            files
        }
        "nginx" => {
            let n = nginx::read(path)?;
            let files = n.parsed.files.clone();
            c.nginx = Some(n);
            files
        }
        "php-fpm" => {
            let p = ini::read(path, ini::Dialect::PhpFpm)?;
            let files = p.files.clone();
            c.php_fpm = Some(p);
            files
        }
        _ => {
            let p = ini::read(path, ini::Dialect::MyCnf)?;
            let files = p.files.clone();
            c.mysql = Some(p);
            files
        }
    })
}
