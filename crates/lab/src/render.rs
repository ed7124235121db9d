//! Rendering: a stack, its validated settings and a directory layout become config files
//! (from the templates in `crates/lab/templates/`), the site's files, and a plan for each
//! server process (program, check command, run command, stop signal).
//!
//! Only typed values from `params::Settings`, ports we chose and paths we created reach a
//! config file; paths are checked to hold no character that could end a directive.

use crate::params::{Settings, Value};
use crate::stacks::{Component, Mpm, NginxRole, StackKind};
use crate::LabError;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

const APACHE_TEMPLATE: &str = include_str!("../templates/apache2.conf");
const NGINX_TEMPLATE: &str = include_str!("../templates/nginx.conf");
const PHP_FPM_TEMPLATE: &str = include_str!("../templates/php-fpm.conf");
const CPU_PHP: &str = include_str!("../templates/cpu.php");

/// The 43-byte transparent 1×1 GIF of seed 002's test.
pub const EMPTY_GIF: [u8; 43] = [
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

/// Size of the static page (seed 001 loaded a 79 KB page).
pub const PAGE_BYTES: usize = 80 * 1024;

/// Where one start's files live and which ports its servers listen on.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Private directory (mode 0700): configs, pids, logs, temp files.
    pub dir: PathBuf,
    /// World-readable document root (workers that run as www-data must read it).
    pub docroot: PathBuf,
    /// One loopback port per component, in the stack's component order.
    pub ports: Vec<u16>,
    /// True when the lab runs as root: workers then need an account to run as.
    pub privileged: bool,
    /// Loopback addresses the front server listens on: 127.0.0.1 … 127.0.0.N (N ≥ 1).
    pub addresses: u32,
}

/// The programs and module files the servers need, found on this host.
#[derive(Debug, Clone)]
pub struct Programs {
    pub nginx: Option<PathBuf>,
    pub apache2: Option<PathBuf>,
    pub php_fpm: Option<PathBuf>,
    pub apache_modules: PathBuf,
    pub mod_php: Option<PathBuf>,
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
            nginx: find_program("nginx"),
            apache2: find_program("apache2").or_else(|| find_program("httpd")),
            php_fpm: find_program("php-fpm").or_else(|| {
                search_dirs()
                    .iter()
                    .find_map(|d| newest_matching(d, "php-fpm", ""))
            }),
            apache_modules,
            mod_php,
        }
    }

    /// The program a component runs, or a one-line error naming the package to install.
    pub fn program_for(&self, component: Component) -> Result<PathBuf, LabError> {
        let (found, program, package) = match component {
            Component::Nginx(_) => (&self.nginx, "nginx", "nginx-light"),
            Component::Apache(_) => (&self.apache2, "apache2", "apache2"),
            Component::PhpFpm => (&self.php_fpm, "php-fpm", "php-fpm"),
        };
        let path = found.clone().ok_or_else(|| LabError::MissingProgram {
            program: program.to_string(),
            hint: format!("install the Debian package {package}"),
        })?;
        if component == Component::Apache(Mpm::Prefork) && self.mod_php.is_none() {
            return Err(LabError::MissingProgram {
                program: "mod_php (libphp*.so)".to_string(),
                hint: "install the Debian package libapache2-mod-php".to_string(),
            });
        }
        Ok(path)
    }
}

fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for extra in ["/usr/sbin", "/usr/local/sbin", "/sbin"] {
        let p = PathBuf::from(extra);
        if !dirs.contains(&p) {
            dirs.push(p);
        }
    }
    dirs
}

fn find_program(name: &str) -> Option<PathBuf> {
    search_dirs()
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file())
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

/// How the supervisor knows a server is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// `GET path` answers 200.
    HttpGet(&'static str),
    /// The port accepts a TCP connection.
    TcpAccept,
    /// `GET path` over TLS answers 200 (the front of a TLS stack).
    HttpsGet(&'static str),
}

/// One server process to start.
#[derive(Debug, Clone)]
pub struct ServerPlan {
    /// "nginx", "backend apache2 (prefork)", …
    pub label: String,
    pub component: Component,
    pub program: PathBuf,
    /// Arguments that make the server check its config and exit.
    pub check_args: Vec<OsString>,
    /// Arguments that run the server in the foreground.
    pub run_args: Vec<OsString>,
    pub config_file: PathBuf,
    pub error_log: PathBuf,
    pub port: u16,
    /// The signal that asks the master for an orderly stop.
    pub stop_signal: i32,
    pub readiness: Readiness,
}

/// Everything one start needs on disk and in processes.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// Config files: name inside the private directory, contents.
    pub configs: Vec<(String, String)>,
    /// Site files: name inside the document root, contents.
    pub site: Vec<(String, Vec<u8>)>,
    /// Servers in start order.
    pub servers: Vec<ServerPlan>,
}

/// Render every config and plan every server of a stack.
pub fn render(
    stack: StackKind,
    settings: &Settings,
    layout: &Layout,
    programs: &Programs,
) -> Result<Rendered, LabError> {
    let components = stack.components();
    if layout.ports.len() < components.len() {
        return Err(LabError::Inconsistent(format!(
            "internal: {} ports for {} servers",
            layout.ports.len(),
            components.len()
        )));
    }
    for path in [&layout.dir, &layout.docroot, &programs.apache_modules] {
        check_path_is_plain(path)?;
    }
    let dir = layout.dir.display().to_string();
    let docroot = layout.docroot.display().to_string();
    let port_of = |wanted: fn(Component) -> bool| -> u16 {
        components
            .iter()
            .zip(&layout.ports)
            .find(|((_, c), _)| wanted(*c))
            .map(|(_, p)| *p)
            .unwrap_or(0)
    };
    let fpm_port = port_of(|c| c == Component::PhpFpm);
    let apache_port = port_of(|c| matches!(c, Component::Apache(_)));
    let account = if layout.privileged {
        Some(unprivileged_account())
    } else {
        None
    };

    let mut configs = Vec::new();
    let mut servers = Vec::new();
    for ((prefix, component), port) in components.iter().zip(&layout.ports) {
        let mut vars = BTreeMap::new();
        vars.insert("stack".to_string(), stack.name().to_string());
        vars.insert("dir".to_string(), dir.clone());
        vars.insert("docroot".to_string(), docroot.clone());
        vars.insert("port".to_string(), port.to_string());
        // The front server (started last) listens on every address; the others on one.
        let front = std::ptr::eq(component, &components[components.len() - 1].1);
        let addresses: Vec<String> = (1..=if front {
            layout.addresses.clamp(1, 254)
        } else {
            1
        })
            .map(|i| format!("127.0.0.{i}:{port}"))
            .collect();
        // TLS stacks: the front server (started last) gets the certificate and TLS directives.
        let tls_front = stack.is_tls() && *port == layout.ports[components.len() - 1];
        vars.extend(crate::tls::template_vars(
            tls_front,
            *component,
            prefix,
            settings,
            &dir,
            &programs.apache_modules.display().to_string(),
        ));
        for (name, value) in settings.iter() {
            if let Some(local) = name.strip_prefix(prefix) {
                vars.insert(local.to_string(), render_value(*component, value));
            }
        }
        let int_of = |local: &str| {
            settings
                .get(&format!("{prefix}{local}"))
                .and_then(|v| v.as_int())
                .unwrap_or(0)
        };
        let label = if prefix.is_empty() {
            component_label(*component)
        } else {
            format!(
                "{} {}",
                prefix.trim_end_matches('.'),
                component_label(*component)
            )
        };
        let program = programs
            .program_for(*component)
            .unwrap_or_else(|_| PathBuf::from(component.server_name()));
        let dir_path = &layout.dir;
        match component {
            Component::Apache(mpm) => {
                vars.insert("mpm".into(), mpm.name().into());
                let listen: Vec<String> = addresses.iter().map(|a| format!("Listen {a}")).collect();
                vars.insert("listen".into(), listen.join("\n"));
                vars.insert(
                    "modules".into(),
                    programs.apache_modules.display().to_string(),
                );
                vars.insert(
                    "user_group".into(),
                    match &account {
                        Some((user, group)) => format!("User {user}\nGroup {group}"),
                        None => String::new(),
                    },
                );
                let mpm_names: &[&str] = match mpm {
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
                if *mpm == Mpm::Prefork {
                    let mod_php = programs
                        .mod_php
                        .clone()
                        .unwrap_or_else(|| programs.apache_modules.join("libphp.so"));
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
                    let m = programs.apache_modules.display();
                    vars.insert(
                        "php_modules".into(),
                        format!(
                            "LoadModule proxy_module {m}/mod_proxy.so\n\
                             LoadModule proxy_fcgi_module {m}/mod_proxy_fcgi.so"
                        ),
                    );
                    vars.insert(
                        "php_handler".into(),
                        format!(
                            "<FilesMatch \"\\.php$\">\n    SetHandler \
                             \"proxy:fcgi://127.0.0.1:{fpm_port}\"\n</FilesMatch>"
                        ),
                    );
                }
                let config = dir_path.join("apache2.conf");
                configs.push(("apache2.conf".to_string(), fill(APACHE_TEMPLATE, &vars)?));
                let base: Vec<OsString> = vec![
                    "-d".into(),
                    dir_path.clone().into(),
                    "-f".into(),
                    config.clone().into(),
                ];
                let mut check_args = base.clone();
                check_args.push("-t".into());
                let mut run_args = base;
                run_args.push("-DFOREGROUND".into());
                servers.push(ServerPlan {
                    label,
                    component: *component,
                    program,
                    check_args,
                    run_args,
                    config_file: config,
                    error_log: dir_path.join("apache2-error.log"),
                    port: *port,
                    stop_signal: libc::SIGTERM,
                    readiness: ready_on(tls_front, "/empty.gif"),
                });
            }
            Component::Nginx(role) => {
                vars.insert(
                    "role".into(),
                    match role {
                        NginxRole::Static => "static file server",
                        NginxRole::Proxy => "reverse proxy",
                        NginxRole::FastCgi => "FastCGI front end",
                    }
                    .into(),
                );
                // Workers write temp files into the private directory, which only its
                // owner may enter; as root they therefore run as root (see docs/lab.md).
                vars.insert(
                    "user".into(),
                    if layout.privileged {
                        "user root;".into()
                    } else {
                        String::new()
                    },
                );
                let nofile = int_of("worker_rlimit_nofile");
                vars.insert(
                    "worker_rlimit_nofile".into(),
                    if nofile > 0 {
                        format!("worker_rlimit_nofile {nofile};")
                    } else {
                        String::new()
                    },
                );
                let reuseport = settings
                    .get(&format!("{prefix}reuseport"))
                    .and_then(|v| v.as_switch())
                    .unwrap_or(false);
                let backlog = vars.get("listen_backlog").cloned().unwrap_or_default();
                let reuse = if reuseport { " reuseport" } else { "" };
                let tls = vars.get("tls_listen").cloned().unwrap_or_default();
                let listen: Vec<String> = addresses
                    .iter()
                    .map(|a| format!("        listen {a} backlog={backlog}{reuse}{tls};"))
                    .collect();
                vars.insert("listen".into(), listen.join("\n"));
                let cache = int_of("open_file_cache");
                vars.insert(
                    "open_file_cache".into(),
                    if cache > 0 {
                        format!("open_file_cache max={cache} inactive=20s;")
                    } else {
                        "open_file_cache off;".into()
                    },
                );
                let keepalive = int_of("upstream_keepalive");
                let backend_port = match role {
                    NginxRole::Proxy => apache_port,
                    NginxRole::FastCgi => fpm_port,
                    NginxRole::Static => 0,
                };
                vars.insert(
                    "upstream".into(),
                    if *role == NginxRole::Static {
                        String::new()
                    } else {
                        let mut u = format!(
                            "\n    upstream backend {{\n        server 127.0.0.1:{backend_port};\n"
                        );
                        if keepalive > 0 {
                            u.push_str(&format!("        keepalive {keepalive};\n"));
                        }
                        u.push_str("    }\n");
                        u
                    },
                );
                let locations = match role {
                    NginxRole::Static => "        location / {\n        }\n".to_string(),
                    NginxRole::Proxy => {
                        let mut l = String::from(
                            "        location / {\n            proxy_pass http://backend;\n",
                        );
                        l.push_str(&format!(
                            "            proxy_buffering {};\n",
                            vars.get("proxy_buffering")
                                .map(String::as_str)
                                .unwrap_or("on")
                        ));
                        l.push_str("            proxy_set_header Host $host;\n");
                        if keepalive > 0 {
                            l.push_str("            proxy_http_version 1.1;\n");
                            l.push_str("            proxy_set_header Connection \"\";\n");
                        }
                        l.push_str("        }\n");
                        l
                    }
                    NginxRole::FastCgi => {
                        let mut l = String::from(
                            "        location / {\n            rewrite \"^/cpu/([0-9]+)$\" \
                             /cpu.php?us=$1 last;\n        }\n",
                        );
                        l.push_str("        location ~ \\.php$ {\n");
                        l.push_str("            include /etc/nginx/fastcgi_params;\n");
                        l.push_str(
                            "            fastcgi_param SCRIPT_FILENAME \
                             $document_root$fastcgi_script_name;\n",
                        );
                        l.push_str("            fastcgi_pass backend;\n");
                        if keepalive > 0 {
                            l.push_str("            fastcgi_keep_conn on;\n");
                        }
                        l.push_str("        }\n");
                        l
                    }
                };
                vars.insert("locations".into(), locations);
                let config = dir_path.join("nginx.conf");
                configs.push(("nginx.conf".to_string(), fill(NGINX_TEMPLATE, &vars)?));
                let mut prefix_arg = dir_path.clone().into_os_string();
                prefix_arg.push("/");
                let error_log = dir_path.join("nginx-error.log");
                let base: Vec<OsString> = vec![
                    "-p".into(),
                    prefix_arg,
                    "-c".into(),
                    config.clone().into(),
                    "-e".into(),
                    error_log.clone().into(),
                ];
                let mut check_args = vec![OsString::from("-t"), OsString::from("-q")];
                check_args.extend(base.iter().cloned());
                servers.push(ServerPlan {
                    label,
                    component: *component,
                    program,
                    check_args,
                    run_args: base,
                    config_file: config,
                    error_log,
                    port: *port,
                    stop_signal: libc::SIGQUIT,
                    readiness: ready_on(tls_front, "/empty.gif"),
                });
            }
            Component::PhpFpm => {
                vars.insert(
                    "user_group".into(),
                    match &account {
                        Some((user, group)) => format!("user = {user}\ngroup = {group}"),
                        None => String::new(),
                    },
                );
                let config = dir_path.join("php-fpm.conf");
                configs.push(("php-fpm.conf".to_string(), fill(PHP_FPM_TEMPLATE, &vars)?));
                let check_args = vec!["-t".into(), "-y".into(), config.clone().into()];
                let run_args = vec!["-F".into(), "-y".into(), config.clone().into()];
                servers.push(ServerPlan {
                    label,
                    component: *component,
                    program,
                    check_args,
                    run_args,
                    config_file: config,
                    error_log: dir_path.join("php-fpm-error.log"),
                    port: *port,
                    stop_signal: libc::SIGQUIT,
                    readiness: Readiness::TcpAccept,
                });
            }
        }
    }
    Ok(Rendered {
        configs,
        site: site_files(stack),
        servers,
    })
}

/// `GET path` answers 200, over TLS on a TLS front.
fn ready_on(tls: bool, path: &'static str) -> Readiness {
    if tls {
        Readiness::HttpsGet(path)
    } else {
        Readiness::HttpGet(path)
    }
}

fn component_label(component: Component) -> String {
    match component {
        Component::Apache(mpm) => format!("apache2 ({})", mpm.name()),
        Component::Nginx(_) => "nginx".to_string(),
        Component::PhpFpm => "php-fpm".to_string(),
    }
}

/// A value as the server spells it (Apache: On/Off; nginx and php-fpm: on/off).
fn render_value(component: Component, value: Value) -> String {
    match (component, value) {
        (Component::Apache(_), Value::Switch(true)) => "On".to_string(),
        (Component::Apache(_), Value::Switch(false)) => "Off".to_string(),
        (_, v) => v.to_string(),
    }
}

/// The account workers run as when the lab runs as root: www-data (Debian's web
/// account), else nobody/nogroup.
fn unprivileged_account() -> (String, String) {
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

/// Refuse a path that holds anything but letters, digits and `/._-+` (it goes into config
/// files, some of them unquoted).
fn check_path_is_plain(path: &Path) -> Result<(), LabError> {
    let text = path.to_string_lossy();
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c));
    if plain && text.starts_with('/') {
        Ok(())
    } else {
        Err(LabError::Directory {
            path: path.to_path_buf(),
            message: "must be an absolute path of letters, digits and /._-+ only \
                      (set WEBTUNE_LAB_DIR to such a directory)"
                .to_string(),
        })
    }
}

/// Replace every `{{name}}`; a placeholder without a value is an internal error.
fn fill(template: &str, vars: &BTreeMap<String, String>) -> Result<String, LabError> {
    let mut out = String::with_capacity(template.len() + 512);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| {
            LabError::Inconsistent("internal: unterminated placeholder in a template".into())
        })?;
        let key = &after[..end];
        let value = vars.get(key).ok_or_else(|| {
            LabError::Inconsistent(format!("internal: template placeholder {key} has no value"))
        })?;
        out.push_str(value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The document root's files: empty.gif, an ~80 KB index.html and, where PHP runs, cpu.php.
pub fn site_files(stack: StackKind) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![
        ("empty.gif".to_string(), EMPTY_GIF.to_vec()),
        ("index.html".to_string(), page_bytes(PAGE_BYTES)),
    ];
    if stack.has_php() {
        files.push(("cpu.php".to_string(), CPU_PHP.as_bytes().to_vec()));
    }
    files
}

/// A deterministic HTML page of exactly `size` bytes.
fn page_bytes(size: usize) -> Vec<u8> {
    let head = "<!DOCTYPE html>\n<html><head><title>webtune lab page</title></head><body>\n";
    let tail = "</body></html>\n";
    let mut page = String::with_capacity(size + 128);
    page.push_str(head);
    let mut line = 0u32;
    while page.len() + tail.len() < size {
        line += 1;
        page.push_str(&format!(
            "<p>Paragraph {line}: the quick brown fox jumps over the lazy dog.</p>\n"
        ));
    }
    page.truncate(size.saturating_sub(tail.len()));
    page.push_str(tail);
    page.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Settings;

    fn layout(n: usize) -> Layout {
        Layout {
            dir: PathBuf::from("/tmp/webtune-lab-0/s-1"),
            docroot: PathBuf::from("/tmp/webtune-lab-0/s-1.www"),
            ports: (0..n as u16).map(|i| 18080 + i).collect(),
            privileged: true,
            addresses: 1,
        }
    }

    fn rendered(stack: StackKind, sets: &[(&str, &str)]) -> Rendered {
        let a: Vec<(String, String)> = sets
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let settings = Settings::from_assignments(stack.name(), &stack.parameters(), &a).unwrap();
        render(
            stack,
            &settings,
            &layout(stack.components().len()),
            &Programs::discover(),
        )
        .unwrap()
    }

    #[test]
    fn every_stack_renders_without_leftover_placeholders() {
        for stack in StackKind::all() {
            let r = rendered(*stack, &[]);
            assert_eq!(r.servers.len(), stack.components().len());
            for (name, text) in &r.configs {
                assert!(!text.contains("{{"), "{name} of {}", stack.name());
            }
        }
    }

    #[test]
    fn values_land_in_their_directives() {
        let r = rendered(
            StackKind::NginxApache(Mpm::Prefork),
            &[
                ("backend.MaxRequestWorkers", "4"),
                ("backend.KeepAlive", "off"),
                ("frontend.upstream_keepalive", "16"),
                ("frontend.reuseport", "on"),
            ],
        );
        let apache = &r
            .configs
            .iter()
            .find(|(n, _)| n == "apache2.conf")
            .unwrap()
            .1;
        assert!(apache.contains("\nMaxRequestWorkers 4\n"), "{apache}");
        assert!(apache.contains("\nKeepAlive Off\n"));
        assert!(apache.contains("Listen 127.0.0.1:18080\n"));
        let nginx = &r.configs.iter().find(|(n, _)| n == "nginx.conf").unwrap().1;
        assert!(nginx.contains("server 127.0.0.1:18080;"), "{nginx}");
        assert!(nginx.contains("keepalive 16;"));
        assert!(nginx.contains("listen 127.0.0.1:18081 backlog=511 reuseport;"));
        assert!(nginx.contains("proxy_set_header Connection \"\";"));
    }

    #[test]
    fn plain_paths_only() {
        assert!(check_path_is_plain(Path::new("/tmp/a b")).is_err());
        assert!(check_path_is_plain(Path::new("/tmp/a;b")).is_err());
        assert!(check_path_is_plain(Path::new("relative")).is_err());
        assert!(check_path_is_plain(Path::new("/tmp/webtune-lab-0/x.www")).is_ok());
    }

    #[test]
    fn site_files_have_their_sizes() {
        let files = site_files(StackKind::Nginx);
        assert_eq!(files[0].1.len(), 43);
        assert_eq!(files[1].1.len(), PAGE_BYTES);
        assert!(!files.iter().any(|(n, _)| n == "cpu.php"));
        assert!(site_files(StackKind::NginxPhpFpm)
            .iter()
            .any(|(n, _)| n == "cpu.php"));
    }

    #[test]
    fn the_front_server_listens_on_every_address() {
        let settings = |stack: StackKind| {
            Settings::from_assignments(stack.name(), &stack.parameters(), &[]).unwrap()
        };
        let layout = Layout {
            addresses: 3,
            ..layout(2)
        };
        let stack = StackKind::NginxApache(Mpm::Prefork);
        let out = render(stack, &settings(stack), &layout, &Programs::discover()).unwrap();
        let text = |name: &str| &out.configs.iter().find(|(n, _)| n == name).unwrap().1;
        let nginx = text("nginx.conf");
        for i in 1..=3 {
            assert!(
                nginx.contains(&format!("listen 127.0.0.{i}:18081 backlog=511;")),
                "{nginx}"
            );
        }
        // The backend stays on one address.
        assert_eq!(text("apache2.conf").matches("Listen 127.").count(), 1);
        let stack = StackKind::Apache(Mpm::Prefork);
        let out = render(stack, &settings(stack), &layout, &Programs::discover()).unwrap();
        let apache = &out.configs[0].1;
        assert!(
            apache.contains(
                "Listen 127.0.0.1:18080\nListen 127.0.0.2:18080\nListen 127.0.0.3:18080\n"
            ),
            "{apache}"
        );
    }
}
