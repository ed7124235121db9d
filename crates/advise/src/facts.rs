//! What the trees are for, beyond their text: the database server's release (which option
//! groups it reads, which options it removed, its redo log), the size of its InnoDB data,
//! and the modules compiled into httpd (an MPM built in is an MPM loaded). Each is learned
//! from the user (`--mysql-version`), from `--live`, or from this host's installed
//! binaries and data directory (`mariadbd --version`, `httpd -l`, the datadir's files) —
//! never from this host when judging a copied tree (`--root`): there the tree's own
//! datadir under the root is read, and what the tree does not say stays unknown, and is
//! said to be. Only reads; the binaries are asked with a time limit.

use crate::live::Live;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use webtune_conf::config::Parsed;
use webtune_conf::mycnf::Release;

/// How long a binary may take to say its version or its modules.
const ASK_LIMIT: Duration = Duration::from_secs(5);

/// A fact with where it was learned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Known<T> {
    pub value: T,
    /// "mariadbd --version", "--mysql-version", "--live (SELECT VERSION())", "datadir …".
    pub from: String,
}

/// The facts the rules use beside the trees.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Facts {
    /// A copied tree's root (`--root`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// The database server's release, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<Known<Release>>,
    /// Why the release is not known (said where a rule needed it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub database_unknown: String,
    /// Bytes of InnoDB data (tables and indexes), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub innodb_data: Option<Known<u64>>,
    /// The modules compiled into the httpd that reads the Apache tree (`httpd -l`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apache_compiled_in: Option<Known<Vec<String>>>,
}

impl Facts {
    /// Is the copy's root set (nothing of this host is read for the trees)?
    pub fn copied(&self) -> bool {
        self.root.is_some()
    }

    /// A path the tree names, where it lies (under the root of a copy).
    pub fn rooted(&self, p: &Path) -> PathBuf {
        match &self.root {
            Some(r) if p.is_absolute() => r.join(p.strip_prefix("/").unwrap_or(p)),
            _ => p.to_path_buf(),
        }
    }
}

/// The database server's release: the user's word, else `--live`'s `SELECT VERSION()`,
/// else (not for a copied tree) the installed server binary's `--version`. Err: why not.
pub fn database_release(
    given: Option<&str>,
    live: Option<&Live>,
    copied: bool,
) -> Result<Known<Release>, String> {
    if let Some(text) = given {
        return Release::parse(text)
            .map(|value| Known {
                value,
                from: format!("--mysql-version {text}"),
            })
            .ok_or_else(|| {
                format!("--mysql-version {text:?} is not a release (10.11, mysql-8.0.34)")
            });
    }
    if let Some(v) = live
        .and_then(|l| l.figures.get("mariadb"))
        .and_then(|f| f.get("version"))
    {
        if let Some(value) = Release::parse(v) {
            return Ok(Known {
                value,
                from: format!("--live (version {v})"),
            });
        }
    }
    if copied {
        return Err("a copied tree (--root): this host's server is not asked; give --mysql-version X.Y, or --live".into());
    }
    for bin in [
        "/usr/sbin/mariadbd",
        "/usr/sbin/mysqld",
        "/usr/local/mysql/bin/mysqld",
    ] {
        if !Path::new(bin).is_file() {
            continue;
        }
        let mut c = Command::new(bin);
        c.arg("--version");
        if let Ok(out) = crate::live::run_within(c, ASK_LIMIT) {
            if let Some(value) = Release::parse(out.lines().next().unwrap_or("")) {
                return Ok(Known {
                    value,
                    from: format!("{bin} --version"),
                });
            }
        }
    }
    Err("no mariadbd or mysqld installed here to ask; give --mysql-version X.Y, or --live".into())
}

/// The modules compiled into the httpd that reads `main`'s tree (`httpd -l`), not asked for
/// a copied tree.
pub fn apache_compiled_in(copied: bool) -> Option<Known<Vec<String>>> {
    if copied {
        return None;
    }
    for bin in [
        "/usr/sbin/apache2",
        "/usr/sbin/httpd",
        "/usr/local/apache2/bin/httpd",
    ] {
        if !Path::new(bin).is_file() {
            continue;
        }
        let mut c = Command::new(bin);
        c.arg("-l");
        let Ok(out) = crate::live::run_within(c, ASK_LIMIT) else {
            continue;
        };
        let modules: Vec<String> = out
            .lines()
            .map(str::trim)
            .filter(|l| l.ends_with(".c"))
            .map(str::to_string)
            .collect();
        if !modules.is_empty() {
            return Some(Known {
                value: modules,
                from: format!("{bin} -l"),
            });
        }
    }
    None
}

/// The InnoDB data: `--live`'s sum over information_schema, else the files of the
/// datadir (the tree's under a copy's root; this host's otherwise).
pub fn innodb_data(m: &Parsed, live: Option<&Live>, facts: &Facts) -> Option<Known<u64>> {
    if let Some(v) = live
        .and_then(|l| l.figures.get("mariadb"))
        .and_then(|f| f.get("innodb_data_bytes"))
        .and_then(|v| v.parse::<u64>().ok())
    {
        return Some(Known {
            value: v,
            from:
                "--live: SUM(data_length + index_length) of the InnoDB tables in information_schema"
                    .into(),
        });
    }
    let written = webtune_conf::mycnf::mysqld_value(m, "datadir")
        .map(|d| d.value().to_string())
        .unwrap_or_else(|| "/var/lib/mysql".into());
    let dir = facts.rooted(Path::new(&written));
    let bytes = innodb_bytes(&dir)?;
    Some(Known {
        value: bytes,
        from: if facts.copied() {
            format!(
                "the tree's datadir {written} ({}): InnoDB files",
                dir.display()
            )
        } else {
            format!("host: InnoDB files under {written}")
        },
    })
}

/// Bytes of InnoDB files (ibdata*, *.ibd) under the data directory and its database
/// directories; None when it cannot be read.
fn innodb_bytes(dir: &Path) -> Option<u64> {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(_) if d == dir => return None,
            Err(_) => continue,
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > 100_000 {
                return Some(total);
            }
            let Ok(meta) = e.metadata() else { continue };
            let name = e.file_name().to_string_lossy().into_owned();
            if meta.is_dir() && d == dir {
                stack.push(e.path());
            } else if meta.is_file() && (name.ends_with(".ibd") || name.starts_with("ibdata")) {
                total = total.saturating_add(meta.len());
            }
        }
    }
    Some(total)
}
