//! A private single-node Slurm cluster for a test (issue 37): munged, slurmctld and slurmd
//! from Debian's packages, run from a directory of the test's own under
//! `/tmp/webtune-slurm-test/` with their own slurm.conf, munge key, socket, ports, state
//! and logs. Nothing in /etc is read or changed (`SLURM_CONF` points the clients at the
//! private conf; munged and the daemons get every path on their command line).
//!
//! Nothing is left behind: dropping the `Cluster` cancels its jobs and stops the daemons,
//! also when the test fails. Each daemon runs in a session of its own and dies with the
//! test (PR_SET_PDEATHSIG), and a run directory is named after its owner (pid and start
//! time), so a test killed with SIGKILL has its leftovers reaped by the next one: whatever
//! names the directory on its command line or works in it (slurmstepd, whose cwd is the
//! daemons', and the jobs' scripts and shards), then the directory.
#![allow(dead_code)] // each test binary uses its own part of it

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use webtune_testkit::wait_until;

/// Where every test's private cluster lives, one directory per run.
const BASE: &str = "/tmp/webtune-slurm-test";
/// The node's name in the private slurm.conf (slurmd is started as it, with `-N`).
const NODE: &str = "webtune-ci";
/// The programs the cluster and the recipes need.
const PROGRAMS: [&str; 9] = [
    "munged",
    "slurmctld",
    "slurmd",
    "sbatch",
    "srun",
    "squeue",
    "scontrol",
    "sinfo",
    "scancel",
];

pub struct Cluster {
    pub dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<Child>,
}

/// A job's end as `scontrol` reports it: its state (COMPLETED, FAILED, CANCELLED, …) and
/// exit code ("2:0": the status, then the signal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnd {
    pub state: String,
    pub exit_code: String,
}

fn installed(program: &str) -> bool {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(program).exists())
}

/// Field 22 of /proc/PID/stat: the process's start time in clock ticks since boot.
fn start_ticks(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Live processes that name `dir` on their command line or work inside it.
fn processes_in(dir: &Path) -> Vec<i32> {
    let needle = dir.to_string_lossy().into_owned();
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(") ")
                .is_some_and(|(_, r)| r.starts_with('Z'));
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
                .unwrap_or_default();
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"))
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            !zombie && (cmdline.contains(&needle) || cwd.starts_with(&needle))
        })
        .collect()
}

/// SIGKILL whatever runs in or for `dir` until nothing does (or 10 s have passed).
fn kill_all_in(dir: &Path) -> Vec<i32> {
    let mut left = Vec::new();
    wait_until(Duration::from_secs(10), || {
        left = processes_in(dir);
        for &pid in &left {
            // SAFETY: kill only sends a signal; a pid gone meanwhile yields ESRCH.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        left.is_empty()
    });
    left
}

/// Reap the clusters of tests that are gone (killed before their `Drop` ran).
fn reap_stale() {
    let Ok(entries) = std::fs::read_dir(BASE) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let owner = name
            .strip_prefix("run-")
            .and_then(|r| r.split_once('-'))
            .and_then(|(pid, ticks)| Some((pid.parse::<i32>().ok()?, ticks.parse::<u64>().ok()?)));
        if let Some((pid, ticks)) = owner {
            if start_ticks(pid) == Some(ticks) {
                continue; // its test still runs
            }
        }
        let dir = entry.path();
        let left = kill_all_in(&dir);
        assert!(
            left.is_empty(),
            "stale cluster {}: {left:?} survive SIGKILL",
            dir.display()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Start `command` as a daemon of the cluster: in a session of its own (so no terminal
/// signal reaches it), killed when the test's thread ends (PR_SET_PDEATHSIG), output in
/// `log`.
fn spawn_daemon(mut command: Command, log: &Path, cwd: &Path) -> Child {
    let out = std::fs::File::create(log).expect("daemon log");
    let err = out.try_clone().expect("daemon log");
    command
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    // SAFETY: setsid and prctl are async-signal-safe and touch no memory of ours.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
        .spawn()
        .unwrap_or_else(|e| panic!("starting {command:?}: {e}"))
}

fn mkdir(path: &Path, mode: u32) {
    std::fs::create_dir_all(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

impl Cluster {
    /// Start the cluster; None when the run opts out of what it needs (`slurm`, `root`).
    pub fn start() -> Option<Cluster> {
        if let Some(missing) = PROGRAMS.iter().find(|p| !installed(p)) {
            webtune_testkit::opt_out::opt_out("slurm", &format!("{missing} is not installed"));
            return None;
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            webtune_testkit::opt_out::opt_out(
                "root",
                "slurmd starts jobs, and munged trusts, as root only",
            );
            return None;
        }
        reap_stale();
        let me = std::process::id() as i32;
        let ticks = start_ticks(me).expect("own start time");
        let dir = Path::new(BASE).join(format!("run-{me}-{ticks}"));
        mkdir(Path::new(BASE), 0o755);
        mkdir(&dir, 0o755);
        // munged wants its key private and its socket's directory open to all (clients
        // connect there), each in a directory of its own.
        for (sub, mode) in [("munge-key", 0o700), ("munge-run", 0o755), ("state", 0o700)] {
            mkdir(&dir.join(sub), mode);
        }
        for sub in ["spool", "log", "runs"] {
            mkdir(&dir.join(sub), 0o755);
        }
        let key = dir.join("munge-key/munge.key");
        let mut bytes = vec![0u8; 1024];
        use std::io::Read;
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .expect("random munge key");
        std::fs::write(&key, &bytes).expect("munge key");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let socket = dir.join("munge-run/munge.socket");
        let mut munged = Command::new("munged");
        munged
            .arg("--foreground")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!(
                "--pid-file={}",
                dir.join("munge-run/munged.pid").display()
            ))
            .arg(format!(
                "--seed-file={}",
                dir.join("munge-run/munged.seed").display()
            ))
            .arg(format!(
                "--log-file={}",
                dir.join("log/munged.log").display()
            ));
        let mut cluster = Cluster {
            conf: dir.join("slurm.conf"),
            dir: dir.clone(),
            daemons: Vec::new(),
        };
        let munged = spawn_daemon(munged, &dir.join("log/munged.out"), &dir);
        cluster.daemons.push(munged);
        assert!(
            wait_until(Duration::from_secs(20), || socket.exists()),
            "munged did not create its socket:\n{}",
            cluster.logs()
        );
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
        let host = host
            .trim()
            .split('.')
            .next()
            .unwrap_or("localhost")
            .to_string();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (ctld_port, node_port) = (webtune_testkit::free_port(), webtune_testkit::free_port());
        let d = dir.display();
        // The smallest conf that runs jobs without cgroups, accounting or a database. With
        // few CPUs, FORCE:4 lets the shards of several jobs share them (LAB-NOTES).
        let conf = format!(
            "ClusterName=webtuneci\n\
             SlurmctldHost={host}(127.0.0.1)\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={node_port}\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             AuthInfo=socket={socket}\n\
             CredType=cred/munge\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/state/slurmctld.pid\n\
             SlurmdPidFile={d}/spool/slurmd.pid\n\
             SlurmctldLogFile={d}/log/slurmctld.log\n\
             SlurmdLogFile={d}/log/slurmd.log\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             SchedulerType=sched/builtin\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\n\
             MpiDefault=none\n\
             SwitchType=switch/none\n\
             ReturnToService=2\n\
             NodeName={NODE} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN\n\
             PartitionName=ci Nodes={NODE} Default=YES OverSubscribe=FORCE:4 MaxTime=10 \
             State=UP\n",
            socket = socket.display()
        );
        std::fs::write(&cluster.conf, conf).expect("slurm.conf");
        let mut ctld = Command::new("slurmctld");
        ctld.arg("-D").arg("-f").arg(&cluster.conf);
        let ctld = spawn_daemon(ctld, &dir.join("log/slurmctld.out"), &dir);
        cluster.daemons.push(ctld);
        let mut node = Command::new("slurmd");
        node.arg("-D")
            .arg("-f")
            .arg(&cluster.conf)
            .args(["-N", NODE]);
        let node = spawn_daemon(node, &dir.join("log/slurmd.out"), &dir);
        cluster.daemons.push(node);
        let up = wait_until(Duration::from_secs(60), || {
            cluster
                .command("sinfo")
                .args(["-h", "-o", "%t"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        assert!(up, "the node did not come up idle:\n{}", cluster.logs());
        Some(cluster)
    }

    /// A Slurm client (sbatch, srun, squeue, …) or a script that calls them, pointed at
    /// this cluster.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", &self.conf);
        command
    }

    /// Run a client to its end with a deadline: (status, stdout, stderr).
    pub fn run(&self, command: &mut Command) -> (i32, String, String) {
        super::child::run_bounded(command.stdin(Stdio::null()), Duration::from_secs(60))
    }

    /// Wait for job `id` to end (`limit` at most): its state and exit code, or None when
    /// it has not ended by then.
    pub fn wait_job(&self, id: &str, limit: Duration) -> Option<JobEnd> {
        let mut end = None;
        wait_until(limit, || {
            let out = self
                .command("scontrol")
                .args(["show", "job", "-o", id])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            let field = |name: &str| {
                out.split_whitespace()
                    .find_map(|w| w.strip_prefix(name))
                    .map(str::to_string)
            };
            let Some(state) = field("JobState=") else {
                return false;
            };
            let pending = [
                "PENDING",
                "RUNNING",
                "CONFIGURING",
                "COMPLETING",
                "SUSPENDED",
            ];
            if pending.contains(&state.as_str()) {
                return false;
            }
            end = Some(JobEnd {
                state,
                exit_code: field("ExitCode=").unwrap_or_default(),
            });
            true
        });
        end
    }

    /// The daemons' logs, for a failure's message.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for name in ["munged.out", "munged.log", "slurmctld.log", "slurmd.log"] {
            let path = self.dir.join("log").join(name);
            let body = std::fs::read_to_string(&path).unwrap_or_default();
            let tail: Vec<&str> = body.lines().rev().take(15).collect();
            text.push_str(&format!("== {}\n", path.display()));
            for line in tail.into_iter().rev() {
                text.push_str(line);
                text.push('\n');
            }
        }
        text
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first, while the daemons can still end them in order.
        let _ = self
            .command("scancel")
            .args(["--full", "--quiet", "--user=root"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        wait_until(Duration::from_secs(15), || {
            self.command("squeue")
                .args(["-h", "-o", "%i"])
                .output()
                .map_or(true, |o| o.stdout.iter().all(u8::is_ascii_whitespace))
        });
        for daemon in self.daemons.iter_mut().rev() {
            // SAFETY: kill only sends a signal to our own child.
            unsafe {
                libc::kill(daemon.id() as i32, libc::SIGTERM);
            }
        }
        for daemon in &mut self.daemons {
            let id = daemon.id() as i32;
            let gone = wait_until(Duration::from_secs(10), || {
                matches!(daemon.try_wait(), Ok(Some(_)))
            });
            if !gone {
                // SAFETY: as above.
                unsafe {
                    libc::kill(id, libc::SIGKILL);
                }
                let _ = daemon.wait();
            }
        }
        let left = kill_all_in(&self.dir);
        if left.is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else if !std::thread::panicking() {
            panic!("{left:?} still run in {} after SIGKILL", self.dir.display());
        }
    }
}
