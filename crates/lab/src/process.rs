//! One server process, whatever the server: its config checked by the server itself,
//! started from its `ServerPlan` in the foreground in its own session (with the run's CPU
//! and open-file limits), waited for until it is ready, and stopped: the orderly signal
//! its plan names, SIGKILL to the whole session after a grace period, then verified gone.
//! Every lab server (nginx, Apache, php-fpm, MariaDB) runs through here, and none runs
//! before its session is recorded (the gate in `spawn`).

use crate::host::ExecLimits;
use crate::servers::{Readiness, ServerPlan};
use crate::LabError;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use webtune_conf::procfs;
use webtune_model::StopToken;

/// A started server: its plan and its main process (the leader of its session).
pub struct ServerProcess {
    plan: ServerPlan,
    child: Child,
}

impl ServerProcess {
    /// Start the server in `dir` in a new session (setsid): its own process group, so a
    /// signal to its group (Apache prefork signals its whole group on SIGTERM) or the
    /// terminal's Ctrl-C never reaches webtune, and webtune's never reaches it. Its stdout
    /// and stderr go to the plan's output log.
    ///
    /// `record` hears the new session's id (= the main process's pid) before the server
    /// runs: the process waits at a gate (a `/bin/sh` reading one line from a pipe, then
    /// exec'ing the server in the same process) until `record` has returned, so the
    /// registry knows every server before it exists as one. When webtune dies before
    /// opening the gate (SIGKILL), or `record` fails, the pipe closes and the process exits
    /// without ever running the server.
    pub fn spawn(
        plan: &ServerPlan,
        dir: &Path,
        limits: ExecLimits,
        record: &mut dyn FnMut(i32) -> Result<(), LabError>,
    ) -> Result<ServerProcess, LabError> {
        let cannot_run = |e: std::io::Error| LabError::StartFailed {
            server: plan.label.clone(),
            message: format!("cannot run {}: {e}", plan.program.display()),
        };
        // The gate execs the program only once open; say now what exec would say then.
        let executable = std::fs::metadata(&plan.program).map_err(cannot_run)?;
        if !executable.is_file() || executable.permissions().mode() & 0o111 == 0 {
            return Err(cannot_run(std::io::Error::from(
                std::io::ErrorKind::PermissionDenied,
            )));
        }
        let out = std::fs::File::create(&plan.output_log)
            .map_err(|e| LabError::io(format!("creating {}", plan.output_log.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| LabError::io("duplicating a log file handle", e))?;
        let (gate_read, gate_write) = gate_pipe()?;
        let gate_fd = gate_read.as_raw_fd();
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(GATE_SCRIPT)
            .arg(&plan.program)
            .args(&plan.run_args)
            .envs(plan.component.server().environment(dir))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // setsid, dup2, fcntl, setrlimit and sched_setaffinity, which are async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The gate's read end as fd 3 (dup2 clears close-on-exec on the copy; the
                // write end stays close-on-exec, so only webtune holds it). When the pipe
                // already is fd 3, dup2 does nothing — close-on-exec stays, the shell starts
                // without its gate and webtune's "go" met a broken pipe ("starting nginx:
                // Broken pipe", seen once in the suite) — so clear the flag by hand.
                if gate_fd == GATE_FD {
                    if libc::fcntl(GATE_FD, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(gate_fd, GATE_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                limits.apply_in_child()
            });
        }
        let mut child = command.spawn().map_err(cannot_run)?;
        drop(gate_read);
        let pid = child.id() as i32;
        let opened = record(pid).and_then(|()| {
            let mut gate = std::fs::File::from(gate_write);
            gate.write_all(b"go\n")
                .map_err(|e| LabError::io(format!("starting {}", plan.label), e))
        });
        if let Err(e) = opened {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
        Ok(ServerProcess {
            plan: plan.clone(),
            child,
        })
    }

    pub fn plan(&self) -> &ServerPlan {
        &self.plan
    }

    /// The session id (= the main process's pid).
    pub fn session(&self) -> i32 {
        self.child.id() as i32
    }

    /// Wait until the server is ready as its plan says; a server that exits meanwhile, or
    /// does not answer within `timeout`, fails with the last lines of its logs.
    pub fn wait_ready(
        &mut self,
        timeout: Duration,
        interrupt: Option<&StopToken>,
    ) -> Result<(), LabError> {
        let deadline = Instant::now() + timeout;
        let address = SocketAddr::from(([127, 0, 0, 1], self.plan.port));
        loop {
            if self.is_ready(address) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(LabError::StartFailed {
                    server: self.plan.label.clone(),
                    message: format!("exited with {status}: {}", self.log_tail()),
                });
            }
            if Instant::now() >= deadline {
                let place = match &self.plan.readiness {
                    Readiness::Socket { path, .. } => path.display().to_string(),
                    _ => address.to_string(),
                };
                return Err(LabError::StartFailed {
                    server: self.plan.label.clone(),
                    message: format!(
                        "no answer on {place} within {timeout:?}: {}",
                        self.log_tail()
                    ),
                });
            }
            if interrupt.is_some_and(StopToken::stop_requested) {
                return Err(LabError::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn is_ready(&self, address: SocketAddr) -> bool {
        let answers_200 = |got: std::io::Result<(u16, Vec<u8>)>| matches!(got, Ok((200, _)));
        match &self.plan.readiness {
            Readiness::TcpAccept => {
                TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_ok()
            }
            Readiness::HttpGet(path) => answers_200(http_get(address, path, READY_TIMEOUT)),
            Readiness::HttpsGet(path) => {
                answers_200(crate::tls::https_get(address, path, READY_TIMEOUT))
            }
            Readiness::Socket { path, answers } => answers(path),
        }
    }

    /// The last meaningful lines of the server's error log and its output.
    fn log_tail(&self) -> String {
        let mut text = std::fs::read_to_string(&self.plan.error_log).unwrap_or_default();
        text.push_str(&std::fs::read_to_string(&self.plan.output_log).unwrap_or_default());
        let summary = summarise_log(&text);
        if summary.is_empty() {
            format!("nothing in {}", self.plan.error_log.display())
        } else {
            summary
        }
    }

    /// Has the main process exited?
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_some()
    }

    /// Orderly signal to the main process, wait for the whole session to end, SIGKILL the
    /// session after `grace`, verify that nothing of it is left.
    pub fn stop(&mut self, grace: Duration) -> Result<(), LabError> {
        let sid = self.session();
        let members = || -> Vec<i32> {
            procfs::session_members(&[sid])
                .into_iter()
                .map(|s| s.pid)
                .collect()
        };
        let master_gone = self.exited();
        if !master_gone {
            // SAFETY: kill only sends a signal to our own child.
            unsafe {
                libc::kill(sid, self.plan.stop_signal);
            }
        }
        // A master that died during the run (kill -9, a crash) left its workers with no one
        // to stop them in order: waiting for them would only delay the SIGKILL.
        let deadline = Instant::now() + if master_gone { Duration::ZERO } else { grace };
        loop {
            if self.exited() && members().is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Forced: the whole session (its process group is the session's) and stragglers.
        // SAFETY: signals to our own child's process group and its members.
        unsafe {
            libc::killpg(sid, libc::SIGKILL);
        }
        for pid in members() {
            // SAFETY: as above; ESRCH is ignored.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        let _ = self.child.wait();
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let left = members();
            if left.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(LabError::Survivors {
                    server: self.plan.label.clone(),
                    pids: left,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How long one readiness request may take.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The descriptor the gate reads from in the server's process.
const GATE_FD: libc::c_int = 3;

/// The gate: wait for webtune's "go" on fd 3 (EOF: webtune is gone or gave up, so exit
/// without running anything), close it, and become the server (`$0`, its arguments after).
const GATE_SCRIPT: &str = "IFS= read -r go <&3 || exit 125; exec 3<&-; exec \"$0\" \"$@\"";

/// A pipe whose both ends are close-on-exec.
fn gate_pipe() -> Result<(OwnedFd, OwnedFd), LabError> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two descriptors, which are owned at once below.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(LabError::io(
            "making a pipe",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: both descriptors were just made and belong to nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Run the server's own config check (`nginx -t`, `apache2 -t`, `php-fpm -t`); a plan
/// without one passes.
pub fn check_config(plan: &ServerPlan) -> Result<(), LabError> {
    if plan.check_args.is_empty() {
        return Ok(());
    }
    let dir = plan.config_file.parent().unwrap_or(Path::new("/"));
    let output = Command::new(&plan.program)
        .args(&plan.check_args)
        .envs(plan.component.server().environment(dir))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::io(format!("running {}", plan.program.display()), e))?;
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    Err(LabError::ConfigRejected {
        server: plan.label.clone(),
        config: plan.config_file.clone(),
        message: summarise_log(&text),
    })
}

/// The last three distinct non-empty lines of a log, joined with " | " (a server that
/// respawns a failing worker repeats the same line with new timestamps).
fn summarise_log(text: &str) -> String {
    let mut lines: Vec<&str> = Vec::new();
    for line in text.lines().rev().map(str::trim).filter(|l| !l.is_empty()) {
        if !lines
            .iter()
            .any(|seen| message_part(seen) == message_part(line))
        {
            lines.push(line);
        }
        if lines.len() == 3 {
            break;
        }
    }
    lines.reverse();
    lines.join(" | ")
}

/// A log line without its leading timestamp and pid (nginx: `2026/11/22 17:46:17
/// [alert] 6778#6778: …`; Apache, php-fpm and MariaDB: `… […] …`).
fn message_part(line: &str) -> &str {
    match line.find(']') {
        Some(i) => {
            let rest = &line[i + 1..];
            match rest.find(": ") {
                Some(j) if rest[..j].contains('#') => &rest[j + 2..],
                _ => rest,
            }
        }
        None => line,
    }
}

/// Distinct free loopback ports, none handed out before by this process: bind them all at
/// once (so they differ), then release; the servers bind them a moment later. The kernel
/// may give a just-released port to the next `bind(0)`, so without the record two stacks
/// started side by side (tests, parallel studies) could be handed one port, and the
/// loser's readiness check would answer from the winner. A port is remembered for
/// `PORT_MEMORY`, long past the moment its server binds it, so a long study never runs
/// out of ports.
pub fn free_ports(count: usize) -> Result<Vec<u16>, LabError> {
    const PORT_MEMORY: Duration = Duration::from_secs(600);
    static HANDED_OUT: Mutex<BTreeMap<u16, Instant>> = Mutex::new(BTreeMap::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    handed_out.retain(|_, at| at.elapsed() < PORT_MEMORY);
    // Every listener is held until the end, so the kernel offers a new port each time.
    let mut held = Vec::new();
    let mut ports = Vec::with_capacity(count);
    while ports.len() < count {
        if held.len() >= count + 1000 {
            return Err(LabError::NoPort(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                "no loopback port left that this process has not handed out already",
            )));
        }
        let listener = TcpListener::bind("127.0.0.1:0").map_err(LabError::NoPort)?;
        let port = listener.local_addr().map_err(LabError::NoPort)?.port();
        if !handed_out.contains_key(&port) {
            ports.push(port);
        }
        held.push(listener);
    }
    let now = Instant::now();
    handed_out.extend(ports.iter().map(|&p| (p, now)));
    Ok(ports)
}

/// A minimal HTTP/1.0 GET over loopback: status code and the whole response body. Used
/// for readiness checks and by tests.
pub fn http_get(
    address: SocketAddr,
    path: &str,
    timeout: Duration,
) -> std::io::Result<(u16, Vec<u8>)> {
    http_request(address, "GET", path, &[], b"", timeout).map(|r| (r.status, r.body))
}

/// What `http_request` read back.
#[derive(Debug, Clone)]
pub struct HttpReply {
    pub status: u16,
    /// The header lines after the status line, as (name, value), in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpReply {
    /// Values of the headers named `name` (case-insensitive), in order.
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A minimal HTTP/1.0 request over loopback with extra header lines (`Name: value`, no CR
/// or LF) and a body (`Content-Length` is added when it is not empty): the whole response.
/// For readiness checks and tests that log in and post (the forum's journeys).
pub fn http_request(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> std::io::Result<HttpReply> {
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, what.to_string());
    let mut head =
        format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: webtune-lab\r\n");
    for (name, value) in headers {
        if format!("{name}{value}").contains(['\r', '\n']) {
            return Err(invalid("a header with CR or LF"));
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.take(64 * 1024 * 1024).read_to_end(&mut raw)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP response");
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(bad)?;
    let head = String::from_utf8_lossy(&raw[..head_end]);
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok(HttpReply {
        status,
        headers,
        body: raw[head_end + 4..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A "server" that leaves a mark and waits: `/bin/sh -c 'echo ran > MARK; sleep 30'`.
    fn marking_plan(dir: &Path) -> ServerPlan {
        ServerPlan {
            label: "marker".into(),
            component: crate::servers::Component::PhpFpm,
            program: "/bin/sh".into(),
            check_args: Vec::new(),
            run_args: vec!["-c".into(), "echo ran > mark; exec sleep 30".into()],
            config_file: dir.join("none"),
            error_log: dir.join("error.log"),
            output_log: dir.join("out.log"),
            port: 0,
            stop_signal: libc::SIGTERM,
            readiness: Readiness::TcpAccept,
        }
    }

    #[test]
    fn a_server_runs_only_once_its_session_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let plan = marking_plan(dir.path());
        let mark = dir.path().join("mark");
        // The record fails (a registry that cannot be written): the server never runs.
        let mut seen = None;
        let outcome = ServerProcess::spawn(&plan, dir.path(), ExecLimits::default(), &mut |sid| {
            seen = Some(sid);
            assert!(
                !mark.exists(),
                "the server ran before its session was recorded"
            );
            Err(LabError::Inconsistent("no registry".into()))
        });
        assert!(outcome.is_err());
        let sid = seen.expect("the record heard the session");
        assert!(procfs::read_stat(sid).is_none_or(|s| s.state == 'Z'));
        assert!(!mark.exists(), "the server ran without a record");
        // Recorded: it runs, as the leader of the session recorded.
        let mut recorded = None;
        let mut server =
            ServerProcess::spawn(&plan, dir.path(), ExecLimits::default(), &mut |sid| {
                recorded = Some(sid);
                Ok(())
            })
            .unwrap();
        assert_eq!(recorded, Some(server.session()));
        let deadline = Instant::now() + Duration::from_secs(30);
        while !mark.exists() {
            assert!(Instant::now() < deadline, "the server never ran");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            procfs::read_stat(server.session()).map(|s| s.session),
            Some(server.session())
        );
        server.stop(Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn log_summary_drops_repeats() {
        let log = "2026/11/22 17:46:17 [alert] 6778#6778: 2 worker_connections are not enough\n\
                   2026/11/22 17:46:18 [alert] 6779#6779: 2 worker_connections are not enough\n";
        let s = summarise_log(log);
        assert_eq!(s.matches("not enough").count(), 1, "{s}");
        assert_eq!(summarise_log("a\n\nb\nc\nd\n"), "b | c | d");
    }
}
