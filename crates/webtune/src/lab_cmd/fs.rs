//! `webtune lab run fs` and `lab sweep fs`: `webtune fs`'s flags after `--` into a
//! `lab::filesystem::FsRequest` (which makes the private file system, runs the workload on it and
//! leaves nothing behind), then the fs report and the device's summary.

use crate::flags::fs::spec_of;
use crate::fs_runs::own_status;
use crate::output::{self, Outputs};
use anyhow::bail;
use webtune_cli::flags::fs::{parse_fs, FsArgs};
use webtune_lab::filesystem::FsRequest;
use webtune_model::fs::FsResult;

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

/// The workload's flags after `--`, their output files checked.
fn parse(words: &[String]) -> anyhow::Result<FsArgs> {
    let args = parse_fs(words)?;
    let o = &args.output;
    output::check_all([
        ("--json", o.json.as_deref()),
        ("--html", o.html.as_deref()),
        ("--csv", o.csv.as_deref()),
    ])?;
    Ok(args)
}

fn say_reaped(line: &str) {
    eprintln!("lab: reaped what a killed webtune left: {line}");
}

/// `lab run fs --set … -- FS FLAGS`.
pub fn run(request: &FsRequest, words: &[String]) -> anyhow::Result<i32> {
    let args = parse(words)?;
    if !args.sweep_workers.is_empty() {
        bail!("--sweep-workers: use `webtune lab sweep fs -c 1,2,4 …` for worker levels");
    }
    let spec = spec_of(&args)?;
    let result = request.run(&spec, &crate::signals::stop_token(), &mut say_reaped)?;
    let o = &args.output;
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
pub fn sweep(request: &FsRequest, workers: &[u32], words: &[String]) -> anyhow::Result<i32> {
    let args = parse(words)?;
    let specs = webtune_fs::check::worker_levels(&spec_of(&args)?, workers)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let levels = request.sweep(&specs, &crate::signals::stop_token(), &mut say_reaped)?;
    let o = &args.output;
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
