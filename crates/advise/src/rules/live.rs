//! The live counters (`--live`) as bounds in the plan like any other finding's (issue 35,
//! item 9: a `thread_cache_size` of 16 in the plan beside a live finding asking ≥ 19 was
//! a contradiction): each live finding on a directive of the my.cnf read states its bound
//! there; and the counters against the trees read: Apache's busy workers against
//! MaxRequestWorkers, nginx's connections against worker_connections, the memory MariaDB
//! reached against RAM.

use super::{at, Layers};
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};
use crate::live::Live;

fn fig(live: &Live, source: &str, key: &str) -> Option<f64> {
    live.figures.get(source)?.get(key)?.parse().ok()
}

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let Some(live) = l.live else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let g = |k: &str| fig(live, "mariadb", k).unwrap_or(0.0);
    for f in &live.findings {
        let mut f = f.clone();
        if let Some(db) = l.db() {
            let bound = match f.id.as_str() {
                "live.mariadb.thread_cache" => Some((
                    "thread_cache_size",
                    "",
                    (g("Max_used_connections") as i64).clamp(1, 256),
                    "Max_used_connections (at most 256)".to_string(),
                )),
                "live.mariadb.max_connections" => Some((
                    "max_connections",
                    "",
                    (g("Max_used_connections") * 100.0 / 85.0).ceil() as i64 + 1,
                    "Max_used_connections below 85% of it".to_string(),
                )),
                "live.mariadb.table_definition_cache" => Some((
                    "table_definition_cache",
                    "",
                    g("Open_table_definitions") as i64 + 400,
                    "Open_table_definitions + 400".to_string(),
                )),
                "live.mariadb.table_open_cache" => Some((
                    "table_open_cache",
                    "",
                    ((g("table_open_cache") * 1.5).max(g("Open_tables") + 64.0)) as i64,
                    "half again the full cache".to_string(),
                )),
                "live.mariadb.log_waits" => Some((
                    "innodb_log_buffer_size",
                    "M",
                    ((g("innodb_log_buffer_size") * 2.0 / 1048576.0).max(16.0)) as i64,
                    "twice the log buffer that was waited on".to_string(),
                )),
                _ => None,
            };
            if let Some((name, unit, want, why)) = bound {
                let (v, d) = db.int(name, 0);
                let current = if unit == "M" {
                    (v >> 20) as i64
                } else {
                    v as i64
                };
                f = f.evidence(at(d, name, current)).constrain(
                    Constraint::on("mariadb", name, current, d, db.main(), Some("mysqld"))
                        .unit(unit)
                        .bound(Bound::AtLeast(want), format!("--live: {why}"), "MySQLTuner"),
                );
            }
        }
        if f.id == "live.mariadb.memory_reached" {
            let reached_kib = {
                let per: f64 = [
                    "read_buffer_size",
                    "read_rnd_buffer_size",
                    "sort_buffer_size",
                    "thread_stack",
                    "max_allowed_packet",
                    "join_buffer_size",
                ]
                .iter()
                .map(|k| g(k))
                .sum();
                let global: f64 = [
                    "key_buffer_size",
                    "innodb_buffer_pool_size",
                    "innodb_log_buffer_size",
                    "query_cache_size",
                ]
                .iter()
                .map(|k| g(k))
                .sum::<f64>()
                    + g("tmp_table_size").min(g("max_heap_table_size"));
                ((global + g("Max_used_connections") * per) / 1024.0) as u64
            };
            let ram = l.host.mem_total_kib;
            if ram > 0 && reached_kib > ram / 10 * 9 {
                f.severity = Severity::Warn;
                f.why.push_str(&format!(
                    " That is more than 90% of RAM ({} MiB): at its busiest the database alone left the web tier almost nothing.",
                    ram / 1024
                ));
            }
        }
        out.push(f);
    }
    // Apache's busy workers against the MaxRequestWorkers of the tree read.
    if let (Some(busy), Some(a)) = (fig(live, "apache2", "BusyWorkers"), l.apache) {
        if let Some(m) = super::ApacheMpm::of(a) {
            let mrw = m.max_workers as f64;
            if mrw > 0.0 && busy >= mrw * 0.9 {
                out.push(
                    Finding::new("live.apache.max_request_workers", Severity::Warn, "apache2 (live)")
                        .directives(&[m.max_workers_name()])
                        .values(format!("{busy:.0} busy workers of {} {}", m.max_workers_name(), m.max_workers), "more workers within the memory budget, or a proxy in front")
                        .why("At least 90% of MaxRequestWorkers serve requests now: the next connections wait in the listen queue (apache2buddy's check against the scoreboard).".to_string())
                        .evidence(at(m.max_workers_at, "MaxRequestWorkers", m.max_workers))
                        .source("apache2buddy; Apache manual, mod_status"),
                );
            }
        }
    }
    // nginx's connections against worker_processes × worker_connections.
    if let (Some(active), Some(n)) = (fig(live, "nginx", "active"), l.nginx) {
        let (wp, _) = n.worker_processes(l.host.cores);
        let (wc, wc_at) = n.worker_connections();
        let capacity = wp as f64 * wc as f64;
        let waiting = fig(live, "nginx", "waiting").unwrap_or(0.0);
        if capacity > 0.0 && active >= capacity * 0.8 {
            let want = ((active * 2.0 / wp as f64) as u64).next_power_of_two() as i64;
            out.push(
                Finding::new("live.nginx.worker_connections", Severity::Warn, "nginx (live)")
                    .directives(&["worker_connections", "keepalive_timeout"])
                    .values(
                        format!("{active:.0} active connections ({waiting:.0} waiting) of worker_processes {wp} × worker_connections {wc} = {capacity:.0}"),
                        format!("worker_connections {want}{}", if waiting > active / 2.0 { ", or a shorter keepalive_timeout (most are idle)" } else { "" }),
                    )
                    .why(format!("At least 80% of the connection slots are in use; past them nginx refuses connections (\"worker_connections are not enough\"). {waiting:.0} of them wait idle in keep-alive."))
                    .evidence(at(wc_at, "worker_connections", 512))
                    .source("nginx manual, worker_connections and stub_status")
                    .constrain(
                        Constraint::on("nginx", "worker_connections", wc, wc_at, &n.parsed.main, Some("events"))
                            .bound(Bound::AtLeast(want), "--live: twice the active connections per worker, the next power of two", "nginx manual, worker_connections"),
                    ),
            );
        }
    }
    out
}
