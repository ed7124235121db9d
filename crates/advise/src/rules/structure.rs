//! The servers' own bounds on the sizing directives, stated as structural constraints:
//! they join a directive's plan when a finding plans that directive (MaxRequestWorkers
//! ≥ ThreadsPerChild and a multiple of it, worker_rlimit_nofile ≤ fs.nr_open, the
//! ranges MariaDB accepts).

use super::{ApacheMpm, Layers};
use crate::change::{Bound, Constraint};
use webtune_conf::ini;

/// The kernel's default `fs.nr_open` (1 << 20), used when the host's is not known.
pub(crate) const NR_OPEN_DEFAULT: i64 = 1 << 20;

pub(super) fn constraints(l: &Layers) -> Vec<Constraint> {
    let mut out = Vec::new();
    if let Some((a, m)) = l.apache.and_then(|a| Some((a, ApacheMpm::of(a)?))) {
        let main = &a.parsed.main;
        let mrw = Constraint::on(
            "apache2",
            m.max_workers_name(),
            m.max_workers,
            m.max_workers_at,
            main,
            None,
        );
        const MPM: &str = "Apache 2.4 manual, mpm_common: MaxRequestWorkers";
        if m.threaded {
            let t = m.threads_per_child;
            out.push(mrw.structural(
                Bound::AtLeast(t),
                format!("at least one process of ThreadsPerChild {t} threads (Apache raises a lower value to it)"),
                MPM,
            ));
            out.push(mrw.structural(
                Bound::MultipleOf(t),
                format!("whole processes of ThreadsPerChild {t} threads (Apache rounds down to a multiple)"),
                MPM,
            ));
        } else {
            out.push(mrw.structural(Bound::AtLeast(1), "at least one process", MPM));
        }
        let sl = Constraint::on(
            "apache2",
            "ServerLimit",
            m.server_limit,
            m.server_limit_at,
            main,
            None,
        );
        out.push(sl.structural(
            Bound::AtMost(20000),
            "Apache's compiled-in hard limit (MAX_SERVER_LIMIT 20000)",
            "Apache 2.4 manual, ServerLimit",
        ));
    }
    if let Some(n) = l.nginx {
        let nr_open = l.host.sysctl_int("fs.nr_open").unwrap_or(NR_OPEN_DEFAULT);
        let d = n.at_level("worker_rlimit_nofile", &[]);
        let c = Constraint::on(
            "nginx",
            "worker_rlimit_nofile",
            d.and_then(|d| d.int()).unwrap_or(1024),
            d,
            &n.parsed.main,
            None,
        );
        out.push(c.structural(
            Bound::AtMost(nr_open),
            format!(
                "fs.nr_open {nr_open}{}: setrlimit above it fails (EPERM) and the workers keep their old limit",
                if l.host.sysctl_int("fs.nr_open").is_some() { "" } else { " (the kernel's default; the host's was not read)" }
            ),
            "setrlimit(2) (EPERM above /proc/sys/fs/nr_open); nginx manual, worker_rlimit_nofile",
        ));
    }
    if let Some(f) = l.php_fpm {
        for pool in ini::pools(f) {
            if let Some((v, d)) = &pool.max_children {
                out.push(
                    Constraint::on("php-fpm", "pm.max_children", *v, Some(d), &f.main, None)
                        .structural(
                            Bound::AtLeast(1),
                            "at least one child",
                            "php-fpm manual, pm.max_children",
                        ),
                );
            }
        }
    }
    if let Some(db) = l.db() {
        const MANUAL: &str = "MariaDB manual, server system variables (range)";
        for (name, default, lo, hi) in [
            ("max_connections", 151, 10, 100_000),
            ("back_log", 80, 1, 65_535),
            ("thread_cache_size", 256, 0, 16_384),
        ] {
            let (v, d) = db.int(name, default);
            let c = Constraint::on("mariadb", name, v as i64, d, db.main(), Some("mysqld"));
            out.push(c.structural(
                Bound::AtLeast(lo),
                format!("the server's range {lo}–{hi}"),
                MANUAL,
            ));
            out.push(c.structural(
                Bound::AtMost(hi),
                format!("the server's range {lo}–{hi}"),
                MANUAL,
            ));
        }
    }
    out
}
