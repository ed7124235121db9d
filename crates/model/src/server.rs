//! Server-side samples taken while a run loads a lab stack (filled by the lab's /proc
//! sampler, documented in `docs/result-schema.md`, section `server`). Counters are deltas
//! over each sample's interval; gauges are the value at the sample's end. The sampler
//! watches a whole level (warm-up, cool-down and repeats included); `measured` says which
//! stretches the responses were counted over, and `ServerSamples::measured` sums the
//! counters over those only, for every per-response figure.

use crate::span::{overlap_with, Window};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the server-side sampler saw during a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSamples {
    /// Sampling period in milliseconds.
    pub interval_ms: u64,
    /// What was sampled: the lab stack's name, or "external".
    pub target: String,
    /// How the server's processes were found, e.g. "sessions 4123,4180" or
    /// "names nginx,apache2".
    pub selector: String,
    /// CPUs of the host (the length of every sample's `cpus`).
    pub cpu_count: u32,
    /// The stack's configuration: every parameter's value, defaults included (empty for
    /// `external`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// The parameters set explicitly (`--set`), in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters_set: Vec<String>,
    /// The samples, oldest first.
    pub samples: Vec<ServerSample>,
    /// CPU time the sampler itself used on the host, seconds.
    pub sampler_cpu_s: f64,
    /// Warnings and errors the servers logged from their start to the end of the load,
    /// deduplicated (empty for `external`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_messages: Vec<LogMessage>,
    /// Main processes of the stack (nginx master, Apache parent, php-fpm master, mariadbd)
    /// that died while the sampler watched, in the order seen (empty when none did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deaths: Vec<ProcessDeath>,
    /// The host settings the stack ran under (lab `os.*`, `--server-cpus`, `--client-cpus`,
    /// `--addresses`); absent when none was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostSection>,
    /// A mail stack's acceptance, delivery and queues (lab `postfix`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail: Option<MailSection>,
    /// The measured window of each run (warm-up and cool-down left out) on the samples'
    /// clock (seconds since sampling began, as `t_s`): per-response figures count only the
    /// samples' share inside them (`measured`). Empty in results from before they were
    /// recorded, where every sample counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<Window>,
}

/// The server's counters over the measured window(s): each sample weighed by the share of
/// its interval inside them (all of it when no window was recorded).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MeasuredTotals {
    /// Seconds of sampling inside the windows.
    pub seconds: f64,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    pub voluntary_ctxt_switches: f64,
    pub involuntary_ctxt_switches: f64,
    /// CPU-seconds the host's CPUs were busy (every process: server, generator, others).
    pub host_busy_cpu_s: f64,
    pub listen_overflows: f64,
}

impl MeasuredTotals {
    pub fn cpu_s(&self) -> f64 {
        self.cpu_user_s + self.cpu_system_s
    }

    pub fn switches(&self) -> f64 {
        self.voluntary_ctxt_switches + self.involuntary_ctxt_switches
    }
}

/// What a mail server did with the messages it accepted during one level: acceptance (the
/// SMTP 250s) is in the run's own figures, delivery (files in the mailboxes) here, since a
/// server that accepts fast but delivers slowly only grows its queue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MailSection {
    /// Messages the server answered 250 to after DATA (from the generator's results).
    pub accepted: u64,
    /// Deliveries (one per recipient) made while the load ran.
    pub delivered_in_load: u64,
    /// Length of the load, seconds.
    pub load_s: f64,
    /// `delivered_in_load / load_s`: the figure a mail tuning maximizes.
    pub delivered_per_s: f64,
    /// Deliveries made from the level's start to the end of the drain wait, counted as
    /// files in the Maildirs' `new/`.
    pub delivered: u64,
    /// How long the level waited after the load for the queue to empty (bounded).
    pub drain_s: f64,
    /// Messages still queued when the wait ended (incoming, active and deferred).
    pub left_incoming: u64,
    pub left_active: u64,
    pub left_deferred: u64,
    /// The queues and the deliveries over the level, oldest first.
    pub samples: Vec<MailSample>,
}

impl MailSection {
    /// Messages queued at the end of the wait, every queue together.
    pub fn left_in_queue(&self) -> u64 {
        self.left_incoming + self.left_active + self.left_deferred
    }
}

/// The mail queues at one moment of a level (files under each queue directory).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MailSample {
    /// Seconds since the level's start.
    pub t_s: f64,
    pub incoming: u64,
    pub active: u64,
    pub deferred: u64,
    /// Deliveries since the level's start (the server's log: `status=sent`).
    pub delivered: u64,
}

/// What a lab run changed of the host for its stack, read back from the kernel.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSection {
    /// "net:[4026532841]" when the stack and the generator's sockets ran in a private
    /// network namespace: the samples' TCP counters (listen overflows, drops, retransmits,
    /// TIME_WAIT) are then this namespace's alone, not the host's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub netns: String,
    /// Sysctls set inside the namespace, as read back there, e.g. "net.core.somaxconn":
    /// "128". The host's own values are never changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
    /// Loopback addresses the front server listened on (127.0.0.1 … 127.0.0.N), when more
    /// than one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub addresses: u32,
    /// CPUs the generator's threads were pinned to, e.g. "0" (empty: not pinned).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_cpus: String,
    /// CPUs the stack's processes were pinned to (empty: not pinned).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_cpus: String,
    /// Each server's main process as /proc showed it at the end of the load: its open-file
    /// limit and the CPUs it may run on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<HostProcess>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One server process's limits as the kernel reports them (`/proc/PID/limits`, `status`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostProcess {
    /// Command name, e.g. "nginx", "apache2".
    pub process: String,
    pub pid: i32,
    /// Soft and hard RLIMIT_NOFILE ("Max open files").
    pub nofile_soft: u64,
    pub nofile_hard: u64,
    /// `Cpus_allowed_list`, e.g. "1" or "0-1".
    pub cpus: String,
}

impl ServerSamples {
    /// Did a main process of the stack die during the run?
    pub fn server_died(&self) -> bool {
        !self.deaths.is_empty()
    }

    /// The share (0..=1) of `sample`'s interval inside the measured windows: 1 when none
    /// was recorded.
    pub fn measured_share(&self, sample: &ServerSample) -> f64 {
        if self.measured.is_empty() {
            return 1.0;
        }
        if sample.length_s <= 0.0 {
            // A zero-length sample counts where its moment falls.
            let inside = self
                .measured
                .iter()
                .any(|w| sample.t_s >= w.from_s && sample.t_s <= w.to_s);
            return if inside { 1.0 } else { 0.0 };
        }
        let from = sample.t_s - sample.length_s;
        (overlap_with(&self.measured, from, sample.t_s) / sample.length_s).clamp(0.0, 1.0)
    }

    /// The server's counters over the measured window(s): what per-response figures divide
    /// by the run's responses, which were counted over the same window. A sample that
    /// straddles a window's edge counts in proportion (the sampler's interval, 250 ms by
    /// default, is the error at each edge).
    pub fn measured(&self) -> MeasuredTotals {
        let mut t = MeasuredTotals::default();
        for s in &self.samples {
            let w = self.measured_share(s);
            t.seconds += s.length_s * w;
            t.cpu_user_s += s.cpu_user_s * w;
            t.cpu_system_s += s.cpu_system_s * w;
            t.voluntary_ctxt_switches += s.voluntary_ctxt_switches as f64 * w;
            t.involuntary_ctxt_switches += s.involuntary_ctxt_switches as f64 * w;
            t.host_busy_cpu_s +=
                s.cpus.iter().map(|c| c.busy() / 100.0).sum::<f64>() * s.length_s * w;
            t.listen_overflows += s.listen_overflows as f64 * w;
        }
        t
    }
}

/// A server's main process that was gone at a sample: without it the server neither
/// replaces its workers nor stops in order, so what follows measures a broken stack.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessDeath {
    /// Its command name, e.g. "nginx", "apache2", "php-fpm8.2", "mariadbd".
    pub process: String,
    pub pid: i32,
    /// End of the sample interval in which it died, seconds since sampling began (0 when
    /// it was already gone when sampling began).
    pub t_s: f64,
    /// How it ended, when the kernel still said: "killed by SIGKILL", "exited with status
    /// 1"; empty when unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub how: String,
}

/// One distinct warning or error line of a server's log, with how often it occurred.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogMessage {
    /// The server that logged it, e.g. "frontend nginx", "apache2 (prefork)", "php-fpm".
    pub server: String,
    /// Severity as the server wrote it: warn, error, crit, alert, emerg.
    pub level: String,
    /// The message without timestamp, process ids and per-request details.
    pub message: String,
    pub count: u64,
}

/// One sample: the interval that ended `t_s` seconds after sampling began.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// End of the interval, seconds since sampling began.
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub length_s: f64,
    /// Per CPU (cpu0, cpu1, …): share of the interval in each state, percent.
    pub cpus: Vec<CpuShare>,
    /// Runnable tasks on the host at the sample (`procs_running` of /proc/stat).
    pub run_queue: u32,
    /// Tasks blocked on I/O at the sample (`procs_blocked`).
    pub blocked: u32,
    /// The server's processes and threads at the sample.
    pub processes: u32,
    pub threads: u32,
    /// CPU the server's processes used in the interval, seconds.
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// Resident and proportional set size of the server's processes at the sample, KiB.
    pub rss_kib: u64,
    pub pss_kib: u64,
    /// Context switches of the server's threads in the interval.
    pub voluntary_ctxt_switches: u64,
    pub involuntary_ctxt_switches: u64,
    /// Open file descriptors of the server's processes at the sample.
    pub open_fds: u64,
    /// Host-wide TCP counters in the interval (TcpExt ListenOverflows, ListenDrops; Tcp
    /// RetransSegs).
    pub listen_overflows: u64,
    pub listen_drops: u64,
    pub tcp_retrans_segs: u64,
    /// Host-wide TCP sockets in TIME_WAIT at the sample.
    pub time_wait: u64,
    /// A lab file system's block device and the host's page cache (`lab run fs`); absent
    /// for web stacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<BlockSample>,
}

/// A lab file system's device in one interval: the loop device's `/sys/block/loopN/stat`
/// (deltas; none for tmpfs), the host's dirty and writeback memory (`/proc/meminfo`, at the
/// sample) and the generator's own storage I/O (`/proc/self/io`, deltas).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockSample {
    /// The device, e.g. "loop3"; empty for tmpfs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device: String,
    pub reads: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    pub writes: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    /// Flush requests completed (stat field 16).
    pub flushes: u64,
    /// Time the device had I/O in flight, ms (io_ticks), and the summed time requests
    /// waited in its queue, ms (time_in_queue).
    pub busy_ms: u64,
    pub queue_ms: u64,
    /// Host-wide `Dirty` and `Writeback` of /proc/meminfo at the sample, KiB.
    pub dirty_kib: u64,
    pub writeback_kib: u64,
    /// Bytes the generator's process caused to be read from and written to storage
    /// (`read_bytes`, `write_bytes` of /proc/self/io).
    pub proc_read_bytes: u64,
    pub proc_write_bytes: u64,
}

/// How one CPU spent an interval, percent (the fields sum to about 100).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuShare {
    /// User time, nice included.
    pub user: f64,
    pub system: f64,
    pub irq: f64,
    pub softirq: f64,
    pub iowait: f64,
    /// Time the hypervisor gave to someone else.
    pub steal: f64,
    pub idle: f64,
}

impl CpuShare {
    /// Percent of the interval the CPU was not idle (iowait counts as idle).
    pub fn busy(&self) -> f64 {
        (100.0 - self.idle - self.iowait).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_s: f64, cpu_s: f64, switches: u64) -> ServerSample {
        ServerSample {
            t_s,
            length_s: 0.5,
            cpu_user_s: cpu_s,
            voluntary_ctxt_switches: switches,
            cpus: vec![CpuShare {
                user: 50.0,
                idle: 50.0,
                ..CpuShare::default()
            }],
            ..ServerSample::default()
        }
    }

    #[test]
    fn per_response_counters_cover_the_measured_window_only() {
        // A 2 s warm-up that cost three times the measured second, then 1 s measured, then
        // a cool-down: 0.5 s samples.
        let mut s = ServerSamples {
            samples: vec![
                sample(0.5, 0.3, 300),
                sample(1.0, 0.3, 300),
                sample(1.5, 0.3, 300),
                sample(2.0, 0.3, 300),
                sample(2.5, 0.1, 100),
                sample(3.0, 0.1, 100),
                sample(3.5, 0.2, 200),
            ],
            ..ServerSamples::default()
        };
        let all = s.measured();
        assert!((all.cpu_s() - 1.6).abs() < 1e-9, "{all:?}");
        s.measured = vec![Window::new(2.0, 3.0)];
        let m = s.measured();
        assert!((m.seconds - 1.0).abs() < 1e-9, "{m:?}");
        assert!((m.cpu_s() - 0.2).abs() < 1e-9, "{m:?}");
        assert!((m.switches() - 200.0).abs() < 1e-9, "{m:?}");
        assert!((m.host_busy_cpu_s - 0.5).abs() < 1e-9, "{m:?}");
        // A sample across the window's edge counts in proportion.
        s.measured = vec![Window::new(2.25, 3.0)];
        assert!((s.measured().cpu_s() - 0.15).abs() < 1e-9);
    }
}
