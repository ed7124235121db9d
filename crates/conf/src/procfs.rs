//! Small readers of Linux's /proc: process status lines, sessions, command lines, and the
//! system-wide counters the lab's sampler needs. Every reader tolerates a process that
//! vanished between listing and reading (it returns None).

/// The fields of /proc/PID/stat the lab and the advisor use.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcStat {
    pub pid: i32,
    pub comm: String,
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
    /// User and system CPU time of the whole thread group, clock ticks.
    pub utime: u64,
    pub stime: u64,
    pub num_threads: u64,
    /// Start time after boot, clock ticks: with the pid, identifies a process for good.
    pub start_ticks: u64,
    /// Resident set size, pages.
    pub rss_pages: u64,
}

/// Parse the text of /proc/PID/stat. The command name sits in parentheses and may itself
/// hold spaces and parentheses, so the fields after it are found from the last ')'.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid: i32 = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let field = |n: usize| rest.get(n - 3).copied();
    let num = |n: usize| field(n).and_then(|f| f.parse::<u64>().ok());
    Some(ProcStat {
        pid,
        comm,
        state: field(3)?.chars().next()?,
        ppid: field(4)?.parse().ok()?,
        pgrp: field(5)?.parse().ok()?,
        session: field(6)?.parse().ok()?,
        utime: num(14)?,
        stime: num(15)?,
        num_threads: num(20)?,
        start_ticks: num(22)?,
        rss_pages: num(24)?,
    })
}

pub fn read_stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Every process id now in /proc.
pub fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect()
}

/// Live (not zombie) processes whose session is one of `sessions`.
pub fn session_members(sessions: &[i32]) -> Vec<ProcStat> {
    if sessions.is_empty() {
        return Vec::new();
    }
    all_pids()
        .into_iter()
        .filter_map(read_stat)
        .filter(|s| sessions.contains(&s.session) && s.state != 'Z')
        .collect()
}

/// The command line of a process, arguments joined by spaces.
pub fn cmdline(pid: i32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let parts: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    Some(parts.join(" "))
}

/// Is the process with this pid and start time still alive (not merely a reused pid)?
pub fn is_alive(pid: i32, start_ticks: u64) -> bool {
    read_stat(pid).is_some_and(|s| s.start_ticks == start_ticks && s.state != 'Z')
}

/// The wait status (as `waitpid` reports it) of a zombie: field 52 of /proc/PID/stat,
/// there once the process has exited and until its parent reaps it. None when unreadable.
pub fn exit_status(pid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_exit_status(&text)
}

fn parse_exit_status(text: &str) -> Option<i32> {
    let close = text.rfind(')')?;
    // Fields after the command name start at field 3; field 52 is the 50th of them.
    text.get(close + 1..)?
        .split_whitespace()
        .nth(49)?
        .parse()
        .ok()
}

/// Clock ticks per second (for utime/stime).
pub fn ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// Page size in KiB (for RSS in pages).
pub fn page_kib() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64 / 1024
    } else {
        4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_command_names() {
        let text = "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 4 0 \
                    5555 1000000 250 18446744073709551615";
        let s = parse_stat(text).unwrap();
        assert_eq!(s.pid, 1234);
        assert_eq!(s.comm, "a) b (c)");
        assert_eq!(s.state, 'S');
        assert_eq!(s.session, 1234);
        assert_eq!((s.utime, s.stime), (7, 3));
        assert_eq!(s.num_threads, 4);
        assert_eq!(s.start_ticks, 5555);
        assert_eq!(s.rss_pages, 250);
        assert_eq!(
            parse_exit_status(text),
            None,
            "a short line has no exit status"
        );
        let mut long = text.to_string();
        for n in 26..=52 {
            long.push_str(&format!(" {}", if n == 52 { 9 } else { 0 }));
        }
        assert_eq!(parse_exit_status(&long), Some(9));
    }

    #[test]
    fn reads_itself() {
        let me = std::process::id() as i32;
        let s = read_stat(me).unwrap();
        assert_eq!(s.pid, me);
        assert!(is_alive(me, s.start_ticks));
        assert!(!is_alive(me, s.start_ticks + 1));
    }
}
