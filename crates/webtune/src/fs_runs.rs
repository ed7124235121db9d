//! Running the fs workload from a command and what its commands share: the run (its pool
//! registered with the lab by `lab::filesystem`, so `lab clean` removes it after a SIGKILL), the exit status of fs runs,
//! their files, and `compare` of saved fs results. Shared by fs, postmark, lab run fs and
//! compare; no command owns it.

use crate::output::Outputs;
use std::path::PathBuf;
use webtune_cli::flags::fs::FsOutput;
use webtune_cli::output_flags::OutputFlags;
use webtune_model::fs::{FsResult, FsSpec};

/// Run the workload of `spec` with the process's stop token, its pool registered with the
/// lab (`lab::filesystem::run_registered`).
pub fn run_spec(spec: &FsSpec) -> anyhow::Result<FsResult> {
    webtune_lab::filesystem::run_registered(spec, &crate::signals::stop_token())
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// The status of fs runs (one, or a sweep's levels) by their outcome: 130 when stopped;
/// 1 when a file system failed under the workload (out of space, read-only, I/O errors:
/// one `webtune:` line says so per run) or a run did no transaction and had failures.
pub fn own_status(levels: &[FsResult]) -> i32 {
    for r in levels {
        if let Some(failure) = r.storage_failure() {
            crate::output::warn(&failure);
        }
    }
    if crate::signals::stop_requested() || levels.iter().any(|r| r.interrupted) {
        crate::exit::INTERRUPTED
    } else if levels
        .iter()
        .any(|r| r.storage_failure().is_some() || (r.transactions == 0 && r.errors() > 0))
    {
        crate::exit::NO_SUCCESS
    } else {
        crate::exit::SUCCESS
    }
}

/// `compare` on saved results: None when they are not fs results (HTTP runs go on as
/// before); fs results are compared here. Mixing the two is refused.
pub fn compare(
    files: &[PathBuf],
    labels: Vec<String>,
    html: Option<&str>,
    thresholds: &[String],
) -> anyhow::Result<Option<i32>> {
    let texts = files
        .iter()
        .map(|f| crate::inputs::read_saved_text(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let is_fs: Vec<bool> = texts
        .iter()
        .map(|t| webtune_model::fs::schema_of(t).as_deref() == Some(webtune_model::fs::FS_SCHEMA))
        .collect();
    if !is_fs.contains(&true) {
        return Ok(None);
    }
    if let Some(i) = is_fs.iter().position(|f| !f) {
        anyhow::bail!(
            "{} is not an fs result (webtune.fs/1): compare fs results with fs results",
            files[i].display()
        );
    }
    if !thresholds.is_empty() {
        anyhow::bail!("--threshold judges HTTP results; it does not apply to fs results yet");
    }
    let results = texts
        .iter()
        .zip(files)
        .map(|(t, f)| FsResult::from_json(t).map_err(|e| anyhow::anyhow!("{}: {e}", f.display())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let inputs: Vec<(String, &FsResult)> = labels.into_iter().zip(results.iter()).collect();
    let mut outputs = Outputs::new();
    if let Some(dest) = html {
        outputs.file(
            "--html",
            dest,
            &webtune_report::fs::render_fs_compare_html(&inputs),
        );
    }
    outputs.stdout(&webtune_report::fs::render_fs_compare_text(&inputs));
    Ok(Some(outputs.exit_code(crate::exit::SUCCESS)))
}

/// A sweep's files (`--json` as `webtune.fs-sweep`, `--csv`, `--html`), for `fs
/// --sweep-workers` and `lab sweep fs`.
pub fn sweep_files(
    outputs: &mut Outputs,
    o: &OutputFlags<FsOutput>,
    levels: &[webtune_model::fs::FsResult],
) -> anyhow::Result<()> {
    if let Some(dest) = &o.json {
        let sweep = webtune_model::fs::FsSweep {
            schema: webtune_model::fs::FS_SWEEP_SCHEMA.into(),
            levels: levels.to_vec(),
        };
        let text = serde_json::to_string_pretty(&sweep)? + "\n";
        outputs.file("--json", dest, &text);
    }
    if let Some(dest) = &o.csv {
        outputs.file(
            "--csv",
            dest,
            &webtune_report::fs::render_fs_sweep_csv(levels),
        );
    }
    if let Some(dest) = &o.html {
        outputs.file(
            "--html",
            dest,
            &webtune_report::fs::render_fs_sweep_html(levels),
        );
    }
    Ok(())
}
