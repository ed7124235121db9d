//! Importing a user's own nginx or Apache configuration into the lab: the config tree
//! (every file the server would read) is copied into the stack's private directory, and
//! only what must change to run privately is rewritten — listen addresses (to loopback
//! free ports), the pid file, logs, temp and runtime paths, includes (to the copy), and
//! for nginx as root the worker account. Everything else (virtual hosts, document roots,
//! modules, tuning directives) is kept, `--set NAME=VALUE` replaces a directive's value,
//! and the server checks the copy itself (`nginx -t`, `apache2 -t`) before it starts.
//!
//! The trees are read by the advisor's readers (crates/advise) in the binary and handed
//! here as located directives (`ConfigTree`): the advisor depends on the lab, so the lab
//! takes the readers' output rather than the readers. Edits keep every line where it was,
//! so what a server says about the copy's `file:line` is the user's `file:line`.

use crate::render::{Layout, Rendered};
use crate::servers::{Component, ImportedConfig, Mpm, NginxRole, Programs};
use crate::LabError;
use edit::{apply, Edit};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

mod edit;

/// Which server the imported config is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Nginx,
    Apache,
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
        }
    }
}

/// One directive of the tree, where it is written (1-based line of its first word).
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    pub name: String,
    pub args: Vec<String>,
    pub file: PathBuf,
    pub line: usize,
    /// Enclosing blocks, outermost first (`["http", "server"]`).
    pub context: Vec<String>,
    /// Id of the innermost enclosing block (0 at top level).
    pub block: usize,
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
    pub directives: Vec<Located>,
    /// Apache: Debian's `envvars` (`APACHE_RUN_USER` …), for the `${…}` the copy keeps.
    pub env: BTreeMap<String, String>,
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

/// Directives the import itself rewrites: `--set` may not touch them.
const NGINX_OWNED: &[&str] = &[
    "listen",
    "pid",
    "user",
    "include",
    "error_log",
    "access_log",
    "daemon",
    "master_process",
    "load_module",
];
const APACHE_OWNED: &[&str] = &[
    "listen",
    "pidfile",
    "errorlog",
    "customlog",
    "transferlog",
    "include",
    "includeoptional",
    "serverroot",
    "mutex",
    "defaultruntimedir",
    "scriptsock",
    "user",
    "group",
    "loadmodule",
];
const NGINX_TEMP: &[(&str, &str)] = &[
    ("client_body_temp_path", "client_body"),
    ("proxy_temp_path", "proxy"),
    ("fastcgi_temp_path", "fastcgi"),
    ("uwsgi_temp_path", "uwsgi"),
    ("scgi_temp_path", "scgi"),
];

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
        let (listens, front) = listen_keys(&tree);
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

    /// One private port per distinct address the original listens on.
    pub fn port_count(&self) -> usize {
        self.listens.len()
    }

    /// The copy's path of an original file, relative to the private directory.
    fn copy_name(&self, original: &Path) -> PathBuf {
        match original.strip_prefix(&self.tree.root) {
            Ok(rel) => Path::new("conf").join(rel),
            Err(_) => {
                Path::new("conf/_outside").join(original.strip_prefix("/").unwrap_or(original))
            }
        }
    }

    /// An include's path (absolute, or relative to the root) as it is in the copy.
    fn copied_include(&self, dir: &Path, pattern: &str) -> String {
        let path = self.tree.root.join(pattern);
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
        if layout.ports.len() != self.listens.len() {
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
            let mut out = lines.join("\n");
            out.push('\n');
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
        Ok(Rendered {
            configs,
            site: Vec::new(),
            servers: vec![plan],
        })
    }

    fn nginx_edits(
        &self,
        dir: &Path,
        layout: &Layout,
        ports: &HashMap<(String, u16), u16>,
    ) -> Result<Vec<Edit>, LabError> {
        let mut edits = Vec::new();
        let mut served_blocks: Vec<usize> = Vec::new();
        let mut emitted: Vec<(usize, u16)> = Vec::new();
        let temp = dir.join("temp");
        let mut cache = 0;
        for d in &self.tree.directives {
            let replace = |text: String| Edit::replace(d, text);
            match d.name.as_str() {
                "listen" => match parse_listen(d.value()) {
                    Listen::Unix => edits.push(Edit::remove(d)),
                    Listen::Inet { address, port, v6 } => {
                        let key = if v6 {
                            ("*".to_string(), port)
                        } else {
                            (address, port)
                        };
                        let private = match ports.get(&key) {
                            // An IPv6 twin of an IPv4 listen: the copy listens once.
                            Some(p) if !(v6 && self.has_v4(port)) => *p,
                            _ => {
                                edits.push(Edit::remove(d));
                                continue;
                            }
                        };
                        if emitted.contains(&(d.block, private)) {
                            edits.push(Edit::remove(d));
                            continue;
                        }
                        emitted.push((d.block, private));
                        served_blocks.push(d.block);
                        let mut args = vec![format!("127.0.0.1:{private}")];
                        args.extend(
                            d.args
                                .iter()
                                .skip(1)
                                .filter(|a| !a.starts_with("ipv6only"))
                                .cloned(),
                        );
                        edits.push(replace(format!("listen {};", args.join(" "))));
                    }
                },
                "pid" | "daemon" | "master_process" => edits.push(Edit::remove(d)),
                "user" => {
                    if layout.privileged {
                        edits.push(Edit::remove(d));
                    }
                }
                "error_log" => {
                    let mut args = vec![dir.join("error.log").display().to_string()];
                    args.extend(d.args.iter().skip(1).cloned());
                    edits.push(replace(format!("error_log {};", args.join(" "))));
                }
                "access_log" if d.value() != "off" => {
                    let mut args = vec![dir.join("access.log").display().to_string()];
                    args.extend(d.args.iter().skip(1).cloned());
                    edits.push(replace(format!("access_log {};", args.join(" "))));
                }
                "include" => {
                    let copied = self.copied_include(dir, d.value());
                    edits.push(replace(format!("include {copied};")));
                }
                name if name.ends_with("_temp_path") => {
                    let sub = name.trim_end_matches("_temp_path");
                    let mut args = vec![temp.join(sub).display().to_string()];
                    args.extend(d.args.iter().skip(1).cloned());
                    edits.push(replace(format!("{name} {};", args.join(" "))));
                }
                name if name.ends_with("_cache_path") => {
                    cache += 1;
                    let mut args = vec![temp.join(format!("cache{cache}")).display().to_string()];
                    args.extend(d.args.iter().skip(1).cloned());
                    edits.push(replace(format!("{name} {};", args.join(" "))));
                }
                name => {
                    if let Some((_, value)) = self.overrides.iter().find(|(n, _)| n == name) {
                        edits.push(replace(format!("{name} {value};")));
                    }
                }
            }
        }
        // Every server block listens on loopback (one without `listen` would take *:80).
        let front_port = layout.ports[self.front];
        let mut blocks_seen = Vec::new();
        for d in &self.tree.directives {
            let in_server = d.context.last().map(String::as_str) == Some("server")
                && d.context.first().map(String::as_str) == Some("http");
            if in_server && !served_blocks.contains(&d.block) && !blocks_seen.contains(&d.block) {
                blocks_seen.push(d.block);
                edits.push(Edit::prefix(d, format!("listen 127.0.0.1:{front_port}; ")));
            }
        }
        // Temp paths and the access log the copy would otherwise take from the defaults.
        if let Some(first) = self
            .tree
            .directives
            .iter()
            .find(|d| d.context.len() == 1 && d.context[0] == "http")
        {
            let at_http = |name: &str| {
                self.tree
                    .directives
                    .iter()
                    .any(|d| d.name == name && d.context.len() == 1 && d.context[0] == "http")
            };
            let mut text = String::new();
            for (name, sub) in NGINX_TEMP {
                if !at_http(name) {
                    text.push_str(&format!("{name} {}; ", temp.join(sub).display()));
                }
            }
            if !at_http("access_log") {
                text.push_str(&format!(
                    "access_log {}; ",
                    dir.join("access.log").display()
                ));
            }
            edits.push(Edit::prefix(first, text));
        } else if self
            .tree
            .directives
            .iter()
            .any(|d| d.context.first().map(String::as_str) == Some("http"))
        {
            return Err(LabError::Inconsistent(format!(
                "{}: the http block holds only blocks: webtune needs one directive in it to place its private temp paths",
                self.tree.main.display()
            )));
        }
        Ok(edits)
    }

    fn has_v4(&self, port: u16) -> bool {
        self.tree.directives.iter().any(|d| {
            d.name == "listen"
                && matches!(parse_listen(d.value()), Listen::Inet { port: p, v6: false, .. } if p == port)
        })
    }

    fn apache_edits(&self, dir: &Path, ports: &HashMap<(String, u16), u16>) -> Vec<Edit> {
        let mut edits = Vec::new();
        let run = dir.join("run");
        for d in &self.tree.directives {
            let replace = |text: String| Edit::replace(d, text);
            let rest = || d.args.iter().skip(1).cloned().collect::<Vec<_>>().join(" ");
            match d.name.to_ascii_lowercase().as_str() {
                "listen" => match parse_listen(d.value()) {
                    Listen::Inet { address, port, v6 } => {
                        let key = if v6 {
                            ("*".to_string(), port)
                        } else {
                            (address, port)
                        };
                        match ports.get(&key) {
                            Some(p) if !(v6 && self.has_apache_v4(port)) => {
                                edits.push(replace(format!("Listen 127.0.0.1:{p} {}", rest())))
                            }
                            _ => edits.push(Edit::remove(d)),
                        }
                    }
                    Listen::Unix => edits.push(Edit::remove(d)),
                },
                "pidfile" => edits.push(replace(format!(
                    "PidFile \"{}\"",
                    run.join("apache2.pid").display()
                ))),
                "errorlog" => edits.push(replace(format!(
                    "ErrorLog \"{}\"",
                    dir.join("error.log").display()
                ))),
                "customlog" | "transferlog" => edits.push(replace(format!(
                    "{} \"{}\" {}",
                    d.name,
                    dir.join("access.log").display(),
                    rest()
                ))),
                "defaultruntimedir" => {
                    edits.push(replace(format!("DefaultRuntimeDir \"{}\"", run.display())))
                }
                "mutex" => edits.push(replace(format!("Mutex file:{} {}", run.display(), rest()))),
                "scriptsock" => edits.push(replace(format!(
                    "ScriptSock \"{}\"",
                    run.join("cgisock").display()
                ))),
                "serverroot" => edits.push(replace(format!(
                    "ServerRoot \"{}\"",
                    dir.join("conf").display()
                ))),
                "lockfile" => edits.push(Edit::remove(d)),
                "include" | "includeoptional" => {
                    let copied = self.copied_include(dir, d.value());
                    edits.push(replace(format!("{} \"{copied}\"", d.name)));
                }
                _ => {
                    if let Some((_, value)) = self
                        .overrides
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(&d.name))
                    {
                        edits.push(replace(format!("{} {value}", d.name)));
                    }
                }
            }
        }
        edits
    }

    fn has_apache_v4(&self, port: u16) -> bool {
        self.tree.directives.iter().any(|d| {
            d.name.eq_ignore_ascii_case("listen")
                && matches!(parse_listen(d.value()), Listen::Inet { port: p, v6: false, .. } if p == port)
        })
    }
}

impl Located {
    fn value(&self) -> &str {
        self.args.first().map(String::as_str).unwrap_or("")
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
    let plain_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if !plain_name {
        return Err(LabError::BadAssignment(format!("{name}={value}")));
    }
    let forbidden = match server {
        Server::Nginx => ";{}#\"'\\\n\r",
        Server::Apache => "<>#\\\n\r",
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

/// What a `listen`/`Listen` argument names.
#[derive(Debug, PartialEq)]
enum Listen {
    Unix,
    Inet {
        address: String,
        port: u16,
        v6: bool,
    },
}

fn parse_listen(arg: &str) -> Listen {
    if arg.starts_with("unix:") {
        return Listen::Unix;
    }
    let port_of = |p: &str| p.parse::<u16>().unwrap_or(80);
    if let Some(rest) = arg.strip_prefix('[') {
        let (_, after) = rest.split_once(']').unwrap_or((rest, ""));
        let port = after.strip_prefix(':').map_or(80, port_of);
        return Listen::Inet {
            address: "*".into(),
            port,
            v6: true,
        };
    }
    match arg.rsplit_once(':') {
        Some((address, port)) => Listen::Inet {
            address: normal_address(address),
            port: port_of(port),
            v6: false,
        },
        None if arg.chars().all(|c| c.is_ascii_digit()) => Listen::Inet {
            address: "*".into(),
            port: port_of(arg),
            v6: false,
        },
        None => Listen::Inet {
            address: normal_address(arg),
            port: 80,
            v6: false,
        },
    }
}

fn normal_address(address: &str) -> String {
    match address {
        "" | "*" | "0.0.0.0" => "*".into(),
        a => a.to_string(),
    }
}

/// The distinct addresses listened on, in order, and which one the load goes to (a
/// default server, else the first). IPv6 listens count only where no IPv4 listen has
/// their port.
fn listen_keys(tree: &ConfigTree) -> (Vec<(String, u16)>, usize) {
    let listens: Vec<&Located> = tree
        .directives
        .iter()
        .filter(|d| d.name.eq_ignore_ascii_case("listen"))
        .collect();
    let v4: Vec<u16> = listens
        .iter()
        .filter_map(|d| match parse_listen(d.value()) {
            Listen::Inet {
                port, v6: false, ..
            } => Some(port),
            _ => None,
        })
        .collect();
    let mut keys: Vec<(String, u16)> = Vec::new();
    let mut front = None;
    for d in listens {
        let key = match parse_listen(d.value()) {
            Listen::Inet { v6: true, port, .. } if v4.contains(&port) => continue,
            Listen::Inet { address, port, .. } => (address, port),
            Listen::Unix => continue,
        };
        let index = match keys.iter().position(|k| k == &key) {
            Some(i) => i,
            None => {
                keys.push(key);
                keys.len() - 1
            }
        };
        let default = d
            .args
            .iter()
            .any(|a| a == "default_server" || a == "default");
        if default && front.is_none() {
            front = Some(index);
        }
    }
    (keys, front.unwrap_or(0))
}

/// `<VirtualHost *:80>` on the port the copy listens on instead of 80.
fn virtual_host_ports(line: &str, ports: &HashMap<(String, u16), u16>) -> String {
    let trimmed = line.trim_start();
    let Some(rest) = trimmed
        .get(..12)
        .filter(|h| h.eq_ignore_ascii_case("<VirtualHost"))
        .map(|_| &trimmed[12..])
    else {
        return line.to_string();
    };
    let Some((inside, after)) = rest.split_once('>') else {
        return line.to_string();
    };
    let indent = &line[..line.len() - trimmed.len()];
    let addresses: Vec<String> = inside
        .split_whitespace()
        .map(|a| {
            let Some((host, port)) = a.rsplit_once(':') else {
                return a.to_string();
            };
            let Ok(port) = port.parse::<u16>() else {
                return a.to_string();
            };
            let exact = ports.get(&(normal_address(host), port));
            let any = ports.iter().find(|((_, p), _)| *p == port).map(|(_, v)| v);
            match exact.or(any) {
                Some(private) => format!("{host}:{private}"),
                None => a.to_string(),
            }
        })
        .collect();
    format!("{indent}<VirtualHost {}>{after}", addresses.join(" "))
}

/// A `Listen` the reader saw as inactive (in an `<IfModule>` of a module it thinks is
/// not loaded) is commented out all the same: were Apache to see it active, the copy
/// would listen beyond loopback.
fn stray_listen(line: &str) -> String {
    let trimmed = line.trim_start();
    let first = trimmed.split_whitespace().next().unwrap_or("");
    if first.eq_ignore_ascii_case("listen") && !trimmed.contains(" 127.0.0.1:") {
        let indent = &line[..line.len() - trimmed.len()];
        return format!("{indent}# webtune removed: {trimmed}");
    }
    line.to_string()
}

#[cfg(test)]
mod tests {
    use super::edit::{nginx_edit, nginx_statement, EditKind};
    use super::*;

    fn located(name: &str, args: &[&str], line: usize, context: &[&str], block: usize) -> Located {
        Located {
            name: name.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            file: PathBuf::from("/etc/x/nginx.conf"),
            line,
            context: context.iter().map(|c| c.to_string()).collect(),
            block,
        }
    }

    #[test]
    fn listen_arguments_parse() {
        let inet = |a: &str, port, v6| Listen::Inet {
            address: a.into(),
            port,
            v6,
        };
        assert_eq!(parse_listen("80"), inet("*", 80, false));
        assert_eq!(
            parse_listen("127.0.0.1:8080"),
            inet("127.0.0.1", 8080, false)
        );
        assert_eq!(parse_listen("[::]:443"), inet("*", 443, true));
        assert_eq!(parse_listen("localhost"), inet("localhost", 80, false));
        assert_eq!(parse_listen("0.0.0.0:81"), inet("*", 81, false));
        assert_eq!(parse_listen("unix:/run/x.sock"), Listen::Unix);
    }

    #[test]
    fn nginx_statements_are_found_and_replaced_in_place() {
        let line = "  server { listen 80; listen 81 ssl; } # listen 82;";
        let edited = nginx_edit(line, "listen", 1, &EditKind::Replace("listen 1;".into())).unwrap();
        assert_eq!(edited, "  server { listen 80; listen 1; } # listen 82;");
        let removed = nginx_edit("pid /run/nginx.pid;", "pid", 0, &EditKind::Remove).unwrap();
        assert_eq!(removed, " # webtune removed: pid /run/nginx.pid;");
        assert!(nginx_edit("listen 80", "listen", 0, &EditKind::Remove).is_none());
        // A name that is only the start of another word is not the directive.
        assert!(nginx_statement("listener 80;", "listen", 0).is_none());
    }

    #[test]
    fn v6_twins_listen_once_and_the_default_server_is_the_front() {
        let tree = ConfigTree {
            server: Server::Nginx,
            main: PathBuf::from("/etc/x/nginx.conf"),
            root: PathBuf::from("/etc/x"),
            files: Vec::new(),
            directives: vec![
                located("listen", &["8080"], 1, &["http", "server"], 1),
                located(
                    "listen",
                    &["80", "default_server"],
                    2,
                    &["http", "server"],
                    2,
                ),
                located(
                    "listen",
                    &["[::]:80", "default_server"],
                    3,
                    &["http", "server"],
                    2,
                ),
                located("listen", &["[::]:9000"], 4, &["http", "server"], 3),
            ],
            env: BTreeMap::new(),
        };
        let (keys, front) = listen_keys(&tree);
        assert_eq!(
            keys,
            vec![
                ("*".to_string(), 8080),
                ("*".into(), 80),
                ("*".into(), 9000)
            ]
        );
        assert_eq!(front, 1);
    }

    #[test]
    fn apache_listens_left_unrewritten_are_commented_out() {
        assert_eq!(
            stray_listen("\tListen 443"),
            "\t# webtune removed: Listen 443"
        );
        assert_eq!(
            stray_listen("Listen 127.0.0.1:4100 "),
            "Listen 127.0.0.1:4100 "
        );
        assert_eq!(stray_listen("# Listen 80"), "# Listen 80");
    }

    #[test]
    fn virtual_hosts_follow_their_port() {
        let ports: HashMap<(String, u16), u16> = [(("*".to_string(), 80), 41000)].into();
        assert_eq!(
            virtual_host_ports("\t<VirtualHost *:80>", &ports),
            "\t<VirtualHost *:41000>"
        );
        assert_eq!(
            virtual_host_ports("<VirtualHost _default_:443>", &ports),
            "<VirtualHost _default_:443>"
        );
        assert_eq!(virtual_host_ports("ServerName x", &ports), "ServerName x");
    }

    #[test]
    fn overrides_that_the_import_owns_or_that_escape_are_refused() {
        let tree = ConfigTree {
            server: Server::Nginx,
            main: PathBuf::from("/etc/x/nginx.conf"),
            root: PathBuf::from("/etc/x"),
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
