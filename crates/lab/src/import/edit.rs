//! The line edits of an imported config: a directive replaced or removed (with a comment
//! saying what it was) or text put before a line's first word, each on its own line, so
//! the copy's line numbers stay the user's.

use super::Server;
use crate::LabError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use webtune_conf::config::Directive;

/// One change to one line of a copied file.
#[derive(Debug, Clone)]
pub(super) struct Edit {
    pub(super) file: PathBuf,
    line: usize,
    name: String,
    what: EditKind,
}

#[derive(Debug, Clone)]
pub(super) enum EditKind {
    /// The directive becomes this text.
    Replace(String),
    /// The directive goes; a comment says what it was.
    Remove,
    /// Text before the line's first word (same line, so line numbers stay).
    Prefix(String),
}

impl Edit {
    pub(super) fn replace(d: &Directive, text: String) -> Edit {
        Edit {
            file: d.file.clone(),
            line: d.line,
            name: d.name.clone(),
            what: EditKind::Replace(text),
        }
    }
    pub(super) fn remove(d: &Directive) -> Edit {
        Edit {
            what: EditKind::Remove,
            ..Edit::replace(d, String::new())
        }
    }
    pub(super) fn prefix(d: &Directive, text: String) -> Edit {
        Edit {
            what: EditKind::Prefix(text),
            ..Edit::replace(d, String::new())
        }
    }
}

/// Apply a file's edits. Several statements of one name on one line are edited from the
/// last to the first, so each finds its own.
pub(super) fn apply(
    server: Server,
    file: &Path,
    lines: &mut [String],
    edits: &[&Edit],
) -> Result<(), LabError> {
    let mut prefixes: Vec<(usize, String)> = Vec::new();
    // (line, name) → how many statements of that name the line holds before this one.
    let mut seen: HashMap<(usize, String), usize> = HashMap::new();
    let mut ordered: Vec<(usize, &Edit)> = Vec::new();
    for e in edits {
        if let EditKind::Prefix(text) = &e.what {
            prefixes.push((e.line, text.clone()));
            continue;
        }
        let n = seen.entry((e.line, e.name.clone())).or_insert(0);
        ordered.push((*n, e));
        *n += 1;
    }
    ordered.sort_by_key(|e| std::cmp::Reverse((e.1.line, e.0)));
    let at = |line: usize| format!("{}:{line}", file.display());
    for (nth, e) in ordered {
        let Some(text) = lines.get_mut(e.line.wrapping_sub(1)) else {
            return Err(LabError::Inconsistent(format!(
                "{}: no such line",
                at(e.line)
            )));
        };
        let new = match server {
            Server::Nginx => nginx_edit(text, &e.name, nth, &e.what),
            // php-fpm and my.cnf copies have no line edits (they are appended to, see
            // `php_fpm` and `mariadb`); a whole-line one would do.
            Server::Apache | Server::PhpFpm | Server::MariaDb => apache_edit(text, &e.what),
        };
        *text = new.ok_or_else(|| {
            LabError::Inconsistent(format!(
                "{}: webtune cannot rewrite this {} (it spans lines); put it on one line",
                at(e.line),
                e.name
            ))
        })?;
    }
    for (line, prefix) in prefixes {
        if let Some(text) = lines.get_mut(line.wrapping_sub(1)) {
            let trimmed = text.trim_start();
            let indent = text[..text.len() - trimmed.len()].to_string();
            *text = format!("{indent}{prefix}{trimmed}");
        }
    }
    Ok(())
}

/// Replace (or remove) the `nth` statement `name …;` of an nginx line; None when the
/// statement does not end on this line.
pub(super) fn nginx_edit(line: &str, name: &str, nth: usize, what: &EditKind) -> Option<String> {
    let (start, end) = nginx_statement(line, name, nth)?;
    let original = &line[start..end];
    Some(match what {
        EditKind::Replace(text) => format!("{}{text}{}", &line[..start], &line[end..]),
        EditKind::Remove => format!(
            "{}{} # webtune removed: {original}",
            &line[..start],
            line[end..].trim_end()
        ),
        EditKind::Prefix(_) => line.to_string(),
    })
}

/// Byte range of the `nth` statement `name …;` on a line (outside quotes and comments).
pub(super) fn nginx_statement(line: &str, name: &str, nth: usize) -> Option<(usize, usize)> {
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut boundary = true;
    let mut found = 0;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 1;
            } else if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'#' => return None,
            b'"' | b'\'' => quote = Some(c),
            _ if boundary && line[i..].starts_with(name) => {
                let after = bytes.get(i + name.len()).copied();
                if after.is_some_and(|a| a.is_ascii_whitespace() || a == b';') {
                    if found == nth {
                        let end = statement_end(line, i)?;
                        return Some((i, end));
                    }
                    found += 1;
                }
            }
            _ => {}
        }
        boundary = c.is_ascii_whitespace() || matches!(c, b';' | b'{' | b'}');
        i += 1;
    }
    None
}

/// The byte after the `;` that ends the statement starting at `start`.
fn statement_end(line: &str, start: usize) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = start;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == b'"' || c == b'\'' => quote = Some(c),
            None if c == b';' => return Some(i + 1),
            None => {}
        }
        i += 1;
    }
    None
}

/// An Apache directive is its whole line; None when it continues on the next.
fn apache_edit(line: &str, what: &EditKind) -> Option<String> {
    if line.trim_end().ends_with('\\') {
        return None;
    }
    let trimmed = line.trim_start();
    let indent = &line[..line.len() - trimmed.len()];
    Some(match what {
        EditKind::Replace(text) => format!("{indent}{}", text.trim_end()),
        EditKind::Remove => format!("{indent}# webtune removed: {trimmed}"),
        EditKind::Prefix(_) => line.to_string(),
    })
}
