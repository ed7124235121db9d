//! Apache httpd under one of its MPMs: its parameters (defaults from Debian 12's
//! mods-available/mpm_*.conf and apache2.conf), the MPM arithmetic Apache would otherwise
//! "fix" silently at start, its config in a lab stack (PHP through mod_php under prefork,
//! through php-fpm with proxy_fcgi otherwise; mod_ssl and mod_http2 at a TLS front), the
//! command line that runs a user's own copied config, and what of it is worth tuning.
//! Ready when `GET /empty.gif` answers; stopped with SIGTERM.

use super::{
    ready_on, require, Component, ImportedConfig, Mpm, Programs, Readiness, RenderContext,
    RenderedServer, Requirement, ServerPlan, ServerType,
};
use crate::params::{ParamSpec, Settings, Value};
use crate::vocab::{self, check_path_is_plain, fill, Completion, Tunable, CERT_FILE, KEY_FILE};
use crate::LabError;
use std::ffi::OsString;
use std::path::PathBuf;

mod params;

const TEMPLATE: &str = include_str!("../../../templates/apache2.conf");

pub const NEEDS: Requirement = Requirement {
    program: "apache2",
    package: "apache2",
};
const NEEDS_MOD_PHP: Requirement = Requirement {
    program: "libphp*.so",
    package: "libapache2-mod-php",
};

const WHY_WORKERS: &str = "requests served at once: too few queue clients, too many thrash \
    the CPU and memory (seed 000: 12 -> 4 processes behind nginx cut p90 by 43%)";
const WHY_KEEPALIVE: &str = "keep-alive saves a connect per request but holds a worker per idle \
    client (seed 001: KeepAliveTimeout 15 -> 2)";
const WHY_KEEPALIVE_TIMEOUT: &str = "how long an idle client holds its worker (seed 001)";
const WHY_THREADS: &str = "threads per process: the worker/event MPMs serve a request per \
    thread (seed 001: ServerLimit x ThreadsPerChild)";

/// Apache httpd with one MPM.
#[derive(Debug, Clone, Copy)]
pub struct Apache {
    pub mpm: Mpm,
}

impl ServerType for Apache {
    fn name(&self) -> &'static str {
        "apache2"
    }

    fn label(&self) -> String {
        format!("apache2 ({})", self.mpm.name())
    }

    fn requirements(&self) -> Vec<Requirement> {
        match self.mpm {
            Mpm::Prefork => vec![NEEDS, NEEDS_MOD_PHP],
            Mpm::Worker | Mpm::Event => vec![NEEDS],
        }
    }

    fn program(&self, programs: &Programs) -> Result<PathBuf, LabError> {
        let path = require(&programs.apache2, NEEDS)?;
        if self.mpm == Mpm::Prefork && programs.mod_php.is_none() {
            return Err(LabError::MissingProgram {
                program: "mod_php (libphp*.so)".to_string(),
                hint: format!("install the Debian package {}", NEEDS_MOD_PHP.package),
            });
        }
        Ok(path)
    }

    /// Without keep-alive, its timeout and request limit do nothing.
    fn inert_rules(&self) -> Vec<crate::params::InertRule> {
        ["KeepAliveTimeout", "MaxKeepAliveRequests"]
            .into_iter()
            .map(|p| crate::params::InertRule::new(p, "KeepAlive", &["off"]))
            .collect()
    }

    fn parameters(&self) -> Vec<ParamSpec> {
        params::parameters(self.mpm)
    }

    fn tls_parameters(&self) -> Vec<ParamSpec> {
        params::tls_parameters()
    }

    fn check_settings(&self, prefix: &str, settings: &Settings) -> Result<(), LabError> {
        let get = |n: &str| {
            settings
                .get(&format!("{prefix}{n}"))
                .and_then(|v| v.as_int())
                .unwrap_or(0)
        };
        let max_workers = get("MaxRequestWorkers");
        let server_limit = get("ServerLimit");
        match self.mpm {
            Mpm::Prefork => {
                if max_workers > server_limit {
                    return Err(LabError::Inconsistent(format!(
                        "{prefix}MaxRequestWorkers {max_workers} exceeds {prefix}ServerLimit \
                         {server_limit}; raise {prefix}ServerLimit too"
                    )));
                }
            }
            Mpm::Worker | Mpm::Event => {
                let threads = get("ThreadsPerChild");
                let thread_limit = get("ThreadLimit");
                if threads > thread_limit {
                    return Err(LabError::Inconsistent(format!(
                        "{prefix}ThreadsPerChild {threads} exceeds {prefix}ThreadLimit \
                         {thread_limit}; raise {prefix}ThreadLimit too"
                    )));
                }
                if threads > 0 && max_workers < threads {
                    // Apache: "MaxRequestWorkers of 4 is less than ThreadsPerChild of 25,
                    // increasing to match".
                    return Err(LabError::Inconsistent(format!(
                        "{prefix}MaxRequestWorkers {max_workers} is less than \
                         {prefix}ThreadsPerChild {threads}: Apache would raise it to {threads}; \
                         use {threads}, or lower {prefix}ThreadsPerChild"
                    )));
                }
                if threads > 0 && max_workers % threads != 0 {
                    let lower = max_workers / threads * threads;
                    return Err(LabError::Inconsistent(format!(
                        "{prefix}MaxRequestWorkers {max_workers} is not a multiple of \
                         {prefix}ThreadsPerChild {threads}: Apache would lower it to {lower}; \
                         use {lower} or {}",
                        lower + threads
                    )));
                }
                if max_workers > server_limit * threads {
                    return Err(LabError::Inconsistent(format!(
                        "{prefix}MaxRequestWorkers {max_workers} exceeds {prefix}ServerLimit × \
                         {prefix}ThreadsPerChild = {server_limit} × {threads}; raise \
                         {prefix}ServerLimit"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Apache writes switches On/Off.
    fn spell(&self, value: Value) -> String {
        match value {
            Value::Switch(true) => "On".to_string(),
            Value::Switch(false) => "Off".to_string(),
            v => v.to_string(),
        }
    }

    fn render(&self, c: &RenderContext) -> Result<RenderedServer, LabError> {
        let mut vars = c.vars(self);
        let modules = c.programs.apache_modules.display().to_string();
        vars.insert("mpm".into(), self.mpm.name().into());
        let listen: Vec<String> = c
            .addresses()
            .iter()
            .map(|a| format!("Listen {a}"))
            .collect();
        vars.insert("listen".into(), listen.join("\n"));
        vars.insert("modules".into(), modules.clone());
        vars.insert(
            "user_group".into(),
            match &c.account {
                Some((user, group)) => format!("User {user}\nGroup {group}"),
                None => String::new(),
            },
        );
        let mpm_names: &[&str] = match self.mpm {
            Mpm::Prefork => &[
                "StartServers",
                "MinSpareServers",
                "MaxSpareServers",
                "ServerLimit",
                "MaxRequestWorkers",
                "MaxConnectionsPerChild",
            ],
            Mpm::Worker => &[
                "ServerLimit",
                "ThreadLimit",
                "StartServers",
                "MinSpareThreads",
                "MaxSpareThreads",
                "ThreadsPerChild",
                "MaxRequestWorkers",
                "MaxConnectionsPerChild",
            ],
            Mpm::Event => &[
                "ServerLimit",
                "ThreadLimit",
                "StartServers",
                "MinSpareThreads",
                "MaxSpareThreads",
                "ThreadsPerChild",
                "MaxRequestWorkers",
                "MaxConnectionsPerChild",
                "AsyncRequestWorkerFactor",
            ],
        };
        let block: Vec<String> = mpm_names
            .iter()
            .filter_map(|n| vars.get(*n).map(|v| format!("{n} {v}")))
            .collect();
        vars.insert("mpm_directives".into(), block.join("\n"));
        if self.mpm == Mpm::Prefork {
            let mod_php = c
                .programs
                .mod_php
                .clone()
                .unwrap_or_else(|| c.programs.apache_modules.join("libphp.so"));
            check_path_is_plain(&mod_php)?;
            vars.insert(
                "php_modules".into(),
                format!("LoadModule php_module {}", mod_php.display()),
            );
            vars.insert(
                "php_handler".into(),
                "<FilesMatch \"\\.php$\">\n    SetHandler application/x-httpd-php\n</FilesMatch>"
                    .into(),
            );
        } else {
            vars.insert(
                "php_modules".into(),
                format!(
                    "LoadModule proxy_module {modules}/mod_proxy.so\n\
                     LoadModule proxy_fcgi_module {modules}/mod_proxy_fcgi.so"
                ),
            );
            vars.insert(
                "php_handler".into(),
                format!(
                    "<FilesMatch \"\\.php$\">\n    SetHandler \
                     \"proxy:fcgi://127.0.0.1:{}\"\n</FilesMatch>",
                    c.backend_port
                ),
            );
        }
        let (tls_modules, tls_block) = if c.tls {
            tls_directives(c, &modules)
        } else {
            (String::new(), String::new())
        };
        vars.insert("tls_modules".into(), tls_modules);
        vars.insert("tls".into(), tls_block);
        let dir = c.dir();
        let config = dir.join("apache2.conf");
        let text = fill(TEMPLATE, &vars)?;
        let base: Vec<OsString> = vec![
            "-d".into(),
            dir.to_path_buf().into(),
            "-f".into(),
            config.clone().into(),
        ];
        let (check_args, run_args) = check_and_run(base);
        Ok(RenderedServer {
            configs: vec![("apache2.conf".to_string(), text)],
            plan: ServerPlan {
                label: c.label(self),
                component: Component::Apache(self.mpm),
                program: c.program(self),
                check_args,
                run_args,
                config_file: config,
                error_log: dir.join("apache2-error.log"),
                output_log: dir.join("apache2.out"),
                port: c.port,
                stop_signal: libc::SIGTERM,
                readiness: ready_on(c.tls, "/empty.gif"),
            },
        })
    }

    fn imported_plan(&self, import: &ImportedConfig) -> Result<ServerPlan, LabError> {
        let program = self.program(import.programs)?;
        let dir = import.dir;
        let run = dir.join("run");
        let env = |name: &str| import.env.get(name).cloned();
        let defines = [
            ("APACHE_RUN_DIR", run.display().to_string()),
            ("APACHE_LOCK_DIR", run.display().to_string()),
            ("APACHE_LOG_DIR", dir.display().to_string()),
            (
                "APACHE_PID_FILE",
                run.join("apache2.pid").display().to_string(),
            ),
            (
                "APACHE_RUN_USER",
                env("APACHE_RUN_USER").unwrap_or_else(|| "www-data".into()),
            ),
            (
                "APACHE_RUN_GROUP",
                env("APACHE_RUN_GROUP").unwrap_or_else(|| "www-data".into()),
            ),
        ];
        let error_log = import.error_log();
        let mut base: Vec<OsString> = vec![
            "-d".into(),
            dir.join("conf").into(),
            "-f".into(),
            import.config.clone().into(),
        ];
        let mut before = vec![
            format!("PidFile \"{}\"", run.join("apache2.pid").display()),
            format!("DefaultRuntimeDir \"{}\"", run.display()),
            format!("ErrorLog \"{}\"", error_log.display()),
        ];
        before.extend(defines.iter().map(|(n, v)| format!("Define {n} {v}")));
        for directive in before {
            base.push("-C".into());
            base.push(directive.into());
        }
        let (check_args, run_args) = check_and_run(base);
        Ok(ServerPlan {
            label: "apache2 (your config)".into(),
            component: Component::Apache(self.mpm),
            program,
            check_args,
            run_args,
            config_file: import.config.clone(),
            error_log,
            output_log: dir.join("apache2.out"),
            port: import.port,
            stop_signal: libc::SIGTERM,
            readiness: Readiness::TcpAccept,
        })
    }

    fn tuning_space(&self, prefix: &str, cores: i64, _proxy: bool) -> Vec<Tunable> {
        let p = |n: &str| format!("{prefix}{n}");
        let mut space = match self.mpm {
            Mpm::Prefork => vec![Tunable::int(
                p("MaxRequestWorkers"),
                1,
                (cores * 64).clamp(16, 512),
                true,
                WHY_WORKERS,
            )],
            Mpm::Worker | Mpm::Event => vec![
                Tunable::int(
                    p("ServerLimit"),
                    1,
                    (cores * 4).clamp(4, 32),
                    true,
                    WHY_WORKERS,
                ),
                Tunable::int(p("ThreadsPerChild"), 1, 64, true, WHY_THREADS),
            ],
        };
        space.push(Tunable::switch(p("KeepAlive"), WHY_KEEPALIVE));
        space.push(Tunable::int(
            p("KeepAliveTimeout"),
            1,
            15,
            false,
            WHY_KEEPALIVE_TIMEOUT,
        ));
        space.push(Tunable::int(
            p("ListenBacklog"),
            64,
            4096,
            true,
            vocab::WHY_BACKLOG,
        ));
        space
    }

    /// Behind a proxy, prefork's processes are the busy backend processes.
    fn busy_processes_parameter(&self, proxy: bool) -> Option<&'static str> {
        (proxy && self.mpm == Mpm::Prefork).then_some("MaxRequestWorkers")
    }

    /// ServerLimit at least MaxRequestWorkers (prefork) or MaxRequestWorkers /
    /// ThreadsPerChild (worker, event), ThreadLimit at least ThreadsPerChild,
    /// MaxRequestWorkers a multiple of ThreadsPerChild, spare counts within the workers.
    fn complete(&self, prefix: &str, c: &mut Completion) {
        let p = |n: &str| format!("{prefix}{n}");
        match self.mpm {
            Mpm::Prefork => {
                if let Some(workers) = c.value(&p("MaxRequestWorkers")) {
                    let limit = c.default_of(&p("ServerLimit")).unwrap_or(256).max(workers);
                    c.set_default(p("ServerLimit"), limit);
                    for spare in ["StartServers", "MinSpareServers", "MaxSpareServers"] {
                        if let Some(d) = c.default_of(&p(spare)) {
                            c.set_default(p(spare), d.min(workers));
                        }
                    }
                }
            }
            Mpm::Worker | Mpm::Event => {
                let threads = c
                    .value(&p("ThreadsPerChild"))
                    .or_else(|| c.default_of(&p("ThreadsPerChild")))
                    .unwrap_or(25)
                    .max(1);
                let thread_limit = c.default_of(&p("ThreadLimit")).unwrap_or(64).max(threads);
                c.set_default(p("ThreadLimit"), thread_limit);
                let servers = c.value(&p("ServerLimit"));
                match c.value(&p("MaxRequestWorkers")) {
                    Some(workers) => {
                        let rounded = (workers / threads).max(1) * threads;
                        c.set_default(p("MaxRequestWorkers"), rounded);
                        let needed = rounded / threads;
                        let limit = servers.unwrap_or(0).max(needed);
                        c.set_default(p("ServerLimit"), limit);
                    }
                    None => {
                        let servers = servers
                            .or_else(|| c.default_of(&p("ServerLimit")))
                            .unwrap_or(16);
                        c.set_default(p("MaxRequestWorkers"), servers * threads);
                    }
                }
                let workers = c.value(&p("MaxRequestWorkers")).unwrap_or(threads);
                for (name, cap) in [
                    ("MinSpareThreads", workers),
                    ("MaxSpareThreads", workers),
                    ("StartServers", workers / threads),
                ] {
                    if let Some(d) = c.default_of(&p(name)) {
                        c.set_default(p(name), d.min(cap.max(1)));
                    }
                }
            }
        }
    }
}

/// The check (`-t`) and the foreground run (`-DFOREGROUND`) of the same arguments.
fn check_and_run(base: Vec<OsString>) -> (Vec<OsString>, Vec<OsString>) {
    let mut check = base.clone();
    check.push("-t".into());
    let mut run = base;
    run.push("-DFOREGROUND".into());
    (check, run)
}

/// The TLS front's LoadModule lines and its mod_ssl (and mod_http2) directives.
fn tls_directives(c: &RenderContext, modules: &str) -> (String, String) {
    let dir = c.dir().display();
    let h2 = c.switch("Protocols_h2");
    let mut loads = format!(
        "LoadModule socache_shmcb_module {modules}/mod_socache_shmcb.so\n\
         LoadModule ssl_module {modules}/mod_ssl.so"
    );
    if h2 {
        loads.push_str(&format!("\nLoadModule http2_module {modules}/mod_http2.so"));
    }
    let cache = match c.int("SSLSessionCache") {
        0 => "none".to_string(),
        kib => format!("shmcb:{dir}/run/ssl_scache({})", kib * 1024),
    };
    let mut block = format!(
        "SSLEngine on\nSSLCertificateFile {dir}/{CERT_FILE}\n\
         SSLCertificateKeyFile {dir}/{KEY_FILE}\nSSLProtocol -all {}\n\
         SSLSessionCache {cache}\nSSLSessionTickets {}\n",
        vocab::protocol_words(c.get("SSLProtocol"))
            .split(' ')
            .map(|p| format!("+{p}"))
            .collect::<Vec<_>>()
            .join(" "),
        if c.switch("SSLSessionTickets") {
            "on"
        } else {
            "off"
        },
    );
    if h2 {
        block.push_str(&format!(
            "Protocols h2 http/1.1\nH2MaxSessionStreams {}\n",
            c.int("H2MaxSessionStreams")
        ));
    }
    (loads, block)
}
