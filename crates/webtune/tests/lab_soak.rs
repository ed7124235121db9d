//! The kill-cycle soak of issue 13 with few cycles (bench/soak-kill.sh runs 100): a
//! two-server stack (`lab run nginx-apache`) with an `os.*` parameter, so it runs in a
//! private network namespace; webtune is killed with SIGKILL at a random moment during
//! start, load or stop, then `lab clean` runs, and nothing may be left: no process in the
//! run's namespace, no process naming the lab directory, no stack directory, no registry
//! entry. The kill moments come from a seed printed by the test (WEBTUNE_SOAK_SEED repeats
//! one).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::lab::{namespace_of, privileged, LabDir};

const CYCLES: usize = 4;

/// Live processes (not zombies) in one of these namespaces or whose command line or
/// working directory names the lab directory, as "PID: command line".
fn leftovers(namespaces: &[u64], lab: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .filter(|n| {
            !std::fs::read_to_string(format!("/proc/{n}/stat"))
                .map(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
                .unwrap_or(true)
        })
        .filter_map(|n| {
            let cmd = std::fs::read(format!("/proc/{n}/cmdline"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default();
            // nginx's workers name no directory; their working directory does.
            let cwd = std::fs::read_link(format!("/proc/{n}/cwd"))
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let in_ns = namespace_of(&n).is_some_and(|i| namespaces.contains(&i));
            (in_ns || cmd.contains(lab) || cwd.contains(lab)).then(|| format!("{n}: {cmd}"))
        })
        .collect()
}

/// xorshift64: enough randomness for kill moments without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Where a cycle aims its SIGKILL: milliseconds after spawn, or after "ready".
#[derive(Debug, Clone, Copy)]
enum Aim {
    Start(u64),
    Load(u64),
    Stop(u64),
}

/// Starts the stack, kills webtune at the aimed moment, and says which phase it hit.
fn run_and_kill(lab: &LabDir, aim: Aim) -> (&'static str, Vec<u64>) {
    let mut child: Child = lab
        .command()
        .args(["lab", "run", "nginx-apache", "--set", "os.somaxconn=1024"])
        .args(["--", "-c", "10", "-d", "1s"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("webtune starts");
    let spawned = Instant::now();
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().expect("piped stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut ready: Option<Instant> = None;
    let mut finished = false;
    let deadline = spawned + Duration::from_secs(20);
    loop {
        let target = match (aim, ready) {
            (Aim::Start(ms), _) => Some(spawned + Duration::from_millis(ms)),
            (Aim::Load(ms), Some(r)) => Some(r + Duration::from_millis(ms)),
            (Aim::Stop(ms), Some(r)) => Some(r + Duration::from_millis(1000 + ms)),
            _ => None,
        };
        let now = Instant::now();
        if target.is_some_and(|t| now >= t) || now >= deadline {
            break;
        }
        let wait = target.map_or(Duration::from_millis(50), |t| t - now);
        match rx.recv_timeout(wait) {
            Ok(line) if line.contains(" ready at ") => ready = Some(Instant::now()),
            Ok(line) if line.contains("stopped; no process") => finished = true,
            Ok(_) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let namespaces: Vec<u64> = lab
        .registry()
        .iter()
        .filter_map(|v| v["netns"].as_u64())
        .collect();
    let killed_at = Instant::now();
    let _ = child.kill();
    let _ = child.wait();
    // Lines written before the kill still count for the phase.
    for line in rx.try_iter() {
        if line.contains(" ready at ") && ready.is_none() {
            ready = Some(killed_at);
        }
        finished |= line.contains("stopped; no process");
    }
    let phase = match ready {
        _ if finished => "finished",
        None => "start",
        Some(r) if killed_at - r < Duration::from_millis(1000) => "load",
        Some(_) => "stop",
    };
    (phase, namespaces)
}

#[test]
fn sigkill_at_random_moments_then_lab_clean_leaves_nothing() {
    if !privileged() {
        support::opt_out::opt_out("root", "a network namespace needs CAP_SYS_ADMIN");
        return;
    }
    let seed = std::env::var("WEBTUNE_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    eprintln!("WEBTUNE_SOAK_SEED={seed}");
    let mut rng = Rng(seed);
    let lab = LabDir::new("soak");
    let lab_text = lab.0.to_string_lossy().into_owned();
    let mut phases = Vec::new();
    for cycle in 0..CYCLES {
        // Every phase at least once; the moment within it at random.
        let aim = match (cycle + rng.below(3) as usize) % 3 {
            0 => Aim::Start(rng.below(300)),
            1 => Aim::Load(rng.below(950)),
            _ => Aim::Stop(rng.below(200)),
        };
        let (phase, namespaces) = run_and_kill(&lab, aim);
        phases.push(format!("{aim:?} hit {phase}"));
        let output = lab.command().args(["lab", "clean"]).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "cycle {cycle} ({phases:?}): {}",
            String::from_utf8_lossy(&output.stderr)
        );
        // A process the kill or `lab clean` ended may still be tearing down (its cmdline
        // already gone, not yet a zombie) for a moment on a loaded machine: what counts is
        // what is still there once it had that moment.
        let mut processes = leftovers(&namespaces, &lab_text);
        webtune_testkit::wait_until(Duration::from_secs(5), || {
            processes = leftovers(&namespaces, &lab_text);
            processes.is_empty()
        });
        assert!(
            processes.is_empty(),
            "cycle {cycle} ({phases:?}, seed {seed}): left {processes:?}"
        );
        let left = support::lab::leftovers(&lab.0);
        assert!(
            left.is_empty(),
            "cycle {cycle} ({phases:?}, seed {seed}): left {left:?}"
        );
    }
    eprintln!("phases: {phases:?}");
}
