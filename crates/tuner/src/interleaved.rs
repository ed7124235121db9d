//! Runs a decisive comparison (issue 34) with the engine: the protocol and its statistics
//! are `webtune_search::interleave`'s; this module sends each block's load to its arm and
//! samples the host's interference around it. Each block is one short engine run to one arm,
//! its discarded first part being the run's warm-up: connections to the arm are opened anew
//! at each block (the discard absorbs the handshakes), and the idle arm has none open
//! meanwhile. Interference per block: the share of time a task waited for a CPU
//! (/proc/pressure/cpu, "some"), the stolen share of CPU time (/proc/stat), and the CPU used
//! by processes other than this one and the arms' servers (host busy time less ours and
//! theirs, from /proc/stat and /proc/PID/stat). Each start begins with one uncounted block
//! to each arm. Also the memory check of two stacks at once (`fits_twice`).

use std::time::Instant;
use webtune_engine::{RunControl, Workload};
use webtune_model::{RunSpec, StopCondition};
use webtune_search::interleave::{Block, Interference, Protocol, Settings, Side, Step};

/// One arm: what its blocks send, and the processes that serve it (left out of "other CPU").
pub struct ArmLoad {
    pub spec: RunSpec,
    pub workload: Workload,
    pub server_pids: Vec<i32>,
}

/// An arm after a restart: where it answers now and the processes that serve it.
pub struct Restarted {
    pub url: String,
    pub server_pids: Vec<i32>,
}

/// What the run ended with.
pub struct Outcome {
    pub protocol: Protocol,
    pub elapsed_s: f64,
    pub interrupted: bool,
}

/// The spec of one block to `arm`: the arm's own spec, timed to one block with the discard
/// as its warm-up.
pub fn block_spec(arm: &RunSpec, settings: &Settings) -> RunSpec {
    let mut spec = arm.clone();
    spec.stop = StopCondition::Duration {
        seconds: settings.block_s,
    };
    spec.stages.clear();
    spec.warmup_s = settings.discard_s;
    spec.cooldown_s = 0.0;
    spec.interval_ms = spec
        .interval_ms
        .min((settings.block_s * 1000.0) as u64)
        .max(10);
    spec
}

/// One uncounted block to each arm (A, then B), so both are warm before the first counted
/// block; a server that answers nothing is an error here, before any block counts. False
/// when a stop came.
fn warm(arms: &[ArmLoad; 2], settings: &Settings, control: &RunControl) -> Result<bool, String> {
    for arm in arms {
        let spec = block_spec(&arm.spec, settings);
        let result = webtune_engine::run(&spec, &arm.workload, control, &mut |_| {})
            .map_err(|e| format!("{}: {e}", spec.url))?;
        if result.interrupted {
            return Ok(false);
        }
        if result.responses == 0 {
            return Err(format!(
                "{}: no response while warming up ({} errors): is the server up?",
                spec.url,
                result.errors.total()
            ));
        }
    }
    Ok(true)
}

/// Run the comparison of `a` and `b` to its end (decided, budget spent, or stopped by
/// `control`): both arms warmed by one uncounted block each, then the protocol's blocks.
/// `restart(start)` restarts both arms between starts (they are warmed again); `progress`
/// gets a line every few pairs.
pub fn run(
    mut arms: [ArmLoad; 2],
    settings: Settings,
    control: &RunControl,
    restart: &mut dyn FnMut(usize) -> Result<[Restarted; 2], String>,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome, String> {
    settings.validate()?;
    let began = Instant::now();
    let mut protocol = Protocol::new(settings.clone());
    let mut interrupted = false;
    let mut pairs_shown = 0;
    if !warm(&arms, &settings, control)? {
        protocol.stop();
        interrupted = true;
    }
    loop {
        let now = began.elapsed().as_secs_f64();
        if interrupted || control.stop_requested() {
            interrupted = true;
            protocol.stop();
            break;
        }
        match protocol.next(now) {
            Step::Done => break,
            Step::Restart { start } => {
                progress(&format!("restarting both arms (start {})", start + 1));
                let restarted = restart(start)?;
                for (arm, r) in arms.iter_mut().zip(restarted) {
                    arm.spec.url = r.url;
                    arm.server_pids = r.server_pids;
                }
                if !warm(&arms, &settings, control)? {
                    interrupted = true;
                    protocol.stop();
                    break;
                }
            }
            Step::Measure { side, pair, .. } => {
                let arm = &arms[match side {
                    Side::A => 0,
                    Side::B => 1,
                }];
                let spec = block_spec(&arm.spec, &settings);
                let servers: Vec<i32> = arms.iter().flat_map(|a| a.server_pids.clone()).collect();
                let before = Snapshot::take(&servers);
                let started_s = began.elapsed().as_secs_f64();
                let result = webtune_engine::run(&spec, &arm.workload, control, &mut |_| {})
                    .map_err(|e| format!("{}: {e}", spec.url))?;
                let wall_s = began.elapsed().as_secs_f64() - started_s;
                let after = Snapshot::take(&servers);
                if result.interrupted {
                    // A block a stop cut short is not a whole block: leave it out.
                    interrupted = true;
                    protocol.stop();
                    break;
                }
                let mut block = Block::measured(
                    side,
                    result.duration_s,
                    result.responses,
                    result.errors.total(),
                    result.histograms.total.clone(),
                );
                block.interference = after.since(&before);
                protocol.record(block, started_s, wall_s);
                let done_pairs = pair + 1;
                if protocol.blocks().len().is_multiple_of(2) && done_pairs >= pairs_shown + 5 {
                    pairs_shown = done_pairs;
                    progress(&webtune_search::interleave::render::progress(
                        &protocol,
                        began.elapsed().as_secs_f64(),
                    ));
                }
            }
        }
    }
    Ok(Outcome {
        protocol,
        elapsed_s: began.elapsed().as_secs_f64(),
        interrupted,
    })
}

/// The host's counters at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub struct Snapshot {
    at: Option<Instant>,
    /// PSI cpu "some" total, microseconds.
    pressure_us: Option<u64>,
    /// /proc/stat's first line: (busy, steal, total) in clock ticks.
    cpu: Option<(u64, u64, u64)>,
    /// This process's and the servers' CPU, clock ticks.
    ours: u64,
}

impl Snapshot {
    /// Read the counters; what the host does not have stays None.
    pub fn take(servers: &[i32]) -> Snapshot {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let ours = std::iter::once("self".to_string())
            .chain(servers.iter().map(|p| p.to_string()))
            .filter_map(|p| read(&format!("/proc/{p}/stat")))
            .filter_map(|s| process_ticks(&s))
            .sum();
        Snapshot {
            at: Some(Instant::now()),
            pressure_us: read("/proc/pressure/cpu").and_then(|s| psi_some_total(&s)),
            cpu: read("/proc/stat").and_then(|s| stat_cpu(&s)),
            ours,
        }
    }

    /// The interference between `earlier` and this snapshot.
    pub fn since(&self, earlier: &Snapshot) -> Interference {
        let wall_s = match (self.at, earlier.at) {
            (Some(b), Some(a)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        if wall_s <= 0.0 {
            return Interference::default();
        }
        let pressure = match (self.pressure_us, earlier.pressure_us) {
            (Some(b), Some(a)) => Some(100.0 * b.saturating_sub(a) as f64 / 1e6 / wall_s),
            _ => None,
        };
        let (steal, other) = match (self.cpu, earlier.cpu) {
            (Some((b_busy, b_steal, b_total)), Some((a_busy, a_steal, a_total))) => {
                let total = b_total.saturating_sub(a_total) as f64;
                let steal =
                    (total > 0.0).then(|| 100.0 * b_steal.saturating_sub(a_steal) as f64 / total);
                let busy = b_busy.saturating_sub(a_busy);
                let ours = self.ours.saturating_sub(earlier.ours);
                let other = busy.saturating_sub(ours) as f64 / ticks_per_s() / wall_s;
                (steal, Some(other))
            }
            _ => (None, None),
        };
        Interference {
            cpu_pressure_pct: pressure,
            steal_pct: steal,
            other_cpu_cores: other,
        }
    }
}

/// Clock ticks per second of /proc's CPU times (USER_HZ; 100 where sysconf cannot say).
fn ticks_per_s() -> f64 {
    // SAFETY: sysconf reads a constant of the system and has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// "some avg10=… total=N" → N.
pub fn psi_some_total(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// /proc/stat's "cpu  user nice system idle iowait irq softirq steal …" → (busy, steal,
/// total) ticks; busy leaves out idle, iowait and steal.
pub fn stat_cpu(text: &str) -> Option<(u64, u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    if v.len() < 8 {
        return None;
    }
    // guest and guest_nice (9th, 10th) are already inside user and nice.
    let total: u64 = v.iter().take(8).sum();
    let steal = v[7];
    let busy = total - v[3] - v[4] - steal;
    Some((busy, steal, total))
}

/// /proc/PID/stat → utime + stime, ticks (fields 14 and 15, counted after the command
/// name's closing parenthesis, which may hold spaces).
pub fn process_ticks(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14 → index 11.
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Resident memory of these processes, KiB (/proc/PID/status VmRSS; gone ones count 0).
pub fn rss_kib(pids: &[i32]) -> u64 {
    pids.iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
        .filter_map(|s| kib_field(&s, "VmRSS:"))
        .sum()
}

/// "Name:   1234 kB" → 1234.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(name))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Whether a second stack like the first (`first_kib` resident) fits in the memory available
/// now (/proc/meminfo MemAvailable), with a quarter to spare: Ok(a sentence saying so), or
/// Err(the sentence why not). Ok with "unknown" where the host does not say.
pub fn fits_twice(first_kib: u64) -> Result<String, String> {
    let Some(avail) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| kib_field(&s, "MemAvailable:"))
    else {
        return Ok("memory available unknown: two stacks assumed to fit".into());
    };
    let need = first_kib + first_kib / 4;
    let mib = |k: u64| k / 1024;
    if need > avail {
        Err(format!(
            "two stacks do not fit: the first uses {} MiB and only {} MiB are available",
            mib(first_kib),
            mib(avail)
        ))
    } else {
        Ok(format!(
            "memory: the first stack uses {} MiB; two fit ({} MiB available)",
            mib(first_kib),
            mib(avail)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_counters_parse() {
        let psi = "some avg10=66.70 avg60=66.80 avg300=45.31 total=448263368\n\
                   full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(psi_some_total(psi), Some(448_263_368));
        assert_eq!(psi_some_total("garbage"), None);
        let stat = "cpu  100 10 50 1000 20 0 5 7 3 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(stat_cpu(stat), Some((165, 7, 1192)));
        assert_eq!(stat_cpu("cpu 1 2"), None);
        let pid = "1234 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 111 222 0 0 20 0 1 0";
        assert_eq!(process_ticks(pid), Some(333));
        assert_eq!(
            kib_field("Name: x\nVmRSS:\t  2048 kB\n", "VmRSS:"),
            Some(2048)
        );
        assert!(rss_kib(&[std::process::id() as i32]) > 0);
        assert!(fits_twice(1024).is_ok());
        assert!(fits_twice(u64::MAX / 2).unwrap_err().contains("do not fit"));
        // This host's own counters read, where Linux has them.
        let s = Snapshot::take(&[]);
        std::thread::sleep(std::time::Duration::from_millis(50));
        let i = Snapshot::take(&[]).since(&s);
        if std::path::Path::new("/proc/stat").exists() {
            assert!(i.other_cpu_cores.is_some() && i.steal_pct.is_some());
        }
    }

    #[test]
    fn a_block_is_the_arms_run_cut_to_one_block_with_the_discard_as_warm_up() {
        let arm = RunSpec {
            url: "http://127.0.0.1:1/".into(),
            stop: StopCondition::Requests { count: 10 },
            cooldown_s: 2.0,
            ..RunSpec::default()
        };
        let s = Settings::new(webtune_search::interleave::block::Metric::Throughput);
        let b = block_spec(&arm, &s);
        assert_eq!(b.stop, StopCondition::Duration { seconds: 1.0 });
        assert_eq!((b.warmup_s, b.cooldown_s), (0.1, 0.0));
        assert!(b.validate().is_ok());
    }
}
