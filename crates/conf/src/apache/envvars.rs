//! Debian's `envvars` beside apache2.conf: the `export NAME=value` lines that give
//! `${APACHE_…}` their values, expanded as the shell would, capped per value.

use crate::error::ReadError;
use crate::limits::{self, MAX_LINE_BYTES};
use std::collections::BTreeMap;
use std::path::Path;

/// The `export NAME=value` lines of a shell file like Debian's envvars (`path`, for the
/// messages). Lines inside `if … fi` are skipped (there they only compute a suffix that is
/// empty by default). A value longer than `limits::MAX_LINE_BYTES` once expanded is refused.
pub fn read_envvars(text: &str, path: &Path) -> Result<BTreeMap<String, String>, ReadError> {
    let mut vars = BTreeMap::new();
    let mut depth = 0usize;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        let first = line.split_whitespace().next().unwrap_or("");
        match first {
            "if" | "case" => depth += 1,
            "fi" | "esac" => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > 0 || line.starts_with('#') {
            continue;
        }
        let assignment = line.strip_prefix("export ").unwrap_or(line).trim();
        let Some((name, value)) = assignment.split_once('=') else {
            continue;
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let value = value.trim().trim_matches('"').trim_matches('\'');
        let expanded =
            expand_shell(value, &vars).ok_or_else(|| limits::line_too_long(path, i + 1))?;
        vars.insert(name.to_string(), expanded);
    }
    Ok(vars)
}

/// `$NAME` and `${NAME}` from `vars`; unknown names become empty, as in the shell. None
/// past `MAX_LINE_BYTES`.
fn expand_shell(value: &str, vars: &BTreeMap<String, String>) -> Option<String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, skip) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => (inner, inner.len() + 1),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        push_within(
            &mut out,
            vars.get(name).map(String::as_str).unwrap_or(""),
            MAX_LINE_BYTES,
        )?;
        rest = &after[skip..];
    }
    push_within(&mut out, rest, MAX_LINE_BYTES)?;
    Some(out)
}

/// Append `piece` unless `out` would pass `room` bytes.
pub(super) fn push_within(out: &mut String, piece: &str, room: usize) -> Option<()> {
    if out.len() + piece.len() > room {
        return None;
    }
    out.push_str(piece);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envvars_skip_if_blocks() {
        let v = read_envvars(
            "if [ x ]; then\n SUFFIX=\"-${X##y}\"\nelse\n SUFFIX=\nfi\nexport A=/run/a$SUFFIX\nexport B=${A}/b\n",
            Path::new("envvars"),
        )
        .unwrap();
        assert_eq!(v["A"], "/run/a");
        assert_eq!(v["B"], "/run/a/b");
    }
}
