//! The servers the lab runs, one module each (nginx, Apache httpd, php-fpm, MariaDB,
//! Postfix, Caddy),
//! behind one trait, `ServerType`. Each module owns everything about its server: its
//! tunable parameters (names, ranges, Debian's defaults), its program on this host, its
//! config (rendered for a lab stack, or the command line that runs a user's own copied
//! config), how it is known to be ready, how it is asked to stop, what of it is worth
//! tuning, and how its logs read. The supervisor (`process`, `supervisor`) runs every
//! server the same way from the `ServerPlan` its module made.
//!
//! A new server type is a new module here, a `Component` variant and its arm in
//! `Component::server`: the stacks, the renderer, the imports, the tuner's spaces and the
//! supervisor only ask the trait.

pub(crate) mod apache;
pub mod caddy;
pub(crate) mod mariadb;
pub(crate) mod nginx;
pub mod nginx_events;
pub(crate) mod php_fpm;
pub mod postfix;

use crate::params::{InertRule, ParamSpec, Settings, Value};
use crate::vocab::{Completion, Layout, Tunable};
use crate::LabError;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use webtune_model::server::LogMessage;

/// Apache's multi-processing module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mpm {
    Prefork,
    Worker,
    Event,
}

impl Mpm {
    pub fn name(self) -> &'static str {
        match self {
            Mpm::Prefork => "prefork",
            Mpm::Worker => "worker",
            Mpm::Event => "event",
        }
    }
}

/// What an nginx instance does with requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NginxRole {
    /// Serves the document root's files.
    Static,
    /// Proxies every request to an HTTP backend (`upstream`).
    Proxy,
    /// Serves files and hands `*.php` to php-fpm over FastCGI.
    FastCgi,
}

/// One server process (with its children) the lab runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    Nginx(NginxRole),
    /// Apache httpd; PHP through mod_php under prefork, through php-fpm otherwise.
    Apache(Mpm),
    PhpFpm,
    /// The forum's private database.
    MariaDb,
    /// A private Postfix (the mail stack).
    Postfix,
    /// Caddy, a TLS front serving HTTP/1.1, HTTP/2 and HTTP/3.
    Caddy,
}

impl Component {
    /// The module that knows this server: the one place a component becomes behaviour.
    pub fn server(self) -> Box<dyn ServerType> {
        match self {
            Component::Nginx(role) => Box::new(nginx::Nginx { role }),
            Component::Apache(mpm) => Box::new(apache::Apache { mpm }),
            Component::PhpFpm => Box::new(php_fpm::PhpFpm),
            Component::MariaDb => Box::new(mariadb::MariaDb),
            Component::Postfix => Box::new(postfix::Postfix),
            Component::Caddy => Box::new(caddy::Caddy),
        }
    }

    /// The program's name ("nginx", "apache2", "php-fpm", "mariadbd").
    pub fn server_name(self) -> &'static str {
        self.server().name()
    }
}

/// A program a server needs, and the Debian package that provides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirement {
    pub program: &'static str,
    pub package: &'static str,
}

/// One kind of server, as the lab knows it.
pub trait ServerType {
    /// The program's name in messages ("nginx", "apache2", "php-fpm", "mariadbd").
    fn name(&self) -> &'static str;

    /// How results and messages name it ("apache2 (prefork)").
    fn label(&self) -> String {
        self.name().to_string()
    }

    /// What must be installed to run it.
    fn requirements(&self) -> Vec<Requirement>;

    /// Its program on this host, or one line naming the package to install.
    fn program(&self, programs: &Programs) -> Result<PathBuf, LabError>;

    /// Its tunable parameters, names without a prefix.
    fn parameters(&self) -> Vec<ParamSpec>;

    /// Which of its parameters (names without a prefix) do nothing under which values of
    /// another.
    fn inert_rules(&self) -> Vec<InertRule> {
        Vec::new()
    }

    /// The line that sets `spec` to `value` in its config, as the server reads it.
    fn directive_line(&self, spec: &ParamSpec, value: &str) -> String {
        format!("{} {value}", spec.directive)
    }

    /// Its TLS parameters, when it is the front server of a TLS stack.
    fn tls_parameters(&self) -> Vec<ParamSpec> {
        Vec::new()
    }

    /// Refuse combinations of its parameters (under `prefix`) that the server would
    /// silently change at start, which would make a run measure something not asked for.
    fn check_settings(&self, _prefix: &str, _settings: &Settings) -> Result<(), LabError> {
        Ok(())
    }

    /// A value as its config files spell it.
    fn spell(&self, value: Value) -> String {
        value.to_string()
    }

    /// Variables set in its environment (and its config check's), its private directory
    /// being `dir`: where a server insists on writing under HOME (Caddy).
    fn environment(&self, _dir: &Path) -> Vec<(&'static str, PathBuf)> {
        Vec::new()
    }

    /// Make what it needs on disk besides its configs (written already) before its start:
    /// Postfix's queue, mailboxes and map. `dir` is the stack's private directory.
    fn prepare(&self, _plan: &ServerPlan, _dir: &Path) -> Result<(), LabError> {
        Ok(())
    }

    /// Its config in a lab stack, and the plan that runs it.
    fn render(&self, context: &RenderContext) -> Result<RenderedServer, LabError>;

    /// The plan that runs a user's own config, copied into the private directory (see
    /// `import`). Only servers whose configs can be imported have one.
    fn imported_plan(&self, _import: &ImportedConfig) -> Result<ServerPlan, LabError> {
        Err(LabError::Inconsistent(format!(
            "{} configs cannot be imported",
            self.name()
        )))
    }

    /// Its parameters (under `prefix`) worth a search on a host with `cores` CPUs; `proxy`
    /// when the stack has more than one server.
    fn tuning_space(&self, _prefix: &str, _cores: i64, _proxy: bool) -> Vec<Tunable> {
        Vec::new()
    }

    /// The parameter seed 000's rule "two busy backend processes per core behind a proxy"
    /// sets, if it applies to this server.
    fn busy_processes_parameter(&self, _proxy: bool) -> Option<&'static str> {
        None
    }

    /// Add the dependent limits the chosen values (under `prefix`) need for the server to
    /// accept them.
    fn complete(&self, _prefix: &str, _completion: &mut Completion) {}

    /// The warnings and errors its logs hold so far, counted.
    fn log_messages(&self, plan: &ServerPlan) -> Vec<LogMessage> {
        crate::logs::collect(
            &plan.label,
            &[plan.error_log.as_path(), plan.output_log.as_path()],
        )
    }
}

/// How the supervisor knows a server is ready.
#[derive(Debug, Clone)]
pub enum Readiness {
    /// `GET path` answers 200.
    HttpGet(&'static str),
    /// The port accepts a TCP connection.
    TcpAccept,
    /// `GET path` over TLS answers 200 (the front of a TLS stack).
    HttpsGet(&'static str),
    /// The unix socket at `path` answers as `answers` expects (MariaDB: its greeting).
    Socket {
        path: PathBuf,
        answers: fn(&Path) -> bool,
    },
}

/// `GET path` answers 200, over TLS on a TLS front.
pub fn ready_on(tls: bool, path: &'static str) -> Readiness {
    if tls {
        Readiness::HttpsGet(path)
    } else {
        Readiness::HttpGet(path)
    }
}

/// One server process to start.
#[derive(Debug, Clone)]
pub struct ServerPlan {
    /// "nginx", "backend apache2 (prefork)", …
    pub label: String,
    pub component: Component,
    pub program: PathBuf,
    /// Arguments that make the server check its config and exit (empty: no check).
    pub check_args: Vec<OsString>,
    /// Arguments that run the server in the foreground.
    pub run_args: Vec<OsString>,
    pub config_file: PathBuf,
    pub error_log: PathBuf,
    /// Where the server's stdout and stderr go.
    pub output_log: PathBuf,
    /// The loopback port it listens on (0: none, a unix socket only).
    pub port: u16,
    /// The signal that asks the master for an orderly stop.
    pub stop_signal: i32,
    pub readiness: Readiness,
}

/// One server's part of a rendered stack.
#[derive(Debug, Clone)]
pub struct RenderedServer {
    /// Config files: name inside the private directory, contents.
    pub configs: Vec<(String, String)>,
    pub plan: ServerPlan,
}

/// What one server of a stack is rendered from.
#[derive(Debug, Clone)]
pub struct RenderContext<'a> {
    /// The stack's name, for the configs' headers.
    pub stack: &'a str,
    /// Its parameters' prefix in the stack (`backend.`, `frontend.`, or none).
    pub prefix: &'a str,
    pub settings: &'a Settings,
    pub layout: &'a Layout,
    pub programs: &'a Programs,
    pub port: u16,
    /// The port of the server started just before it: the backend it hands requests to.
    pub backend_port: u16,
    /// Started last: the server clients load, listening on every address of the layout.
    pub front: bool,
    /// The front of a TLS stack: it terminates TLS (certificate in the private directory).
    pub tls: bool,
    /// The account workers run as when the lab runs as root (user, group).
    pub account: Option<(String, String)>,
}

impl RenderContext<'_> {
    /// A parameter's value by its name without prefix.
    pub fn get(&self, local: &str) -> Option<Value> {
        self.settings.get(&format!("{}{local}", self.prefix))
    }

    pub fn int(&self, local: &str) -> i64 {
        self.get(local).and_then(|v| v.as_int()).unwrap_or(0)
    }

    pub fn switch(&self, local: &str) -> bool {
        self.get(local).and_then(|v| v.as_switch()).unwrap_or(false)
    }

    pub fn dir(&self) -> &Path {
        &self.layout.dir
    }

    /// `127.0.0.N:PORT` for every address it listens on: all of the layout's for the
    /// front, one for the others.
    pub fn addresses(&self) -> Vec<String> {
        let count = if self.front {
            self.layout.addresses.clamp(1, 254)
        } else {
            1
        };
        (1..=count)
            .map(|i| format!("127.0.0.{i}:{}", self.port))
            .collect()
    }

    /// Its label in the stack: "backend apache2 (prefork)".
    pub fn label(&self, server: &dyn ServerType) -> String {
        match self.prefix.trim_end_matches('.') {
            "" => server.label(),
            side => format!("{side} {}", server.label()),
        }
    }

    /// The template variables every server's config has: stack, dir, docroot, port, and
    /// each of its parameters by its name without prefix, spelled as it spells them.
    pub fn vars(&self, server: &dyn ServerType) -> BTreeMap<String, String> {
        let mut vars = BTreeMap::new();
        vars.insert("stack".to_string(), self.stack.to_string());
        vars.insert("dir".to_string(), self.layout.dir.display().to_string());
        vars.insert(
            "docroot".to_string(),
            self.layout.docroot.display().to_string(),
        );
        vars.insert("port".to_string(), self.port.to_string());
        for (name, value) in self.settings.iter() {
            if let Some(local) = name.strip_prefix(self.prefix) {
                vars.insert(local.to_string(), server.spell(value));
            }
        }
        vars
    }

    /// The program, or its bare name when it is missing (a start checks programs first;
    /// rendering alone, as `lab config` does, needs none).
    pub fn program(&self, server: &dyn ServerType) -> PathBuf {
        server
            .program(self.programs)
            .unwrap_or_else(|_| PathBuf::from(server.name()))
    }
}

/// What a user's own config is run from, once copied (see `import`).
#[derive(Debug, Clone)]
pub struct ImportedConfig<'a> {
    /// The private directory.
    pub dir: &'a Path,
    /// The copy of the user's main config file.
    pub config: PathBuf,
    /// The loopback port the load goes to.
    pub port: u16,
    /// True when the lab runs as root.
    pub privileged: bool,
    /// Apache: Debian's `envvars` of the original (`APACHE_RUN_USER` …).
    pub env: &'a BTreeMap<String, String>,
    pub programs: &'a Programs,
}

impl ImportedConfig<'_> {
    /// Where the copy's error log goes.
    pub fn error_log(&self) -> PathBuf {
        self.dir.join("error.log")
    }
}

/// The programs and module files the servers need, found on this host.
#[derive(Debug, Clone)]
pub struct Programs {
    pub nginx: Option<PathBuf>,
    pub apache2: Option<PathBuf>,
    pub php_fpm: Option<PathBuf>,
    pub apache_modules: PathBuf,
    pub mod_php: Option<PathBuf>,
    pub mariadbd: Option<PathBuf>,
}

impl Programs {
    /// Look for the servers in PATH and the usual sbin directories.
    pub fn discover() -> Programs {
        let apache_modules = ["/usr/lib/apache2/modules", "/usr/lib64/httpd/modules"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_dir())
            .unwrap_or_else(|| PathBuf::from("/usr/lib/apache2/modules"));
        let mod_php = newest_matching(&apache_modules, "libphp", ".so");
        Programs {
            nginx: find_program(&["nginx"]),
            apache2: find_program(&["apache2", "httpd"]),
            php_fpm: find_program(&["php-fpm"]).or_else(|| {
                search_dirs()
                    .iter()
                    .find_map(|d| newest_matching(d, "php-fpm", ""))
            }),
            apache_modules,
            mod_php,
            mariadbd: find_program(&["mariadbd", "mysqld"]),
        }
    }

    /// The program a component runs, or a one-line error naming the package to install.
    pub fn program_for(&self, component: Component) -> Result<PathBuf, LabError> {
        component.server().program(self)
    }

    /// Where a requirement was found on this host, if it was.
    pub fn locate(&self, need: &Requirement) -> Option<PathBuf> {
        match need.program {
            "nginx" => self.nginx.clone(),
            "apache2" => self.apache2.clone(),
            "php-fpm" => self.php_fpm.clone(),
            "mariadbd" => self.mariadbd.clone(),
            "libphp*.so" => self.mod_php.clone(),
            other => find_program(&[other]),
        }
    }
}

/// `found`, or the error that names the program and its package.
pub fn require(found: &Option<PathBuf>, need: Requirement) -> Result<PathBuf, LabError> {
    found.clone().ok_or_else(|| LabError::MissingProgram {
        program: need.program.to_string(),
        hint: format!("install the Debian package {}", need.package),
    })
}

/// PATH, then the usual sbin and bin directories.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for extra in ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"] {
        let p = PathBuf::from(extra);
        if !dirs.contains(&p) {
            dirs.push(p);
        }
    }
    dirs
}

/// The first of `names` found as a file in the search directories.
pub fn find_program(names: &[&str]) -> Option<PathBuf> {
    let dirs = search_dirs();
    names
        .iter()
        .find_map(|name| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()))
}

/// The file in `dir` named `prefix…suffix` with the highest version (php-fpm8.2 over
/// php-fpm7.4), compared number by number.
fn newest_matching(dir: &Path, prefix: &str, suffix: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut best: Option<(Vec<u64>, PathBuf)> = None;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(middle) = name
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix))
        else {
            continue;
        };
        if !middle.chars().all(|c| c.is_ascii_digit() || c == '.') {
            continue;
        }
        let version: Vec<u64> = middle
            .split('.')
            .filter_map(|part| part.parse().ok())
            .collect();
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let newer = match &best {
            Some((v, _)) => version > *v,
            None => true,
        };
        if newer {
            best = Some((version, path));
        }
    }
    best.map(|(_, p)| p)
}

/// Does the lab run as root (servers then need an account for their workers, and MariaDB
/// must be told it may run as root)?
pub(crate) fn privileged() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The account workers run as when the lab runs as root: www-data (Debian's web
/// account), else nobody/nogroup.
pub fn unprivileged_account() -> (String, String) {
    let has = |file: &str, name: &str| {
        std::fs::read_to_string(file)
            .map(|t| t.lines().any(|l| l.starts_with(&format!("{name}:"))))
            .unwrap_or(false)
    };
    if has("/etc/passwd", "www-data") && has("/etc/group", "www-data") {
        ("www-data".into(), "www-data".into())
    } else {
        ("nobody".into(), "nogroup".into())
    }
}
