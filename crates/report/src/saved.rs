//! Reading a file a command takes whole (a saved result, sweep or shard, a command file):
//! at most a cap (`MAX_SAVED_BYTES` for results), so that `/dev/zero` or a runaway file is
//! refused in one line that names the cap instead of filling memory; and what a saved file
//! holds (`Saved`, by its schema tag) and how it renders; saved shards merged one file at a
//! time (`merge_shards`). Errors are one line naming the file. The caller
//! decides what a blocked read (a FIFO) does on a signal (the binary: `exit_at_once`).

use crate::Format;
use std::io::Read;
use std::path::{Path, PathBuf};
use webtune_model::capacity::{CapacityResult, CAPACITY_SCHEMA};
use webtune_model::sweep::{SweepResult, SWEEP_SCHEMA};
use webtune_model::{MergeOptions, ShardMerge};
use webtune_model::{RunResult, MAX_SAVED_BYTES};
use webtune_search::report::{TuneReport, SCHEMA as TUNE_SCHEMA};

/// A file that could not be read or is not what it should be, in one line naming it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReadError(pub String);

/// "context: error: its sources…", as one line.
fn because(context: String, e: &dyn std::error::Error) -> ReadError {
    let mut line = format!("{context}: {e}");
    let mut source = e.source();
    while let Some(s) = source {
        line.push_str(&format!(": {s}"));
        source = s.source();
    }
    ReadError(line)
}

/// A saved result's text, refused in one line when it is over `MAX_SAVED_BYTES`.
pub fn read_saved_text(path: &Path) -> Result<String, ReadError> {
    read_capped(path, MAX_SAVED_BYTES, "a saved result")
}

/// The text of `path`, at most `cap` bytes of it: a file over the cap is refused before it
/// is read when its size is known, else once `cap` bytes have come. `what` names the kind
/// of file in the refusals ("a saved result", "a postmark command file").
pub fn read_capped(path: &Path, cap: u64, what: &str) -> Result<String, ReadError> {
    let shown = path.display();
    let file =
        std::fs::File::open(path).map_err(|e| because(format!("cannot read {shown}"), &e))?;
    let too_large = || {
        ReadError(format!(
            "cannot read {shown}: it is over {}, the most {what} may be",
            size_name(cap)
        ))
    };
    if file.metadata().is_ok_and(|m| m.is_file() && m.len() > cap) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| because(format!("cannot read {shown}"), &e))?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    String::from_utf8(bytes)
        .map_err(|_| ReadError(format!("{shown} is not {what}: it is not UTF-8 text")))
}

/// "256 MiB", "10 bytes".
fn size_name(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// What a saved file holds.
pub enum Saved {
    Run(Box<RunResult>),
    Sweep(Box<SweepResult>),
    Capacity(Box<CapacityResult>),
    Tune(Box<TuneReport>),
}

impl Saved {
    /// What the file holds and the command that wrote it, for errors.
    pub fn describe(&self) -> &'static str {
        match self {
            Saved::Run(_) => "a run's result",
            Saved::Sweep(_) => "a sweep (one result per level)",
            Saved::Capacity(_) => "a capacity search (webtune capacity / lab capacity --json)",
            Saved::Tune(_) => "a tune report (webtune tune --json)",
        }
    }
}

/// A format a saved file has no layout in, in one line naming both.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoLayout(pub String);

impl Saved {
    /// The file rendered in `format` (`webtune report --format`): a run in every format, a
    /// sweep in all but ab's and http_load's (they show one run), a capacity search or a
    /// tune report as text, json or html.
    pub fn render(&self, format: Format) -> Result<String, NoLayout> {
        Ok(match (self, format) {
            (Saved::Run(r), format) => crate::render(r, format),
            (Saved::Sweep(_), Format::Ab | Format::HttpLoad) => {
                return Err(NoLayout(format!(
                    "the {format} layout shows one run; a sweep renders as text, csv, json or html"
                )))
            }
            (Saved::Sweep(s), Format::Text) => crate::sweep::render_sweep_text(s),
            (Saved::Sweep(s), Format::Csv) => crate::sweep::render_sweep_csv(s),
            (Saved::Sweep(s), Format::Json) => s.to_json_pretty() + "\n",
            (Saved::Sweep(s), Format::Html) => crate::sweep::render_sweep_html(s),
            (Saved::Capacity(c), Format::Text) => crate::capacity::render_capacity_text(c),
            (Saved::Capacity(c), Format::Html) => crate::capacity::render_capacity_html(c),
            (Saved::Capacity(c), Format::Json) => c.to_json_pretty() + "\n",
            (Saved::Tune(t), Format::Text) => t.render_text(),
            (Saved::Tune(t), Format::Html) => crate::tune_html::render_html(t),
            (Saved::Tune(t), Format::Json) => t.to_json_pretty() + "\n",
            (other, format) => {
                return Err(NoLayout(format!(
                    "the {format} format does not fit {}: it renders as text, json or html",
                    other.describe()
                )))
            }
        })
    }

    /// The HTML report of the file (`--html`): every kind has one.
    pub fn html(&self) -> String {
        match self {
            Saved::Run(r) => crate::html::render_html(r),
            other => other.render(Format::Html).unwrap_or_default(),
        }
    }
}

/// Only the schema tag of a saved file (the rest is skipped, not built).
#[derive(serde::Deserialize)]
struct SchemaTag {
    schema: Option<String>,
}

/// Read a saved run or sweep (at most `MAX_SAVED_BYTES`), with a one-line error naming the
/// file.
pub fn read_saved(path: &Path) -> Result<Saved, ReadError> {
    let text = read_saved_text(path)?;
    let schema = serde_json::from_str::<SchemaTag>(&text)
        .ok()
        .and_then(|t| t.schema)
        .unwrap_or_default();
    let name = || path.display().to_string();
    Ok(match schema.as_str() {
        s if s == SWEEP_SCHEMA => Saved::Sweep(Box::new(
            SweepResult::from_json(&text).map_err(|e| because(name(), &e))?,
        )),
        s if s == CAPACITY_SCHEMA => {
            Saved::Capacity(Box::new(serde_json::from_str(&text).map_err(|e| {
                because(format!("{}: not a readable {CAPACITY_SCHEMA}", name()), &e)
            })?))
        }
        s if s == TUNE_SCHEMA => {
            Saved::Tune(Box::new(serde_json::from_str(&text).map_err(|e| {
                because(format!("{}: not a readable {TUNE_SCHEMA}", name()), &e)
            })?))
        }
        _ => Saved::Run(Box::new(
            RunResult::from_json(&text).map_err(|e| because(name(), &e))?,
        )),
    })
}

/// Read a saved single run (not a sweep).
pub fn read_run(path: &Path) -> Result<RunResult, ReadError> {
    match read_saved(path)? {
        Saved::Run(r) => Ok(*r),
        other => Err(ReadError(format!(
            "{} is {}; give a single run's result",
            path.display(),
            other.describe()
        ))),
    }
}

/// The saved shards `files` merged into the result of the whole test, read one file at a
/// time (the merge keeps the sum, not every shard: 1,000 shards of a 60 s test once took
/// 1.5 GiB read all at once). A file that cannot be read is named before what is wrong
/// with the readable ones (as when every file was read first): after a refusal, the rest
/// are still read, not added. A refusal reads "merge: why".
pub fn merge_shards(files: &[PathBuf], options: MergeOptions) -> Result<RunResult, ReadError> {
    let mut merge = ShardMerge::new(options);
    let mut refused = None;
    for file in files {
        let shard = read_run(file)?;
        if refused.is_none() {
            refused = merge.add(file.display().to_string(), shard).err();
        }
    }
    let merged = match refused {
        Some(e) => Err(e),
        None => merge.finish(),
    };
    merged.map_err(|e| ReadError(format!("merge: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_cap_is_refused_with_the_cap_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(
            read_capped(&path, 10, "a saved result").unwrap(),
            "0123456789"
        );
        let e = read_capped(&path, 9, "a saved result")
            .unwrap_err()
            .to_string();
        assert!(e.contains("over 9 bytes"), "{e}");
        // A device with no end is cut at the cap.
        let e = read_capped(Path::new("/dev/zero"), 1 << 20, "a saved result")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "cannot read /dev/zero: it is over 1 MiB, the most a saved result may be"
        );
    }
}
