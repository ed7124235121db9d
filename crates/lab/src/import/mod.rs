//! Importing a user's own configuration into the lab: nginx, Apache, php-fpm (run behind
//! the lab's nginx) or my.cnf (the forum's database). The config tree (every file the server
//! would read) is copied into the private directory, and only what must change to run
//! privately is changed — listen addresses (to loopback free ports), the pid file, logs,
//! temp, runtime and data paths, includes (to the copy), and for nginx as root the worker
//! account. Everything else (virtual hosts, document roots, modules, pools, tuning
//! directives) is kept, `--set NAME=VALUE` sets a directive's value, and the server checks
//! the copy itself (`nginx -t`, `apache2 -t`, `php-fpm -t`) before it starts.
//!
//! The trees are read by the readers the advisor uses too (crates/conf, `ConfigTree::read`)
//! as directives that know their `file:line`. nginx and Apache copies are edited
//! line by line in place; php-fpm and my.cnf copies, whose servers let a later value win,
//! get a block appended instead (`php_fpm`, `mariadb`). Either way every user line stays
//! where it was, so what a server says about the copy's `file:line` is the user's.

use crate::params::Settings;
use crate::render::{site_files, Layout, Rendered};
use crate::servers::{
    unprivileged_account, Component, ImportedConfig, Mpm, NginxRole, Programs, RenderContext,
    RenderedServer,
};
use crate::stacks::StackKind;
use crate::vocab::DB_PREFIX;
use crate::LabError;
use apache::{stray_listen, virtual_host_ports, APACHE_OWNED};
use edit::{apply, Edit};
use listen::listen_keys;
use mariadb::MARIADB_OWNED;
use nginx::NGINX_OWNED;
pub use php_fpm::pools as php_fpm_pools;
use php_fpm::PHP_FPM_OWNED;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use webtune_conf::config::{Directive, Options, Parsed};
use webtune_conf::{apache as apache_conf, ini, nginx as nginx_conf, ReadError};

mod apache;
pub mod check;
mod edit;
mod listen;
mod mariadb;
mod nginx;
mod php_fpm;

/// Which server the imported config is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Nginx,
    Apache,
    /// php-fpm's main config or one pool file, run behind the lab's nginx.
    PhpFpm,
    /// MariaDB's (or MySQL's) my.cnf, run on the forum's data.
    MariaDb,
}

impl Server {
    pub fn name(self) -> &'static str {
        self.component().server_name()
    }

    /// The lab's server that runs such a config (the MPM is whichever the config loads).
    pub fn component(self) -> Component {
        match self {
            Server::Nginx => Component::Nginx(NginxRole::Static),
            Server::Apache => Component::Apache(Mpm::Event),
            Server::PhpFpm => Component::PhpFpm,
            Server::MariaDb => Component::MariaDb,
        }
    }
}

/// A config tree as a reader saw it.
#[derive(Debug, Clone)]
pub struct ConfigTree {
    pub server: Server,
    pub main: PathBuf,
    /// Where relative includes start (nginx: the main file's directory; Apache:
    /// ServerRoot). Files under it keep their relative place in the copy.
    pub root: PathBuf,
    /// Every file read, in the order read.
    pub files: Vec<PathBuf>,
    pub directives: Vec<Directive>,
    /// Apache: Debian's `envvars` (`APACHE_RUN_USER` …), for the `${…}` the copy keeps.
    pub env: BTreeMap<String, String>,
    /// A copied tree's root (`advise --root`): the absolute paths the tree names (its
    /// includes) lie under it, never on this host.
    pub copy_root: Option<PathBuf>,
}

impl ConfigTree {
    /// Read `file`'s tree as its server would (a syntax error or a passed cap names its
    /// file and line). Relative places start at the main file's directory, Apache's at
    /// ServerRoot.
    pub fn read(server: Server, file: &Path) -> Result<ConfigTree, ReadError> {
        ConfigTree::read_with(server, file, &Options::default())
    }

    /// Read a tree as `read` does, with the reader's options: a copied tree's root
    /// (`opts.root`), the modules compiled into httpd.
    pub fn read_with(server: Server, file: &Path, opts: &Options) -> Result<ConfigTree, ReadError> {
        let mut tree = match server {
            Server::Nginx => {
                let parsed = nginx_conf::read_with(file, opts)?.parsed;
                let root = parsed.main.parent().unwrap_or(Path::new("/")).to_path_buf();
                ConfigTree::of(server, parsed, root, BTreeMap::new())
            }
            Server::Apache => {
                let config = apache_conf::read_with(file, opts)?;
                ConfigTree::of(server, config.parsed, config.server_root, config.env)
            }
            Server::PhpFpm => ConfigTree::ini(server, file, ini::Dialect::PhpFpm, opts)?,
            Server::MariaDb => ConfigTree::ini(server, file, ini::Dialect::MyCnf, opts)?,
        };
        tree.copy_root = opts.root.clone();
        Ok(tree)
    }

    /// An ini tree (php-fpm's, my.cnf): copies keep their place under the main file's
    /// directory.
    fn ini(
        server: Server,
        file: &Path,
        dialect: ini::Dialect,
        opts: &Options,
    ) -> Result<ConfigTree, ReadError> {
        let parsed = ini::read_with(file, dialect, opts)?;
        let root = parsed.main.parent().unwrap_or(Path::new("/")).to_path_buf();
        Ok(ConfigTree::of(server, parsed, root, BTreeMap::new()))
    }

    fn of(
        server: Server,
        parsed: Parsed,
        root: PathBuf,
        env: BTreeMap<String, String>,
    ) -> ConfigTree {
        ConfigTree {
            server,
            main: parsed.main,
            root,
            files: parsed.files,
            directives: parsed.directives,
            env,
            copy_root: None,
        }
    }
}

/// A tree ready to be run privately, with the user's overrides.
#[derive(Debug, Clone)]
pub struct Import {
    tree: ConfigTree,
    texts: HashMap<PathBuf, String>,
    overrides: Vec<(String, String)>,
    /// Distinct (address, port) the original listens on, in order of first use.
    listens: Vec<(String, u16)>,
    /// Index into `listens` of the address the load goes to.
    front: usize,
}

impl Import {
    /// Read the tree's files and check the overrides (`NAME=VALUE`). Nothing starts.
    pub fn new(tree: ConfigTree, overrides: &[(String, String)]) -> Result<Import, LabError> {
        let mut texts = HashMap::new();
        for file in &tree.files {
            let bytes = std::fs::read(file)
                .map_err(|e| LabError::io(format!("reading {}", file.display()), e))?;
            texts.insert(file.clone(), String::from_utf8_lossy(&bytes).into_owned());
        }
        let server = tree.server;
        for (name, value) in overrides {
            check_override(server, &tree, name, value)?;
        }
        let (listens, front) = match server {
            Server::PhpFpm => {
                php_fpm::check(&tree)?;
                let pools = php_fpm::pools(&tree);
                (pools.into_iter().map(|p| (p, 0)).collect(), 0)
            }
            Server::MariaDb => (vec![("mariadbd".to_string(), 0)], 0),
            Server::Nginx | Server::Apache => listen_keys(&tree),
        };
        if listens.is_empty() && server == Server::Apache {
            return Err(LabError::Inconsistent(format!(
                "{}: no Listen directive: Apache would not listen anywhere",
                tree.main.display()
            )));
        }
        Ok(Import {
            tree,
            texts,
            overrides: overrides.to_vec(),
            listens: if listens.is_empty() {
                vec![("*".into(), 80)]
            } else {
                listens
            },
            front,
        })
    }

    pub fn server(&self) -> Server {
        self.tree.server
    }

    /// The user's main config file.
    pub fn main(&self) -> &Path {
        &self.tree.main
    }

    /// The `--set` overrides, in the order given.
    pub fn overrides(&self) -> &[(String, String)] {
        &self.overrides
    }

    /// The name results carry: "nginx-config" or "apache-config".
    pub fn target_name(&self) -> &'static str {
        match self.tree.server {
            Server::Nginx => "nginx-config",
            Server::Apache => "apache-config",
            Server::PhpFpm => "php-fpm-config",
            Server::MariaDb => "mysql-config",
        }
    }

    /// "FILE" or "FILE with NAME=VALUE …".
    pub fn describe(&self) -> String {
        let mut text = self.tree.main.display().to_string();
        if !self.overrides.is_empty() {
            let set: Vec<String> = self
                .overrides
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            text.push_str(&format!(" with {}", set.join(" ")));
        }
        text
    }

    /// One private port per distinct address the original listens on (php-fpm: per pool,
    /// and one for the lab's nginx in front).
    pub fn port_count(&self) -> usize {
        self.listens.len() + usize::from(self.serves_php())
    }

    /// Does the copy run PHP behind the lab's nginx (a php-fpm config), so the lab's
    /// CPU-bound page `/cpu/US` reaches it?
    pub fn serves_php(&self) -> bool {
        self.tree.server == Server::PhpFpm
    }

    /// The copy's path of an original file, relative to the private directory.
    pub fn copy_name(&self, original: &Path) -> PathBuf {
        match original.strip_prefix(&self.tree.root) {
            Ok(rel) => Path::new("conf").join(rel),
            Err(_) => {
                Path::new("conf/_outside").join(original.strip_prefix("/").unwrap_or(original))
            }
        }
    }

    /// An include's path (absolute, or relative to the root) as it is in the copy; a
    /// copied tree's absolute paths lie under its root.
    fn copied_include(&self, dir: &Path, pattern: &str) -> String {
        let path = match &self.tree.copy_root {
            Some(r) if Path::new(pattern).is_absolute() && !Path::new(pattern).starts_with(r) => {
                r.join(pattern.trim_start_matches('/'))
            }
            _ => self.tree.root.join(pattern),
        };
        dir.join(self.copy_name(&path)).display().to_string()
    }

    /// A server's message about the copy, with the copy's paths replaced by the user's.
    pub fn restore_paths(&self, dir: &Path, message: &str) -> String {
        let outside = format!("{}/", dir.join("conf/_outside").display());
        let conf = dir.join("conf").display().to_string();
        message
            .replace(&outside, "/")
            .replace(&conf, &self.tree.root.display().to_string())
    }

    /// The copied configs (names relative to the private directory) and the server's plan.
    pub fn render(&self, layout: &Layout, programs: &Programs) -> Result<Rendered, LabError> {
        if layout.ports.len() != self.port_count() {
            return Err(LabError::Inconsistent(
                "internal: one port per imported listen address".into(),
            ));
        }
        let dir = &layout.dir;
        let ports: HashMap<(String, u16), u16> = self
            .listens
            .iter()
            .cloned()
            .zip(layout.ports.iter().copied())
            .collect();
        let edits = match self.tree.server {
            Server::Nginx => self.nginx_edits(dir, layout, &ports)?,
            Server::Apache => self.apache_edits(dir, &ports),
            Server::PhpFpm | Server::MariaDb => Vec::new(),
        };
        let mut configs = Vec::new();
        for file in &self.tree.files {
            let Some(text) = self.texts.get(file) else {
                continue;
            };
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            let mine: Vec<&Edit> = edits.iter().filter(|e| &e.file == file).collect();
            apply(self.tree.server, file, &mut lines, &mine)?;
            if self.tree.server == Server::Apache {
                for line in lines.iter_mut() {
                    *line = stray_listen(&virtual_host_ports(line, &ports));
                }
                if file == &self.tree.main {
                    for (name, value) in &self.overrides {
                        if !self
                            .tree
                            .directives
                            .iter()
                            .any(|d| d.name.eq_ignore_ascii_case(name))
                        {
                            lines.push(format!("{name} {value}"));
                        }
                    }
                }
            }
            for line in lines.iter_mut() {
                match self.tree.server {
                    Server::PhpFpm => *line = self.php_fpm_line(dir, file, line),
                    Server::MariaDb => *line = self.my_cnf_line(dir, line),
                    Server::Nginx | Server::Apache => {}
                }
            }
            let mut out = lines.join("\n");
            out.push('\n');
            if file == &self.tree.main {
                match self.tree.server {
                    Server::PhpFpm => out.push_str(&self.php_fpm_tail(dir, &ports)),
                    Server::MariaDb => out.push_str(&self.my_cnf_tail(dir, layout.ports[0])),
                    Server::Nginx | Server::Apache => {}
                }
            }
            let name = self.copy_name(file).display().to_string();
            // The same file read twice (an include repeated) is copied once.
            if !configs.iter().any(|(n, _)| n == &name) {
                configs.push((name, out));
            }
        }
        let plan = self
            .tree
            .server
            .component()
            .server()
            .imported_plan(&ImportedConfig {
                dir,
                config: dir.join(self.copy_name(&self.tree.main)),
                port: layout.ports[self.front],
                privileged: layout.privileged,
                env: &self.tree.env,
                programs,
            })?;
        if !self.serves_php() {
            return Ok(Rendered {
                configs,
                site: Vec::new(),
                servers: vec![plan],
            });
        }
        // The lab's nginx in front of the pool, serving the lab's pages (as in nginx-php-fpm).
        let front = self.lab_front(layout, programs, plan.port)?;
        configs.extend(front.configs);
        Ok(Rendered {
            configs,
            site: site_files(StackKind::NginxPhpFpm),
            servers: vec![plan, front.plan],
        })
    }

    /// The lab's nginx (FastCGI front end, its default settings) on the last port, passing
    /// PHP to `backend_port`.
    fn lab_front(
        &self,
        layout: &Layout,
        programs: &Programs,
        backend_port: u16,
    ) -> Result<RenderedServer, LabError> {
        let server = Component::Nginx(NginxRole::FastCgi).server();
        let settings = Settings::from_assignments("nginx", &server.parameters(), &[])?;
        server.render(&RenderContext {
            stack: self.target_name(),
            prefix: "",
            settings: &settings,
            layout,
            programs,
            port: layout.ports[layout.ports.len() - 1],
            backend_port,
            front: true,
            tls: false,
            account: layout.privileged.then(unprivileged_account),
        })
    }
}

/// An override must name a directive the copy has (nginx: the block it belongs in is the
/// user's), not one the import owns, and its value must stay one directive.
fn check_override(
    server: Server,
    tree: &ConfigTree,
    name: &str,
    value: &str,
) -> Result<(), LabError> {
    // php-fpm also names PHP settings (`php_admin_value[memory_limit]`); my.cnf writes
    // `-` for `_`.
    let extra = match server {
        Server::PhpFpm => "[]",
        Server::MariaDb => "-",
        Server::Nginx | Server::Apache => "",
    };
    let plain_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || extra.contains(c));
    if !plain_name {
        return Err(LabError::BadAssignment(format!("{name}={value}")));
    }
    let forbidden = match server {
        Server::Nginx => ";{}#\"'\\\n\r",
        Server::Apache => "<>#\\\n\r",
        Server::PhpFpm => ";#\"'\\[]=\n\r",
        Server::MariaDb => "#;\"'\\[]=\n\r",
    };
    if value.trim().is_empty() || value.contains(|c| forbidden.contains(c)) {
        return Err(LabError::Inconsistent(format!(
            "--set {name}={value:?}: a value may not be empty nor hold any of {forbidden:?}"
        )));
    }
    let lower = name.to_ascii_lowercase();
    let owned = match server {
        Server::Nginx => {
            NGINX_OWNED.contains(&lower.as_str())
                || lower.ends_with("_temp_path")
                || lower.ends_with("_cache_path")
        }
        Server::Apache => APACHE_OWNED.contains(&lower.as_str()),
        Server::PhpFpm => PHP_FPM_OWNED.contains(&lower.as_str()) || lower.ends_with("[error_log]"),
        Server::MariaDb => {
            let bare = lower.strip_prefix(DB_PREFIX).ok_or_else(|| {
                LabError::Inconsistent(format!(
                    "--set {name}: the database's options are set as {DB_PREFIX}NAME=VALUE"
                ))
            })?;
            MARIADB_OWNED.contains(&bare.replace('-', "_").as_str())
        }
    };
    if owned {
        return Err(LabError::Inconsistent(format!(
            "--set {name}: the lab sets {name} itself to run your config privately (docs/lab.md, \"Your own config\")"
        )));
    }
    if server == Server::Nginx && !tree.directives.iter().any(|d| d.name == name) {
        return Err(LabError::Inconsistent(format!(
            "--set {name}: {name} is not in {} or its includes; add it where it belongs in your config, then --set changes it",
            tree.main.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
pub(super) fn located(
    name: &str,
    args: &[&str],
    line: usize,
    context: &[&str],
    block: usize,
) -> Directive {
    Directive {
        name: name.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        file: PathBuf::from("/etc/x/nginx.conf"),
        line,
        context: context.iter().map(|c| c.to_string()).collect(),
        block,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_that_the_import_owns_or_that_escape_are_refused() {
        let tree = ConfigTree {
            server: Server::Nginx,
            main: PathBuf::from("/etc/x/nginx.conf"),
            root: PathBuf::from("/etc/x"),
            copy_root: None,
            files: Vec::new(),
            directives: vec![located("worker_connections", &["768"], 2, &["events"], 1)],
            env: BTreeMap::new(),
        };
        assert!(check_override(Server::Nginx, &tree, "worker_connections", "1024").is_ok());
        let e = check_override(Server::Nginx, &tree, "listen", "80").unwrap_err();
        assert!(e.to_string().contains("sets listen itself"), "{e}");
        let e =
            check_override(Server::Nginx, &tree, "worker_connections", "1; user x").unwrap_err();
        assert!(e.to_string().contains("may not"), "{e}");
        let e = check_override(Server::Nginx, &tree, "keepalive_timeout", "5").unwrap_err();
        assert!(e.to_string().contains("is not in /etc/x/nginx.conf"), "{e}");
        // Apache takes a directive it does not have at the end of the main file.
        assert!(check_override(Server::Apache, &tree, "MaxRequestWorkers", "20").is_ok());
    }
}
