//! Host facts from /proc and /sys: cores, memory, the sysctls that bound queues and ports,
//! and the running servers (nginx, Apache, php-fpm, MariaDB/MySQL) with each process's
//! PSS (from /proc/PID/smaps_rollup: shared pages counted once, unlike RSS) and its open
//! files limit (/proc/PID/limits). Only reads.

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use webtune_conf::procfs;

/// The sysctls the rules look at, by their dotted names.
pub const SYSCTLS: &[&str] = &[
    "net.core.somaxconn",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_tw_reuse",
    "net.ipv4.tcp_fin_timeout",
    "fs.file-max",
    "fs.nr_open",
    "vm.swappiness",
];

/// What the advisor read about the host.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct HostFacts {
    /// Where the facts come from when not this host's /proc ("--cores 8 --ram 16 GiB",
    /// "result.json"); empty for this host.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub judged_for: String,
    pub cores: u32,
    pub mem_total_kib: u64,
    pub mem_available_kib: u64,
    /// Swap configured and free, KiB (/proc/meminfo; 0 for another machine).
    pub swap_total_kib: u64,
    pub swap_free_kib: u64,
    /// Sysctl name → value as the kernel prints it (whitespace collapsed).
    pub sysctls: BTreeMap<String, String>,
    /// The running servers, one entry per server kind and master process.
    pub servers: Vec<RunningServer>,
    /// tmpfs mounts (mount point, size limit in KiB): what is written there lives in RAM.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tmpfs: Vec<(PathBuf, u64)>,
}

/// One running server: its master and its workers.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct RunningServer {
    /// "nginx", "apache2", "php-fpm", "mariadb".
    pub kind: String,
    pub master_pid: i32,
    /// The master's command line.
    pub cmdline: String,
    /// The main config file named on the command line, or the server's default.
    pub config: Option<PathBuf>,
    /// `-D NAME` arguments (Apache).
    pub defines: Vec<String>,
    /// Worker processes (the master's descendants of the same program).
    pub workers: u32,
    /// PSS of the master and of all workers, KiB.
    pub master_pss_kib: u64,
    pub workers_pss_kib: u64,
    /// RSS of all workers, KiB (to show how much RSS would overcount).
    pub workers_rss_kib: u64,
    /// Soft and hard "Max open files" of a worker (of the master when it has none).
    pub nofile_soft: Option<u64>,
    pub nofile_hard: Option<u64>,
}

impl RunningServer {
    /// Mean PSS per worker, KiB.
    pub fn pss_per_worker_kib(&self) -> Option<u64> {
        (self.workers > 0 && self.workers_pss_kib > 0)
            .then(|| self.workers_pss_kib / self.workers as u64)
    }
}

/// The machine to judge a tree for when it is not this one.
#[derive(Debug, Clone, Default)]
pub struct HostChoice {
    /// `--cores N`.
    pub cores: Option<u32>,
    /// `--ram SIZE`, in KiB.
    pub ram_kib: Option<u64>,
    /// `--host-from FILE`: the `host` of a saved `webtune advise --json` (cores, RAM,
    /// sysctls), or a saved run's `server.cpu_count` and `server.host.sysctls`.
    pub from: Option<PathBuf>,
}

impl HostChoice {
    pub fn is_this_host(&self) -> bool {
        self.cores.is_none() && self.ram_kib.is_none() && self.from.is_none()
    }
}

// What a RAM size reads as lives in the model, where `advise --ram`'s grammar reads it too.
pub use webtune_model::units::parse_ram;

impl HostFacts {
    /// This host, or the machine `choice` names: its facts replace this host's, and this
    /// host's running servers (which measure nothing of that machine) are left out.
    pub fn choose(choice: &HostChoice) -> Result<HostFacts, crate::AdviseError> {
        if choice.is_this_host() {
            return Ok(HostFacts::read());
        }
        let mut said = Vec::new();
        let mut h = match &choice.from {
            Some(file) => {
                let h = from_file(file)?;
                said.push(file.display().to_string());
                h
            }
            None => HostFacts::default(),
        };
        if let Some(c) = choice.cores {
            h.cores = c.max(1);
            said.push(format!("--cores {c}"));
        }
        if let Some(k) = choice.ram_kib {
            h.mem_total_kib = k;
            h.mem_available_kib = k;
            said.push(format!("--ram {:.1} GiB", k as f64 / (1u64 << 20) as f64));
        }
        let this = HostFacts::read();
        if h.cores == 0 {
            h.cores = this.cores;
            said.push("cores of this host (not given)".into());
        }
        if h.mem_total_kib == 0 {
            h.mem_total_kib = this.mem_total_kib;
            h.mem_available_kib = this.mem_available_kib;
            said.push("RAM of this host (not given: --ram SIZE)".into());
        }
        if h.sysctls.is_empty() {
            said.push("sysctls unknown (the rules that need them are skipped)".into());
        }
        h.servers.clear();
        if choice.from.is_none() {
            h.swap_total_kib = 0;
            h.swap_free_kib = 0;
        }
        h.judged_for = said.join(", ");
        Ok(h)
    }

    /// Read this host.
    pub fn read() -> HostFacts {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let field = |name: &str| {
            meminfo
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        let sysctls = SYSCTLS
            .iter()
            .filter_map(|name| {
                let path = format!("/proc/sys/{}", name.replace('.', "/"));
                let v = std::fs::read_to_string(path).ok()?;
                Some((
                    name.to_string(),
                    v.split_whitespace().collect::<Vec<_>>().join(" "),
                ))
            })
            .collect();
        HostFacts {
            judged_for: String::new(),
            cores,
            mem_total_kib: field("MemTotal"),
            mem_available_kib: field("MemAvailable"),
            swap_total_kib: field("SwapTotal"),
            swap_free_kib: field("SwapFree"),
            sysctls,
            servers: running_servers(),
            tmpfs: tmpfs_mounts(field("MemTotal")),
        }
    }

    pub fn sysctl_int(&self, name: &str) -> Option<i64> {
        self.sysctls
            .get(name)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// The number of local ports for outgoing connections (ip_local_port_range).
    pub fn ephemeral_ports(&self) -> Option<i64> {
        let r = self.sysctls.get("net.ipv4.ip_local_port_range")?;
        let mut it = r.split_whitespace().filter_map(|v| v.parse::<i64>().ok());
        let (lo, hi) = (it.next()?, it.next()?);
        Some(hi - lo + 1)
    }

    /// The running server of a kind started with the config `main` (the one whose
    /// processes measure the config being read).
    pub fn server_for(&self, kind: &str, main: &std::path::Path) -> Option<&RunningServer> {
        self.servers
            .iter()
            .find(|s| s.kind == kind && s.config.as_deref() == Some(main))
    }
}

/// tmpfs mounts from /proc/mounts with their `size=` (the kernel's default: half of RAM).
fn tmpfs_mounts(mem_total_kib: u64) -> Vec<(PathBuf, u64)> {
    let text = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 4 || f[2] != "tmpfs" {
                return None;
            }
            let size = f[3]
                .split(',')
                .find_map(|o| o.strip_prefix("size="))
                .and_then(webtune_conf::ini::parse_size)
                .map_or(mem_total_kib / 2, |b| b / 1024);
            Some((PathBuf::from(f[1].replace("\\040", " ")), size))
        })
        .collect()
}

/// The host facts of a saved `webtune advise --json` (its `host`), or of a saved run
/// (`server.cpu_count`, `server.host.sysctls`).
fn from_file(file: &std::path::Path) -> Result<HostFacts, crate::AdviseError> {
    let bad = |message: String| crate::AdviseError::BadResult {
        path: file.to_path_buf(),
        message,
    };
    let text = webtune_conf::limits::read_capped(file, 256 << 20, "a --host-from file")?;
    let v: serde_json::Value =
        serde_json::from_slice(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    if let Some(host) = v.get("host").filter(|h| h.get("cores").is_some()) {
        let h: HostFacts = serde_json::from_value(host.clone())
            .map_err(|e| bad(format!("its \"host\" is not an advise host: {e}")))?;
        return Ok(h);
    }
    let Some(server) = v.get("server").filter(|s| s.get("cpu_count").is_some()) else {
        return Err(bad(
            "neither a `webtune advise --json` (\"host\") nor a run with server samples \
             (\"server\".\"cpu_count\")"
                .into(),
        ));
    };
    let mut h = HostFacts {
        cores: server["cpu_count"]
            .as_u64()
            .unwrap_or(0)
            .min(u32::MAX as u64) as u32,
        ..HostFacts::default()
    };
    if let Some(sysctls) = server
        .get("host")
        .and_then(|x| x.get("sysctls"))
        .and_then(|x| x.as_object())
    {
        for (k, val) in sysctls {
            if let Some(s) = val.as_str() {
                h.sysctls.insert(
                    k.clone(),
                    s.split_whitespace().collect::<Vec<_>>().join(" "),
                );
            }
        }
    }
    Ok(h)
}

/// The server kind a command name belongs to.
fn kind_of(comm: &str) -> Option<&'static str> {
    match comm {
        "nginx" => Some("nginx"),
        "apache2" | "httpd" => Some("apache2"),
        "mariadbd" | "mysqld" => Some("mariadb"),
        c if c.starts_with("php-fpm") => Some("php-fpm"),
        _ => None,
    }
}

fn argv(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn pss_kib(pid: i32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let get = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (get("Pss:"), get("Rss:"))
}

/// Soft and hard "Max open files" of a process.
pub fn nofile(pid: i32) -> (Option<u64>, Option<u64>) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap_or_default();
    parse_nofile(&text)
}

fn parse_nofile(text: &str) -> (Option<u64>, Option<u64>) {
    let Some(line) = text.lines().find(|l| l.starts_with("Max open files")) else {
        return (None, None);
    };
    let mut nums = line["Max open files".len()..].split_whitespace().map(|v| {
        if v == "unlimited" {
            Some(u64::MAX)
        } else {
            v.parse().ok()
        }
    });
    (nums.next().flatten(), nums.next().flatten())
}

/// The config file a master was started with, from its command line.
fn config_from_args(kind: &str, args: &[String]) -> (Option<PathBuf>, Vec<String>) {
    let after = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
    };
    let prefixed = |prefix: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(prefix).map(PathBuf::from))
    };
    match kind {
        "nginx" => (Some(nginx_config(args)), Vec::new()),
        "apache2" => {
            let defines = args
                .iter()
                .enumerate()
                .filter(|(_, a)| *a == "-D")
                .filter_map(|(i, _)| args.get(i + 1).cloned())
                .collect();
            let root = after("-d");
            let file = after("-f").map(|f| match &root {
                Some(r) if f.is_relative() => r.join(f),
                _ => f,
            });
            (
                file.or_else(|| root.map(|r| r.join("apache2.conf")))
                    .or_else(|| Some(PathBuf::from("/etc/apache2/apache2.conf"))),
                defines,
            )
        }
        "php-fpm" => {
            // The master renames itself: "php-fpm: master process (/etc/php/8.2/fpm/php-fpm.conf)".
            let joined = args.join(" ");
            let from_title = joined
                .split_once('(')
                .and_then(|(_, r)| r.split_once(')'))
                .map(|(p, _)| PathBuf::from(p));
            (
                after("-y").or_else(|| after("--fpm-config")).or(from_title),
                Vec::new(),
            )
        }
        "mariadb" => (
            prefixed("--defaults-file=").or_else(|| Some(PathBuf::from("/etc/mysql/my.cnf"))),
            Vec::new(),
        ),
        _ => (None, Vec::new()),
    }
}

/// The config an nginx master runs: nginx rewrites its process title to "nginx: master
/// process /usr/sbin/nginx -c FILE" (one string with spaces in /proc/PID/cmdline), so the
/// words are split again; `-c FILE`, `-cFILE`, a relative FILE under `-p PREFIX` (else
/// Debian's compiled-in prefix /usr/share/nginx); without `-c`, /etc/nginx/nginx.conf.
fn nginx_config(args: &[String]) -> PathBuf {
    let words: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    let flag = |f: &str| {
        words.iter().enumerate().find_map(|(i, w)| {
            let rest = w.strip_prefix(f)?;
            if rest.is_empty() {
                words.get(i + 1).map(|v| v.to_string())
            } else {
                Some(rest.to_string())
            }
        })
    };
    let Some(conf) = flag("-c").map(PathBuf::from) else {
        return PathBuf::from("/etc/nginx/nginx.conf");
    };
    if conf.is_absolute() {
        return conf;
    }
    let prefix = flag("-p").unwrap_or_else(|| "/usr/share/nginx".into());
    PathBuf::from(prefix).join(conf)
}

/// Every running server: masters are the processes of a kind whose parent is not of the
/// same kind; the rest are counted as their master's workers.
pub fn running_servers() -> Vec<RunningServer> {
    let stats: Vec<procfs::ProcStat> = procfs::all_pids()
        .into_iter()
        .filter_map(procfs::read_stat)
        .filter(|s| s.state != 'Z')
        .collect();
    let kind_of_pid = |pid: i32| {
        stats
            .iter()
            .find(|s| s.pid == pid)
            .and_then(|s| kind_of(&s.comm))
    };
    let mut servers = Vec::new();
    for s in &stats {
        let Some(kind) = kind_of(&s.comm) else {
            continue;
        };
        if kind_of_pid(s.ppid) == Some(kind) {
            continue;
        }
        let args = argv(s.pid);
        let (config, defines) = config_from_args(kind, &args);
        let (master_pss, _) = pss_kib(s.pid);
        let mut server = RunningServer {
            kind: kind.to_string(),
            master_pid: s.pid,
            cmdline: args.join(" "),
            config,
            defines,
            master_pss_kib: master_pss,
            ..RunningServer::default()
        };
        let mut limits_from = s.pid;
        for w in stats
            .iter()
            .filter(|w| descends_from(&stats, w.pid, s.pid) && kind_of(&w.comm) == Some(kind))
        {
            let (pss, rss) = pss_kib(w.pid);
            server.workers += 1;
            server.workers_pss_kib += pss;
            server.workers_rss_kib += rss;
            limits_from = w.pid;
        }
        let (soft, hard) = nofile(limits_from);
        server.nofile_soft = soft;
        server.nofile_hard = hard;
        servers.push(server);
    }
    servers
}

fn descends_from(stats: &[procfs::ProcStat], pid: i32, ancestor: i32) -> bool {
    let mut cur = pid;
    for _ in 0..8 {
        let Some(s) = stats.iter().find(|s| s.pid == cur) else {
            return false;
        };
        if s.ppid == ancestor {
            return true;
        }
        cur = s.ppid;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_cmdlines() {
        let text = "Limit Soft Limit Hard Limit Units\nMax open files            1024                 524288               files\n";
        assert_eq!(parse_nofile(text), (Some(1024), Some(524288)));
        let a: Vec<String> = [
            "/usr/sbin/apache2",
            "-d",
            "/etc/apache2-x",
            "-D",
            "FOO",
            "-k",
            "start",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (f, d) = config_from_args("apache2", &a);
        assert_eq!(f.unwrap(), PathBuf::from("/etc/apache2-x/apache2.conf"));
        assert_eq!(d, vec!["FOO"]);
        // nginx's rewritten title: one argument with spaces.
        for (title, conf) in [
            (
                "nginx: master process /usr/sbin/nginx -c /srv/x/nginx.conf",
                "/srv/x/nginx.conf",
            ),
            (
                "nginx: master process nginx -p /srv/y/ -c conf/n.conf -g daemon off;",
                "/srv/y/conf/n.conf",
            ),
            (
                "nginx: master process /usr/sbin/nginx -c/srv/z.conf",
                "/srv/z.conf",
            ),
            (
                "nginx: master process /usr/sbin/nginx -g daemon on; master_process on;",
                "/etc/nginx/nginx.conf",
            ),
        ] {
            assert_eq!(
                config_from_args("nginx", &[title.to_string()]).0.unwrap(),
                PathBuf::from(conf),
                "{title}"
            );
        }
        let a = vec!["php-fpm: master process (/etc/php/8.2/fpm/php-fpm.conf)".to_string()];
        assert_eq!(
            config_from_args("php-fpm", &a).0.unwrap(),
            PathBuf::from("/etc/php/8.2/fpm/php-fpm.conf")
        );
    }

    #[test]
    fn this_host_has_cores_and_memory() {
        let h = HostFacts::read();
        assert!(h.cores >= 1);
        assert!(h.mem_total_kib > 0 && h.mem_available_kib <= h.mem_total_kib);
        assert!(h.sysctl_int("net.core.somaxconn").is_some());
        assert!(h.ephemeral_ports().unwrap() > 0);
    }
}
