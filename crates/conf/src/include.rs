//! Following an include the way the servers do, without ever giving up on the tree: a
//! missing or unreadable file, a symlink loop, a wildcard that matches nothing become
//! `ReadNote`s at the include's `file:line` and the tree is read on; a device such as
//! `/dev/null` is read like a file (nginx's `include /dev/null;` is valid and used). With
//! `Options::root` an absolute path is read under the copy's root; without it, a host file
//! outside the tree is read as the server would, and a note says so.

use crate::config::{escape, NoteLevel, Options, ReadNote};
use crate::error::{os_error, ReadError};
use crate::limits::Budget;
use std::path::{Path, PathBuf};

/// How the server treats an include that names nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// The server refuses to start (nginx's `include`, Apache's `Include`): a warning.
    Warn,
    /// The server reads on (Apache's `IncludeOptional`, my.cnf's `!includedir`): a note.
    Note,
}

/// Where an include is written: its `file:line`, the words as written, and the tree's
/// directory (to tell the host's files from the tree's).
pub(crate) struct Site<'a> {
    pub file: &'a Path,
    pub line: usize,
    /// The directive as written (`include`, `Include`, `!includedir`).
    pub directive: &'a str,
    pub written: &'a str,
    pub tree: &'a Path,
    pub missing: Missing,
    /// Apache reads every file of a directory it is given; the others refuse one.
    pub dirs: bool,
}

impl Site<'_> {
    fn at(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }

    fn note(&self, notes: &mut Vec<ReadNote>, level: NoteLevel, target: &Path, what: String) {
        notes.push(ReadNote {
            level,
            at: self.at(),
            target: target.to_path_buf(),
            message: escape(&format!("{} {}: {what}", self.directive, self.written)),
        });
    }
}

/// The path an include names: absolute ones under `opts.root`, relative ones under `base`.
pub(crate) fn resolve(written: &str, base: &Path, opts: &Options) -> PathBuf {
    let p = Path::new(written);
    if p.is_absolute() {
        opts.rooted(p)
    } else {
        base.join(p)
    }
}

/// The files an include reads, in the server's order, with a note for each thing not read.
pub(crate) fn files(
    target: &Path,
    site: &Site<'_>,
    opts: &Options,
    notes: &mut Vec<ReadNote>,
) -> Result<Vec<PathBuf>, ReadError> {
    let text = target.display().to_string();
    let is_glob = text.contains(['*', '?', '[']);
    let mut candidates = if is_glob {
        // A leading dot is matched only when written, as glob(3) (nginx, php-fpm) and
        // Apache's fnmatch with APR_FNM_PERIOD do: h5bp ships `.default.conf` disabled.
        let options = glob::MatchOptions {
            require_literal_leading_dot: true,
            ..glob::MatchOptions::new()
        };
        let paths = glob::glob_with(&text, options).map_err(|e| {
            ReadError::syntax(site.file, site.line, format!("bad wildcard {text:?}: {e}"))
        })?;
        let mut v: Vec<PathBuf> = paths.filter_map(Result::ok).collect();
        v.sort();
        if v.is_empty() {
            let why = match target.parent() {
                Some(dir) if !dir.is_dir() => {
                    format!(
                        "matches no file ({} does not exist){}",
                        dir.display(),
                        root_hint(site, opts)
                    )
                }
                _ => "matches no file".to_string(),
            };
            let level =
                if site.missing == Missing::Warn && !target.parent().is_some_and(Path::is_dir) {
                    NoteLevel::Warning
                } else {
                    NoteLevel::Note
                };
            site.note(notes, level, target, why);
        }
        v
    } else {
        vec![target.to_path_buf()]
    };
    let mut out = Vec::new();
    while !candidates.is_empty() {
        let f = candidates.remove(0);
        match std::fs::metadata(&f) {
            Ok(m) if m.is_dir() => {
                if is_glob && !site.dirs {
                    continue; // a wildcard's directories are not config files
                }
                if !site.dirs {
                    site.note(
                        notes,
                        NoteLevel::Warning,
                        &f,
                        "is a directory, not a file; not read".into(),
                    );
                    continue;
                }
                // Apache reads every file in a directory and its subdirectories, sorted.
                let mut inner: Vec<PathBuf> = std::fs::read_dir(&f)
                    .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                    .unwrap_or_default();
                inner.sort();
                for (i, p) in inner.into_iter().enumerate() {
                    candidates.insert(i, p);
                }
            }
            Ok(_) => {
                host_note(&f, site, opts, notes);
                out.push(f);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let level = match site.missing {
                    Missing::Warn => NoteLevel::Warning,
                    Missing::Note => NoteLevel::Note,
                };
                let dangling = std::fs::symlink_metadata(&f).is_ok();
                let what = if dangling {
                    format!(
                        "{}: a symlink to a missing file; not read{}",
                        f.display(),
                        root_hint(site, opts)
                    )
                } else if !is_glob && Path::new(site.written).is_absolute() {
                    format!("no such file; not read{}", root_hint(site, opts))
                } else if !is_glob {
                    format!("no such file ({}); not read", f.display())
                } else {
                    format!("{}: no such file; not read", f.display())
                };
                site.note(notes, level, &f, what);
            }
            Err(e) => {
                site.note(
                    notes,
                    NoteLevel::Warning,
                    &f,
                    format!("{}: {}; not read", f.display(), os_error(&e)),
                );
            }
        }
    }
    Ok(out)
}

/// " (…--root…)" for an absolute path read without a root: the copy may have it.
fn root_hint(site: &Site<'_>, opts: &Options) -> String {
    if opts.root.is_none() && Path::new(site.written).is_absolute() {
        " (an absolute path on this host; --root DIR reads a copied tree's under DIR)".into()
    } else {
        String::new()
    }
}

/// A note when a host file outside the tree is read for it (an absolute include, no root).
fn host_note(f: &Path, site: &Site<'_>, opts: &Options, notes: &mut Vec<ReadNote>) {
    if opts.root.is_some() || !Path::new(site.written).is_absolute() || f.starts_with(site.tree) {
        return;
    }
    if f == Path::new("/dev/null") {
        return;
    }
    site.note(
        notes,
        NoteLevel::Note,
        f,
        format!(
            "read this host's {} (outside the tree {}; --root DIR reads a copied tree's instead)",
            f.display(),
            site.tree.display()
        ),
    );
}

/// Read an included file; one that cannot be opened or read (permissions) becomes a
/// warning at the include and None. Caps stay errors.
pub(crate) fn read(
    budget: &mut Budget,
    path: &Path,
    site: &Site<'_>,
    notes: &mut Vec<ReadNote>,
) -> Result<Option<String>, ReadError> {
    match budget.read(path, Some((site.file, site.line))) {
        Ok(text) => Ok(Some(text)),
        Err(ReadError::Io { error, .. }) => {
            site.note(
                notes,
                NoteLevel::Warning,
                path,
                format!("{}: {}; not read", path.display(), os_error(&error)),
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
