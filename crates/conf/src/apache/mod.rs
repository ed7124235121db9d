//! Apache httpd's configuration, read the way httpd reads it: the whole tree from the main
//! file with `Include`/`IncludeOptional` (wildcards, relative to ServerRoot), `<IfModule>`
//! and `<IfDefine>` evaluated against the modules loaded so far and the defined names,
//! `Define` and `${VAR}` (Debian's `envvars` included), line continuations and quotes.
//! Names of 2.2 and 2.4 are both understood (MaxClients = MaxRequestWorkers). What it
//! takes in is capped (`limits`): a `Define` that doubles each line is refused at the cap
//! on an expanded line, not followed into the gigabytes.

use crate::config::{Directive, Options, Parsed};
use crate::error::ReadError;
use crate::include::{self, Missing, Site};
use crate::limits::{self, Budget, MAX_LINE_BYTES, MAX_NESTING};

mod dialect;
mod envvars;

pub use dialect::{ApacheDialect, ApacheVersion};
use envvars::push_within;
pub use envvars::read_envvars;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Modules built into Debian's and the upstream httpd binary: `<IfModule>` sees them
/// without a LoadModule.
const BUILT_IN: &[&str] = &[
    "core",
    "so",
    "http",
    "watchdog",
    "log_config",
    "logio",
    "version",
    "unixd",
];

/// 2.2 names and their 2.4 names.
const RENAMED: &[(&str, &str)] = &[
    ("MaxClients", "MaxRequestWorkers"),
    ("MaxRequestsPerChild", "MaxConnectionsPerChild"),
];

/// A module loaded with LoadModule.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LoadedModule {
    /// Its identifier, e.g. `mpm_event_module`.
    pub name: String,
    pub file: String,
    /// `file:line` of the LoadModule.
    pub at: String,
}

/// Apache's configuration after includes and conditionals.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ApacheConfig {
    pub parsed: Parsed,
    pub server_root: PathBuf,
    pub modules: Vec<LoadedModule>,
    /// Names defined with `Define` or `-D`.
    pub defines: BTreeMap<String, String>,
    /// The version the tree is written for (2.2 or 2.4), and why.
    pub dialect: ApacheDialect,
    /// The variables of Debian's `envvars` beside the main file (empty without one).
    #[serde(skip)]
    pub env: BTreeMap<String, String>,
}

impl ApacheConfig {
    /// The MPM loaded ("prefork", "worker", "event"), with where it was loaded.
    pub fn mpm(&self) -> Option<(&str, &LoadedModule)> {
        self.modules.iter().find_map(|m| {
            let mpm = m.name.strip_prefix("mpm_")?.strip_suffix("_module")?;
            Some((mpm, m))
        })
    }

    /// Is mod_php loaded (the PHP interpreter inside each Apache process)?
    pub fn mod_php(&self) -> Option<&LoadedModule> {
        self.modules
            .iter()
            .find(|m| m.name.starts_with("php") && m.name.ends_with("_module"))
    }

    pub fn has_module(&self, name: &str) -> bool {
        self.modules.iter().any(|m| m.name == name)
    }

    /// Does Apache hand PHP to php-fpm (mod_proxy_fcgi and a `proxy:` handler or
    /// ProxyPass to fcgi://)?
    pub fn proxies_to_fpm(&self) -> Option<&Directive> {
        if !self.has_module("proxy_fcgi_module") {
            return None;
        }
        self.parsed.directives.iter().find(|d| {
            let j = d.joined().to_ascii_lowercase();
            (d.name.eq_ignore_ascii_case("SetHandler") && j.contains("proxy:"))
                || (d.name.eq_ignore_ascii_case("ProxyPass")
                    || d.name.eq_ignore_ascii_case("ProxyPassMatch"))
                    && j.contains("fcgi://")
        })
    }

    /// The effective global value of a directive, by its 2.4 name or its 2.2 name: the
    /// last one outside any `<VirtualHost>`/`<Directory>` section.
    pub fn get(&self, name: &str) -> Option<&Directive> {
        let old = RENAMED
            .iter()
            .find(|(_, new)| new.eq_ignore_ascii_case(name))
            .map(|(o, _)| *o);
        self.parsed
            .directives
            .iter()
            .filter(|d| {
                d.name.eq_ignore_ascii_case(name)
                    || old.is_some_and(|o| d.name.eq_ignore_ascii_case(o))
            })
            .rfind(|d| d.context.is_empty())
    }

    pub fn get_int(&self, name: &str) -> Option<(i64, &Directive)> {
        let d = self.get(name)?;
        Some((d.int()?, d))
    }
}

/// Read Apache's configuration from its main file. `defines` are the `-D` names of the
/// command line. Debian's `envvars` beside the main file provides `${APACHE_…}`.
pub fn read(main: &Path, defines: &[String]) -> Result<ApacheConfig, ReadError> {
    read_with(
        main,
        &Options {
            defines: defines.to_vec(),
            ..Options::default()
        },
    )
}

/// Read Apache's configuration, absolute paths (includes, `ServerRoot`) under
/// `opts.root`, with the `-D` names `opts.defines`.
pub fn read_with(main: &Path, opts: &Options) -> Result<ApacheConfig, ReadError> {
    let main = absolute(main);
    let server_root = main
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut reader = Reader {
        cfg: ApacheConfig {
            server_root: server_root.clone(),
            defines: opts
                .defines
                .iter()
                .map(|d| (d.clone(), String::new()))
                .collect(),
            ..ApacheConfig::default()
        },
        budget: Budget::default(),
        opts: opts.clone(),
        tree: server_root,
    };
    let envvars = main.with_file_name("envvars");
    if envvars.is_file() {
        let text = reader.budget.read(&envvars, None)?;
        reader.cfg.env = read_envvars(&text, &envvars)?;
    }
    reader.cfg.parsed.main = main.clone();
    // An MPM compiled into the binary is loaded before the first line is read.
    for source in opts.compiled_in.iter().flatten() {
        let name = source.trim_end_matches(".c").trim_start_matches("mod_");
        if [
            "prefork",
            "worker",
            "event",
            "mpm_prefork",
            "mpm_worker",
            "mpm_event",
        ]
        .contains(&name)
        {
            let mpm = name.trim_start_matches("mpm_");
            reader.cfg.modules.push(LoadedModule {
                name: format!("mpm_{mpm}_module"),
                file: format!("{source} (compiled in)"),
                at: "compiled into httpd (httpd -l)".into(),
            });
        }
    }
    reader.file(&main, &[], 0, None)?;
    reader.cfg.dialect = dialect::detect(&reader.cfg.parsed.directives);
    Ok(reader.cfg)
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

struct Reader {
    cfg: ApacheConfig,
    budget: Budget,
    opts: Options,
    /// The main file's directory: files outside it are the host's.
    tree: PathBuf,
}

/// An open section while reading one file.
struct Open {
    name: String,
    line: usize,
    /// Was the reader active when it opened, and is it active inside?
    active_inside: bool,
    /// Does it add a context (a real section such as VirtualHost), not a conditional?
    context: bool,
}

impl Reader {
    /// Read one file of the tree; `from` is the Include that names it.
    fn file(
        &mut self,
        path: &Path,
        context: &[String],
        depth: usize,
        from: Option<&Site<'_>>,
    ) -> Result<(), ReadError> {
        if depth > limits::MAX_INCLUDE_DEPTH {
            return Err(limits::includes_too_deep(path));
        }
        let text = match from {
            None => {
                let text = self.budget.read(path, None)?;
                crate::kind::check(path, &text, crate::kind::Kind::Apache)?;
                text
            }
            Some(site) => {
                match include::read(&mut self.budget, path, site, &mut self.cfg.parsed.notes)? {
                    Some(text) => text,
                    None => return Ok(()),
                }
            }
        };
        self.cfg.parsed.files.push(path.to_path_buf());
        let mut stack: Vec<Open> = Vec::new();
        let mut ctx: Vec<String> = context.to_vec();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line_no = i + 1;
            // Continuation lines end in a backslash.
            let mut logical = lines[i].trim_end().to_string();
            while logical.ends_with('\\') && i + 1 < lines.len() {
                logical.pop();
                i += 1;
                logical.push(' ');
                logical.push_str(lines[i].trim());
            }
            i += 1;
            let trimmed = logical.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let active = stack.last().is_none_or(|o| o.active_inside);
            if let Some(close) = trimmed.strip_prefix("</") {
                let name = close.trim_end_matches('>').trim();
                match stack.pop() {
                    Some(open) if open.name.eq_ignore_ascii_case(name) => {
                        if open.context {
                            ctx.pop();
                        }
                    }
                    Some(open) => {
                        return Err(ReadError::syntax(
                            path,
                            line_no,
                            format!(
                                "</{name}> closes <{}> opened at line {}",
                                open.name, open.line
                            ),
                        ))
                    }
                    None => {
                        return Err(ReadError::syntax(
                            path,
                            line_no,
                            format!("</{name}> without an opening <{name}>"),
                        ))
                    }
                }
                continue;
            }
            if let Some(open) = trimmed.strip_prefix('<') {
                let Some(inner) = open.trim_end().strip_suffix('>') else {
                    return Err(ReadError::syntax(
                        path,
                        line_no,
                        format!("section <{open} does not end with '>'"),
                    ));
                };
                let mut words = tokenize(inner);
                let name = if words.is_empty() {
                    String::new()
                } else {
                    words.remove(0)
                };
                if name.is_empty() {
                    return Err(ReadError::syntax(path, line_no, "empty section <>"));
                }
                let args = self.expand_line(&words, path, line_no)?;
                if stack.len() >= MAX_NESTING {
                    return Err(limits::nested_too_deep(path, line_no));
                }
                let (active_inside, context) = match name.to_ascii_lowercase().as_str() {
                    "ifmodule" => (active && self.if_module(args.first()), false),
                    "ifdefine" => (active && self.if_define(args.first()), false),
                    // IfVersion, IfFile, If, Else…: assumed true (their content is read).
                    n if n.starts_with("if") || n.starts_with("else") => (active, false),
                    _ => (active, true),
                };
                if context && active {
                    ctx.push(format!("{name} {}", args.join(" ")).trim().to_string());
                }
                stack.push(Open {
                    name,
                    line: line_no,
                    active_inside,
                    context: context && active,
                });
                continue;
            }
            if !active {
                continue;
            }
            let mut words = tokenize(trimmed);
            let name = words.remove(0);
            let args = self.expand_line(&words, path, line_no)?;
            match name.to_ascii_lowercase().as_str() {
                "define" => {
                    if let Some(n) = args.first() {
                        let v = args.get(1).cloned().unwrap_or_default();
                        self.cfg.defines.insert(n.clone(), v);
                    }
                }
                "undefine" => {
                    if let Some(n) = args.first() {
                        self.cfg.defines.remove(n);
                    }
                }
                "serverroot" => {
                    if let Some(r) = args.first() {
                        self.cfg.server_root = self.opts.rooted(Path::new(r));
                        let root = &self.cfg.server_root;
                        if self.opts.root.is_none() && !root.starts_with(&self.tree) {
                            self.cfg.parsed.notes.push(crate::config::ReadNote {
                                level: crate::config::NoteLevel::Note,
                                at: format!("{}:{line_no}", path.display()),
                                target: root.clone(),
                                message: crate::config::escape(&format!(
                                    "ServerRoot {}: relative includes are read from this \
                                     host's {} (outside the tree {}; --root DIR reads a \
                                     copied tree's instead)",
                                    r,
                                    root.display(),
                                    self.tree.display()
                                )),
                            });
                        }
                    }
                }
                "include" | "includeoptional" => {
                    let optional = name.eq_ignore_ascii_case("IncludeOptional");
                    let Some(target) = args.first() else {
                        return Err(ReadError::syntax(
                            path,
                            line_no,
                            format!("{name} needs a path"),
                        ));
                    };
                    let resolved = include::resolve(target, &self.cfg.server_root, &self.opts);
                    let tree = self.tree.clone();
                    let site = Site {
                        file: path,
                        line: line_no,
                        directive: &name,
                        written: target,
                        tree: &tree,
                        missing: if optional {
                            Missing::Note
                        } else {
                            Missing::Warn
                        },
                        dirs: true,
                    };
                    let files =
                        include::files(&resolved, &site, &self.opts, &mut self.cfg.parsed.notes)?;
                    for f in files {
                        self.file(&f, &ctx, depth + 1, Some(&site))?;
                    }
                }
                "loadmodule" => {
                    if let (Some(n), Some(f)) = (args.first(), args.get(1)) {
                        self.cfg.modules.push(LoadedModule {
                            name: n.clone(),
                            file: f.clone(),
                            at: format!("{}:{line_no}", path.display()),
                        });
                    }
                }
                _ => {}
            }
            let directive = Directive {
                name,
                args,
                file: path.to_path_buf(),
                line: line_no,
                context: ctx.clone(),
                block: 0,
            };
            self.budget.keep(&directive)?;
            self.cfg.parsed.directives.push(directive);
        }
        if let Some(open) = stack.pop() {
            return Err(ReadError::syntax(
                path,
                open.line,
                format!("<{}> is never closed", open.name),
            ));
        }
        Ok(())
    }

    /// The words of one line with `${VAR}` expanded, refused past `MAX_LINE_BYTES` in all.
    fn expand_line(
        &self,
        words: &[String],
        path: &Path,
        line: usize,
    ) -> Result<Vec<String>, ReadError> {
        let mut room = MAX_LINE_BYTES;
        let mut out = Vec::with_capacity(words.len());
        for word in words {
            let expanded = self
                .expand(word, room)
                .ok_or_else(|| limits::line_too_long(path, line))?;
            room -= expanded.len();
            out.push(expanded);
        }
        Ok(out)
    }

    /// One word with `${VAR}` expanded; None past `room` bytes.
    fn expand(&self, word: &str, room: usize) -> Option<String> {
        let mut out = String::new();
        let mut rest = word;
        while let Some(i) = rest.find("${") {
            push_within(&mut out, &rest[..i], room)?;
            let after = &rest[i + 2..];
            match after.find('}') {
                Some(end) => {
                    let name = &after[..end];
                    match self
                        .cfg
                        .defines
                        .get(name)
                        .or_else(|| self.cfg.env.get(name))
                    {
                        Some(v) => push_within(&mut out, v, room)?,
                        None => push_within(&mut out, &rest[i..i + end + 3], room)?,
                    }
                    rest = &after[end + 1..];
                }
                None => {
                    push_within(&mut out, &rest[i..], room)?;
                    rest = "";
                }
            }
        }
        push_within(&mut out, rest, room)?;
        Some(out)
    }

    fn if_module(&self, arg: Option<&String>) -> bool {
        let Some(arg) = arg else { return false };
        let (negate, id) = match arg.strip_prefix('!') {
            Some(id) => (true, id),
            None => (false, arg.as_str()),
        };
        // A module compiled in that is not an MPM (`mod_so.c`): as `httpd -l` lists it. An
        // MPM that is neither loaded nor known to be compiled in is not assumed (configure's
        // default is event in 2.4, prefork in 2.2; a distribution picks its own): its
        // `<IfModule>` blocks do not apply, and the MPM stays unknown.
        let compiled = self.opts.compiled_in.iter().flatten().any(|c| {
            c == id
                || format!(
                    "{}_module",
                    c.trim_end_matches(".c").trim_start_matches("mod_")
                ) == id
        });
        let known = compiled || module_ids(&self.cfg.modules).iter().any(|m| m == id);
        known != negate
    }

    fn if_define(&self, arg: Option<&String>) -> bool {
        let Some(arg) = arg else { return false };
        let (negate, id) = match arg.strip_prefix('!') {
            Some(id) => (true, id),
            None => (false, arg.as_str()),
        };
        self.cfg.defines.contains_key(id) != negate
    }
}

/// The names `<IfModule>` accepts for the loaded modules: the identifier
/// (`mpm_event_module`) and the source file (`mod_mpm_event.c`, `event.c`, `mod_php7.c`).
fn module_ids(modules: &[LoadedModule]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for b in BUILT_IN {
        ids.push(format!("{b}_module"));
        ids.push(format!("mod_{b}.c"));
    }
    ids.push("core.c".into());
    ids.push("http_core.c".into());
    for m in modules {
        ids.push(m.name.clone());
        let short = m.name.trim_end_matches("_module");
        ids.push(format!("mod_{short}.c"));
        if let Some(mpm) = short.strip_prefix("mpm_") {
            ids.push(format!("{mpm}.c"));
        }
        if short.starts_with("php") {
            ids.push("mod_php.c".into());
            ids.push(format!("mod_{short}.c"));
            let major: String = m
                .file
                .chars()
                .filter(|c| c.is_ascii_digit())
                .take(1)
                .collect();
            ids.push(format!("mod_php{major}.c"));
        }
    }
    ids
}

/// Split a directive line into words: whitespace separates, double or single quotes keep
/// spaces (quotes removed), a backslash escapes a quote inside quotes.
pub fn tokenize(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        if c == '"' || c == '\'' {
            chars.next();
            while let Some(ch) = chars.next() {
                if ch == '\\' && chars.peek() == Some(&c) {
                    word.push(c);
                    chars.next();
                } else if ch == c {
                    break;
                } else {
                    word.push(ch);
                }
            }
        } else {
            while let Some(&ch) = chars.peek() {
                if ch.is_whitespace() {
                    break;
                }
                word.push(ch);
                chars.next();
            }
        }
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests;
