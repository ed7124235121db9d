//! Host knobs on real servers (issue 13): `os.*` sysctls applied in the stack's own network
//! namespace while the host keeps its values, the namespace's own overflow counters,
//! `--addresses` spreading connections, `os.nofile` and CPU pinning as the server processes
//! report them. Tests that need CAP_SYS_ADMIN (a namespace) fail without it, unless
//! WEBTUNE_SKIP names `root`.

mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use webtune_conf::procfs;
use webtune_engine::Progress;
use webtune_lab::host::{CpuSet, HostSettings};
use webtune_lab::namespace_of;
use webtune_lab::trial::{self, LevelResult, Target, Trial, TrialEvents};
use webtune_lab::{settings_for, StackKind};
use webtune_model::{LoadMode, RunSpec, StopCondition, StopToken};

/// The tests look at this process's threads (the generator's workers): one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn privileged() -> bool {
    webtune_lab::host::effective_capabilities().is_some_and(|c| c & (1 << 21) != 0)
}

fn trial_of(stack: &str, sets: &[&str], load: RunSpec) -> Trial {
    let kind = StackKind::from_name(stack).unwrap();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let settings = settings_for(kind, &sets).unwrap();
    let mut trial = Trial::new(Target::Stack { kind, settings }, load);
    trial.sample_interval = Duration::from_millis(100);
    trial
}

fn load(path: &str, connections: u32, seconds: f64) -> RunSpec {
    RunSpec {
        url: path.to_string(),
        connections,
        threads: 1,
        stop: StopCondition::Duration { seconds },
        ..RunSpec::default()
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Every process of a session (the stack's servers).
fn members(session: i32) -> Vec<i32> {
    procfs::session_members(&[session])
        .into_iter()
        .map(|s| s.pid)
        .collect()
}

fn in_namespace(inode: u64) -> Vec<i32> {
    procfs::all_pids()
        .into_iter()
        .filter(|&p| namespace_of(p) == Some(inode))
        .collect()
}

/// What the test saw while the stack still ran (at the end of each level).
#[derive(Default)]
struct Seen {
    /// (namespace inode of the master, somaxconn inside, somaxconn of the host).
    inside: Vec<(Option<u64>, String, String)>,
    /// The namespace's own ListenOverflows total, read through the master.
    ns_overflows: Vec<u64>,
    /// Per process of the stack: (soft nofile, CPUs).
    processes: Vec<(u64, String)>,
    /// Server-side local addresses of established connections seen during the load.
    addresses: BTreeSet<String>,
    /// CPUs of the generator's worker threads.
    worker_cpus: BTreeSet<String>,
}

struct Watch(Arc<Mutex<Seen>>);

impl TrialEvents for Watch {
    fn progress(&mut self, _progress: &Progress) {
        let mut seen = self.0.lock().unwrap();
        // This thread is where the load comes from: in the namespace, if any.
        for line in read("/proc/thread-self/net/tcp").lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(3) == Some(&"01") {
                if let Some(local) = fields.get(1) {
                    seen.addresses.insert(local.to_string());
                }
            }
        }
        if let Ok(tasks) = std::fs::read_dir("/proc/thread-self/../") {
            for task in tasks.flatten() {
                let dir = task.path();
                if read(&format!("{}/comm", dir.display())).starts_with("webtune-worker") {
                    let status = read(&format!("{}/status", dir.display()));
                    if let Some(cpus) = status
                        .lines()
                        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    {
                        seen.worker_cpus.insert(cpus.trim().to_string());
                    }
                }
            }
        }
    }

    fn level_done(&mut self, _index: usize, level: &LevelResult) {
        let mut seen = self.0.lock().unwrap();
        let Some(host) = level.result.server.as_ref().and_then(|s| s.host.as_ref()) else {
            return;
        };
        for p in &host.processes {
            let master = p.pid;
            let inside = std::process::Command::new("nsenter")
                .arg(format!("--net=/proc/{master}/ns/net"))
                .args(["cat", "/proc/sys/net/core/somaxconn"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            // The trial's thread is back in the host's namespace here; the stack still runs.
            let host_value = read("/proc/sys/net/core/somaxconn").trim().to_string();
            seen.inside.push((namespace_of(master), inside, host_value));
            let netstat = read(&format!("/proc/{master}/net/netstat"));
            let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
            if let (Some(names), Some(values)) = (lines.next(), lines.next()) {
                if let Some((_, v)) = names
                    .split_whitespace()
                    .zip(values.split_whitespace())
                    .find(|(n, _)| *n == "ListenOverflows")
                {
                    seen.ns_overflows.push(v.parse().unwrap_or(0));
                }
            }
            for pid in members(master) {
                if let Some(h) = webtune_lab::host::process_host(pid) {
                    seen.processes.push((h.nofile_soft, h.cpus));
                }
            }
        }
    }
}

#[test]
fn os_sysctls_apply_in_the_stacks_namespace_and_the_host_keeps_its_values() {
    let _one_at_a_time = serial();
    if !privileged() {
        support::opt_out::opt_out("root", "a network namespace needs CAP_SYS_ADMIN");
        return;
    }
    let host_before = read("/proc/sys/net/core/somaxconn");
    let wanted = if host_before.trim() == "77" {
        "78"
    } else {
        "77"
    };
    let trial = trial_of(
        "nginx",
        &[&format!("os.somaxconn={wanted}"), "os.tcp_fin_timeout=7"],
        load("/empty.gif", 2, 0.5),
    );
    let seen = Arc::new(Mutex::new(Seen::default()));
    let outcome = trial::run(&trial, &StopToken::new(), &mut Watch(Arc::clone(&seen))).unwrap();
    let server = outcome.levels[0].result.server.as_ref().unwrap();
    assert!(
        outcome.levels[0].result.responses > 0,
        "loopback inside works"
    );
    let host = server.host.as_ref().expect("a host section");
    assert!(host.netns.starts_with("net:["), "{host:?}");
    assert_eq!(host.sysctls["net.core.somaxconn"], wanted);
    assert_eq!(host.sysctls["net.ipv4.tcp_fin_timeout"], "7");
    let seen = seen.lock().unwrap();
    let (ns, inside, host_during) = seen.inside.first().cloned().expect("seen while running");
    let ns = ns.expect("the master's namespace");
    assert_eq!(host.netns, format!("net:[{ns}]"));
    assert_ne!(Some(ns), namespace_of(std::process::id() as i32));
    assert_eq!(inside, wanted, "the server's namespace has the value");
    assert_eq!(host_during, host_before.trim(), "the host keeps its value");
    assert_eq!(read("/proc/sys/net/core/somaxconn"), host_before);
    assert!(
        in_namespace(ns).is_empty(),
        "nothing is left in the namespace after the run"
    );
}

#[test]
fn a_small_somaxconn_overflows_and_the_counter_is_the_namespaces() {
    let _one_at_a_time = serial();
    if !privileged() {
        support::opt_out::opt_out("root", "a network namespace needs CAP_SYS_ADMIN");
        return;
    }
    // One Apache child that spends 5 ms per request, 1000 new connections a second: the
    // 16-deep listen queue overflows at once.
    let mut spec = load("/cpu/5000", 200, 1.5);
    spec.keepalive = false;
    spec.load = LoadMode::Open {
        rate: 1000.0,
        arrival: webtune_model::Arrival::Uniform,
    };
    spec.timeout_ms = 1000;
    let trial = trial_of(
        "apache-prefork",
        &[
            "os.somaxconn=16",
            "StartServers=1",
            "MinSpareServers=1",
            "MaxSpareServers=1",
            "ServerLimit=1",
            "MaxRequestWorkers=1",
        ],
        spec,
    );
    let seen = Arc::new(Mutex::new(Seen::default()));
    let outcome = trial::run(&trial, &StopToken::new(), &mut Watch(Arc::clone(&seen))).unwrap();
    let server = outcome.levels[0].result.server.as_ref().unwrap();
    let sampled: u64 = server.samples.iter().map(|s| s.listen_overflows).sum();
    let seen = seen.lock().unwrap();
    let ns_total = *seen.ns_overflows.first().expect("read in the namespace");
    assert!(sampled > 0, "overflows are seen: {server:?}");
    // The namespace was new: its counter holds this run's overflows alone, and the sampler
    // counted no more than that (a host-wide count would include other tenants').
    assert!(
        sampled <= ns_total,
        "sampled {sampled} > namespace's {ns_total}"
    );
    let text =
        webtune_report::server_summary::summarise(server, outcome.levels[0].result.responses);
    assert!(text.contains("namespace net:["), "{text}");
}

#[test]
fn addresses_spread_the_connections_over_every_address() {
    let _one_at_a_time = serial();
    let mut trial = trial_of("nginx", &[], load("/empty.gif", 6, 1.0));
    trial.host = HostSettings {
        addresses: 3,
        ..HostSettings::default()
    };
    trial.load.interval_ms = 200;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let outcome = trial::run(&trial, &StopToken::new(), &mut Watch(Arc::clone(&seen))).unwrap();
    let port = outcome.base_url.rsplit(':').next().unwrap().to_string();
    let port_hex = format!("{:04X}", port.parse::<u16>().unwrap());
    let seen = seen.lock().unwrap();
    for i in 1..=3 {
        let local = format!("0{i}00007F:{port_hex}");
        assert!(
            seen.addresses.contains(&local),
            "127.0.0.{i}:{port} served no connection; seen {:?}",
            seen.addresses
        );
    }
    let server = outcome.levels[0].result.server.as_ref().unwrap();
    assert_eq!(server.host.as_ref().map(|h| h.addresses), Some(3));
}

#[test]
fn nofile_and_cpu_sets_are_what_the_processes_report() {
    let _one_at_a_time = serial();
    let cpus = webtune_lab::host::online_cpus();
    let mut trial = trial_of(
        "apache-prefork",
        &["os.nofile=1000"],
        load("/empty.gif", 2, 0.6),
    );
    trial.load.interval_ms = 200;
    if cpus >= 2 {
        trial.host = HostSettings {
            server_cpus: Some(CpuSet::parse("1", cpus).unwrap()),
            client_cpus: Some(CpuSet::parse("0", cpus).unwrap()),
            addresses: 1,
        };
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let outcome = trial::run(&trial, &StopToken::new(), &mut Watch(Arc::clone(&seen))).unwrap();
    let host = outcome.levels[0]
        .result
        .server
        .as_ref()
        .unwrap()
        .host
        .clone()
        .unwrap();
    assert_eq!(host.processes.len(), 1, "{host:?}");
    assert_eq!(host.processes[0].nofile_soft, 1000);
    let seen = seen.lock().unwrap();
    assert!(seen.processes.len() >= 2, "the parent and its children");
    for (soft, pinned) in &seen.processes {
        assert_eq!(*soft, 1000, "every server process has the limit");
        if cpus >= 2 {
            assert_eq!(pinned, "1", "every server process runs on CPU 1");
        }
    }
    if cpus >= 2 {
        assert_eq!(host.server_cpus, "1");
        assert_eq!(host.client_cpus, "0");
        assert_eq!(
            seen.worker_cpus.iter().collect::<Vec<_>>(),
            vec!["0"],
            "the generator's workers run on CPU 0"
        );
    }
}
