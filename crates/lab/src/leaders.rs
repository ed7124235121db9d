//! The servers' main processes while a run loads a stack: each lab server runs in the
//! foreground in its own session, so the leader of each sampled session is a master (nginx
//! master, Apache parent, php-fpm master, mariadbd). The sampler notes them when it starts
//! and checks them at every sample; one found gone (or a zombie webtune has not reaped
//! yet, whose wait status says how it ended) becomes a `ProcessDeath`.

use webtune_conf::procfs;
use webtune_model::server::ProcessDeath;

/// A server's main process: the leader of one of the selected sessions (a lab server
/// runs in the foreground in its own session, so the session id is its master's pid).
#[derive(Debug, Clone)]
pub(crate) struct Leader {
    pid: i32,
    comm: String,
    start_ticks: u64,
}

impl Leader {
    /// The leader of session `sid` if it is alive now; else the death to record (at `t_s`).
    pub(crate) fn find(sid: i32, t_s: f64) -> Result<Leader, ProcessDeath> {
        match procfs::read_stat(sid) {
            Some(stat) if stat.session == sid && !is_dead(stat.state) => Ok(Leader {
                pid: sid,
                comm: stat.comm,
                start_ticks: stat.start_ticks,
            }),
            Some(stat) if stat.session == sid => Err(ProcessDeath {
                process: stat.comm,
                pid: sid,
                t_s,
                how: procfs::exit_status(sid)
                    .map(describe_wait_status)
                    .unwrap_or_default(),
            }),
            // Gone and reaped, or the pid now belongs to another process.
            _ => Err(ProcessDeath {
                process: format!("leader of session {sid}"),
                pid: sid,
                t_s,
                how: String::new(),
            }),
        }
    }

    /// None while it lives; else its death, seen at `t_s`.
    pub(crate) fn check(&self, t_s: f64) -> Option<ProcessDeath> {
        let stat = procfs::read_stat(self.pid);
        let same = stat.as_ref().filter(|s| s.start_ticks == self.start_ticks);
        if same.is_some_and(|s| !is_dead(s.state)) {
            return None;
        }
        let how = match same {
            // A zombie: its parent (webtune) has not reaped it yet, so the kernel still
            // holds its exit status.
            Some(_) => procfs::exit_status(self.pid)
                .map(describe_wait_status)
                .unwrap_or_default(),
            None => String::new(),
        };
        Some(ProcessDeath {
            process: self.comm.clone(),
            pid: self.pid,
            t_s,
            how,
        })
    }
}

fn is_dead(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

/// A wait status in words: "killed by SIGKILL", "exited with status 1".
pub fn describe_wait_status(status: i32) -> String {
    let signal = status & 0x7f;
    if signal == 0 {
        return format!("exited with status {}", (status >> 8) & 0xff);
    }
    let name = match signal {
        libc::SIGHUP => "SIGHUP".to_string(),
        libc::SIGINT => "SIGINT".to_string(),
        libc::SIGQUIT => "SIGQUIT".to_string(),
        libc::SIGILL => "SIGILL".to_string(),
        libc::SIGABRT => "SIGABRT".to_string(),
        libc::SIGBUS => "SIGBUS".to_string(),
        libc::SIGFPE => "SIGFPE".to_string(),
        libc::SIGKILL => "SIGKILL".to_string(),
        libc::SIGSEGV => "SIGSEGV".to_string(),
        libc::SIGPIPE => "SIGPIPE".to_string(),
        libc::SIGTERM => "SIGTERM".to_string(),
        libc::SIGUSR1 => "SIGUSR1".to_string(),
        libc::SIGUSR2 => "SIGUSR2".to_string(),
        other => format!("signal {other}"),
    };
    let core = if status & 0x80 != 0 {
        " (core dumped)"
    } else {
        ""
    };
    format!("killed by {name}{core}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ProcessSelector, ServerSampler};
    use std::time::{Duration, Instant};

    /// A child that runs `sleep 30` as the leader of its own session, like a lab server.
    fn session_leader() -> std::process::Child {
        use std::os::unix::process::CommandExt;
        let mut command = std::process::Command::new("sleep");
        command.arg("30");
        // SAFETY: runs between fork and exec; setsid is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command.spawn().expect("run sleep")
    }

    #[test]
    fn a_killed_session_leader_is_recorded_with_time_and_signal() {
        let mut child = session_leader();
        let pid = child.id() as i32;
        let sampler = ServerSampler::start(
            "test",
            ProcessSelector::Sessions(vec![pid]),
            Duration::from_millis(20),
        );
        std::thread::sleep(Duration::from_millis(60));
        // SAFETY: a signal to our own child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(60));
        let out = sampler.finish();
        let _ = child.wait();
        assert_eq!(out.deaths.len(), 1, "{:?}", out.deaths);
        let death = &out.deaths[0];
        assert_eq!((death.process.as_str(), death.pid), ("sleep", pid));
        assert_eq!(death.how, "killed by SIGKILL");
        // Seen at a sample after the kill, which came after sampling began.
        assert!(death.t_s > 0.0, "{death:?}");
        assert!(out.samples.iter().any(|s| s.t_s == death.t_s), "{out:?}");
    }

    #[test]
    fn a_leader_gone_before_sampling_counts_from_zero_and_a_live_one_not_at_all() {
        let mut dead = session_leader();
        let mut alive = session_leader();
        let dead_pid = dead.id() as i32;
        // SAFETY: a signal to our own child.
        unsafe {
            libc::kill(dead_pid, libc::SIGTERM);
        }
        // Wait until it is a zombie (not reaped: the status stays readable).
        let deadline = Instant::now() + Duration::from_secs(5);
        while procfs::read_stat(dead_pid).is_some_and(|s| s.state != 'Z') {
            assert!(Instant::now() < deadline, "sleep survived SIGTERM");
            std::thread::sleep(Duration::from_millis(5));
        }
        let sampler = ServerSampler::start(
            "test",
            ProcessSelector::Sessions(vec![dead_pid, alive.id() as i32]),
            Duration::from_millis(20),
        );
        std::thread::sleep(Duration::from_millis(50));
        let out = sampler.finish();
        let _ = alive.kill();
        let _ = alive.wait();
        let _ = dead.wait();
        assert_eq!(out.deaths.len(), 1, "{:?}", out.deaths);
        assert_eq!(out.deaths[0].pid, dead_pid);
        assert_eq!(out.deaths[0].t_s, 0.0);
        assert_eq!(out.deaths[0].how, "killed by SIGTERM");
    }

    #[test]
    fn wait_statuses_in_words() {
        assert_eq!(describe_wait_status(9), "killed by SIGKILL");
        assert_eq!(
            describe_wait_status(11 | 0x80),
            "killed by SIGSEGV (core dumped)"
        );
        assert_eq!(describe_wait_status(1 << 8), "exited with status 1");
        assert_eq!(describe_wait_status(0), "exited with status 0");
        assert_eq!(describe_wait_status(40), "killed by signal 40");
    }
}
