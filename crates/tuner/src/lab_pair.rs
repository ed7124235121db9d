//! Two lab stacks of one template, both running, compared by the interleaved protocol
//! (`interleaved`): `lab compare`'s and `tune --protocol interleaved`'s proof. Starts arm A,
//! checks from its resident memory that a second stack fits, starts B, runs the protocol
//! (restarting both between starts), and stops both, whatever happened.

use crate::interleaved::{self, ArmLoad, Outcome, Restarted};
use webtune_engine::{RunControl, Workload};
use webtune_lab::{RunningStack, Settings as StackSettings, StackKind, StartOptions};
use webtune_model::RunSpec;
use webtune_tune::interleave::Settings;

/// What `compare` ran, and the sentence of the memory check.
pub struct PairOutcome {
    pub outcome: Outcome,
    pub memory: String,
}

fn start(
    kind: StackKind,
    settings: &StackSettings,
    control: &RunControl,
) -> Result<RunningStack, String> {
    let options = StartOptions {
        interrupt: Some(control.clone()),
        ..StartOptions::default()
    };
    RunningStack::start(kind, settings, options).map_err(|e| e.to_string())
}

/// The load spec on a started stack: `template` (its URL a path) pointed at it, with the
/// lab's certificate for a TLS stack.
pub fn arm_spec(template: &RunSpec, running: &RunningStack) -> RunSpec {
    let mut spec = template.clone();
    spec.url = format!("{}{}", running.base_url(), template.url);
    if running.stack().is_tls() && !spec.tls.insecure && spec.tls.cacert.is_none() {
        spec.tls.cacert = running.certificate().map(|p| p.display().to_string());
    }
    spec
}

/// Compare stacks `kind` with settings `sets[0]` (A) and `sets[1]` (B) under the load
/// `template` (its URL the path to load). `say` gets the start, memory and progress lines.
pub fn compare(
    kind: StackKind,
    sets: &[StackSettings; 2],
    template: &RunSpec,
    workload: &Workload,
    settings: Settings,
    control: &RunControl,
    say: &mut dyn FnMut(&str),
) -> Result<PairOutcome, String> {
    compare_with(
        &mut |arm| start(kind, &sets[arm], control),
        template,
        workload,
        settings,
        control,
        say,
    )
}

/// As `compare`, each arm started by `start(arm)` (0 is A, 1 is B): a lab stack, or a
/// user's own config on a private copy (`advise --verify`).
pub fn compare_with(
    start: &mut dyn FnMut(usize) -> Result<RunningStack, String>,
    template: &RunSpec,
    workload: &Workload,
    settings: Settings,
    control: &RunControl,
    say: &mut dyn FnMut(&str),
) -> Result<PairOutcome, String> {
    let a = start(0)?;
    say(&format!("A ready at {}", a.base_url()));
    let memory = interleaved::fits_twice(interleaved::rss_kib(&a.processes()))?;
    say(&memory);
    let b = start(1)?;
    say(&format!("B ready at {}", b.base_url()));
    let mut running = [Some(a), Some(b)];
    let arms = [0, 1].map(|i| {
        let r = running[i].as_ref().expect("started");
        ArmLoad {
            spec: arm_spec(template, r),
            workload: workload.clone(),
            server_pids: r.processes(),
        }
    });
    let outcome = {
        let mut restart = |_start: usize| -> Result<[Restarted; 2], String> {
            let mut out = Vec::new();
            for (i, slot) in running.iter_mut().enumerate() {
                if let Some(old) = slot.take() {
                    old.stop().map_err(|e| e.to_string())?;
                }
                let fresh = start(i)?;
                out.push(Restarted {
                    url: arm_spec(template, &fresh).url,
                    server_pids: fresh.processes(),
                });
                *slot = Some(fresh);
            }
            let [a, b]: [Restarted; 2] = out.try_into().map_err(|_| "two arms".to_string())?;
            Ok([a, b])
        };
        interleaved::run(arms, settings, control, &mut restart, say)
    };
    let mut stopped = Ok(());
    for r in running.into_iter().flatten() {
        if let Err(e) = r.stop() {
            stopped = Err(format!("a stack did not stop cleanly: {e}"));
        }
    }
    let outcome = outcome?;
    stopped?;
    Ok(PairOutcome { outcome, memory })
}
