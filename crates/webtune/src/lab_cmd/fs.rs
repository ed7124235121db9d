//! `webtune lab run fs` and `lab sweep fs`: make a private file system (`lab::fsys`: tmpfs,
//! or ext4 / xfs on a loop device, in a mount namespace of its own), run `webtune fs`'s
//! workload on it (its flags after `--`), print the fs report and the device's summary,
//! and leave nothing behind.

use crate::flags::fs::{parse_fs, spec_of};
use crate::fs_runs::own_status;
use crate::output::{self, Outputs};
use anyhow::bail;
use std::time::Duration;
use webtune_lab::fsys::{self, RunningFs};
use webtune_model::fs::{FsResult, FsSpec};

fn render(result: &FsResult) -> String {
    let mut text = webtune_report::fs::render_fs_text(result);
    if let Some(server) = &result.server {
        text.push('\n');
        text.push_str(&webtune_report::fs_device::device_summary(
            server,
            result.transactions,
        ));
    }
    text
}

/// Make the file system, saying what a killed run had left (on the host too) and this
/// start put right first.
fn start(
    settings: &webtune_lab::Settings,
    host_sysctl: bool,
    keep: bool,
) -> anyhow::Result<RunningFs> {
    let fs = RunningFs::start(settings, host_sysctl, keep)?;
    for line in fs.reaped() {
        eprintln!("lab: reaped what a killed webtune left: {line}");
    }
    Ok(fs)
}

/// `lab run fs --set … -- FS FLAGS`.
pub fn run(
    set: &[String],
    host_sysctl: bool,
    keep: bool,
    interval: Duration,
    words: &[String],
) -> anyhow::Result<i32> {
    let args = parse_fs(words)?;
    let o = &args.output;
    output::check_all([
        ("--json", o.json.as_deref()),
        ("--html", o.html.as_deref()),
        ("--csv", o.csv.as_deref()),
    ])?;
    if !args.sweep_workers.is_empty() {
        bail!("--sweep-workers: use `webtune lab sweep fs -c 1,2,4 …` for worker levels");
    }
    let spec = spec_of(&args)?;
    let settings = fsys::settings_for(set, host_sysctl)?;
    let fs = start(&settings, host_sysctl, keep)?;
    let stop = crate::signals::stop_token();
    let result = fsys::run_workload(&fs, &spec, &stop, interval);
    let stopped = fs.stop();
    let result = result?;
    stopped?;
    let mut outputs = Outputs::new();
    if !o.quiet {
        outputs.stdout(&render(&result));
    }
    if let Some(dest) = &o.json {
        outputs.file("--json", dest, &(result.to_json_pretty() + "\n"));
    }
    if let Some(dest) = &o.csv {
        outputs.file("--csv", dest, &webtune_report::fs::render_fs_csv(&result));
    }
    if let Some(dest) = &o.html {
        outputs.file("--html", dest, &webtune_report::fs::render_fs_html(&result));
    }
    Ok(outputs.exit_code(own_status(&[result])))
}

/// `lab sweep fs -c 1,2,4 --set … -- FS FLAGS`: one file system, one level per worker count.
pub fn sweep(
    set: &[String],
    host_sysctl: bool,
    keep: bool,
    workers: &[u32],
    interval: Duration,
    words: &[String],
) -> anyhow::Result<i32> {
    let args = parse_fs(words)?;
    let o = &args.output;
    output::check_all([
        ("--json", o.json.as_deref()),
        ("--html", o.html.as_deref()),
        ("--csv", o.csv.as_deref()),
    ])?;
    let base = spec_of(&args)?;
    let specs: Vec<FsSpec> = workers
        .iter()
        .map(|&w| FsSpec {
            workers: w,
            ..base.clone()
        })
        .collect();
    for s in &specs {
        webtune_fs::check::check(s).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let settings = fsys::settings_for(set, host_sysctl)?;
    let fs = start(&settings, host_sysctl, keep)?;
    let stop = crate::signals::stop_token();
    let mut levels = Vec::new();
    let mut failure = None;
    for s in &specs {
        if crate::signals::stop_requested() {
            break;
        }
        match fsys::run_workload(&fs, s, &stop, interval) {
            Ok(r) => levels.push(r),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    fs.stop()?;
    if let Some(e) = failure {
        return Err(e.into());
    }
    let mut outputs = Outputs::new();
    if !o.quiet {
        let mut text = webtune_report::fs::render_fs_sweep_text(&levels);
        for r in &levels {
            if let Some(server) = &r.server {
                text.push_str(&format!("\n-c {}: ", r.spec.workers));
                text.push_str(&webtune_report::fs_device::device_summary(
                    server,
                    r.transactions,
                ));
            }
        }
        outputs.stdout(&text);
    }
    crate::fs_runs::sweep_files(&mut outputs, o, &levels)?;
    Ok(outputs.exit_code(own_status(&levels)))
}
