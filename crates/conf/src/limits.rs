//! The caps on what the config readers take in, so that no config (a hostile one, a
//! `/dev/zero` include, a `Define` that doubles each line) can make a reader run out of
//! memory or read forever: one file, one tree (all files read for one main file, includes
//! counted each time they are read), one line after `${VAR}` expansion, block nesting, and
//! the directives kept. Each refusal is one line naming the cap. Real configurations are
//! far below every cap (Debian's Apache tree is about 60 KiB in 40 files).

use crate::config::Directive;
use crate::error::ReadError;
use std::io::Read;
use std::path::Path;

/// One config file.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// All the text read for one tree (a file included twice counts twice).
pub const MAX_TREE_BYTES: u64 = 64 << 20;
/// Files read for one tree (a fan-out of includes ends here).
pub const MAX_FILES: usize = 10_000;
/// One line (Apache's directive, an envvars value) after `${VAR}` expansion.
pub const MAX_LINE_BYTES: usize = 64 << 10;
/// Files included inside one another (a loop of includes ends here).
pub const MAX_INCLUDE_DEPTH: usize = 32;
/// Blocks or sections open at once.
pub const MAX_NESTING: usize = 100;
/// What the directives kept take, about (text and bookkeeping).
pub const MAX_DIRECTIVE_BYTES: usize = 256 << 20;

/// Bookkeeping of one directive beside its text (its struct, vectors, the file's path).
const DIRECTIVE_OVERHEAD: usize = 200;

fn mib(bytes: u64) -> u64 {
    bytes >> 20
}

fn cap(at: String, message: String) -> ReadError {
    ReadError::Cap { at, message }
}

/// Read one config file, refusing one larger than `MAX_FILE_BYTES` without reading more
/// than that (a device such as /dev/zero included).
pub fn read_file(path: &Path) -> Result<String, ReadError> {
    let bytes = read_capped(path, MAX_FILE_BYTES, "one config file")?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Read at most `limit` bytes of `path`, refusing a longer one with the cap named
/// (`what`: "one config file").
pub fn read_capped(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| ReadError::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(cap(
            path.display().to_string(),
            format!("larger than {} MiB, the cap on {what}", mib(limit)),
        ));
    }
    Ok(bytes)
}

/// What one tree has used of its caps so far.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    files: usize,
    bytes: u64,
    directive_bytes: usize,
}

impl Budget {
    /// Read a file of the tree (`from`: the include that names it, for the message).
    pub(crate) fn read(
        &mut self,
        path: &Path,
        from: Option<(&Path, usize)>,
    ) -> Result<String, ReadError> {
        let at = || match from {
            Some((file, line)) => format!("{}:{line}", file.display()),
            None => path.display().to_string(),
        };
        self.files += 1;
        if self.files > MAX_FILES {
            return Err(cap(
                at(),
                format!(
                    "more than {MAX_FILES} files read, the cap on one configuration tree \
                     (includes that fan out or loop?)"
                ),
            ));
        }
        let text = read_file(path)?;
        self.bytes += text.len() as u64;
        if self.bytes > MAX_TREE_BYTES {
            return Err(cap(
                at(),
                format!(
                    "more than {} MiB of config text read in all, the cap on one \
                     configuration tree",
                    mib(MAX_TREE_BYTES)
                ),
            ));
        }
        Ok(text)
    }

    /// Keep a directive, refusing once the directives kept pass `MAX_DIRECTIVE_BYTES`.
    pub(crate) fn keep(&mut self, d: &Directive) -> Result<(), ReadError> {
        let text: usize = d.name.len()
            + d.args.iter().map(String::len).sum::<usize>()
            + d.context.iter().map(String::len).sum::<usize>()
            + d.file.as_os_str().len();
        self.directive_bytes = self
            .directive_bytes
            .saturating_add(text + DIRECTIVE_OVERHEAD + 24 * (d.args.len() + d.context.len()));
        if self.directive_bytes > MAX_DIRECTIVE_BYTES {
            return Err(cap(
                d.at(),
                format!(
                    "the directives read take more than {} MiB, the cap on one configuration \
                     tree",
                    MAX_DIRECTIVE_BYTES >> 20
                ),
            ));
        }
        Ok(())
    }
}

/// Refuse a line that expands past `MAX_LINE_BYTES`.
pub(crate) fn line_too_long(path: &Path, line: usize) -> ReadError {
    cap(
        format!("{}:{line}", path.display()),
        format!(
            "longer than {} KiB after ${{VAR}} expansion, the cap on one line",
            MAX_LINE_BYTES >> 10
        ),
    )
}

/// Refuse blocks nested deeper than `MAX_NESTING`.
pub(crate) fn nested_too_deep(path: &Path, line: usize) -> ReadError {
    cap(
        format!("{}:{line}", path.display()),
        format!("blocks nested deeper than {MAX_NESTING}, the cap on nesting"),
    )
}

/// Refuse includes nested deeper than `MAX_INCLUDE_DEPTH` (`path`: the file that would be
/// read at that depth).
pub(crate) fn includes_too_deep(path: &Path) -> ReadError {
    ReadError::syntax(
        path,
        1,
        format!("includes nested deeper than {MAX_INCLUDE_DEPTH} (an include loop?)"),
    )
}
