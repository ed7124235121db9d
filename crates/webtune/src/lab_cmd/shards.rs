//! `lab run` with more connections than one process may open: the generator as N shard
//! processes of this binary (`webtune lab shard-worker`, hidden), each running shard i/N of
//! the spec (`RunSpec::shard`) from a common start, merged with `RunResult::merge_shards`
//! (docs/lab.md, "Many connections"). The workers are started from the thread that is
//! inside the stack's namespace and on the client CPUs, so they inherit both; they die
//! with webtune (PR_SET_PDEATHSIG) and name the stack's private directory, so `lab clean`
//! finds any that outlive a SIGKILL.

use anyhow::Context;
use std::path::{Path, PathBuf};
use std::time::Duration;
use webtune_engine::Workload;
use webtune_lab::LabError;
use webtune_model::shard::Shard;
use webtune_model::{RunResult, RunSpec, StopToken};

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
    let per = hard.saturating_sub(overhead(spec.threads)).max(1);
    u64::from(spec.connections).div_ceil(per).clamp(1, 256) as u32
}

/// The one line `lab run` prints when it shards its generator.
pub fn notice(spec: &RunSpec, count: u32) -> String {
    let hard = hard_file_limit().unwrap_or(0);
    format!(
        "lab: -c {} needs more open files than one process may open (hard limit {hard}): \
         the generator runs as {count} shard processes, merged into one result",
        spec.connections
    )
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
        let text = crate::inputs::read_saved_text(out_path)
            .map_err(|e| fail(format!("shard {index}/{count}'s result: {e:#}")))?;
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
        .args(["lab", "shard-worker"])
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

/// `webtune lab shard-worker SPEC OUT`: run one shard's spec (JSON) with the engine and
/// write its result (JSON). Exit 0 when a result was written.
pub fn worker(spec: &Path, out: &Path) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(spec).with_context(|| format!("{}", spec.display()))?;
    let spec: RunSpec = serde_json::from_str(&text).with_context(|| format!("{text:.80}"))?;
    let stop = crate::signals::stop_token();
    let result = webtune_engine::run(&spec, &Workload::request(), &stop, &mut |_| {})?;
    std::fs::write(out, result.to_json_pretty() + "\n")
        .with_context(|| format!("{}", out.display()))?;
    Ok(crate::exit::SUCCESS)
}
