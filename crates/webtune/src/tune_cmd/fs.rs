//! `webtune tune fs`: the lab's file system as the tuned subject. The workload is `webtune
//! fs`'s flags after `--`; each trial makes a file system with the configuration, runs it
//! and removes it (`tuner::driver::measure_fs`). The objective is transactions/s
//! (`--maximize throughput`) or a latency; latencies and `--slo 'p99<=…'` are the fsync's
//! when the workload syncs, else the transaction's.

use super::{Prepared, TuneArgs};
use crate::bench_cmd::available_cores;
use anyhow::bail;
use webtune_lab::trial::Level;
use webtune_tune::objective::{Objective, Slo};
use webtune_tune::space::Space;
use webtune_tune::study::StudySettings;
use webtune_tuner::driver::Subject;
use webtune_tuner::job::Job;
use webtune_tuner::rules;

pub(super) fn prepare(
    args: &TuneArgs,
    objective: Objective,
    slos: Vec<Slo>,
    capacity: bool,
) -> anyhow::Result<Prepared> {
    if capacity {
        bail!("--maximize capacity is for web stacks; tune fs maximizes throughput (transactions/s) or minimizes a latency");
    }
    if !args.levels.is_empty() {
        bail!("--levels is for web stacks; give tune fs its workload after --, e.g. -- --files 1000 --transactions 20000 -c 1");
    }
    if args.apply.is_some() || args.restore.is_some() || args.baseline.is_some() {
        bail!("--apply, --restore and --baseline are for tune external");
    }
    let fs_args = crate::lab_cmd::fs::parse_fs(&args.bench)?;
    let spec = crate::fs_cmd::spec_of(&fs_args)?;
    webtune_fs::check::check(&spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    let fixed: Vec<(String, String)> = args
        .set
        .iter()
        .map(|a| webtune_lab::parse_assignment(a))
        .collect::<Result<_, _>>()?;
    // The fixed values alone must already be a valid file system.
    webtune_lab::fsys::settings_for(&args.set, args.host_sysctl)?;
    let subject = Subject::Fs {
        fixed: fixed.clone(),
        spec: Box::new(spec.clone()),
        host_sysctl: args.host_sysctl,
    };
    let texts = if args.params.is_empty() {
        subject.default_params(available_cores())
    } else {
        args.params.clone()
    };
    let mut space = Space::parse(&texts, &subject.catalogue())?;
    space.inert = subject.inert_rules(&space);
    if space.params.is_empty() {
        bail!("nothing to tune: give --param NAME=LO..HI or NAME=a,b (webtune lab params fs)");
    }
    rules::check_fixed(&fixed, &space)?;
    // The HTTP load spec is unused by fs trials; the journal keeps it as the other tunes'.
    let load = crate::lab_cmd::parse_bench(&[])?.to_spec("/")?;
    Ok(Prepared {
        job: Job {
            subject,
            load,
            workload: webtune_engine::Workload::request(),
            levels: vec![Level::Connections(spec.workers)],
            sample_interval: args.sample_interval,
            space,
            objective,
            slos,
            seeds: Vec::new(),
            settings: StudySettings {
                budget: args.trials(),
                seed: args.search_seed,
                ..StudySettings::default()
            },
            confirm: args.confirm(),
            protocol: webtune_tuner::job::ProofProtocol::Sequential,
            capacity: None,
            time_budget: args.budget,
            advice: None,
        },
    })
}
