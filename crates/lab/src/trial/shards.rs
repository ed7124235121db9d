//! A trial's load as several generator processes, when its connections need more open
//! files than one process may open (docs/lab.md, "Many connections"): the caller's own
//! executable is started N times as `lab shard-worker SPEC OUT` (`WORKER_COMMAND`, a hidden
//! command of the binary that calls `worker`), each running shard i/N of the spec
//! (`RunSpec::shard`) from a common start, and their results are merged with
//! `RunResult::merge_shards`. The workers are started from the thread that is inside the
//! stack's namespace and on the client CPUs, so they inherit both; they die with their
//! parent (PR_SET_PDEATHSIG) and name the stack's private directory on their command
//! line, so `lab clean` finds any that outlive a SIGKILL.

use super::{RunLoad, Trial};
use crate::LabError;
use std::path::{Path, PathBuf};
use std::time::Duration;
use webtune_engine::Workload;
use webtune_model::shard::Shard;
use webtune_model::{RunResult, RunSpec, StopToken};

/// The words after the executable that start one shard worker (then SPEC and OUT).
pub const WORKER_COMMAND: [&str; 2] = ["lab", "shard-worker"];

/// Files a process keeps besides its connections (the engine's own estimate: two per
/// thread and 64 more), plus a margin for the worker's own files.
fn overhead(threads: u32) -> u64 {
    u64::from(threads) * 2 + 64 + 64
}

/// The hard RLIMIT_NOFILE of this process (inherited by the workers), if it can be read.
fn hard_file_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0).then_some(lim.rlim_max)
}

/// How many processes `spec` needs: 1 when one process may open its connections, else
/// the fewest shards each of which fits under the hard limit.
pub fn processes_needed(spec: &RunSpec) -> u32 {
    let Some(hard) = hard_file_limit() else {
        return 1;
    };
    processes_under(spec, hard)
}

fn processes_under(spec: &RunSpec, hard: u64) -> u32 {
    let per = hard.saturating_sub(overhead(spec.threads)).max(1);
    u64::from(spec.connections).div_ceil(per).clamp(1, 256) as u32
}

/// Make `trial` run its load as shard processes when one process may not open its
/// connections: returns the one line that says so (None when one process is enough).
/// A scenario or a request body is refused (they are not passed to shard processes).
pub fn shard_if_needed(trial: &mut Trial) -> Result<Option<String>, LabError> {
    let processes = processes_needed(&trial.load);
    if processes <= 1 {
        return Ok(None);
    }
    if trial.workload.scenario().is_some() || !trial.load.body.is_empty() {
        return Err(LabError::Inconsistent(format!(
            "-c {} needs {processes} generator processes, which take no scenario or request body; use fewer connections or webtune bench --shard",
            trial.load.connections
        )));
    }
    trial.run_load = Some(run_load as RunLoad);
    let hard = hard_file_limit().unwrap_or(0);
    Ok(Some(format!(
        "lab: -c {} needs more open files than one process may open (hard limit {hard}): \
         the generator runs as {processes} shard processes, merged into one result",
        trial.load.connections
    )))
}

/// `Trial::run_load`: the load as shard processes, merged.
pub fn run_load(
    spec: &RunSpec,
    workload: &Workload,
    stop: &StopToken,
    dir: &Path,
) -> Result<RunResult, LabError> {
    let fail = |m: String| LabError::Inconsistent(format!("lab run as shard processes: {m}"));
    if workload.scenario().is_some() || !spec.body.is_empty() {
        return Err(fail(
            "a scenario or a request body is not passed to shard processes; \
             use fewer connections or webtune bench --shard"
                .into(),
        ));
    }
    let count = processes_needed(spec);
    let exe = std::env::current_exe().map_err(|e| fail(format!("own executable: {e}")))?;
    // A common start two seconds ahead: every worker has connected its share by then.
    let start_at = webtune_engine::clock::now_unix_ms() as u64 + 2_000;
    let mut workers = Vec::new();
    for index in 1..=count {
        let mut part = spec.clone();
        part.shard = Some(Shard { index, count });
        part.start_at_unix_ms = Some(start_at);
        let spec_path = dir.join(format!("shard-{index}-of-{count}.spec.json"));
        let out_path = dir.join(format!("shard-{index}-of-{count}.json"));
        let text = serde_json::to_string(&part).map_err(|e| fail(e.to_string()))?;
        std::fs::write(&spec_path, text)
            .map_err(|e| fail(format!("{}: {e}", spec_path.display())))?;
        let child = spawn_worker(&exe, &spec_path, &out_path)
            .map_err(|e| fail(format!("starting shard {index}/{count}: {e}")))?;
        workers.push((index, child, out_path));
    }
    // Wait for all; a stop request (Ctrl-C) is passed on as SIGINT, which ends each
    // worker's run early with what it measured.
    let mut peak_rss_kib = Vec::new();
    let mut failed = Vec::new();
    let mut interrupted = false;
    for (index, pid, _) in &workers {
        match wait_for(*pid, stop, &workers, &mut interrupted) {
            Ok((0, rss)) => peak_rss_kib.push(rss),
            Ok((status, _)) => failed.push(format!("shard {index}/{count} exited with {status}")),
            Err(e) => failed.push(format!("shard {index}/{count}: {e}")),
        }
    }
    if !failed.is_empty() {
        return Err(fail(failed.join("; ")));
    }
    let mut results = Vec::new();
    for (index, _, out_path) in &workers {
        // Our own worker's file, written just now: no cap is needed to read it.
        let text = std::fs::read_to_string(out_path).map_err(|e| {
            fail(format!(
                "shard {index}/{count}'s result: cannot read {}: {e}",
                out_path.display()
            ))
        })?;
        let result: RunResult = serde_json::from_str(&text)
            .map_err(|e| fail(format!("shard {index}/{count}'s result: {e}")))?;
        results.push((format!("shard {index}/{count}"), result));
    }
    let merged = RunResult::merge_shards(results).map_err(|e| fail(e.to_string()))?;
    let mib: Vec<String> = peak_rss_kib
        .iter()
        .map(|k| format!("{:.1}", *k as f64 / 1024.0))
        .collect();
    eprintln!(
        "lab: {count} generator processes, peak RSS {} MiB = {:.1} MiB in all",
        mib.join(" + "),
        peak_rss_kib.iter().sum::<u64>() as f64 / 1024.0
    );
    Ok(merged)
}

fn spawn_worker(exe: &Path, spec: &Path, out: &Path) -> std::io::Result<i32> {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(exe);
    command
        .args(WORKER_COMMAND)
        .arg(spec)
        .arg(out)
        .stdin(std::process::Stdio::null());
    // SAFETY: prctl is async-signal-safe; the closure touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn()?;
    // The pid is waited for with wait4 (for its peak RSS), not through `Child`.
    Ok(child.id() as i32)
}

/// Wait for `pid`: its exit status and peak RSS (KiB). Passes a stop request on to every
/// worker once.
fn wait_for(
    pid: i32,
    stop: &StopToken,
    all: &[(u32, i32, PathBuf)],
    interrupted: &mut bool,
) -> std::io::Result<(i32, u64)> {
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value; wait4 writes into it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 writes the status and usage of our own child `pid`.
        let got = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if got < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if got == pid {
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                128 + libc::WTERMSIG(status)
            };
            return Ok((code, usage.ru_maxrss.max(0) as u64));
        }
        if stop.stop_requested() && !*interrupted {
            *interrupted = true;
            for (_, other, _) in all {
                // SAFETY: kill sends a signal to our own child.
                unsafe { libc::kill(*other, libc::SIGINT) };
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One shard worker (`WORKER_COMMAND SPEC OUT`): run the spec read from `spec` (JSON) with
/// the engine and write its result (JSON) to `out`.
pub fn worker(spec: &Path, out: &Path, stop: &StopToken) -> Result<(), LabError> {
    let text =
        std::fs::read_to_string(spec).map_err(|e| LabError::io(spec.display().to_string(), e))?;
    let spec: RunSpec = serde_json::from_str(&text)
        .map_err(|e| LabError::Inconsistent(format!("{text:.80}: {e}")))?;
    let result = webtune_engine::run(&spec, &Workload::request(), stop, &mut |_| {})?;
    std::fs::write(out, result.to_json_pretty() + "\n")
        .map_err(|e| LabError::io(out.display().to_string(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_process_until_its_files_run_out_then_the_fewest_that_fit() {
        let spec = |connections| RunSpec {
            connections,
            threads: 2,
            ..RunSpec::default()
        };
        // 1024 files, 132 of them the process's own: 892 connections per process.
        assert_eq!(processes_under(&spec(100), 1024), 1);
        assert_eq!(processes_under(&spec(892), 1024), 1);
        assert_eq!(processes_under(&spec(893), 1024), 2);
        assert_eq!(processes_under(&spec(10_000), 1024), 12);
        // A limit below the overhead still gives a count, never a division by zero.
        assert_eq!(processes_under(&spec(3), 10), 3);
        assert_eq!(processes_under(&spec(1_000_000), 10), 256);
    }

    #[test]
    fn a_trial_that_fits_one_process_is_left_as_it_is() {
        let mut trial = Trial::new(
            super::super::Target::External {
                base_url: "http://127.0.0.1:1".into(),
                processes: Vec::new(),
                pids: Vec::new(),
            },
            RunSpec::default(),
        );
        assert_eq!(shard_if_needed(&mut trial).unwrap(), None);
        assert!(trial.run_load.is_none());
    }
}
