//! MariaDB/MySQL checks MySQLTuner users expect: options that stop the server from
//! starting (removed in current versions), the query cache on, the InnoDB buffer pool left
//! at its 128 MiB default on a large host, and the redo log against the (planned) buffer
//! pool. The server is assumed to be MariaDB 10.11 (Debian 12's); each removed option
//! also says what MySQL 8 does with it.

use super::{at, mib, mysql_int, set, Layers};
use crate::finding::{Finding, Severity};
use crate::plan::{Bound, Constraint, Plan};
use webtune_conf::ini;

/// A host with this much RAM or more is "large" for a 128 MiB buffer pool (3 % of it).
const LARGE_HOST_KIB: u64 = 4 << 20;

/// What a removed option does: in MariaDB 10.11 (measured with `mariadbd --help --verbose`
/// on Debian 12's 10.11.19), and in MySQL 8.0.
struct Removed {
    name: &'static str,
    /// True: 10.11 refuses to start ("unknown variable"); false: a warning, a no-op.
    mariadb_refuses: bool,
    mysql8_refuses: bool,
    /// What to write instead ("" when nothing replaces it).
    instead: &'static str,
    note: &'static str,
}

const REMOVED: &[Removed] = &[
    Removed { name: "log_slow_queries", mariadb_refuses: true, mysql8_refuses: true, instead: "slow_query_log_file", note: "removed in MariaDB 10.0 and MySQL 5.6; slow_query_log = 1 turns it on" },
    Removed { name: "innodb_additional_mem_pool_size", mariadb_refuses: true, mysql8_refuses: true, instead: "", note: "removed in MariaDB 10.2 and MySQL 5.7.4 (InnoDB uses the system allocator)" },
    Removed { name: "default_character_set", mariadb_refuses: true, mysql8_refuses: true, instead: "character_set_server", note: "removed from the server in MySQL 5.5" },
    Removed { name: "skip_locking", mariadb_refuses: true, mysql8_refuses: true, instead: "skip_external_locking", note: "removed in MySQL 5.5" },
    Removed { name: "master_host", mariadb_refuses: true, mysql8_refuses: true, instead: "", note: "removed in MySQL 5.5: replication is set with CHANGE MASTER TO" },
    Removed { name: "innodb_support_xa", mariadb_refuses: true, mysql8_refuses: true, instead: "", note: "removed in MariaDB 10.3 and MySQL 8.0 (always on)" },
    Removed { name: "table_cache", mariadb_refuses: false, mysql8_refuses: true, instead: "table_open_cache", note: "renamed table_open_cache in MySQL 5.1.3; MariaDB 10.11 reads it as a prefix and sets both table_open_cache and table_definition_cache" },
    Removed { name: "thread_concurrency", mariadb_refuses: false, mysql8_refuses: true, instead: "", note: "removed in MariaDB 10.5 (a no-op with a warning) and MySQL 5.7.2" },
    Removed { name: "innodb_file_format", mariadb_refuses: false, mysql8_refuses: true, instead: "", note: "removed in MariaDB 10.6 (a no-op with a warning) and MySQL 8.0 (Barracuda always)" },
    Removed { name: "innodb_large_prefix", mariadb_refuses: false, mysql8_refuses: true, instead: "", note: "removed in MariaDB 10.6 (a no-op with a warning) and MySQL 8.0 (always on)" },
    Removed { name: "innodb_log_files_in_group", mariadb_refuses: false, mysql8_refuses: false, instead: "", note: "removed in MariaDB 10.6 (one redo log file; a no-op with a warning)" },
    Removed { name: "innodb_buffer_pool_instances", mariadb_refuses: false, mysql8_refuses: false, instead: "", note: "removed in MariaDB 10.6 (one instance; a no-op with a warning)" },
];

const SOURCE_REMOVED: &str = "MariaDB manual, \"Upgrading\" pages and the system variables' \"Removed\" lines; mariadbd 10.11 --help --verbose (measured); MySQL 8.0 manual, \"Features Removed in MySQL 8.0\"; MySQLTuner";

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let Some(m) = l.mysql else { return Vec::new() };
    let mut out = Vec::new();
    for r in REMOVED {
        let Some(d) = ini::mysqld_value(m, r.name) else {
            continue;
        };
        let severity = if r.mariadb_refuses {
            Severity::Critical
        } else {
            Severity::Warn
        };
        let effect = match (r.mariadb_refuses, r.mysql8_refuses) {
            (true, _) => "MariaDB 10.11 refuses to start with it (\"unknown variable\")".to_string(),
            (false, true) => "MariaDB 10.11 starts but the option does nothing it used to; MySQL 8 refuses to start with it".to_string(),
            (false, false) => "MariaDB 10.11 starts with a warning; the option does nothing".to_string(),
        };
        let text = if r.instead.is_empty() {
            format!("# {} removed: {}", r.name, d.value())
        } else {
            format!("{} = {}", r.instead, d.value())
        };
        out.push(
            Finding::new(&format!("mariadb.removed.{}", r.name), severity, "mariadb")
                .directives(&[r.name])
                .values(
                    format!("{} = {}", d.name, d.value()),
                    if r.instead.is_empty() {
                        "remove the line".to_string()
                    } else {
                        format!("{} = {}", r.instead, d.value())
                    },
                )
                .why(format!("{}: {effect}.", r.note))
                .evidence(format!("{} = {}: {}", d.name, d.value(), d.at()))
                .source(SOURCE_REMOVED)
                .change(Some(set(Some(d), &m.main, None, text))),
        );
    }

    // The query cache: one mutex for every query; off by default since MariaDB 10.1.7,
    // removed in MySQL 8.0. A size set at startup without a type turns it on (measured).
    let qc_type = ini::mysqld_value(m, "query_cache_type");
    let qc_size = ini::mysqld_value(m, "query_cache_size");
    let size = qc_size
        .and_then(|d| ini::parse_size(d.value()))
        .unwrap_or(1 << 20);
    let on = match qc_type.map(|d| d.value().to_ascii_lowercase()) {
        Some(t) => (t == "1" || t == "on") && size > 0,
        None => qc_size.is_some() && size > 0,
    };
    if on {
        let mut f = Finding::new("mariadb.query_cache", Severity::Warn, "mariadb")
            .directives(&["query_cache_type", "query_cache_size"])
            .values(format!("query cache on, {}", mib(size / 1024)), "query_cache_type = 0, query_cache_size = 0")
            .why(format!(
                "Every query (and every write, which invalidates the cached results of its tables) takes the query cache's one global mutex: with several PHP children querying at once they queue on it. {} of cache {}. MariaDB turns it off by default since 10.1.7; MySQL 8 removed it.",
                mib(size / 1024),
                if qc_type.is_none() { "is set without query_cache_type, which turns the cache on at startup" } else { "is on" }
            ))
            .evidence(at(qc_type, "query_cache_type", "OFF"))
            .evidence(at(qc_size, "query_cache_size", "1M"))
            .source("MariaDB manual, Query Cache (\"not recommended … high concurrency\"); MySQLTuner (\"Query cache may be disabled by default due to mutex contention\")");
        let size_now = (size / (1 << 20)) as i64;
        f = f
            .change(Some(set(
                qc_type,
                &m.main,
                Some("mysqld"),
                "query_cache_type = 0".into(),
            )))
            .constrain(
                Constraint::on(
                    "mariadb",
                    "query_cache_size",
                    size_now,
                    qc_size,
                    &m.main,
                    Some("mysqld"),
                )
                .unit("M")
                .bound(
                    Bound::Exactly(0),
                    "the query cache off",
                    "MariaDB manual, Query Cache",
                ),
            );
        out.push(f);
    }

    // The buffer pool left at its default on a large host.
    let (pool, pool_at) = mysql_int(m, "innodb_buffer_pool_size", 128 << 20);
    let ram = l.host.mem_total_kib * 1024;
    let skip_innodb = ini::mysqld_value(m, "skip_innodb").is_some();
    if pool <= 128 << 20 && l.host.mem_total_kib >= LARGE_HOST_KIB && !skip_innodb {
        // Shared with the web tier when its configs were read too.
        let shared = l.apache.is_some() || l.php_fpm.is_some() || l.nginx.is_some();
        let share = if shared { 25 } else { 70 };
        let want = (l.host.mem_total_kib >> 10) * share / 100;
        let want = (want / 128 * 128).max(256) as i64;
        out.push(
            Finding::new("mariadb.buffer_pool_default", Severity::Warn, "mariadb")
                .directives(&["innodb_buffer_pool_size"])
                .values(format!("innodb_buffer_pool_size = {} on a host of {}", mib(pool / 1024), mib(l.host.mem_total_kib)), format!("innodb_buffer_pool_size = {want}M"))
                .why(format!(
                    "The pool caches InnoDB's data and indexes; at {} it holds {:.1}% of RAM {}, and every read past it goes to disk. {share}% of RAM ({}) = {want} MiB, rounded down to 128 MiB.",
                    mib(pool / 1024),
                    pool as f64 / ram.max(1) as f64 * 100.0,
                    mib(l.host.mem_total_kib),
                    if shared { "a host shared with the web tier read here: a quarter, the rest for Apache/php-fpm and the page cache" } else { "a dedicated database host, the manual's 70–80%" }
                ))
                .evidence(at(pool_at, "innodb_buffer_pool_size", "128M"))
                .evidence(format!("host: MemTotal {}", mib(l.host.mem_total_kib)))
                .source("MariaDB manual, InnoDB Buffer Pool (\"70–80% of memory on a dedicated database server\"); MySQLTuner (InnoDB buffer pool / data size)")
                .constrain(
                    Constraint::on("mariadb", "innodb_buffer_pool_size", (pool >> 20) as i64, pool_at, &m.main, Some("mysqld"))
                        .unit("M")
                        .bound(Bound::Prefer(want), format!("{share}% of RAM"), "MariaDB manual, InnoDB Buffer Pool"),
                ),
        );
    }
    out
}

/// The redo log against the planned buffer pool: MySQLTuner wants the redo log (all its
/// files) at 25 % of the pool; below 20 % checkpoints come often and writes stall while
/// InnoDB flushes to make room.
pub(super) fn derived(l: &Layers, plan: &Plan) -> Vec<Finding> {
    let Some(m) = l.mysql else { return Vec::new() };
    if ini::mysqld_value(m, "skip_innodb").is_some() {
        return Vec::new();
    }
    let (pool, pool_at) = mysql_int(m, "innodb_buffer_pool_size", 128 << 20);
    let pool_mib = plan.value_or("mariadb", "innodb_buffer_pool_size", (pool >> 20) as i64);
    // MariaDB 10.11: 96 MiB, one file (innodb_log_files_in_group is a no-op since 10.6).
    let (log, log_at) = mysql_int(m, "innodb_log_file_size", 96 << 20);
    let log_mib = (log >> 20) as i64;
    if pool_mib <= 0 || log_mib * 100 >= pool_mib * 20 {
        return Vec::new();
    }
    let want = (pool_mib / 4).max(96);
    vec![Finding::new("mariadb.redo_log", Severity::Info, "mariadb")
        .directives(&["innodb_log_file_size", "innodb_buffer_pool_size"])
        .values(
            format!("innodb_log_file_size = {log_mib}M = {:.0}% of the buffer pool {pool_mib}M", log_mib as f64 / pool_mib as f64 * 100.0),
            format!("innodb_log_file_size = {want}M"),
        )
        .why(format!(
            "InnoDB must checkpoint (flush dirty pages) before the redo log fills: a redo log of {log_mib} MiB for a buffer pool of {pool_mib} MiB{} forces frequent checkpoints and write stalls under load. 25% of the pool = {want} MiB. MariaDB 10.5+ uses one redo file, and resizes it at the next start.",
            if pool_mib as u64 != pool >> 20 { " (as planned)" } else { "" }
        ))
        .evidence(at(log_at, "innodb_log_file_size", "96M"))
        .evidence(at(pool_at, "innodb_buffer_pool_size", "128M"))
        .source("MySQLTuner (\"InnoDB total log file size equals 25% of buffer pool size\"); MariaDB manual, innodb_log_file_size")
        .constrain(
            Constraint::on("mariadb", "innodb_log_file_size", log_mib, log_at, &m.main, Some("mysqld"))
                .unit("M")
                .bound(Bound::AtLeast(want), format!("25% of the buffer pool {pool_mib}M"), "MySQLTuner"),
        )]
}
