//! Queues and limits: each listen backlog (Apache's ListenBacklog, nginx's `listen …
//! backlog=`, php-fpm's listen.backlog) against net.core.somaxconn, and nginx's
//! worker_connections against the open files a worker may have.

use super::{at, Layers};
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};

const SOMAXCONN: &str = "net.core.somaxconn";

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let mut out = Vec::new();
    let somaxconn = l.host.sysctl_int(SOMAXCONN);
    let mut backlogs: Vec<(String, &str, i64, Option<&webtune_conf::config::Directive>)> =
        Vec::new();
    if let Some(a) = l.apache {
        let d = a.get("ListenBacklog");
        backlogs.push((
            "apache2".into(),
            "ListenBacklog",
            d.and_then(|d| d.int()).unwrap_or(511),
            d,
        ));
    }
    if let Some(n) = l.nginx {
        for (d, b) in n.listens() {
            backlogs.push(("nginx".into(), "listen", b, Some(d)));
        }
    }
    let pools = l.php_fpm.map(webtune_conf::ini::pools).unwrap_or_default();
    {
        for pool in &pools {
            let b = pool.backlog.as_ref();
            backlogs.push((
                format!("php-fpm pool {}", pool.name),
                "listen.backlog",
                b.map_or(511, |x| x.0),
                b.map(|x| &x.1),
            ));
        }
    }
    if let Some(max) = somaxconn {
        for (who, name, value, d) in &backlogs {
            if *value > max {
                out.push(
                    Finding::new("queue.backlog_somaxconn", Severity::Warn, who)
                        .directives(&[name, SOMAXCONN])
                        .values(format!("{name} backlog {value} > {SOMAXCONN} {max}"), format!("sysctl {SOMAXCONN}={value} (the advisor changes no sysctl)"))
                        .why(format!("The kernel silently caps every listen backlog at somaxconn: min({value}, {max}) = {max} connections wait, not {value}."))
                        .evidence(at(*d, name, value))
                        .evidence(format!("host: {SOMAXCONN} = {max}"))
                        .source("seed 004 (somaxconn raised); listen(2): \"silently truncated\" to somaxconn"),
                );
            }
        }
    }
    if let (Some(e), Some(max)) = (l.evidence, somaxconn) {
        if e.listen_overflows > 0 {
            let mut f = Finding::new("queue.listen_overflows", Severity::Warn, "host")
                .directives(&[SOMAXCONN, "ListenBacklog", "listen", "listen.backlog"])
                .values(format!("{} listen overflows in the run", e.listen_overflows), format!("backlogs and {SOMAXCONN} ≥ the run's {} clients", e.connections))
                .why(format!(
                    "The kernel dropped {} connection attempts because an accept queue was full (TcpExt ListenOverflows): clients waited for SYN retries. Queues: {}; somaxconn {max}.",
                    e.listen_overflows,
                    backlogs.iter().map(|(w, n, v, _)| format!("{w} {n} {v}")).collect::<Vec<_>>().join(", ")
                ))
                .evidence(e.cite())
                .evidence(format!("host: {SOMAXCONN} = {max}"))
                .source("seed 004 (somaxconn raised); RunResult server.samples listen_overflows");
            for (_, name, value, d) in &backlogs {
                f = f.evidence(at(*d, name, value));
            }
            out.push(f);
        }
    }

    // nginx: open files per worker.
    if let Some(n) = l.nginx {
        let (wc, wc_at) = n.worker_connections();
        let proxying =
            !n.proxy_passes().is_empty() || n.parsed.all("fastcgi_pass").next().is_some();
        let per_conn = if proxying { 2 } else { 1 };
        let need = wc * per_conn;
        let rlimit = n.at_level("worker_rlimit_nofile", &[]);
        let running = l
            .host
            .server_for("nginx", &n.parsed.main)
            .and_then(|s| s.nofile_soft.map(|v| (v, s.master_pid)));
        let (limit, how) = match (rlimit.and_then(|d| d.int()), running) {
            (Some(v), _) => (v, format!("worker_rlimit_nofile {v}: {}", rlimit.map(|d| d.at()).unwrap_or_default())),
            (None, Some((v, pid))) => (v.min(i64::MAX as u64) as i64, format!("host: /proc/{pid}/limits of a running nginx worker: Max open files {v} (soft)")),
            (None, None) => (1024, "assumed: soft limit 1024 (systemd's default) — neither worker_rlimit_nofile nor a running nginx".into()),
        };
        if need > limit {
            let want = (need * 2).max(limit);
            let c = Constraint::on(
                "nginx",
                "worker_rlimit_nofile",
                limit,
                rlimit,
                &n.parsed.main,
                None,
            );
            out.push(
                Finding::new("limits.nofile", Severity::Warn, "nginx")
                    .directives(&["worker_rlimit_nofile", "worker_connections"])
                    .values(format!("open files limit {limit}"), format!("worker_rlimit_nofile {want}"))
                    .why(format!(
                        "A worker needs worker_connections {wc} × {per_conn} ({}) = {need} file descriptors, more than its limit {limit}: past that, accept fails with \"Too many open files\". worker_rlimit_nofile sets it for the workers themselves, whatever started nginx (limits.conf alone is not enough).",
                        if proxying { "client + upstream" } else { "client" }
                    ))
                    .evidence(at(wc_at, "worker_connections", 512))
                    .evidence(how)
                    .source("seed 001 (ulimit -n raised in the start script, not only limits.conf); seed 004 (maxfiles); nginx manual, worker_rlimit_nofile")
                    .constrain(c.bound(Bound::AtLeast(need), format!("worker_connections {wc} × {per_conn} descriptors"), "nginx manual, worker_rlimit_nofile"))
                    .constrain(c.bound(Bound::Prefer(want), "twice the need, for files, logs and the upstream keepalive pool", "seed 004 (maxfiles)")),
            );
        }
    }
    out
}
