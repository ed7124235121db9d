//! The server-side sampler: a thread that reads /proc every interval (default 250 ms)
//! while a run loads a stack — per-CPU utilisation, run queue, the stack's processes and
//! threads (CPU, RSS, PSS, context switches, open fds) and the listen-queue overflows, TCP
//! retransmits and TIME_WAIT sockets of its network namespace (host-wide, or the run's
//! own when the lab made one: start it from a thread inside) — and hands back
//! `ServerSamples`.
//! It also watches each server's main process (`leaders`) and records which died and when
//! (`ServerSamples::deaths`). A sampler watches a whole level, warm-up and cool-down
//! included; `window_of` places a run's measured window on its clock, for the level's
//! `ServerSamples::measured`.

use crate::leaders::Leader;
// Re-exported for the modules that start a sampler (`filesystem`); the public path is the root's.
pub(crate) use crate::selector::ProcessSelector;
use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use webtune_conf::procfs::{self, ProcStat};
use webtune_model::server::{BlockSample, CpuShare, ServerSample};
use webtune_model::window::Window;
use webtune_model::{RunResult, ServerSamples};

/// Read at every sample (and once at the start, for a baseline) beside the host's figures:
/// a lab file system's device and page cache (`filesystem`).
pub type BlockProbe = Box<dyn FnMut() -> BlockSample + Send>;

/// Default sampling period.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(250);

/// A running sampler; `finish` stops it and returns what it saw.
pub struct ServerSampler {
    stop: Sender<()>,
    thread: Option<JoinHandle<ServerSamples>>,
    /// When sampling began, on the wall clock (ms since the Unix epoch, with its fraction):
    /// the origin of every sample's `t_s`, to place a run's window on the samples' clock.
    started_unix_ms: f64,
}

impl ServerSampler {
    /// Start sampling now. `target` names what is sampled (the stack).
    pub fn start(target: &str, selector: ProcessSelector, interval: Duration) -> ServerSampler {
        ServerSampler::start_with(target, selector, interval, None)
    }

    /// `start`, with `probe` read into every sample's `block`.
    pub fn start_with(
        target: &str,
        selector: ProcessSelector,
        interval: Duration,
        probe: Option<BlockProbe>,
    ) -> ServerSampler {
        let (stop, stopped) = mpsc::channel::<()>();
        let interval = interval.max(Duration::from_millis(10));
        let target = target.to_string();
        // One origin for both clocks: the samples' `t_s` counts from `started`.
        let started = Instant::now();
        let started_unix_ms = unix_ms_now();
        let thread = std::thread::Builder::new()
            .name("webtune-sampler".into())
            .spawn(move || {
                let mut state = State::new(target, selector, interval, started);
                state.probe = probe;
                if let Some(p) = state.probe.as_mut() {
                    p();
                }
                let mut next = Instant::now() + interval;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {
                            state.take_sample();
                            next += interval;
                            // After a long stall, do not take a burst of catch-up samples.
                            if next < Instant::now() {
                                next = Instant::now() + interval;
                            }
                        }
                        _ => break,
                    }
                }
                // The last, shorter interval, unless it is too short to mean anything — but a
                // run shorter than one interval still gets its one sample.
                if state.out.samples.is_empty()
                    || state.last_at.elapsed() >= Duration::from_millis(20)
                {
                    state.take_sample();
                }
                state.finish()
            })
            .ok();
        ServerSampler {
            stop,
            thread,
            started_unix_ms,
        }
    }

    /// The measured window of `run` (a run loaded while this sampler watched) on the
    /// samples' clock: from the end of its warm-up for its measured `duration_s`, placed by
    /// its wall-clock start (`started_at_unix_ms`, to the millisecond).
    pub fn window_of(&self, run: &RunResult) -> Window {
        let start_s = (run.started_at_unix_ms as f64 - self.started_unix_ms) / 1000.0;
        let from_s = start_s + run.spec.warmup_s.max(0.0);
        Window::new(from_s, from_s + run.duration_s.max(0.0))
    }

    /// Stop and return the samples.
    pub fn finish(mut self) -> ServerSamples {
        let _ = self.stop.send(());
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for ServerSampler {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Raw CPU counters of one CPU, in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct CpuTicks {
    user: u64,
    system: u64,
    idle: u64,
    iowait: u64,
    irq: u64,
    softirq: u64,
    steal: u64,
}

impl CpuTicks {
    fn total(&self) -> u64 {
        self.user + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }
}

/// What /proc/stat says about CPUs and the run queue.
#[derive(Debug, Clone, Default, PartialEq)]
struct HostStat {
    cpus: Vec<CpuTicks>,
    procs_running: u32,
    procs_blocked: u32,
}

fn parse_proc_stat(text: &str) -> HostStat {
    let mut host = HostStat::default();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(key) = fields.next() else { continue };
        if key.starts_with("cpu") && key.len() > 3 {
            let v: Vec<u64> = fields.filter_map(|f| f.parse().ok()).collect();
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            // user nice system idle iowait irq softirq steal (guest is inside user).
            host.cpus.push(CpuTicks {
                user: at(0) + at(1),
                system: at(2),
                idle: at(3),
                iowait: at(4),
                irq: at(5),
                softirq: at(6),
                steal: at(7),
            });
        } else if key == "procs_running" {
            host.procs_running = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
        } else if key == "procs_blocked" {
            host.procs_blocked = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
        }
    }
    host
}

/// Values of a "Name: k1 k2 …" / "Name: v1 v2 …" table (/proc/net/netstat, snmp).
fn parse_keyed_table(text: &str, section: &str) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    let prefix = format!("{section}:");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(&prefix)).collect();
    for pair in lines.chunks(2) {
        if let [names, values] = pair {
            for (n, v) in names
                .split_whitespace()
                .skip(1)
                .zip(values.split_whitespace().skip(1))
            {
                if let Ok(v) = v.parse() {
                    out.insert(n.to_string(), v);
                }
            }
        }
    }
    out
}

/// The `tw` count of the "TCP:" line of /proc/net/sockstat.
fn parse_time_wait(text: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with("TCP:"))
        .and_then(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.iter()
                .position(|x| *x == "tw")
                .and_then(|i| f.get(i + 1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct NetCounters {
    listen_overflows: u64,
    listen_drops: u64,
    retrans_segs: u64,
}

/// A /proc/net file of the sampler thread's own network namespace: `/proc/net` is the
/// main thread's, and a lab run with a private namespace samples from a thread inside it.
fn read_net_file(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/thread-self/net/{name}"))
        .or_else(|_| std::fs::read_to_string(format!("/proc/net/{name}")))
        .unwrap_or_default()
}

fn read_net_counters() -> NetCounters {
    let netstat = read_net_file("netstat");
    let ext = parse_keyed_table(&netstat, "TcpExt");
    let snmp = read_net_file("snmp");
    let tcp = parse_keyed_table(&snmp, "Tcp");
    NetCounters {
        listen_overflows: ext.get("ListenOverflows").copied().unwrap_or(0),
        listen_drops: ext.get("ListenDrops").copied().unwrap_or(0),
        retrans_segs: tcp.get("RetransSegs").copied().unwrap_or(0),
    }
}

/// Voluntary and involuntary context switches of one thread (from its status file).
fn read_ctxt_switches(pid: i32, tid: &str) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    let mut vol = None;
    let mut invol = None;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("voluntary_ctxt_switches:") {
            vol = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("nonvoluntary_ctxt_switches:") {
            invol = v.trim().parse().ok();
        }
    }
    Some((vol?, invol?))
}

fn read_pss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn count_fds(pid: i32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count() as u64)
        .unwrap_or(0)
}

/// CPU time of the calling thread, seconds.
fn own_thread_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/stat")
        .ok()
        .and_then(|t| procfs::parse_stat(&t))
        .map(|s| (s.utime + s.stime) as f64 / procfs::ticks_per_second() as f64)
        .unwrap_or(0.0)
}

struct State {
    out: ServerSamples,
    selector: ProcessSelector,
    /// The servers' main processes still alive at the last sample.
    leaders: Vec<Leader>,
    started: Instant,
    last_at: Instant,
    last_host: HostStat,
    last_net: NetCounters,
    /// Per process: (utime, stime) at the previous sample.
    last_cpu: HashMap<i32, (u64, u64)>,
    /// Per thread (pid, tid): context switches at the previous sample.
    last_switches: HashMap<(i32, i32), (u64, u64)>,
    /// Per process: PSS at its last reading. Reading `smaps_rollup` walks the process's
    /// page tables, the sampler's dearest read, so PSS is refreshed about once a second.
    pss_cache: HashMap<i32, u64>,
    /// Samples between PSS refreshes, and samples since the last one.
    pss_every: u32,
    since_pss: u32,
    ticks: f64,
    page_kib: u64,
    own_cpu_at_start: f64,
    probe: Option<BlockProbe>,
}

/// Now on the wall clock, ms since the Unix epoch (0 if the clock is before it).
fn unix_ms_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl State {
    fn new(
        target: String,
        selector: ProcessSelector,
        interval: Duration,
        started: Instant,
    ) -> State {
        let host = parse_proc_stat(&std::fs::read_to_string("/proc/stat").unwrap_or_default());
        let mut state = State {
            out: ServerSamples {
                interval_ms: interval.as_millis() as u64,
                target,
                selector: selector.describe(),
                cpu_count: host.cpus.len() as u32,
                samples: Vec::new(),
                ..ServerSamples::default()
            },
            leaders: Vec::new(),
            selector,
            started,
            last_at: started,
            last_host: host,
            last_net: read_net_counters(),
            last_cpu: HashMap::new(),
            last_switches: HashMap::new(),
            pss_cache: HashMap::new(),
            pss_every: (1000 / interval.as_millis().max(1)).clamp(1, 1000) as u32,
            since_pss: 0,
            ticks: procfs::ticks_per_second() as f64,
            page_kib: procfs::page_kib(),
            own_cpu_at_start: own_thread_cpu_s(),
            probe: None,
        };
        // Baseline of the processes that exist already: their past is not this run's.
        let _ = state.sample_processes();
        if let ProcessSelector::Sessions(sessions) = &state.selector {
            for &sid in sessions {
                // A master already gone (e.g. in an earlier level of a sweep) is recorded
                // at 0: this run, too, loads a stack without it.
                match Leader::find(sid, 0.0) {
                    Ok(leader) => state.leaders.push(leader),
                    Err(death) => state.out.deaths.push(death),
                }
            }
        }
        state
    }

    fn take_sample(&mut self) {
        let now = Instant::now();
        let host = parse_proc_stat(&std::fs::read_to_string("/proc/stat").unwrap_or_default());
        let net = read_net_counters();
        let time_wait = parse_time_wait(&read_net_file("sockstat"));
        let cpus = host
            .cpus
            .iter()
            .zip(self.last_host.cpus.iter())
            .map(|(now, before)| cpu_share(now, before))
            .collect();
        let procs = self.sample_processes();
        let t_s = round3(now.duration_since(self.started).as_secs_f64());
        let out = &mut self.out;
        self.leaders.retain(|leader| match leader.check(t_s) {
            Some(death) => {
                out.deaths.push(death);
                false
            }
            None => true,
        });
        self.out.samples.push(ServerSample {
            t_s,
            length_s: round3(now.duration_since(self.last_at).as_secs_f64()),
            cpus,
            run_queue: host.procs_running,
            blocked: host.procs_blocked,
            processes: procs.processes,
            threads: procs.threads,
            cpu_user_s: round3(procs.user_ticks as f64 / self.ticks),
            cpu_system_s: round3(procs.system_ticks as f64 / self.ticks),
            rss_kib: procs.rss_kib,
            pss_kib: procs.pss_kib,
            voluntary_ctxt_switches: procs.voluntary,
            involuntary_ctxt_switches: procs.involuntary,
            open_fds: procs.fds,
            listen_overflows: net
                .listen_overflows
                .saturating_sub(self.last_net.listen_overflows),
            listen_drops: net.listen_drops.saturating_sub(self.last_net.listen_drops),
            tcp_retrans_segs: net.retrans_segs.saturating_sub(self.last_net.retrans_segs),
            time_wait,
            block: self.probe.as_mut().map(|p| p()),
        });
        self.last_host = host;
        self.last_net = net;
        self.last_at = now;
    }

    /// Read the server's processes; counters are deltas since the previous call (a process
    /// or thread first seen counts from its start).
    fn sample_processes(&mut self) -> ProcessTotals {
        let mut totals = ProcessTotals::default();
        if self.selector == ProcessSelector::Nothing {
            return totals;
        }
        let mut cpu_now = HashMap::new();
        let mut switches_now = HashMap::new();
        let mut pss_now = HashMap::new();
        let refresh_pss = self.since_pss == 0;
        self.since_pss = (self.since_pss + 1) % self.pss_every;
        let me = std::process::id() as i32;
        let live: Vec<ProcStat> = procfs::all_pids()
            .into_iter()
            .filter(|p| *p != me)
            .filter_map(procfs::read_stat)
            .filter(|s| s.state != 'Z')
            .collect();
        for stat in self.selector.select(live) {
            totals.processes += 1;
            totals.threads += stat.num_threads as u32;
            totals.rss_kib += stat.rss_pages * self.page_kib;
            let pss = match self.pss_cache.get(&stat.pid) {
                Some(known) if !refresh_pss => *known,
                _ => read_pss_kib(stat.pid),
            };
            pss_now.insert(stat.pid, pss);
            totals.pss_kib += pss;
            totals.fds += count_fds(stat.pid);
            let (u0, s0) = self.last_cpu.get(&stat.pid).copied().unwrap_or((0, 0));
            totals.user_ticks += stat.utime.saturating_sub(u0);
            totals.system_ticks += stat.stime.saturating_sub(s0);
            cpu_now.insert(stat.pid, (stat.utime, stat.stime));
            if let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", stat.pid)) {
                for task in tasks.flatten() {
                    let name = task.file_name();
                    let Some(tid_text) = name.to_str() else {
                        continue;
                    };
                    let Ok(tid) = tid_text.parse::<i32>() else {
                        continue;
                    };
                    if let Some((v, i)) = read_ctxt_switches(stat.pid, tid_text) {
                        let (v0, i0) = self
                            .last_switches
                            .get(&(stat.pid, tid))
                            .copied()
                            .unwrap_or((0, 0));
                        totals.voluntary += v.saturating_sub(v0);
                        totals.involuntary += i.saturating_sub(i0);
                        switches_now.insert((stat.pid, tid), (v, i));
                    }
                }
            }
        }
        self.last_cpu = cpu_now;
        self.last_switches = switches_now;
        self.pss_cache = pss_now;
        totals
    }

    fn finish(mut self) -> ServerSamples {
        self.out.sampler_cpu_s = round3((own_thread_cpu_s() - self.own_cpu_at_start).max(0.0));
        self.out
    }
}

#[derive(Debug, Default)]
struct ProcessTotals {
    processes: u32,
    threads: u32,
    rss_kib: u64,
    pss_kib: u64,
    fds: u64,
    user_ticks: u64,
    system_ticks: u64,
    voluntary: u64,
    involuntary: u64,
}

fn cpu_share(now: &CpuTicks, before: &CpuTicks) -> CpuShare {
    let total = now.total().saturating_sub(before.total());
    if total == 0 {
        return CpuShare {
            idle: 100.0,
            ..CpuShare::default()
        };
    }
    let pct = |a: u64, b: u64| round2(a.saturating_sub(b) as f64 * 100.0 / total as f64);
    CpuShare {
        user: pct(now.user, before.user),
        system: pct(now.system, before.system),
        irq: pct(now.irq, before.irq),
        softirq: pct(now.softirq, before.softirq),
        iowait: pct(now.iowait, before.iowait),
        steal: pct(now.steal, before.steal),
        idle: pct(now.idle, before.idle),
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat() {
        let text = "cpu  10 0 5 100 0 0 0 0 0 0\ncpu0 4 1 2 50 3 0 1 0 0 0\n\
                    cpu1 6 0 3 50 0 1 0 2 0 0\nintr 1 2\nprocs_running 3\nprocs_blocked 1\n";
        let h = parse_proc_stat(text);
        assert_eq!(h.cpus.len(), 2);
        assert_eq!(h.cpus[0].user, 5);
        assert_eq!(h.cpus[0].iowait, 3);
        assert_eq!(h.cpus[1].steal, 2);
        assert_eq!((h.procs_running, h.procs_blocked), (3, 1));
    }

    #[test]
    fn cpu_shares_sum_to_a_hundred() {
        let before = CpuTicks::default();
        let now = CpuTicks {
            user: 50,
            system: 20,
            softirq: 10,
            idle: 20,
            ..CpuTicks::default()
        };
        let s = cpu_share(&now, &before);
        assert_eq!(
            (s.user, s.system, s.softirq, s.idle),
            (50.0, 20.0, 10.0, 20.0)
        );
        assert_eq!(s.busy(), 80.0);
    }

    #[test]
    fn parses_netstat_and_sockstat() {
        let netstat = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\n\
                       TcpExt: 0 7 9\nIpExt: InNoRoutes\nIpExt: 1\n";
        let t = parse_keyed_table(netstat, "TcpExt");
        assert_eq!(t.get("ListenOverflows"), Some(&7));
        assert_eq!(t.get("ListenDrops"), Some(&9));
        let sockstat = "sockets: used 200\nTCP: inuse 5 orphan 0 tw 42 alloc 9 mem 1\n";
        assert_eq!(parse_time_wait(sockstat), 42);
    }

    #[test]
    fn samples_this_process_threads() {
        // Sample the test process's own session: host figures and at least the counts.
        let me = procfs::read_stat(std::process::id() as i32).unwrap();
        let sampler = ServerSampler::start(
            "self",
            ProcessSelector::Names(vec!["no-such-process-name".into()]),
            Duration::from_millis(20),
        );
        std::thread::sleep(Duration::from_millis(120));
        let out = sampler.finish();
        assert!(out.samples.len() >= 3, "{}", out.samples.len());
        assert_eq!(out.cpu_count as usize, out.samples[0].cpus.len());
        assert!(out.samples.iter().all(|s| s.processes == 0));
        assert!(me.pid > 0);
    }
}
