//! Which processes are a server's, for the /proc sampler (`server_sampler`): the members of
//! a lab stack's sessions, every process of some command names, or a process tree (an
//! external server's master and its descendants, `external`), and how each was chosen in
//! words (`ServerSamples::selector`).

use std::collections::HashMap;
use webtune_conf::procfs::ProcStat;

/// Which processes are the server's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessSelector {
    /// Every process in these sessions (a lab stack: one session per server).
    Sessions(Vec<i32>),
    /// Every process whose command name (comm) is one of these.
    Names(Vec<String>),
    /// These processes and every descendant of theirs, children started later included (an
    /// external server: its master, found by the port it listens on or given as `--pid`,
    /// `external::selector`); `how` says how they were found.
    Tree { roots: Vec<i32>, how: String },
    /// None: host-wide figures only.
    Nothing,
}

impl ProcessSelector {
    pub(crate) fn describe(&self) -> String {
        match self {
            ProcessSelector::Sessions(s) => {
                let ids: Vec<String> = s.iter().map(|i| i.to_string()).collect();
                format!("sessions {}", ids.join(","))
            }
            ProcessSelector::Names(n) => format!("names {}", n.join(",")),
            ProcessSelector::Tree { roots, how } => {
                let ids: Vec<String> = roots.iter().map(|i| i.to_string()).collect();
                format!("pid {} and its children ({how})", ids.join(","))
            }
            ProcessSelector::Nothing => "none".to_string(),
        }
    }

    /// The server's processes among `stats` (every live process but the sampler's own).
    pub(crate) fn select(&self, stats: Vec<ProcStat>) -> Vec<ProcStat> {
        match self {
            ProcessSelector::Sessions(s) => stats
                .into_iter()
                .filter(|p| s.contains(&p.session))
                .collect(),
            ProcessSelector::Names(n) => {
                stats.into_iter().filter(|p| n.contains(&p.comm)).collect()
            }
            ProcessSelector::Tree { roots, .. } => {
                let parent: HashMap<i32, i32> = stats.iter().map(|p| (p.pid, p.ppid)).collect();
                stats
                    .into_iter()
                    .filter(|p| descends_from(p.pid, roots, &parent))
                    .collect()
            }
            ProcessSelector::Nothing => Vec::new(),
        }
    }
}

/// Is `pid` one of `roots` or below one of them (following `parent`)?
pub(crate) fn descends_from(pid: i32, roots: &[i32], parent: &HashMap<i32, i32>) -> bool {
    let mut at = pid;
    // Bounded: a pid table read while processes come and go could hold a cycle.
    for _ in 0..256 {
        if roots.contains(&at) {
            return true;
        }
        match parent.get(&at) {
            Some(&up) if up > 0 && up != at => at = up,
            _ => return false,
        }
    }
    false
}
