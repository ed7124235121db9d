//! Which processes are an external server's (`lab run external`, `tune external`): the one
//! that listens on the URL's port, with every descendant (nginx's workers, Apache's
//! children, started later too), or the processes given by `--pid` with theirs. `--process
//! NAME` says which command names the server may have. A host can run several servers of
//! one name (two users' nginx): they are never merged. Several candidates are named in an
//! error that asks for `--pid`; a name that nothing on the URL's port answers to is taken
//! only when one process tree of it runs.

use crate::selector::descends_from;
use crate::{LabError, ProcessSelector};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, ToSocketAddrs};
use webtune_conf::procfs::{self, ProcStat};
use webtune_conf::sockets::{self, Listener};

/// The sampler's selection for an external server at `base_url`: `pids` (with their
/// children) when given, else for `names` the tree of the process that listens on the URL's
/// port, else the one tree of that name. Nothing to sample without names or pids.
pub fn selector(
    base_url: &str,
    names: &[String],
    pids: &[i32],
) -> Result<ProcessSelector, LabError> {
    if names.is_empty() && pids.is_empty() {
        return Ok(ProcessSelector::Nothing);
    }
    let me = std::process::id() as i32;
    let live: Vec<ProcStat> = procfs::all_pids()
        .into_iter()
        .filter(|p| *p != me)
        .filter_map(procfs::read_stat)
        .filter(|s| s.state != 'Z')
        .collect();
    let parent: HashMap<i32, i32> = live.iter().map(|p| (p.pid, p.ppid)).collect();
    if !pids.is_empty() {
        return given_pids(&live, &parent, names, pids);
    }
    let (ips, port) = endpoint(base_url)?;
    let listening: Vec<Listener> = sockets::listeners()
        .into_iter()
        .filter(|l| ips.is_empty() || ips.iter().any(|ip| l.serves(Some(*ip), port)))
        .filter(|l| l.port == port)
        .collect();
    let candidates: Vec<&ProcStat> = live.iter().filter(|p| names.contains(&p.comm)).collect();
    let holders: Vec<&ProcStat> = candidates
        .iter()
        .copied()
        .filter(|p| holds_any(p.pid, &listening))
        .collect();
    let mut roots = topmost(&holders, &parent);
    if roots.len() > 1 {
        return Err(several(
            &format!(
                "{} processes named {} listen on port {port}, each a server of its own",
                roots.len(),
                names.join(" or ")
            ),
            &roots,
            &listening,
        ));
    }
    let mut how = match roots.first() {
        Some(p) => vec![format!("{}, listening on port {port}", p.comm)],
        None => Vec::new(),
    };
    let in_trees = |p: &ProcStat, roots: &[&ProcStat]| {
        let ids: Vec<i32> = roots.iter().map(|r| r.pid).collect();
        descends_from(p.pid, &ids, &parent)
    };
    // A name the listener's tree does not answer to (php-fpm behind nginx, or a server
    // behind a proxy on the port): its one tree, or an error naming its trees.
    for name in names {
        let of_name: Vec<&ProcStat> = candidates
            .iter()
            .copied()
            .filter(|p| &p.comm == name)
            .collect();
        if of_name.iter().any(|p| in_trees(p, &roots)) {
            continue;
        }
        let masters = topmost(&of_name, &parent);
        match masters.as_slice() {
            [] => {
                return Err(LabError::Inconsistent(format!(
                    "--process {name}: no running process has that command name (as `ps -o \
                     comm` shows it); give the server's with --process, or its pid with --pid"
                )))
            }
            [one] => {
                how.push(format!(
                    "{name}, the only one running; none of its processes listens on port {port}"
                ));
                roots.push(one);
            }
            _ => {
                return Err(several(
                    &format!(
                        "{} process trees named {name} run and none of them listens on port \
                         {port}",
                        masters.len()
                    ),
                    &masters,
                    &sockets::listeners(),
                ))
            }
        }
    }
    Ok(ProcessSelector::Tree {
        roots: roots.iter().map(|p| p.pid).collect(),
        how: how.join("; "),
    })
}

/// `--pid`: each must be running (and have one of `names`, when given); a pid below another
/// one given is inside that one's tree already.
fn given_pids(
    live: &[ProcStat],
    parent: &HashMap<i32, i32>,
    names: &[String],
    pids: &[i32],
) -> Result<ProcessSelector, LabError> {
    let mut chosen = Vec::new();
    for &pid in pids {
        let stat = live.iter().find(|p| p.pid == pid).ok_or_else(|| {
            LabError::Inconsistent(format!("--pid {pid}: no such process is running"))
        })?;
        if !names.is_empty() && !names.contains(&stat.comm) {
            return Err(LabError::Inconsistent(format!(
                "--pid {pid} is {}, not {} (--process)",
                stat.comm,
                names.join(" or ")
            )));
        }
        chosen.push(stat);
    }
    let roots: Vec<i32> = topmost(&chosen, parent).iter().map(|p| p.pid).collect();
    let comms: Vec<&str> = chosen.iter().map(|p| p.comm.as_str()).collect();
    Ok(ProcessSelector::Tree {
        roots,
        how: format!("{}, given by --pid", comms.join(", ")),
    })
}

/// Those of `procs` that no other of them is an ancestor of.
fn topmost<'a>(procs: &[&'a ProcStat], parent: &HashMap<i32, i32>) -> Vec<&'a ProcStat> {
    let ids: HashSet<i32> = procs.iter().map(|p| p.pid).collect();
    procs
        .iter()
        .copied()
        .filter(|p| {
            let others: Vec<i32> = ids.iter().copied().filter(|&i| i != p.pid).collect();
            !parent
                .get(&p.pid)
                .is_some_and(|&up| descends_from(up, &others, parent))
        })
        .collect()
}

fn holds_any(pid: i32, listening: &[Listener]) -> bool {
    if listening.is_empty() {
        return false;
    }
    sockets::socket_inodes(pid)
        .is_some_and(|held| listening.iter().any(|l| held.contains(&l.inode)))
}

/// The ports `pid` listens on, as "listening on 8080, 8443", or "".
fn ports_of(pid: i32, listening: &[Listener]) -> String {
    let Some(held) = sockets::socket_inodes(pid) else {
        return String::new();
    };
    let mut ports: Vec<u16> = listening
        .iter()
        .filter(|l| held.contains(&l.inode))
        .map(|l| l.port)
        .collect();
    ports.sort_unstable();
    ports.dedup();
    if ports.is_empty() {
        return String::new();
    }
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    format!(", listening on {}", list.join(", "))
}

/// The error for several candidates: each named (pid, name, ports), none chosen.
fn several(what: &str, candidates: &[&ProcStat], listening: &[Listener]) -> LabError {
    let named: Vec<String> = candidates
        .iter()
        .map(|p| format!("pid {} ({}{})", p.pid, p.comm, ports_of(p.pid, listening)))
        .collect();
    LabError::Inconsistent(format!(
        "{what}: {}; sample one with --pid PID (it and its children), never all of them at once",
        named.join(", ")
    ))
}

/// The addresses and port a URL reaches: its host's addresses (an IP literal, or what the
/// name resolves to; none when it does not resolve: the port alone then decides) and its
/// port (the scheme's default when not given).
fn endpoint(url: &str) -> Result<(Vec<IpAddr>, u16), LabError> {
    let bad = || LabError::Inconsistent(format!("{url:?} is not an http:// or https:// URL"));
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return Err(bad()),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, hostport)| hostport);
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or_else(bad)?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| bad())?,
                None => default,
            };
            (host, port)
        }
        None => match authority.rsplit_once(':') {
            Some((host, p)) => (host, p.parse().map_err(|_| bad())?),
            None => (authority, default),
        },
    };
    if host.is_empty() {
        return Err(bad());
    }
    let ips = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => (host, port)
            .to_socket_addrs()
            .map(|addrs| addrs.map(|a| a.ip()).collect())
            .unwrap_or_default(),
    };
    Ok((ips, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_port_and_addresses() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(
            endpoint("http://127.0.0.1:8080/x").unwrap(),
            (vec![ip("127.0.0.1")], 8080)
        );
        assert_eq!(endpoint("https://127.0.0.2").unwrap().1, 443);
        assert_eq!(endpoint("http://[::1]:81/").unwrap(), (vec![ip("::1")], 81));
        assert!(endpoint("http://localhost:8080")
            .unwrap()
            .0
            .contains(&ip("127.0.0.1")));
        assert!(endpoint("ftp://x").is_err());
        assert!(endpoint("http://:80").is_err());
        assert!(endpoint("http://h:port").is_err());
    }

    fn stat(pid: i32, ppid: i32, comm: &str) -> ProcStat {
        ProcStat {
            pid,
            comm: comm.into(),
            state: 'S',
            ppid,
            pgrp: pid,
            session: pid,
            utime: 0,
            stime: 0,
            num_threads: 1,
            start_ticks: 0,
            rss_pages: 0,
        }
    }

    #[test]
    fn the_topmost_of_a_tree_is_its_master_and_two_trees_stay_two() {
        // Two nginx: 10 (workers 11, 12) and 20 (worker 21), both under a shell 1.
        let all = [
            stat(1, 0, "bash"),
            stat(10, 1, "nginx"),
            stat(11, 10, "nginx"),
            stat(12, 10, "nginx"),
            stat(20, 1, "nginx"),
            stat(21, 20, "nginx"),
        ];
        let parent: HashMap<i32, i32> = all.iter().map(|p| (p.pid, p.ppid)).collect();
        let nginx: Vec<&ProcStat> = all.iter().filter(|p| p.comm == "nginx").collect();
        let masters: Vec<i32> = topmost(&nginx, &parent).iter().map(|p| p.pid).collect();
        assert_eq!(masters, vec![10, 20]);
        let one_tree: Vec<&ProcStat> = nginx.iter().copied().filter(|p| p.pid < 20).collect();
        let masters: Vec<i32> = topmost(&one_tree, &parent).iter().map(|p| p.pid).collect();
        assert_eq!(masters, vec![10]);
        // The sampler's tree: 10 and its workers, never 20's.
        let members: Vec<i32> = all
            .iter()
            .filter(|p| descends_from(p.pid, &[10], &parent))
            .map(|p| p.pid)
            .collect();
        assert_eq!(members, vec![10, 11, 12]);
    }
}
