//! deploy/ as the engines run it (issue 37): the one entrypoint turns each engine's index
//! (Kubernetes, a Slurm array 0- or 1-based, an srun step, by hand) into `--shard I/N`
//! with the run's id, and refuses what would not run together; and on a private Slurm
//! cluster (munged, slurmctld and slurmd from Debian, in a directory of the test's own),
//! deploy/slurm's submit.sh runs three shards as one srun step and as an array against a
//! lab nginx, their merges add up exactly, and an array let through one task at a time
//! is refused by its merge job.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::child::run_bounded;
use support::lab::WEBTUNE;
use support::slurm::{Cluster, JobEnd};
use webtune_model::{LatencyHistogram, RunResult};

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

/// The entrypoint in `mode` with only `env` set (and PATH), webtune replaced by echo:
/// (status, the webtune command line it would run, stderr).
fn entrypoint(mode: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new("sh");
    cmd.arg(deploy().join("entrypoint.sh"))
        .arg(mode)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("WEBTUNE", "echo")
        .env("RESULTS_DIR", "/results");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (code, out, err) = run_bounded(&mut cmd, Duration::from_secs(30));
    (code, out.trim().to_string(), err)
}

const START: (&str, &str) = ("START_AT", "2026-12-01T10:00:00Z");
const URL: (&str, &str) = ("TARGET_URL", "http://target:8080/");

#[test]
fn the_entrypoint_turns_each_engines_index_into_a_shard_and_a_run() {
    let bench = |rest: &str| {
        format!("bench http://target:8080/ -d 60s {rest} --quiet --json /results/shard-")
    };
    let args = ("BENCH_ARGS", "-d 60s");
    for (env, expected) in [
        // Kubernetes: 0-based, the Job's uid as the run id (the manifest's RUN_ID).
        (
            vec![
                ("JOB_COMPLETION_INDEX", "0"),
                ("SHARDS", "8"),
                ("RUN_ID", "0b9f-77"),
            ],
            "--shard 1/8 --start-at 2026-12-01T10:00:00Z --run-id 0b9f-77",
        ),
        // By hand (pdsh's %n): no run id given, webtune derives it from START_AT.
        (
            vec![("SHARD_INDEX", "3"), ("SHARDS", "4")],
            "--shard 4/4 --start-at 2026-12-01T10:00:00Z",
        ),
        // One srun step: every task a shard, the job's id the run's.
        (
            vec![
                ("SLURM_JOB_ID", "17"),
                ("SLURM_STEP_ID", "0"),
                ("SLURM_PROCID", "2"),
                ("SLURM_NTASKS", "3"),
                ("SLURM_STEP_NUM_TASKS", "3"),
            ],
            "--shard 3/3 --start-at 2026-12-01T10:00:00Z --run-id slurm-17",
        ),
    ] {
        let mut all = env.clone();
        all.extend([START, URL, args]);
        let (code, out, err) = entrypoint("shard", &all);
        assert_eq!(code, 0, "{env:?}: {err}");
        assert!(out.starts_with(&bench(expected)), "{env:?}: {out}");
    }
    // Arrays count from their first index: --array=1-3 is shards 1..3, not 2..4 (issue 37:
    // it once gave --shard 4/3); the array's job id is the run's, whatever the task's.
    for (min, max, id, shard) in [("1", "3", "3", "3/3"), ("0", "2", "0", "1/3")] {
        let (code, out, err) = entrypoint(
            "shard",
            &[
                ("SLURM_JOB_ID", "21"),
                ("SLURM_ARRAY_JOB_ID", "19"),
                ("SLURM_ARRAY_TASK_ID", id),
                ("SLURM_ARRAY_TASK_MIN", min),
                ("SLURM_ARRAY_TASK_MAX", max),
                ("SLURM_ARRAY_TASK_STEP", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
                START,
                URL,
            ],
        );
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains(&format!("--shard {shard} ")) && out.contains("--run-id slurm-19 "),
            "{out}"
        );
    }
}

/// START_AT as job.yaml ships it: a placeholder the user must replace.
fn placeholder_in_job_yaml() -> String {
    let text = std::fs::read_to_string(deploy().join("kubernetes/job.yaml")).unwrap();
    let mut lines = text.lines();
    lines
        .find(|l| l.trim() == "- name: START_AT")
        .expect("START_AT in job.yaml");
    let value = lines.next().expect("its value").trim();
    value
        .strip_prefix("value:")
        .expect("a plain value")
        .trim()
        .trim_matches('"')
        .to_string()
}

#[test]
fn the_entrypoint_refuses_shards_that_would_not_run_together() {
    let placeholder = placeholder_in_job_yaml();
    let k8s = |start: &str| {
        entrypoint(
            "shard",
            &[
                ("JOB_COMPLETION_INDEX", "0"),
                ("SHARDS", "8"),
                ("START_AT", start),
                URL,
            ],
        )
    };
    // Left as shipped, the Job once waited three days for 2026-12-01; now it fails at once.
    for (start, words) in [
        (
            placeholder.as_str(),
            "set START_AT to one start time for every shard",
        ),
        ("", "set START_AT"),
        ("+10s", "counts from each shard's own launch"),
    ] {
        let (code, out, err) = k8s(start);
        assert_eq!(code, 2, "{start:?}: {out}");
        assert!(out.is_empty(), "nothing run: {out}");
        assert!(err.contains(words), "{words:?} not in {err}");
    }
    let array = |ids: (&str, &str, &str, &str), shards: Option<&str>| {
        let (id, min, max, count) = ids;
        let mut env = vec![
            ("SLURM_JOB_ID", "5"),
            ("SLURM_ARRAY_JOB_ID", "5"),
            ("SLURM_ARRAY_TASK_ID", id),
            ("SLURM_ARRAY_TASK_MIN", min),
            ("SLURM_ARRAY_TASK_MAX", max),
            ("SLURM_ARRAY_TASK_STEP", "1"),
            ("SLURM_ARRAY_TASK_COUNT", count),
            START,
            URL,
        ];
        env.extend(shards.map(|s| ("SHARDS", s)));
        entrypoint("shard", &env)
    };
    for (case, (code, out, err), words) in [
        (
            "a list, not a range",
            array(("4", "0", "4", "3"), None),
            "the array must be a range",
        ),
        (
            "SHARDS against the array",
            array(("1", "0", "2", "3"), Some("4")),
            "SHARDS=4, but Slurm runs the array's 3 tasks",
        ),
        (
            "a batch script without srun",
            entrypoint(
                "shard",
                &[("SLURM_JOB_ID", "5"), ("SLURM_PROCID", "0"), START, URL],
            ),
            "run the shards as one step (srun",
        ),
        (
            "no index at all",
            entrypoint("shard", &[("SHARDS", "2"), START, URL]),
            "set SHARD_INDEX",
        ),
        (
            "an index past the count",
            entrypoint(
                "shard",
                &[("SHARD_INDEX", "2"), ("SHARDS", "2"), START, URL],
            ),
            "is not below SHARDS=2",
        ),
        (
            "merge with no results",
            entrypoint("merge", &[("RESULTS_DIR", "/nonexistent/webtune")]),
            "no shard results",
        ),
    ] {
        assert_eq!(code, 2, "{case}: {out}");
        assert!(out.is_empty(), "{case}: nothing run: {out}");
        assert!(err.contains(words), "{case}: {words:?} not in {err}");
    }
}

fn read(path: &Path) -> RunResult {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    RunResult::from_json(&text).unwrap()
}

/// submit.sh's job ids: (shards, merge).
fn job_ids(stdout: &str) -> (String, String) {
    // "webtune: shards: job 12 (step); merge: job 13 after it; results in DIR"
    let ids: Vec<&str> = stdout
        .split("job ")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next())
        .collect();
    assert_eq!(ids.len(), 2, "{stdout}");
    (ids[0].to_string(), ids[1].to_string())
}

/// The three shards' results in `dir`, and their merge: the totals and every histogram
/// bucket of the merge are the shards' sums, all shards are of run slurm-`job`, and they
/// started together.
fn merged_exactly(dir: &Path, job: &str) -> u64 {
    let shards: Vec<RunResult> = (1..=3)
        .map(|i| read(&dir.join(format!("shard-{i}.json"))))
        .collect();
    let merged = read(&dir.join("all.json"));
    let run_id = format!("slurm-{job}");
    for s in &shards {
        assert_eq!(
            s.start.as_ref().unwrap().run_id.as_deref(),
            Some(run_id.as_str())
        );
        assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    }
    assert_eq!(
        merged.responses,
        shards.iter().map(|s| s.responses).sum::<u64>()
    );
    assert_eq!(merged.ok, shards.iter().map(|s| s.ok).sum::<u64>());
    assert_eq!(
        merged.connections_opened,
        shards.iter().map(|s| s.connections_opened).sum::<u64>()
    );
    let mut status: BTreeMap<u16, u64> = BTreeMap::new();
    let mut total = LatencyHistogram::new();
    let mut first_byte = LatencyHistogram::new();
    for s in &shards {
        for (code, n) in &s.status {
            *status.entry(*code).or_default() += n;
        }
        total.merge(&s.histograms.total);
        first_byte.merge(&s.histograms.first_byte);
    }
    assert_eq!(merged.status, status);
    assert_eq!(merged.histograms.total, total, "every bucket");
    assert_eq!(merged.histograms.first_byte, first_byte);
    assert_eq!(merged.latency.total, total.percentiles());
    let set = merged.sharding.as_ref().unwrap();
    assert_eq!(set.shards.len(), 3);
    assert_eq!(set.run_id.as_deref(), Some(run_id.as_str()));
    assert!(set.start_skew_ms <= set.start_skew_limit_ms, "{set:?}");
    // Whether a shard's generator was starved depends on the machine's load, not on the
    // merge: the merge is client-limited exactly when a shard was (the skew is within its
    // limit, above), and names each such shard with its reason.
    assert_eq!(
        merged.validity.client_limited,
        shards.iter().any(|s| s.validity.client_limited),
        "{:?}",
        merged.validity
    );
    for s in &shards {
        for reason in &s.validity.reasons {
            let named = format!(": {reason}");
            assert!(
                merged
                    .validity
                    .reasons
                    .iter()
                    .any(|r| r.starts_with("shard ") && r.ends_with(&named)),
                "{reason:?} missing from {:?}",
                merged.validity.reasons
            );
        }
    }
    assert!(merged.responses > 0);
    merged.responses
}

#[test]
fn slurm_runs_shards_as_one_step_and_as_an_array_and_refuses_late_ones() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    if !Path::new("/usr/sbin/nginx").exists() {
        return support::opt_out::opt_out("nginx", "/usr/sbin/nginx is not installed");
    }
    let stack = webtune_lab::StackKind::Nginx;
    let settings = webtune_lab::settings_for(stack, &[]).expect("defaults");
    let nginx = webtune_lab::RunningStack::start(stack, &settings, Default::default())
        .expect("nginx starts");
    let url = format!("{}/empty.gif", nginx.base_url());
    let runs = cluster.dir.join("runs");
    // All three at once: each shard waits for its run's start, a few seconds ahead (the
    // array's tasks must all be running by then), and loads for 2 s.
    let submit = |name: &str, form: &[&str]| {
        let (code, out, err) = cluster.run(
            cluster
                .command(deploy().join("slurm/submit.sh"))
                .args(form)
                .args(["--time=5", "--cpus-per-task=1", "--overcommit"])
                .current_dir(&runs)
                .env("TARGET_URL", &url)
                .env("BENCH_ARGS", "-c 6 -d 2s -t 1")
                .env("START_LEAD", "8")
                .env("RESULTS_DIR", runs.join(name))
                .env("WEBTUNE", WEBTUNE),
        );
        assert_eq!(code, 0, "submit.sh {form:?}: {out}{err}");
        job_ids(&out)
    };
    let step = submit("step", &["3"]);
    let array = submit("array", &["--array", "3"]);
    // Let through one at a time (%1), the array's tasks start 2 s and 4 s late.
    let late = submit("late", &["--array", "3", "--array=0-2%1"]);

    let wait = |job: &str| {
        cluster
            .wait_job(job, Duration::from_secs(90))
            .unwrap_or_else(|| panic!("job {job} did not end:\n{}", cluster.logs()))
    };
    let ok = JobEnd {
        state: "COMPLETED".into(),
        exit_code: "0:0".into(),
    };
    let output = |name: &str, prefix: &str| {
        std::fs::read_dir(runs.join(name))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (name, (shards_job, merge_job)) in [("step", &step), ("array", &array)] {
        let end = wait(merge_job);
        assert_eq!(
            end,
            ok,
            "{name}: shards: {}\nmerge: {}\n{}",
            output(name, "slurm-shard"),
            output(name, "slurm-merge"),
            cluster.logs()
        );
        let responses = merged_exactly(&runs.join(name), shards_job);
        let text = output(name, "slurm-merge");
        assert!(
            text.contains(&format!(
                "Shards: 3 merged, run slurm-{shards_job}, start skew"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!("responses     {responses} ")),
            "{text}"
        );
    }

    // The throttled array: every shard ran and succeeded, so its merge ran, and refused.
    let end = wait(&late.1);
    assert_eq!(
        end,
        JobEnd {
            state: "FAILED".into(),
            exit_code: "2:0".into()
        },
        "{}",
        output("late", "slurm-")
    );
    let refusal = output("late", "slurm-merge");
    assert!(
        refusal.contains("the shards did not run together: "),
        "{refusal}"
    );
    assert!(
        refusal.contains("shard-3.json (shard 3/3) started "),
        "{refusal}"
    );
    assert!(
        refusal.contains("shard-2.json (shard 2/3) started "),
        "{refusal}"
    );
    assert!(!runs.join("late/all.json").exists());
    nginx.stop().expect("nginx stops");
}
