//! Rules on measured evidence alone: what the servers logged during a run (a full worker
//! pool, a full connection table) and how much the kernel switched between their threads.

use super::{at, fpm_children, ApacheMpm, Layers};
use crate::finding::{Finding, Severity};

/// Context switches per response above which the server spends its time switching.
const CSW_PER_RESPONSE: f64 = 20.0;

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let Some(e) = l.evidence else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some((count, msg)) = e
        .logged("MaxRequestWorkers")
        .or_else(|| e.logged("MaxClients"))
    {
        let mut f = Finding::new("evidence.apache_workers_full", Severity::Warn, "apache2")
            .directives(&["MaxRequestWorkers"])
            .values(
                "all workers busy during the run",
                "more workers if the memory budget allows, else a proxy in front (seed 000)",
            )
            .why(format!(
                "Apache logged \"{}\" ({count}×): new connections waited in the listen queue.",
                msg.message
            ))
            .evidence(e.cite())
            .source("Apache error log; seed 001");
        if let Some(m) = l.apache.and_then(ApacheMpm::of) {
            f = f.evidence(at(m.max_workers_at, "MaxRequestWorkers", m.max_workers));
        }
        out.push(f);
    }
    if let Some((count, msg)) = e.logged("max_children") {
        let mut f = Finding::new("evidence.fpm_children_full", Severity::Warn, "php-fpm")
            .directives(&["pm.max_children"])
            .values(
                "pm.max_children reached during the run",
                "more children if the memory budget allows",
            )
            .why(format!(
                "php-fpm logged \"{}\" ({count}×): PHP requests queued for a child.",
                msg.message
            ))
            .evidence(e.cite())
            .source("php-fpm log; php-fpm manual, pm.max_children");
        if let Some((sum, list)) = l.php_fpm.and_then(fpm_children) {
            f = f.values(
                format!("pm.max_children {sum} reached during the run"),
                "more children if the memory budget allows",
            );
            for d in list {
                f = f.evidence(format!("pm.max_children = {}: {}", d.value(), d.at()));
            }
        }
        out.push(f);
    }
    if let Some((count, msg)) = e.logged("Too many connections") {
        let mut f = Finding::new(
            "evidence.mysql_connections_full",
            Severity::Critical,
            "mariadb",
        )
        .directives(&["max_connections"])
        .values(
            "\"Too many connections\" during the run",
            "max_connections ≥ Σ pm.max_children + 10",
        )
        .why(format!(
            "\"{}\" was logged {count}×: requests failed.",
            msg.message
        ))
        .evidence(e.cite())
        .source("MariaDB manual, max_connections");
        if let Some(db) = l.db() {
            let (v, d) = db.int("max_connections", 151);
            f = f.evidence(at(d, "max_connections", v));
        }
        out.push(f);
    }
    if let Some((count, msg)) = e.logged("worker_connections are not enough") {
        out.push(
            Finding::new("evidence.nginx_connections_full", Severity::Warn, "nginx")
                .directives(&["worker_connections"])
                .values(
                    "worker_connections exhausted during the run",
                    "worker_connections ≥ 2 × clients ÷ worker_processes",
                )
                .why(format!(
                    "nginx logged \"{}\" ({count}×): connections were refused.",
                    msg.message
                ))
                .evidence(e.cite())
                .source("nginx manual, worker_connections"),
        );
    }
    if e.responses > 0 && e.context_switches > 0 {
        let per = e.context_switches as f64 / e.responses as f64;
        if per > CSW_PER_RESPONSE {
            out.push(context_switches(l, e, per));
        }
    }
    out
}

/// Context switches per response, weighed against the host's other load: the server's
/// threads are preempted (involuntary switches) as much by other busy processes (the load
/// generator on the same host, a backup, another service) as by each other. When the
/// others used more CPU than the server, fewer workers would not help, and the finding
/// says so instead of blaming the server's worker count.
fn context_switches(l: &Layers, e: &crate::Evidence, per: f64) -> Finding {
    let other = (e.host_busy_cpu_s - e.server_cpu_s).max(0.0);
    let measured = e.host_busy_cpu_s > 0.0;
    let others_dominate = measured && other > e.server_cpu_s;
    let load = if measured {
        format!(
            " Host CPU busy {:.1} s, of which the server's processes {:.1} s and other processes {:.1} s ({:.0}%); {} of the switches involuntary.",
            e.host_busy_cpu_s,
            e.server_cpu_s,
            other,
            other / e.host_busy_cpu_s * 100.0,
            e.involuntary_switches
        )
    } else {
        " The run's samples hold no host CPU figures: the host's other load is unknown.".to_string()
    };
    let f = Finding::new("evidence.context_switches", Severity::Info, &e.target)
        .evidence(e.cite())
        .source("seed 000; RunResult server.samples voluntary/involuntary_ctxt_switches, cpus, cpu_user_s/cpu_system_s");
    if others_dominate {
        f.directives(&[])
            .values(
                format!("{per:.1} context switches per response, with other load on the host"),
                "no change to the server: measure again on a quiet host, or with the load generator on other CPUs (lab run --server-cpus)",
            )
            .why(format!(
                "{} context switches ÷ {} responses = {per:.1}, but other processes used more CPU than the server did: its threads were preempted by them, not only by each other, so fewer workers would not remove the switches.{load}",
                e.context_switches, e.responses
            ))
    } else {
        f.directives(&["MaxRequestWorkers", "pm.max_children", "worker_processes"])
            .values(
                format!("{per:.1} context switches per response"),
                format!("≤ {CSW_PER_RESPONSE:.0}: fewer busy workers per core"),
            )
            .why(format!(
                "{} context switches ÷ {} responses = {per:.1}: more runnable workers than cores take turns on the CPUs (seed 000 kept 2 busy processes per core, {} cores here). Peak {} processes.{load}",
                e.context_switches, e.responses, l.host.cores, e.peak_processes
            ))
    }
}
