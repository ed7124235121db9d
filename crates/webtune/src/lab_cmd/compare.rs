//! `webtune lab compare STACK --a NAME=VALUE… --b NAME=VALUE… [-- BENCH FLAGS]`: two private
//! stacks from the same template, both running at once, measured by the decisive protocol
//! (`compare_live`, `webtune_tuner::interleaved`); restarted between `--starts`; the memory
//! of two stacks checked from the first one's before the second starts.

use super::{default_path, load_path, Served};
use crate::compare_live::{bench_args_with_path, measure_and_report, ProtocolArgs};
use anyhow::{anyhow, bail};
use webtune_lab::{settings_for, RunningStack, Settings, StackKind, StartOptions};
use webtune_model::RunSpec;
use webtune_tuner::interleaved::{self, ArmLoad, Restarted};

#[derive(clap::Args)]
pub struct CompareArgs {
    /// A stack from `webtune lab stacks` (its built-in site).
    pub stack: String,
    /// Arm A's settings, NAME=VALUE (several after one --a, or --a repeated); none: the
    /// stack's defaults.
    #[arg(long = "a", num_args = 0.., value_name = "NAME=VALUE")]
    pub a: Vec<String>,
    /// Arm B's settings, NAME=VALUE.
    #[arg(long = "b", num_args = 0.., value_name = "NAME=VALUE")]
    pub b: Vec<String>,
    /// Starts of both stacks: the budget is split over them, both are restarted between
    /// them, and the spread between starts goes into the interval.
    #[arg(long = "starts", default_value_t = 2, value_name = "N")]
    pub starts: usize,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
}

fn start(kind: StackKind, settings: &Settings) -> anyhow::Result<RunningStack> {
    let options = StartOptions {
        interrupt: Some(crate::signals::stop_token()),
        ..StartOptions::default()
    };
    Ok(RunningStack::start(kind, settings, options)?)
}

/// The arm's load spec on a started stack: `base` spec pointed at it (with its certificate
/// for a TLS stack).
fn arm_spec(base: &RunSpec, running: &RunningStack, path: &str) -> RunSpec {
    let mut spec = base.clone();
    spec.url = format!("{}{path}", running.base_url());
    if running.stack().is_tls() && !spec.tls.insecure && spec.tls.cacert.is_none() {
        spec.tls.cacert = running.certificate().map(|p| p.display().to_string());
    }
    spec
}

fn name(stack: &str, set: &[String]) -> String {
    if set.is_empty() {
        format!("{stack} (defaults)")
    } else {
        format!("{stack} {}", set.join(" "))
    }
}

pub fn run(args: &CompareArgs) -> anyhow::Result<i32> {
    // Everything typed is checked before anything starts.
    let kind = StackKind::from_name(&args.stack)?;
    if kind == StackKind::External || kind == StackKind::Postfix {
        bail!(
            "lab compare starts two stacks of the lab's web templates; {} is not one",
            kind.name()
        );
    }
    let bench = bench_args_with_path(&args.protocol.bench)?;
    let workload = bench.request.workload()?;
    let path = load_path(
        bench.url.as_deref(),
        default_path(Served::Stack(kind), &workload),
    )?;
    let template = bench.to_spec(&format!("http://127.0.0.1:1{path}"))?;
    let settings = args.protocol.settings(&template, args.starts)?;
    let sets = [
        settings_for(kind, &args.a).map_err(|e| anyhow!("--a: {e}"))?,
        settings_for(kind, &args.b).map_err(|e| anyhow!("--b: {e}"))?,
    ];
    for s in &sets {
        webtune_lab::host::check_privilege(s)?;
    }
    crate::output::check_all([("--json", args.protocol.json.as_deref())])?;
    let names = [name(&args.stack, &args.a), name(&args.stack, &args.b)];

    let a = start(kind, &sets[0])?;
    eprintln!("webtune: lab compare: A ready at {}", a.base_url());
    let memory = interleaved::fits_twice(interleaved::rss_kib(&a.processes()))
        .map_err(|e| anyhow!("lab compare: {e}"))?;
    eprintln!("webtune: lab compare: {memory}");
    let b = start(kind, &sets[1])?;
    eprintln!("webtune: lab compare: B ready at {}", b.base_url());
    let mut running = [Some(a), Some(b)];
    let arms = [0, 1].map(|i| {
        let r = running[i].as_ref().expect("started");
        ArmLoad {
            spec: arm_spec(&template, r, &path),
            workload: workload.clone(),
            server_pids: r.processes(),
        }
    });
    let notes = vec![
        memory,
        "each block is a short run of its own: connections to the arm open in its discarded \
         first part, and the idle arm holds none; each start begins with one uncounted block \
         to each arm"
            .to_string(),
    ];
    let mut restart = |_start: usize| -> Result<[Restarted; 2], String> {
        let mut out = Vec::new();
        for (i, slot) in running.iter_mut().enumerate() {
            if let Some(old) = slot.take() {
                old.stop().map_err(|e| e.to_string())?;
            }
            let fresh = start(kind, &sets[i]).map_err(|e| format!("{e:#}"))?;
            out.push(Restarted {
                url: arm_spec(&template, &fresh, &path).url,
                server_pids: fresh.processes(),
            });
            *slot = Some(fresh);
        }
        let [a, b]: [Restarted; 2] = out.try_into().map_err(|_| "two arms".to_string())?;
        Ok([a, b])
    };
    let code = measure_and_report(
        (&names[0], &names[1]),
        arms,
        settings,
        args.protocol.json.as_deref(),
        &mut restart,
        notes,
    );
    for r in running.into_iter().flatten() {
        if let Err(e) = r.stop() {
            crate::output::warn(&format!("lab compare: a stack did not stop cleanly: {e}"));
        }
    }
    code
}
