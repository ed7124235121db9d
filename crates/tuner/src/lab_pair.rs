//! Two lab targets, both running, compared by the interleaved protocol (`interleaved`):
//! `lab compare`'s and `tune --protocol interleaved`'s proof, and `advise --verify`'s A/B.
//! An arm is any target the lab starts (`webtune_lab::trial::Target`): a stack, the forum
//! with its private database, or a private copy of the user's config. Starts arm A, checks
//! from its resident memory (the forum's database included) that a second one fits, starts
//! B, runs the protocol (restarting both between starts), and stops both, whatever
//! happened.

use crate::interleaved::{self, ArmLoad, Outcome, Restarted};
use webtune_engine::{RunControl, Workload};
use webtune_lab::trial::{self, Started, Target};
use webtune_lab::{Settings as StackSettings, StackKind};
use webtune_model::RunSpec;
use webtune_search::interleave::Settings;

/// What `compare` ran, and the sentence of the memory check.
pub struct PairOutcome {
    pub outcome: Outcome,
    pub memory: String,
}

/// A started arm: its base URL and its servers.
pub struct Arm {
    pub base_url: String,
    pub started: Started,
}

impl Arm {
    /// Start `target` as an arm (an external server cannot be one: it is not restarted).
    pub fn start(target: &Target, control: &RunControl) -> Result<Arm, String> {
        if matches!(target, Target::External { .. }) {
            return Err(
                "a decisive pair starts both arms; an external server is not started".into(),
            );
        }
        let (base_url, started) =
            trial::start_target(target, control).map_err(|e| e.to_string())?;
        Ok(Arm { base_url, started })
    }

    /// A stack already started (a private copy of the user's config).
    pub fn from_stack(running: webtune_lab::RunningStack) -> Arm {
        Arm {
            base_url: running.base_url(),
            started: Started::Stack(Box::new(running)),
        }
    }
}

/// The load spec on a started arm: `template` (its URL a path) pointed at it, with the
/// lab's certificate for a TLS stack.
pub fn arm_spec(template: &RunSpec, arm: &Arm) -> RunSpec {
    let mut spec = template.clone();
    spec.url = format!("{}{}", arm.base_url, template.url);
    if let Some(stack) = arm.started.stack() {
        if stack.stack().is_tls() && !spec.tls.insecure && spec.tls.cacert.is_none() {
            spec.tls.cacert = stack.certificate().map(|p| p.display().to_string());
        }
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
    let targets = sets
        .clone()
        .map(|settings| Target::Stack { kind, settings });
    compare_targets(&targets, template, workload, settings, control, say)
}

/// Compare two targets (A, B) under the load `template` (its URL the path to load; none,
/// and no scenario, gives the forum its page mix).
pub fn compare_targets(
    targets: &[Target; 2],
    template: &RunSpec,
    workload: &Workload,
    settings: Settings,
    control: &RunControl,
    say: &mut dyn FnMut(&str),
) -> Result<PairOutcome, String> {
    let workload =
        trial::target_workload(&targets[0], &template.url, workload).map_err(|e| e.to_string())?;
    compare_with(
        &|arm| Arm::start(&targets[arm], control),
        template,
        &workload,
        settings,
        control,
        say,
    )
}

/// As `compare_targets`, each arm started by `start(arm)` (0 is A, 1 is B). Between starts
/// both arms are stopped and started again side by side (two threads): a restart costs the
/// slower arm's stop and start, not both arms' one after the other — time the budget then
/// spends on pairs (six restarts in a default proof).
pub fn compare_with(
    start: &(dyn Fn(usize) -> Result<Arm, String> + Sync),
    template: &RunSpec,
    workload: &Workload,
    settings: Settings,
    control: &RunControl,
    say: &mut dyn FnMut(&str),
) -> Result<PairOutcome, String> {
    let a = start(0)?;
    say(&format!("A ready at {}", a.base_url));
    let memory = match interleaved::fits_twice(interleaved::rss_kib(&a.started.processes())) {
        Ok(memory) => memory,
        Err(e) => {
            let _ = a.started.stop();
            return Err(e);
        }
    };
    say(&memory);
    let b = match start(1) {
        Ok(b) => b,
        Err(e) => {
            let _ = a.started.stop();
            return Err(e);
        }
    };
    say(&format!("B ready at {}", b.base_url));
    let mut running = [Some(a), Some(b)];
    let arms = [0, 1].map(|i| {
        let r = running[i].as_ref().expect("started");
        ArmLoad {
            spec: arm_spec(template, r),
            workload: workload.clone(),
            server_pids: r.started.processes(),
        }
    });
    let outcome = {
        let mut restart = |_start: usize| -> Result<[Restarted; 2], String> {
            let old = [running[0].take(), running[1].take()];
            let fresh = std::thread::scope(|scope| {
                let arms = old.map(|old| {
                    scope.spawn(move || -> Result<(), String> {
                        match old {
                            Some(old) => old.started.stop().map_err(|e| e.to_string()),
                            None => Ok(()),
                        }
                    })
                });
                let stopped =
                    arms.map(|h| h.join().unwrap_or_else(|_| Err("a stop panicked".into())));
                let starts = [0, 1].map(|i| {
                    let start = &start;
                    scope.spawn(move || start(i))
                });
                let started =
                    starts.map(|h| h.join().unwrap_or_else(|_| Err("a start panicked".into())));
                (stopped, started)
            });
            let (stopped, started) = fresh;
            // Whatever started is kept in `running`, so that it is stopped at the end even
            // when the other arm failed.
            let mut first_error = None;
            for (slot, result) in running.iter_mut().zip(started) {
                match result {
                    Ok(arm) => *slot = Some(arm),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            for result in stopped {
                if let Err(e) = result {
                    first_error.get_or_insert(e);
                }
            }
            if let Some(e) = first_error {
                return Err(e);
            }
            let restarted = [0, 1].map(|i| {
                let arm = running[i].as_ref().expect("both arms started");
                Restarted {
                    url: arm_spec(template, arm).url,
                    server_pids: arm.started.processes(),
                }
            });
            Ok(restarted)
        };
        interleaved::run(arms, settings, control, &mut restart, say)
    };
    let mut stopped = Ok(());
    for r in running.into_iter().flatten() {
        if let Err(e) = r.started.stop() {
            stopped = Err(format!("a target did not stop cleanly: {e}"));
        }
    }
    let outcome = outcome?;
    stopped?;
    Ok(PairOutcome { outcome, memory })
}
