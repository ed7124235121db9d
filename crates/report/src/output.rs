//! Where results go: a command's output files and standard output, the one place that
//! writes what this crate renders to the user's paths. Output paths are checked before any
//! load starts (`check`); a regular file (or a new path) is written atomically (a temporary
//! file in the same directory, renamed over it); a device, a FIFO or "-" is written
//! through, never replaced (a FIFO waits for its reader); a symlink keeps pointing where it
//! did and its target gets the content. A failed write is reported on stderr with the
//! user's path and the other outputs are still written; `Outputs::status` says what
//! happened, and the caller maps it to its exit code (the binary: docs/exit-codes.md).

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use webtune_model::RunResult;

/// Symlinks followed before giving up (as the kernel's ELOOP limit).
const MAX_SYMLINKS: usize = 40;

/// How one output destination is written.
#[derive(Debug, PartialEq, Eq)]
enum Destination {
    /// "-": standard output.
    Stdout,
    /// A regular file or a new path (symlinks resolved): a temporary file, then a rename.
    Atomic(PathBuf),
    /// A device, a FIFO or a socket (symlinks resolved): opened and written in place.
    Through(PathBuf),
}

/// Follow symlinks in the last component of `path` to the file they name (which need not
/// exist yet). Directories along the way are resolved by the kernel.
fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_SYMLINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// What `dest` is and so how it is written.
fn classify(dest: &str) -> io::Result<Destination> {
    if dest == "-" {
        return Ok(Destination::Stdout);
    }
    if dest.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path is empty",
        ));
    }
    if dest.ends_with('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it names a directory (give a file name)",
        ));
    }
    let path = resolve_symlinks(Path::new(dest))?;
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is a directory",
        )),
        Ok(meta) if meta.is_file() => Ok(Destination::Atomic(path)),
        Ok(meta) => {
            let t = meta.file_type();
            if t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket() {
                Ok(Destination::Through(path))
            } else {
                Ok(Destination::Atomic(path))
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Destination::Atomic(path)),
        Err(e) => Err(e),
    }
}

/// The directory a temporary file for `path` goes in.
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// A temporary file beside `path`, with the mode the result should have: an existing
/// file's, else what a new file gets (0666 less the umask).
fn temp_beside(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o666);
    let prefix = match path.file_name() {
        Some(name) => format!(".{}.", name.to_string_lossy()),
        None => ".webtune.".to_string(),
    };
    tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".webtune-partial")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(parent_dir(path))
}

/// May this process write to the device or FIFO at `path`? Asked with access(2), not by
/// opening it: an open and close would hand a reader already waiting on a FIFO its EOF.
fn probe_through(path: &Path) -> io::Result<()> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte"))?;
    // SAFETY: a valid NUL-terminated path; access has no other preconditions.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An output that cannot be written, found before any load starts: "cannot write FLAG
/// PATH: why".
#[derive(Debug, thiserror::Error)]
#[error("cannot write {flag} {dest}: {why}")]
pub struct Unwritable {
    pub flag: String,
    pub dest: String,
    pub why: String,
}

/// Check, before any load starts, that `dest` (the value of `flag`) can be written: its
/// directory takes a new file, or the device or FIFO opens for writing. Writes nothing
/// that stays.
pub fn check(flag: &str, dest: &str) -> Result<(), Unwritable> {
    let probe = || -> io::Result<()> {
        match classify(dest)? {
            Destination::Stdout => Ok(()),
            Destination::Atomic(path) => temp_beside(&path)?.close(),
            Destination::Through(path) => probe_through(&path),
        }
    };
    probe().map_err(|e| Unwritable {
        flag: flag.to_string(),
        dest: dest.to_string(),
        why: describe(&e),
    })
}

/// Check every `(flag, destination)` given (see `check`).
pub fn check_all<'a>(
    outputs: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<(), Unwritable> {
    for (flag, dest) in outputs {
        if let Some(dest) = dest {
            check(flag, dest)?;
        }
    }
    Ok(())
}

/// An io error without Rust's "(os error N)" suffix.
fn describe(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Write through: open the device or FIFO as it is and write to it.
fn write_through(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).open(path)?;
    file.write_all(bytes)?;
    file.flush()
}

/// Write a temporary file beside `path`, then rename it over `path`.
fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = temp_beside(path)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map(|_: File| ()).map_err(|e| e.error)
}

/// What happened to a command's outputs, worst first: the caller's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// A file (or stdout, other than a closed pipe) could not be written.
    Failed,
    /// Only stdout's reader went away.
    BrokenPipe,
    /// Every output was written.
    Written,
}

/// What happened to a command's outputs: stdout and the files, written as the command goes,
/// each failure reported once on stderr. `status` says what happened.
#[derive(Debug, Default)]
pub struct Outputs {
    /// A file (or stdout, other than a closed pipe) could not be written.
    failed: bool,
    /// Stdout's reader went away; nothing more goes to stdout.
    broken_pipe: bool,
    /// Stdout failed otherwise (reported once); nothing more goes to stdout.
    stdout_failed: bool,
}

impl Outputs {
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// Print `text` on stdout (flushed). After stdout failed once, nothing more is tried.
    pub fn stdout(&mut self, text: &str) {
        if self.broken_pipe || self.stdout_failed {
            return;
        }
        let mut out = io::stdout().lock();
        let written = out.write_all(text.as_bytes()).and_then(|_| out.flush());
        if let Err(e) = written {
            if e.kind() == io::ErrorKind::BrokenPipe {
                self.broken_pipe = true;
            } else {
                self.failed = true;
                self.stdout_failed = true;
                warn(&format!(
                    "cannot write to standard output: {}",
                    describe(&e)
                ));
            }
        }
    }

    /// Write `text` to `dest`, the value of `flag` ("-" is stdout). A failure is reported on
    /// stderr naming the flag and the user's path; the caller goes on with its other outputs.
    pub fn file(&mut self, flag: &str, dest: &str, text: &str) {
        let written = classify(dest).and_then(|target| match target {
            Destination::Stdout => {
                self.stdout(text);
                Ok(())
            }
            Destination::Atomic(path) => write_atomic(&path, text.as_bytes()),
            Destination::Through(path) => write_through(&path, text.as_bytes()),
        });
        if let Err(e) = written {
            self.failed = true;
            warn(&format!("cannot write {flag} {dest}: {}", describe(&e)));
        }
    }

    /// Did every output get written?
    pub fn ok(&self) -> bool {
        !self.failed && !self.broken_pipe
    }

    /// A failed output outweighs a closed pipe on stdout.
    pub fn status(&self) -> Status {
        if self.failed {
            Status::Failed
        } else if self.broken_pipe {
            Status::BrokenPipe
        } else {
            Status::Written
        }
    }
}

/// Where a run's result goes and in what form (bench's and `lab run`'s output flags).
#[derive(Debug, Clone, Copy)]
pub struct RunOutputs<'a> {
    /// `--json FILE` ("-": stdout, instead of the summary).
    pub json: Option<&'a str>,
    /// `--html FILE`.
    pub html: Option<&'a str>,
    /// `--csv FILE` ("-": stdout).
    pub csv: Option<&'a str>,
    /// `-q`: no text summary (a `--format` asked for is still printed).
    pub quiet: bool,
    /// `--format`.
    pub format: crate::Format,
    /// `--timeline`: the timeline after a text summary.
    pub timeline: bool,
}

impl RunOutputs<'_> {
    /// Write the `html` and `json` files, then print the summary in `format` (with `header`
    /// and `footer` around it in text format), then the csv; on `outputs`.
    pub fn write(&self, outputs: &mut Outputs, result: &RunResult, header: &str, footer: &str) {
        use crate::Format;
        // The HTML first: "--json -" goes to stdout, which comes after the files.
        if let Some(dest) = self.html {
            outputs.file("--html", dest, &crate::render(result, Format::Html));
        }
        if let Some(dest) = self.json {
            outputs.file("--json", dest, &(result.to_json_pretty() + "\n"));
        }
        let json_to_stdout = self.json == Some("-");
        // Quiet drops the human summary only: a --format asked for is still printed.
        let quiet = self.quiet && self.format == Format::Text;
        if !quiet && !json_to_stdout {
            let text = self.format == Format::Text;
            let mut out = String::new();
            if text {
                out.push_str(header);
            }
            out.push_str(&crate::render(result, self.format));
            if self.timeline && text {
                out.push_str(&crate::timing::render_timeline(result));
            }
            if text {
                out.push_str(footer);
            }
            outputs.stdout(&out);
        }
        if let Some(dest) = self.csv {
            outputs.file("--csv", dest, &crate::render(result, Format::Csv));
        }
    }

    /// The threshold verdicts, when the text summary (which has them) is not printed.
    pub fn verdicts_elsewhere(&self, result: &RunResult) -> Option<String> {
        let text_printed =
            self.format == crate::Format::Text && !self.quiet && self.json != Some("-");
        (!text_printed && !result.thresholds.is_empty())
            .then(|| crate::verdicts::render_verdicts(&result.thresholds))
    }
}

/// One "webtune: …" line on stderr; a failing stderr is ignored (there is nowhere left to
/// say it).
pub fn warn(message: &str) {
    let _ = writeln!(io::stderr().lock(), "webtune: {message}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn destinations_are_classified() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.json");
        assert_eq!(classify("-").unwrap(), Destination::Stdout);
        assert_eq!(
            classify(new.to_str().unwrap()).unwrap(),
            Destination::Atomic(new.clone())
        );
        assert_eq!(
            classify("/dev/null").unwrap(),
            Destination::Through("/dev/null".into())
        );
        assert!(classify(dir.path().to_str().unwrap()).is_err());
        assert!(classify("").is_err());
        assert!(classify("no-such-dir/").is_err());
        // A dangling relative symlink resolves beside itself.
        let link = dir.path().join("link.json");
        symlink("real.json", &link).unwrap();
        assert_eq!(
            classify(link.to_str().unwrap()).unwrap(),
            Destination::Atomic(dir.path().join("real.json"))
        );
        // A loop is an error, not a hang.
        let a = dir.path().join("a");
        symlink("b", &a).unwrap();
        symlink("a", dir.path().join("b")).unwrap();
        assert!(classify(a.to_str().unwrap()).is_err());
    }

    #[test]
    fn atomic_write_keeps_an_existing_files_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o640)).unwrap();
        let mut outputs = Outputs::new();
        outputs.file("--json", path.to_str().unwrap(), "new");
        assert!(outputs.ok());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "a temporary file was left: {names:?}");
    }

    #[test]
    fn a_missing_directory_is_refused_naming_the_users_path() {
        let err = check("--json", "/nonexistent-dir/x.json")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "cannot write --json /nonexistent-dir/x.json: No such file or directory"
        );
        let mut outputs = Outputs::new();
        outputs.file("--json", "/nonexistent-dir/x.json", "{}");
        assert_eq!(outputs.status(), Status::Failed);
    }
}
