//! Host knobs of a lab stack, without changing the host: the `os.*` parameters (network
//! sysctls, applied in the run's own network namespace by `netns`; `os.nofile`, the
//! servers' RLIMIT_NOFILE set between fork and exec), CPU sets for the stack and for the
//! generator (sched_setaffinity), and the number of loopback addresses the front server
//! listens on. It also reads back what the kernel applied (`/proc/PID/limits`,
//! `Cpus_allowed_list`) for the result's `server.host` section.

use crate::params::{ParamKind, ParamSpec, Settings, Value};
use crate::LabError;
use std::fmt;
use webtune_model::server::HostProcess;

/// The word an `os.*` parameter takes to leave the host's value alone (its default).
pub const HOST: &str = "host";
/// The word `os.nofile` takes to leave the servers with webtune's own limit (its default).
pub const INHERIT: &str = "inherit";

/// How a parameter's number becomes the sysctl's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The number itself.
    Single,
    /// The first of two numbers (`ip_local_port_range`): the second is kept.
    FirstOfTwo,
    /// The last of three numbers (`tcp_rmem`, `tcp_wmem`): min and default are kept.
    LastOfThree,
}

/// A network sysctl that Linux keeps per network namespace (checked on these machines:
/// docs/lab.md, "Host knobs"). `net.core.netdev_max_backlog` and `rmem_max` are host-wide
/// and therefore not parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sysctl {
    /// The parameter's name, `os.somaxconn`.
    pub param: &'static str,
    /// The sysctl's dotted name, `net.core.somaxconn`.
    pub name: &'static str,
    min: i64,
    max: i64,
    shape: Shape,
    meaning: &'static str,
}

/// Every namespaced network sysctl the lab sets.
pub const SYSCTLS: &[Sysctl] = &[
    Sysctl {
        param: "os.somaxconn",
        name: "net.core.somaxconn",
        min: 1,
        max: 65_535,
        shape: Shape::Single,
        meaning: "cap on every listen backlog (seed 004: 4096)",
    },
    Sysctl {
        param: "os.tcp_max_syn_backlog",
        name: "net.ipv4.tcp_max_syn_backlog",
        min: 1,
        max: 1_048_576,
        shape: Shape::Single,
        meaning: "half-open connections remembered per listener",
    },
    Sysctl {
        param: "os.tcp_syncookies",
        name: "net.ipv4.tcp_syncookies",
        min: 0,
        max: 2,
        shape: Shape::Single,
        meaning: "SYN cookies when the SYN queue overflows (0 off, 1 on overflow, 2 always)",
    },
    Sysctl {
        param: "os.tcp_tw_reuse",
        name: "net.ipv4.tcp_tw_reuse",
        min: 0,
        max: 2,
        shape: Shape::Single,
        meaning: "reuse TIME_WAIT ports for new outgoing connections (2 = loopback only)",
    },
    Sysctl {
        param: "os.tcp_fin_timeout",
        name: "net.ipv4.tcp_fin_timeout",
        min: 1,
        max: 600,
        shape: Shape::Single,
        meaning: "seconds an orphaned connection stays in FIN_WAIT_2",
    },
    Sysctl {
        param: "os.tcp_keepalive_time",
        name: "net.ipv4.tcp_keepalive_time",
        min: 1,
        max: 32_767,
        shape: Shape::Single,
        meaning: "idle seconds before TCP keep-alive probes",
    },
    Sysctl {
        param: "os.ip_local_port_min",
        name: "net.ipv4.ip_local_port_range",
        min: 1024,
        max: 60_000,
        shape: Shape::FirstOfTwo,
        meaning: "lowest ephemeral port (the highest stays); more ports, more client connections",
    },
    Sysctl {
        param: "os.tcp_rmem_max",
        name: "net.ipv4.tcp_rmem",
        min: 4096,
        max: 67_108_864,
        shape: Shape::LastOfThree,
        meaning: "largest TCP receive buffer, bytes (min and default stay)",
    },
    Sysctl {
        param: "os.tcp_wmem_max",
        name: "net.ipv4.tcp_wmem",
        min: 4096,
        max: 67_108_864,
        shape: Shape::LastOfThree,
        meaning: "largest TCP send buffer, bytes (min and default stay)",
    },
];

impl Sysctl {
    /// Its file under /proc/sys.
    pub fn path(&self) -> String {
        format!("/proc/sys/{}", self.name.replace('.', "/"))
    }

    /// The text to write, given the sysctl's current text (whose other numbers are kept).
    pub fn text_for(&self, value: i64, current: &str) -> Result<String, LabError> {
        let numbers: Vec<&str> = current.split_whitespace().collect();
        let bad = || {
            LabError::Host(format!(
                "{}: unexpected current value {current:?}",
                self.name
            ))
        };
        Ok(match self.shape {
            Shape::Single => value.to_string(),
            Shape::FirstOfTwo => {
                let high: i64 = numbers
                    .get(1)
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(bad)?;
                if value >= high {
                    return Err(LabError::Host(format!(
                        "{} {value} must stay below the highest ephemeral port {high}",
                        self.param
                    )));
                }
                format!("{value} {high}")
            }
            Shape::LastOfThree => {
                let (Some(min), Some(default)) = (numbers.first(), numbers.get(1)) else {
                    return Err(bad());
                };
                format!("{min} {default} {value}")
            }
        })
    }
}

/// The `os.*` parameters every started stack declares, after the servers' own.
pub fn parameters() -> Vec<ParamSpec> {
    let mut all: Vec<ParamSpec> = SYSCTLS
        .iter()
        .map(|s| ParamSpec {
            name: s.param.to_string(),
            kind: ParamKind::Int {
                min: s.min,
                max: s.max,
                keyword: Some(HOST),
            },
            default: Value::Word(HOST),
            directive: s.name,
            meaning: s.meaning,
        })
        .collect();
    all.push(ParamSpec {
        name: "os.nofile".to_string(),
        kind: ParamKind::Int {
            min: 64,
            max: nofile_hard_limit() as i64,
            keyword: Some(INHERIT),
        },
        default: Value::Word(INHERIT),
        directive: "RLIMIT_NOFILE",
        meaning: "open-file limit of the server processes, set before exec (max: the hard limit)",
    });
    all
}

/// The hard RLIMIT_NOFILE of this process: the most `os.nofile` can be (nobody without
/// CAP_SYS_RESOURCE may raise it, root included on these machines). "Unlimited" is read
/// as 1,048,576, the kernel's default `fs.nr_open`.
pub fn nofile_hard_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 1_048_576;
    }
    lim.rlim_max.min(1_048_576)
}

/// The line that refuses `os.nofile` above the hard limit (also used for assignments the
/// range check refused).
pub fn nofile_refusal(value: &str) -> LabError {
    LabError::Host(format!(
        "os.nofile {value} is above the hard open-file limit {hard} of this process, which \
         only CAP_SYS_RESOURCE may raise (root lacks it here); use at most {hard}",
        hard = nofile_hard_limit()
    ))
}

/// The `os.*` values of a stack's settings that differ from the host's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OsValues {
    /// Network sysctls to set in a private namespace (empty: no namespace).
    pub sysctls: Vec<(Sysctl, i64)>,
    /// RLIMIT_NOFILE (soft) for the server processes.
    pub nofile: Option<u64>,
}

impl OsValues {
    pub fn from_settings(settings: &Settings) -> OsValues {
        let sysctls = SYSCTLS
            .iter()
            .filter_map(|s| {
                settings
                    .get(s.param)
                    .and_then(|v| v.as_int())
                    .map(|v| (*s, v))
            })
            .collect();
        let nofile = settings
            .get("os.nofile")
            .and_then(|v| v.as_int())
            .map(|n| n as u64);
        OsValues { sysctls, nofile }
    }

    /// Does the run need a private network namespace?
    pub fn needs_namespace(&self) -> bool {
        !self.sysctls.is_empty()
    }
}

/// Refuse `os.*` network parameters without the privilege a network namespace needs,
/// before anything starts. `cap_eff` is the effective capability mask
/// (`CapEff` of /proc/self/status); None when it cannot be read.
pub fn check_namespace_privilege(os: &OsValues, cap_eff: Option<u64>) -> Result<(), LabError> {
    const CAP_SYS_ADMIN: u32 = 21;
    let Some((first, _)) = os.sysctls.first() else {
        return Ok(());
    };
    if cap_eff.is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0) {
        return Ok(());
    }
    Err(LabError::Host(format!(
        "{} needs a private network namespace, which needs root (CAP_SYS_ADMIN); run as \
         root or leave the os.* network parameters at `host`",
        first.param
    )))
}

/// `check_namespace_privilege` for this process and these settings: refuses `os.*`
/// network parameters without CAP_SYS_ADMIN before anything starts.
pub fn check_privilege(settings: &Settings) -> Result<(), LabError> {
    check_namespace_privilege(&OsValues::from_settings(settings), effective_capabilities())
}

/// This process's effective capabilities.
pub fn effective_capabilities() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

/// A set of CPUs, as `taskset -c` and `Cpus_allowed_list` write it: "1", "0-1", "0,2-3".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSet(Vec<usize>);

impl CpuSet {
    /// Parse a list; every CPU must exist on this host (`online` of them, numbered 0…).
    pub fn parse(text: &str, online: usize) -> Result<CpuSet, LabError> {
        let bad = |why: String| LabError::Host(format!("bad CPU list {text:?}: {why}"));
        let mut cpus = Vec::new();
        for part in text.split(',').map(str::trim) {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let num = |s: &str| -> Result<usize, LabError> {
                s.parse()
                    .map_err(|_| bad("write CPU numbers like 0, 0-1 or 0,2-3".into()))
            };
            let (lo, hi) = (num(lo)?, num(hi)?);
            if lo > hi {
                return Err(bad(format!("{lo}-{hi} runs backwards")));
            }
            if hi >= online {
                return Err(bad(format!(
                    "CPU {hi} does not exist (this host has CPUs 0-{})",
                    online.saturating_sub(1)
                )));
            }
            cpus.extend(lo..=hi);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuSet(cpus))
    }

    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    /// The kernel's mask.
    pub fn to_mask(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in &self.0 {
            // SAFETY: CPU_SET only sets a bit inside the array (it checks the bound).
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        set
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            parts.push(if start == end {
                start.to_string()
            } else {
                format!("{start}-{end}")
            });
            i += 1;
        }
        f.write_str(&parts.join(","))
    }
}

/// CPUs the host has online (the highest number + 1 that sched_getaffinity may name).
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    if n > 0 {
        n as usize
    } else {
        1
    }
}

/// Host settings given as flags rather than parameters: where the stack and the generator
/// run, and on how many loopback addresses the front server listens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostSettings {
    /// Pin every server process here (inherited by their children).
    pub server_cpus: Option<CpuSet>,
    /// Pin the generator's threads here.
    pub client_cpus: Option<CpuSet>,
    /// Loopback addresses of the front server, 127.0.0.1 … 127.0.0.N (0 or 1: one).
    pub addresses: u32,
}

impl HostSettings {
    /// The most addresses: 127.0.0.1 … 127.0.0.254.
    pub const MAX_ADDRESSES: u32 = 254;

    pub fn check(&self) -> Result<(), LabError> {
        if self.addresses > Self::MAX_ADDRESSES {
            return Err(LabError::Host(format!(
                "--addresses {}: at most {} (127.0.0.1 … 127.0.0.{})",
                self.addresses,
                Self::MAX_ADDRESSES,
                Self::MAX_ADDRESSES
            )));
        }
        Ok(())
    }

    /// Is anything set?
    pub fn is_default(&self) -> bool {
        self.server_cpus.is_none() && self.client_cpus.is_none() && self.addresses <= 1
    }
}

/// What a server process must get between fork and exec. Built before the fork so the
/// child only makes two system calls. The default changes nothing.
#[derive(Clone, Copy, Default)]
pub struct ExecLimits {
    pub cpus: Option<libc::cpu_set_t>,
    pub nofile: Option<u64>,
}

impl ExecLimits {
    /// Apply in the child (async-signal-safe: setrlimit and sched_setaffinity only).
    pub fn apply_in_child(&self) -> std::io::Result<()> {
        if let Some(n) = self.nofile {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit/setrlimit read and write the struct we pass.
            unsafe {
                if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                lim.rlim_cur = n.min(lim.rlim_max);
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        if let Some(set) = &self.cpus {
            // SAFETY: sched_setaffinity reads the mask we pass; pid 0 is this process.
            if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) }
                != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Pins the calling thread (and the threads it starts from now on) to a CPU set until
/// dropped, then gives it back the CPUs it had.
pub struct ThreadPin {
    before: libc::cpu_set_t,
    /// A thread's affinity: the guard must stay on the thread that made it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl ThreadPin {
    pub fn pin(cpus: &CpuSet) -> Result<ThreadPin, LabError> {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: an all-zero cpu_set_t is valid; the calls read/write the struct we pass
        // and pid 0 means the calling thread.
        unsafe {
            let mut before: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, size, &mut before) != 0 {
                return Err(LabError::io(
                    "reading this thread's CPUs",
                    std::io::Error::last_os_error(),
                ));
            }
            let mask = cpus.to_mask();
            if libc::sched_setaffinity(0, size, &mask) != 0 {
                return Err(LabError::io(
                    format!("pinning the generator to CPUs {cpus}"),
                    std::io::Error::last_os_error(),
                ));
            }
            Ok(ThreadPin {
                before,
                _not_send: std::marker::PhantomData,
            })
        }
    }
}

impl Drop for ThreadPin {
    fn drop(&mut self) {
        // SAFETY: restores the mask read in `pin`, for the calling thread.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.before);
        }
    }
}

/// One process's open-file limit and CPUs, as the kernel reports them now.
pub fn process_host(pid: i32) -> Option<HostProcess> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let (soft, hard) = parse_nofile(&limits)?;
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    Some(HostProcess {
        process: field("Name:"),
        pid,
        nofile_soft: soft,
        nofile_hard: hard,
        cpus: field("Cpus_allowed_list:"),
    })
}

/// Soft and hard "Max open files" of a /proc/PID/limits text.
fn parse_nofile(limits: &str) -> Option<(u64, u64)> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut numbers = line["Max open files".len()..]
        .split_whitespace()
        .map(|w| match w {
            "unlimited" => Some(u64::MAX),
            _ => w.parse().ok(),
        });
    Some((numbers.next()??, numbers.next()??))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_print_like_taskset() {
        let set = CpuSet::parse("0,2-3", 4).unwrap();
        assert_eq!(set.cpus(), &[0, 2, 3]);
        assert_eq!(set.to_string(), "0,2-3");
        assert_eq!(CpuSet::parse("1", 2).unwrap().to_string(), "1");
        assert_eq!(CpuSet::parse("0-1,1", 2).unwrap().to_string(), "0-1");
        let e = CpuSet::parse("2", 2).unwrap_err().to_string();
        assert!(
            e.contains("CPU 2 does not exist (this host has CPUs 0-1)"),
            "{e}"
        );
        assert!(CpuSet::parse("1-0", 2).is_err());
        assert!(CpuSet::parse("a", 2).is_err());
        assert!(CpuSet::parse("", 2).is_err());
    }

    #[test]
    fn sysctl_text_keeps_the_other_numbers() {
        let find = |p: &str| SYSCTLS.iter().find(|s| s.param == p).unwrap();
        assert_eq!(find("os.somaxconn").text_for(128, "4096").unwrap(), "128");
        assert_eq!(
            find("os.tcp_rmem_max")
                .text_for(8_388_608, "4096\t131072\t6291456")
                .unwrap(),
            "4096 131072 8388608"
        );
        assert_eq!(
            find("os.ip_local_port_min")
                .text_for(1024, "32768\t60999")
                .unwrap(),
            "1024 60999"
        );
        assert!(find("os.ip_local_port_min")
            .text_for(60_000, "32768 50000")
            .is_err());
        assert_eq!(find("os.somaxconn").path(), "/proc/sys/net/core/somaxconn");
    }

    #[test]
    fn os_parameters_default_to_the_host() {
        let specs = parameters();
        let settings = Settings::from_assignments("nginx", &specs, &[]).unwrap();
        let os = OsValues::from_settings(&settings);
        assert!(!os.needs_namespace() && os.nofile.is_none());
        let set = Settings::from_assignments(
            "nginx",
            &specs,
            &[
                ("os.somaxconn".into(), "128".into()),
                ("os.nofile".into(), "1024".into()),
            ],
        )
        .unwrap();
        let os = OsValues::from_settings(&set);
        assert!(os.needs_namespace());
        assert_eq!(os.sysctls[0].0.name, "net.core.somaxconn");
        assert_eq!(os.sysctls[0].1, 128);
        assert_eq!(os.nofile, Some(1024));
        let too_many = (nofile_hard_limit() + 1).to_string();
        assert!(
            Settings::from_assignments("nginx", &specs, &[("os.nofile".into(), too_many)]).is_err()
        );
    }

    #[test]
    fn network_parameters_are_refused_without_the_privilege() {
        let specs = parameters();
        let set =
            Settings::from_assignments("nginx", &specs, &[("os.somaxconn".into(), "128".into())])
                .unwrap();
        let os = OsValues::from_settings(&set);
        // Root's mask here, then one without CAP_SYS_ADMIN, then none readable.
        assert!(check_namespace_privilege(&os, Some(0x1fffeffffff)).is_ok());
        let e = check_namespace_privilege(&os, Some(0x1fffeffffff & !(1 << 21)))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("os.somaxconn needs a private network namespace"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        assert!(check_namespace_privilege(&os, None).is_err());
        // os.nofile alone needs no namespace and no privilege.
        assert!(check_namespace_privilege(&OsValues::default(), Some(0)).is_ok());
    }

    #[test]
    fn limits_files_parse() {
        let text = "Limit                     Soft Limit           Hard Limit           Units\n\
                    Max processes             7823                 7823                 processes\n\
                    Max open files            1024                 20000                files\n";
        assert_eq!(parse_nofile(text), Some((1024, 20000)));
        let me = process_host(std::process::id() as i32).unwrap();
        assert!(me.nofile_hard >= me.nofile_soft && !me.cpus.is_empty());
    }
}
