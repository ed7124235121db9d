//! The connection chain, front to back: php-fpm's children never more than the Apache
//! workers that hand requests to them (as planned), php-fpm's children (summed over pools,
//! as planned) against MariaDB's max_connections and back_log, Apache's workers against
//! php-fpm's children; and the settings along it: pm.max_requests, thread_cache_size.

use super::{at, fpm_children, ApacheMpm, Layers};
use crate::change::set;
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};
use crate::plan::Plan;
use webtune_conf::config::Directive;
use webtune_conf::ini;

/// The web tier's concurrency the database serves: Σ pm.max_children as planned (a
/// single pool the memory budget cuts counts at its planned size), with the directives.
fn planned_children<'a>(l: &Layers<'a>, plan: &Plan) -> Option<(i64, i64, Vec<&'a Directive>)> {
    let (sum, at) = l.php_fpm.and_then(fpm_children)?;
    let planned = match at.as_slice() {
        [one] => plan
            .get("php-fpm", "pm.max_children")
            .filter(|p| p.bounds.iter().any(|b| b.place.line == Some(one.line)))
            .and_then(|p| p.value)
            .unwrap_or(sum),
        _ => sum,
    };
    Some((planned, sum, at))
}

pub(super) fn rules(l: &Layers, plan: &Plan) -> Vec<Finding> {
    let mut out = Vec::new();
    let children = planned_children(l, plan);
    let cut = |planned: i64, sum: i64| {
        if planned == sum {
            String::new()
        } else {
            format!(" (as planned; {sum} configured)")
        }
    };

    if let (Some((sum, configured, at_list)), Some(db)) = (&children, l.db()) {
        let m = db.m;
        let (max_conn, mc_at) = db.int("max_connections", 151);
        let max_conn = max_conn as i64;
        let how = cut(*sum, *configured);
        if *sum > max_conn {
            let mut f = Finding::new("chain.fpm_mysql", Severity::Warn, "php-fpm → mariadb")
                .directives(&["pm.max_children", "max_connections"])
                .values(format!("pm.max_children {sum}{how} (all pools) > max_connections {max_conn}"), format!("max_connections = {}", sum.saturating_add(10)))
                .why(format!(
                    "Every PHP child may hold a database connection: {sum} children{how} against {max_conn} connections means \"Too many connections\" errors at full load; max_connections ≥ Σ pm.max_children + 10 for administration = {}.",
                    sum.saturating_add(10)
                ))
                .evidence(at(mc_at, "max_connections", 151))
                .source("seed 000 (the PHP → MySQL chain); MariaDB manual, max_connections")
                .constrain(
                    Constraint::on("mariadb", "max_connections", max_conn, mc_at, &m.main, Some("mysqld")).bound(
                        Bound::AtLeast(sum.saturating_add(10)),
                        format!("Σ pm.max_children {sum}{how} + 10 for administration"),
                        "seed 000; MariaDB manual, max_connections",
                    ),
                );
            for d in at_list {
                f = f.evidence(format!("pm.max_children = {}: {}", d.value(), d.at()));
            }
            out.push(f);
        }
        if let Some(bl) = webtune_conf::mycnf::mysqld_value(m, "back_log") {
            let v = bl.int().unwrap_or(0);
            if v < *sum {
                out.push(
                    Finding::new("chain.mysql_back_log", Severity::Info, "php-fpm → mariadb")
                        .directives(&["back_log", "pm.max_children"])
                        .values(format!("back_log = {v}"), format!("back_log = {sum}"))
                        .why(format!("A burst of {sum} children connecting at once queues in MariaDB's listen backlog of {v}; the rest wait for SYN retries (1 s, 3 s…)."))
                        .evidence(format!("back_log = {v}: {}", bl.at()))
                        .source("MariaDB manual, back_log")
                        .constrain(Constraint::on("mariadb", "back_log", v, Some(bl), &m.main, Some("mysqld")).bound(
                            Bound::AtLeast(*sum),
                            format!("Σ pm.max_children {sum}{how} connecting at once"),
                            "MariaDB manual, back_log",
                        )),
                );
            }
        }
    }

    let topology = l.topology();
    if let (Some(a), Some((sum, _, at_list)), Some((handler, _))) =
        (l.apache, &children, topology.apache_fpm)
    {
        if let Some(mut m) = ApacheMpm::of(a) {
            m.max_workers = plan.value_or("apache2", m.max_workers_name(), m.max_workers);
            if m.max_workers > *sum {
                let mut f = Finding::new("chain.apache_fpm", Severity::Info, "apache2 → php-fpm")
                    .directives(&[m.max_workers_name(), "pm.max_children"])
                    .values(format!("{} {} > pm.max_children {sum}", m.max_workers_name(), m.max_workers), format!("pm.max_children ≥ the PHP share of {} {}, within the memory budget", m.max_workers_name(), m.max_workers))
                    .why(format!(
                        "Up to {} Apache workers can hand PHP requests to {sum} php-fpm children: the other {} wait in php-fpm's listen backlog (and log \"pm.max_children reached\"). Fine for static files; for PHP-heavy traffic size both together.",
                        m.max_workers,
                        m.max_workers - sum
                    ))
                    .evidence(format!("{} {}: {}", handler.name, handler.joined(), handler.at()))
                    .evidence(at(m.max_workers_at, "MaxRequestWorkers", m.max_workers))
                    .source("php-fpm manual, pm.max_children; seed 000");
                for d in at_list {
                    f = f.evidence(format!("pm.max_children = {}: {}", d.value(), d.at()));
                }
                out.push(f);
            }
        }
    }

    if let Some(db) = l.db() {
        let m = db.m;
        // Connections made per request (PHP without persistent connections) need threads.
        let clients = children.as_ref().map(|c| c.0).or_else(|| {
            l.apache
                .filter(|a| a.mod_php().is_some())
                .and_then(ApacheMpm::of)
                .map(|m| plan.value_or("apache2", m.max_workers_name(), m.max_workers))
        });
        if let Some(tc) = db.get("thread_cache_size") {
            let v = tc.int().unwrap_or(0);
            let want = clients.unwrap_or(16).clamp(8, 256);
            if v < want.min(8) || clients.is_some_and(|c| v < c.min(256)) {
                out.push(
                    Finding::new("mariadb.thread_cache_size", Severity::Warn, "mariadb")
                        .directives(&["thread_cache_size"])
                        .values(format!("thread_cache_size = {v}"), format!("thread_cache_size = {want}"))
                        .why(format!(
                            "PHP opens a connection per request; without a cached thread each one costs a thread creation. {} clients of the database → thread_cache_size = min(clients, 256) = {want}.",
                            clients.map_or("unknown (8 at least)".into(), |c| c.to_string())
                        ))
                        .evidence(format!("thread_cache_size = {v}: {}", tc.at()))
                        .source("seed 000 (thread_cache set for the PHP pages); MariaDB manual, thread_cache_size")
                        .constrain(Constraint::on("mariadb", "thread_cache_size", v, Some(tc), &m.main, Some("mysqld")).bound(
                            Bound::AtLeast(want),
                            format!("min(database clients {}, 256)", clients.map_or("unknown".into(), |c| c.to_string())),
                            "seed 000; MariaDB manual, thread_cache_size",
                        )),
                );
            }
        }
    }
    out
}

/// The rules on directives chosen for their own sake: pm.max_requests.
pub(super) fn own_rules(l: &Layers) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(f) = l.php_fpm {
        for pool in ini::pools(f) {
            let Some((_, mc)) = &pool.max_children else {
                continue;
            };
            let current = pool.max_requests.as_ref().map_or(0, |x| x.0);
            if current == 0 {
                out.push(
                    Finding::new("php_fpm.max_requests", Severity::Info, "php-fpm")
                        .directives(&["pm.max_requests"])
                        .values(format!("pool {}: pm.max_requests {current}", pool.name), "pm.max_requests = 500")
                        .why("0 means a child serves requests forever: memory a script or extension leaks accumulates in every child. Recycling after 500 requests costs one fork per 500 requests.".to_string())
                        .evidence(at(pool.max_requests.as_ref().map(|x| &x.1), "pm.max_requests", 0))
                        .source("php-fpm manual (pm.max_requests: \"useful to work around memory leaks\"); seed 001's MaxRequestsPerChild")
                        .change(Some(match &pool.max_requests {
                            Some((_, d)) => set(Some(d), &mc.file, None, "pm.max_requests = 500".into()),
                            None => crate::change::Change { file: mc.file.clone(), line: None, section: Some(pool.name.clone()), text: "pm.max_requests = 500".into() },
                        })),
                );
            }
        }
    }

    out
}

/// php-fpm's children for the front: never more than the Apache workers that hand them
/// requests (each worker waits for one PHP request at a time), as planned. More children
/// than that are never used, and each holds memory and a database connection.
pub(super) fn from_front(l: &Layers, plan: &Plan) -> Vec<Finding> {
    let (Some(a), Some(f)) = (l.apache, l.php_fpm) else {
        return Vec::new();
    };
    let Some((handler, pool)) = l.topology().apache_fpm else {
        return Vec::new();
    };
    let Some(m) = ApacheMpm::of(a) else {
        return Vec::new();
    };
    let planned = plan.value_or("apache2", m.max_workers_name(), m.max_workers);
    let Some(p) = ini::pools(f).into_iter().find(|p| p.name == pool) else {
        return Vec::new();
    };
    let Some((children, d)) = p.max_children else {
        return Vec::new();
    };
    let planned_children = plan.value_or("php-fpm", "pm.max_children", children);
    if planned_children <= planned {
        return Vec::new();
    }
    let was = if planned == m.max_workers {
        String::new()
    } else {
        format!(" (planned; {} now)", m.max_workers)
    };
    vec![Finding::new("chain.fpm_front", Severity::Info, "apache2 → php-fpm")
        .directives(&["pm.max_children", m.max_workers_name()])
        .values(
            format!("pool {pool}: pm.max_children {children} > {} {planned}{was}", m.max_workers_name()),
            format!("pm.max_children ≤ {planned}"),
        )
        .why(format!(
            "Apache hands PHP to pool {pool}, and each of its {planned} workers waits for one PHP request at a time: no more than {planned} children can ever be busy. The others only hold memory (and, when PHP connects, database connections the database is sized for)."
        ))
        .evidence(format!("{} {}: {}", handler.name, handler.joined(), handler.at()))
        .evidence(at(m.max_workers_at, "MaxRequestWorkers", m.max_workers))
        .evidence(format!("pm.max_children = {}: {}", d.value(), d.at()))
        .source("php-fpm manual, pm.max_children; Apache manual, mod_proxy_fcgi")
        .constrain(
            Constraint::on("php-fpm", "pm.max_children", children, Some(&d), &f.main, None).bound(
                Bound::AtMost(planned),
                format!("{} {planned}{was} workers send to it", m.max_workers_name()),
                "php-fpm manual, pm.max_children",
            ),
        )]
}
