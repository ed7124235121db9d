//! `webtune fs`: postmark's small-file workload with the flags a sysadmin expects, mapped
//! onto `webtune_fs::run`, and the pool registered with the lab so that `webtune lab clean`
//! removes it after a SIGKILL (`lab::filesystem::run_registered`, through `fs_runs`).

use crate::flags::fs::spec_of;
use crate::fs_runs::{own_status, run_spec, sweep_files};
use crate::output::{self, Outputs};
use webtune_cli::flags::fs::FsArgs;
use webtune_model::fs::FsSpec;

pub fn run(args: FsArgs) -> anyhow::Result<i32> {
    let o = &args.output;
    output::check_all([
        ("--json", o.json.as_deref()),
        ("--html", o.html.as_deref()),
        ("--csv", o.csv.as_deref()),
    ])?;
    let spec = spec_of(&args)?;
    webtune_fs::check::check(&spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    if !args.sweep_workers.is_empty() {
        return sweep(&args, spec);
    }
    let result = run_spec(&spec)?;
    let mut outputs = Outputs::new();
    if !o.quiet {
        outputs.stdout(&webtune_report::fs::render_fs_text(&result));
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
    Ok(outputs.exit_code(own_status(std::slice::from_ref(&result))))
}

/// `--sweep-workers`: one run per worker count, every spec checked before the first runs.
fn sweep(args: &FsArgs, spec: FsSpec) -> anyhow::Result<i32> {
    let specs = webtune_fs::check::worker_levels(&spec, &args.sweep_workers)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut levels = Vec::new();
    for s in &specs {
        if crate::signals::stop_requested() {
            break;
        }
        levels.push(run_spec(s)?);
    }
    let o = &args.output;
    let mut outputs = Outputs::new();
    if !o.quiet {
        outputs.stdout(&webtune_report::fs::render_fs_sweep_text(&levels));
    }
    sweep_files(&mut outputs, o, &levels)?;
    Ok(outputs.exit_code(own_status(&levels)))
}
