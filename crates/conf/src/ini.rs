//! The two ini dialects the advisor and the lab read, with a small reader of our own (ini
//! crates mis-read bare keys such as `skip-name-resolve`): php-fpm's (`[global]` and one
//! section per pool, `include=` with wildcards) and MySQL/MariaDB's my.cnf (`!include FILE`,
//! `!includedir DIR` taking `*.cnf`, bare keys, `-` and `_` alike in names). What it takes
//! in is capped (`limits`).

use crate::config::{Directive, Options, Parsed};
use crate::error::ReadError;
use crate::include::{self, Missing, Site};
use crate::limits::{self, Budget};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    PhpFpm,
    MyCnf,
}

/// Read an ini tree. Each key becomes a directive named by the key, with the section as
/// its context (`["www"]`, `["mysqld"]`); a bare key has no argument.
pub fn read(main: &Path, dialect: Dialect) -> Result<Parsed, ReadError> {
    read_with(main, dialect, &Options::default())
}

/// Read an ini tree, absolute include paths under `opts.root`.
pub fn read_with(main: &Path, dialect: Dialect, opts: &Options) -> Result<Parsed, ReadError> {
    let mut parsed = Parsed {
        main: main.to_path_buf(),
        ..Parsed::default()
    };
    let mut section = String::new();
    let mut tree = Tree {
        parsed: &mut parsed,
        section: &mut section,
        budget: Budget::default(),
        opts: opts.clone(),
        dir: main
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/")),
        reading: vec![main.to_path_buf()],
    };
    file(main, dialect, &mut tree, 0, None)?;
    if dialect == Dialect::MyCnf {
        crate::mycnf::settle(&mut parsed)?;
    }
    Ok(parsed)
}

/// What one read of a tree carries from file to file.
struct Tree<'a> {
    parsed: &'a mut Parsed,
    section: &'a mut String,
    budget: Budget,
    opts: Options,
    /// The main file's directory: files outside it are the host's.
    dir: PathBuf,
    /// The files being read, the main file first (an include of one of them is a loop).
    reading: Vec<PathBuf>,
}

/// Read the files one include names, each with `file`.
fn follow(
    tree: &mut Tree<'_>,
    dialect: Dialect,
    depth: usize,
    target: &Path,
    site: &Site<'_>,
) -> Result<(), ReadError> {
    let files = include::files(target, site, &tree.opts, &mut tree.parsed.notes)?;
    for f in files {
        // mysqld skips an include past its recursion limit with a warning and reads on.
        if dialect == Dialect::MyCnf && tree.reading.contains(&f) {
            tree.parsed.notes.push(crate::config::ReadNote {
                level: crate::config::NoteLevel::Warning,
                at: format!("{}:{}", site.file.display(), site.line),
                target: f.clone(),
                message: crate::config::escape(&format!(
                    "{} {}: {} is being read already (an include loop); not read again, as \
                     mysqld skips it at its recursion limit",
                    site.directive,
                    site.written,
                    f.display()
                )),
            });
            continue;
        }
        tree.reading.push(f.clone());
        let read = file(&f, dialect, tree, depth + 1, Some(site));
        tree.reading.pop();
        read?;
    }
    Ok(())
}

fn file(
    path: &Path,
    dialect: Dialect,
    tree: &mut Tree<'_>,
    depth: usize,
    from: Option<&Site<'_>>,
) -> Result<(), ReadError> {
    if depth > limits::MAX_INCLUDE_DEPTH {
        return Err(limits::includes_too_deep(path));
    }
    let text = match from {
        None => {
            let text = tree.budget.read(path, None)?;
            let kind = match dialect {
                Dialect::PhpFpm => crate::kind::Kind::PhpFpm,
                Dialect::MyCnf => crate::kind::Kind::MyCnf,
            };
            crate::kind::check(path, &text, kind)?;
            text
        }
        Some(site) => match include::read(&mut tree.budget, path, site, &mut tree.parsed.notes)? {
            Some(text) => text,
            None => return Ok(()),
        },
    };
    let base = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    let dir = tree.dir.clone();
    tree.parsed.files.push(path.to_path_buf());
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if dialect == Dialect::MyCnf {
            for (directive, pattern) in [("!includedir", true), ("!include", false)] {
                let Some(rest) = line.strip_prefix(directive) else {
                    continue;
                };
                let written = rest.trim();
                let mut target = include::resolve(written, &base, &tree.opts);
                if pattern {
                    target = target.join("*.cnf");
                }
                let site = Site {
                    file: path,
                    line: line_no,
                    directive,
                    written,
                    tree: &dir,
                    // MySQL skips a missing include directory.
                    missing: if pattern {
                        Missing::Note
                    } else {
                        Missing::Warn
                    },
                    dirs: false,
                };
                follow(tree, dialect, depth, &target, &site)?;
                break;
            }
            if line.starts_with("!include") {
                continue;
            }
        }
        if let Some(rest) = line.strip_prefix('[') {
            let Some(name) = rest.strip_suffix(']') else {
                return Err(ReadError::syntax(
                    path,
                    line_no,
                    format!("section {line:?} does not end with ']'"),
                ));
            };
            *tree.section = name.trim().to_string();
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(unquote(strip_comment(v.trim())))),
            None if dialect == Dialect::MyCnf => (line, None),
            None => {
                return Err(ReadError::syntax(
                    path,
                    line_no,
                    format!("expected \"name = value\", found {line:?}"),
                ))
            }
        };
        if key.is_empty() {
            return Err(ReadError::syntax(path, line_no, "a value without a name"));
        }
        let key = match dialect {
            Dialect::MyCnf => key.replace('-', "_").to_ascii_lowercase(),
            Dialect::PhpFpm => key.to_string(),
        };
        if dialect == Dialect::PhpFpm && key == "include" {
            let value = value.unwrap_or_default();
            let target = include::resolve(&value, &base, &tree.opts);
            let saved = tree.section.clone();
            let site = Site {
                file: path,
                line: line_no,
                directive: "include",
                written: &value,
                tree: &dir,
                missing: Missing::Warn,
                dirs: false,
            };
            follow(tree, dialect, depth, &target, &site)?;
            *tree.section = saved;
            continue;
        }
        if dialect == Dialect::PhpFpm
            && tree.section.is_empty()
            && !FPM_GLOBAL.contains(&key.as_str())
        {
            if from.is_some() {
                return Err(ReadError::syntax(
                    path,
                    line_no,
                    format!(
                        "{key} outside any [section]: php-fpm reads it as a [global] option \
                         and refuses it (a pool's settings follow its [name], e.g. [www])"
                    ),
                ));
            }
            // The file given is a fragment, written to be included after a pool's [name]
            // (issue 35, item 11): its keys are that pool's.
            *tree.section = FRAGMENT_POOL.to_string();
            tree.parsed.notes.push(crate::config::ReadNote {
                level: crate::config::NoteLevel::Warning,
                at: format!("{}:{line_no}", path.display()),
                target: path.to_path_buf(),
                message: format!(
                    "{key} before any [section]: a pool fragment, meant to be included after a \
                     pool's [name] (php-fpm alone reads such keys as [global] and refuses \
                     them); read as the keys of the pool that includes it"
                ),
            });
        }
        let directive = Directive {
            name: key,
            args: value.into_iter().collect(),
            file: path.to_path_buf(),
            line: line_no,
            context: if tree.section.is_empty() {
                Vec::new()
            } else {
                vec![tree.section.clone()]
            },
            block: 0,
        };
        tree.budget.keep(&directive)?;
        tree.parsed.directives.push(directive);
    }
    Ok(())
}

/// The pool a fragment's keys belong to (a file of keys before any section, given on its
/// own): the pool that includes it, whose name the file does not say.
pub const FRAGMENT_POOL: &str = "(the including pool)";

/// php-fpm's `[global]` options: the only keys it takes before any section.
const FPM_GLOBAL: &[&str] = &[
    "pid",
    "error_log",
    "syslog.facility",
    "syslog.ident",
    "log_level",
    "log_limit",
    "log_buffering",
    "emergency_restart_threshold",
    "emergency_restart_interval",
    "process_control_timeout",
    "process.max",
    "process.priority",
    "daemonize",
    "rlimit_files",
    "rlimit_core",
    "events.mechanism",
    "systemd_interval",
    "include",
];

/// A trailing ` # comment` or ` ; comment` outside quotes.
fn strip_comment(v: &str) -> &str {
    if v.starts_with('"') || v.starts_with('\'') {
        return v;
    }
    for marker in [" #", "\t#", " ;", "\t;"] {
        if let Some(i) = v.find(marker) {
            return v[..i].trim_end();
        }
    }
    v
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return v[1..v.len() - 1].to_string();
        }
    }
    v.to_string()
}

/// A size as mysqld parses it (`mycnf::parse_size`): K, M, G, T, P, E, 1024-based; None
/// for what the server refuses.
pub fn parse_size(v: &str) -> Option<u64> {
    crate::mycnf::parse_size(v).ok()
}

/// php-fpm's pools: one per section other than `[global]`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Pool {
    pub name: String,
    /// The `pm.max_children` line (php-fpm requires it).
    pub max_children: Option<(i64, Directive)>,
    pub pm: String,
    pub max_requests: Option<(i64, Directive)>,
    pub listen: Option<Directive>,
    pub backlog: Option<(i64, Directive)>,
}

pub fn pools(parsed: &Parsed) -> Vec<Pool> {
    let mut names: Vec<String> = Vec::new();
    for d in &parsed.directives {
        if let Some(s) = d.context.first() {
            if s != "global" && !names.contains(s) {
                names.push(s.clone());
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let get = |key: &str| {
                parsed
                    .directives
                    .iter()
                    .rfind(|d| d.name == key && d.context.first() == Some(&name))
                    .cloned()
            };
            let int = |key: &str| get(key).and_then(|d| Some((d.int()?, d)));
            Pool {
                max_children: int("pm.max_children"),
                pm: get("pm")
                    .map(|d| d.value().to_string())
                    .unwrap_or_else(|| "dynamic".into()),
                max_requests: int("pm.max_requests"),
                listen: get("listen"),
                backlog: int("listen.backlog"),
                name,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mycnf_bare_keys_includes_and_dashes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("conf.d")).unwrap();
        std::fs::write(
            d.path().join("conf.d/a.cnf"),
            "[mysqld]\nskip-name-resolve\nmax-connections = 300 # more\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("conf.d/b.txt"),
            "[mysqld]\nmax_connections=1\n",
        )
        .unwrap();
        let main = d.path().join("my.cnf");
        std::fs::write(
            &main,
            format!(
                "[client]\nport=3306\n!includedir {}/conf.d\n",
                d.path().display()
            ),
        )
        .unwrap();
        let p = read(&main, Dialect::MyCnf).unwrap();
        let mc = crate::mycnf::mysqld_value(&p, "max_connections").unwrap();
        assert_eq!(mc.int(), Some(300));
        assert!(mc.at().ends_with("conf.d/a.cnf:3"));
        let bare = crate::mycnf::mysqld_value(&p, "skip_name_resolve").unwrap();
        assert!(bare.args.is_empty());
        assert!(
            crate::mycnf::mysqld_value(&p, "port").is_none(),
            "[client] is not the server's"
        );
        assert_eq!(parse_size("128M"), Some(128 << 20));
    }

    #[test]
    fn fpm_pools_and_errors() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("pool.d")).unwrap();
        std::fs::write(
            d.path().join("pool.d/www.conf"),
            "[www]\npm = static\npm.max_children = 20 ; twenty\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("pool.d/api.conf"),
            "[api]\npm.max_children = 5\n",
        )
        .unwrap();
        let main = d.path().join("php-fpm.conf");
        std::fs::write(&main, "[global]\npid = /run/x.pid\ninclude=pool.d/*.conf\n").unwrap();
        let p = read(&main, Dialect::PhpFpm).unwrap();
        let pools = pools(&p);
        assert_eq!(pools.len(), 2);
        let sum: i64 = pools
            .iter()
            .filter_map(|p| p.max_children.as_ref().map(|m| m.0))
            .sum();
        assert_eq!(sum, 25);
        std::fs::write(&main, "[global]\npid /run/x.pid\n").unwrap();
        let e = read(&main, Dialect::PhpFpm).unwrap_err().to_string();
        assert!(e.contains("php-fpm.conf:2: expected"), "{e}");
    }
}
