//! MariaDB/MySQL checks MySQLTuner users expect, each for the server and release that reads
//! the tree (`Layers::db`: MariaDB, MySQL 5.7, MySQL 8; the release when known): options
//! the release removed (refused at start, or ignored), the query cache on, the InnoDB
//! buffer pool against the data it caches (never from RAM alone), durability traded for
//! speed (named as a trade-off, never as a default), and the redo log against the planned
//! buffer pool in the release's own terms (MariaDB 10.5+: one file; MySQL 8 before 8.0.30:
//! `innodb_log_file_size` × `innodb_log_files_in_group`; 8.0.30+:
//! `innodb_redo_log_capacity`). Rules about InnoDB stay silent when InnoDB is off.

use super::{at, mib, Db, Layers};
use crate::change::set;
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};
use crate::plan::Plan;
use webtune_conf::mycnf::Server;

/// What a removed option does in each server: the release that removed it and whether
/// that server then refuses to start ("unknown variable") or starts with a warning and
/// ignores it.
struct Removed {
    name: &'static str,
    mariadb: Option<((u32, u32), bool)>,
    mysql: Option<((u32, u32), bool)>,
    /// What to write instead ("" when nothing replaces it).
    instead: &'static str,
    note: &'static str,
}

/// Removed options. MariaDB's behaviour measured with `mariadbd --OPTION --help --verbose`
/// on Debian 12's 10.11.19 ("unknown variable" = refuses; "was removed. It does nothing
/// now" = ignored); the releases from MariaDB's and MySQL's "removed" notes.
const REMOVED: &[Removed] = &[
    Removed { name: "log_slow_queries", mariadb: Some(((10, 0), true)), mysql: Some(((5, 6), true)), instead: "slow_query_log_file", note: "removed in MariaDB 10.0 and MySQL 5.6; it named the slow log's file and turned the log on: slow_query_log = 1 with slow_query_log_file keeps both" },
    Removed { name: "innodb_additional_mem_pool_size", mariadb: Some(((10, 2), true)), mysql: Some(((5, 7), true)), instead: "", note: "removed in MariaDB 10.2 and MySQL 5.7.4 (InnoDB uses the system allocator)" },
    Removed { name: "innodb_use_sys_malloc", mariadb: Some(((10, 2), true)), mysql: Some(((5, 7), true)), instead: "", note: "removed in MariaDB 10.2 and MySQL 5.7.4 (the system allocator always)" },
    Removed { name: "default_character_set", mariadb: Some(((5, 5), true)), mysql: Some(((5, 5), true)), instead: "character_set_server", note: "removed from the server in MySQL 5.5" },
    Removed { name: "skip_locking", mariadb: Some(((5, 5), true)), mysql: Some(((5, 5), true)), instead: "skip_external_locking", note: "removed in MySQL 5.5" },
    Removed { name: "master_host", mariadb: Some(((5, 5), true)), mysql: Some(((5, 5), true)), instead: "", note: "removed in MySQL 5.5: replication is set with CHANGE MASTER TO (commenting it out keeps the replica's stored settings; a new replica needs CHANGE MASTER TO)" },
    Removed { name: "innodb_support_xa", mariadb: Some(((10, 3), true)), mysql: Some(((8, 0), true)), instead: "", note: "removed in MariaDB 10.3 and MySQL 8.0 (always on)" },
    Removed { name: "innodb_checksums", mariadb: Some(((10, 5), true)), mysql: Some(((8, 0), true)), instead: "", note: "removed (innodb_checksum_algorithm decides)" },
    Removed { name: "innodb_mirrored_log_groups", mariadb: Some(((10, 2), true)), mysql: Some(((5, 7), true)), instead: "", note: "removed (one log group always)" },
    Removed { name: "table_cache", mariadb: Some(((5, 1), false)), mysql: Some(((5, 6), true)), instead: "table_open_cache", note: "renamed table_open_cache in MySQL 5.1.3; MySQL 8 refuses the old name" },
    Removed { name: "thread_concurrency", mariadb: Some(((10, 5), false)), mysql: Some(((5, 7), true)), instead: "", note: "removed in MariaDB 10.5 and MySQL 5.7.2 (it only ever worked on Solaris)" },
    Removed { name: "innodb_file_format", mariadb: Some(((10, 6), false)), mysql: Some(((8, 0), true)), instead: "", note: "removed in MariaDB 10.6 and MySQL 8.0 (Barracuda always)" },
    Removed { name: "innodb_large_prefix", mariadb: Some(((10, 6), false)), mysql: Some(((8, 0), true)), instead: "", note: "removed in MariaDB 10.6 and MySQL 8.0 (always on)" },
    Removed { name: "innodb_locks_unsafe_for_binlog", mariadb: Some(((10, 6), false)), mysql: Some(((8, 0), true)), instead: "", note: "removed in MariaDB 10.6 and MySQL 8.0 (READ COMMITTED gives the same)" },
    Removed { name: "innodb_undo_logs", mariadb: Some(((10, 6), false)), mysql: Some(((8, 0), true)), instead: "", note: "removed in MariaDB 10.6 and MySQL 8.0" },
    Removed { name: "innodb_stats_sample_pages", mariadb: Some(((10, 6), false)), mysql: Some(((8, 0), true)), instead: "", note: "removed (innodb_stats_transient_sample_pages)" },
    Removed { name: "innodb_replication_delay", mariadb: Some(((10, 6), false)), mysql: Some(((8, 0), true)), instead: "", note: "removed in MariaDB 10.6 and MySQL 8.0" },
    Removed { name: "innodb_thread_concurrency", mariadb: Some(((10, 6), false)), mysql: None, instead: "", note: "removed in MariaDB 10.6 (InnoDB's own concurrency limit is gone; MySQL 8 keeps it)" },
    Removed { name: "innodb_commit_concurrency", mariadb: Some(((10, 6), false)), mysql: None, instead: "", note: "removed in MariaDB 10.6 (MySQL 8 keeps it)" },
    Removed { name: "innodb_concurrency_tickets", mariadb: Some(((10, 6), false)), mysql: None, instead: "", note: "removed in MariaDB 10.6 (MySQL 8 keeps it)" },
    Removed { name: "innodb_thread_sleep_delay", mariadb: Some(((10, 6), false)), mysql: None, instead: "", note: "removed in MariaDB 10.6 (MySQL 8 keeps it)" },
    Removed { name: "innodb_adaptive_max_sleep_delay", mariadb: Some(((10, 6), false)), mysql: None, instead: "", note: "removed in MariaDB 10.6 (MySQL 8 keeps it)" },
    Removed { name: "innodb_log_files_in_group", mariadb: Some(((10, 6), false)), mysql: None, instead: "", note: "removed in MariaDB 10.6 (one redo log file; MySQL 8 reads it until innodb_redo_log_capacity is set)" },
    Removed { name: "innodb_buffer_pool_instances", mariadb: Some(((10, 6), false)), mysql: None, instead: "", note: "removed in MariaDB 10.6 (one instance; MySQL 8 keeps it)" },
    Removed { name: "query_cache_size", mariadb: None, mysql: Some(((8, 0), true)), instead: "", note: "the query cache was removed in MySQL 8.0" },
    Removed { name: "query_cache_type", mariadb: None, mysql: Some(((8, 0), true)), instead: "", note: "the query cache was removed in MySQL 8.0" },
    Removed { name: "query_cache_limit", mariadb: None, mysql: Some(((8, 0), true)), instead: "", note: "the query cache was removed in MySQL 8.0" },
    Removed { name: "log_warnings", mariadb: None, mysql: Some(((8, 0), true)), instead: "log_error_verbosity", note: "removed in MySQL 8.0 (log_error_verbosity: 1 errors, 2 and warnings, 3 and notes)" },
];

const SOURCE_REMOVED: &str = "MariaDB manual, \"Upgrading\" pages and the system variables' \"Removed\" lines; mariadbd 10.11 --help --verbose (measured); MySQL manual, \"Features Removed in MySQL 5.7/8.0\"; MySQLTuner";

/// The release a removed-option finding judges for: the known one, else the latest LTS of
/// the tree's server (said as assumed).
fn judged_release(db: &Db) -> ((u32, u32), String) {
    match (db.release, db.server) {
        (Some(r), _) => ((r.major, r.minor), r.label()),
        (None, Server::MariaDb) => (
            (10, 11),
            "MariaDB 10.11 (assumed: the release is not known)".into(),
        ),
        (None, Server::MySql57) => (
            (5, 7),
            "MySQL 5.7 (assumed: the release is not known)".into(),
        ),
        (None, Server::MySql80) => (
            (8, 0),
            "MySQL 8.0 (assumed: the release is not known)".into(),
        ),
    }
}

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let Some(db) = l.db() else { return Vec::new() };
    let m = db.m;
    let mut out = Vec::new();
    let (release, label) = judged_release(&db);
    for r in REMOVED {
        let Some(d) = db.get(r.name) else {
            continue;
        };
        let which = if db.is_mariadb() { r.mariadb } else { r.mysql };
        let Some((since, refuses)) = which.filter(|(since, _)| release >= *since) else {
            continue;
        };
        let severity = if refuses {
            Severity::Critical
        } else {
            Severity::Warn
        };
        let effect = if refuses {
            format!("{label} refuses to start with it (\"unknown variable\")")
        } else if r.name == "table_cache" {
            format!("{label} reads it as a prefix and sets both table_open_cache and table_definition_cache (measured on 10.11)")
        } else {
            format!("{label} starts with a warning and ignores it")
        };
        // A rewrite keeps what the line meant: the file and the log turned on for
        // log_slow_queries, a bare switch bare, else the line commented out.
        let value = d.value();
        let text = match (r.name, r.instead, d.args.is_empty()) {
            ("log_slow_queries", _, true) => "slow_query_log = 1".to_string(),
            ("log_slow_queries", instead, false) => {
                format!("slow_query_log = 1\n{instead} = {value}")
            }
            (_, "", true) => format!("# {} removed", d.name),
            (_, "", false) => format!("# {} = {value} removed", d.name),
            (_, instead, true) => instead.to_string(),
            (_, instead, false) => format!("{instead} = {value}"),
        };
        let recommended = if r.instead.is_empty() {
            "remove the line".to_string()
        } else {
            text.replace('\n', ", ")
        };
        out.push(
            Finding::new(&format!("mariadb.removed.{}", r.name), severity, "mariadb")
                .directives(&[r.name])
                .values(
                    if d.args.is_empty() {
                        d.name.clone()
                    } else {
                        format!("{} = {value}", d.name)
                    },
                    recommended,
                )
                .why(format!(
                    "{}: {effect} (removed in {}.{}).",
                    r.note, since.0, since.1
                ))
                .evidence(format!("{} {}: {}", d.name, d.joined(), d.at()))
                .source(SOURCE_REMOVED)
                .change(Some(set(Some(d), &m.main, None, text))),
        );
    }

    // The query cache: one mutex for every query; off by default since MariaDB 10.1.7,
    // removed in MySQL 8.0 (there the option itself is refused, above). A size set at
    // startup without a type turns it on (measured).
    if db.server != Server::MySql80 {
        if let Some(f) = query_cache(&db) {
            out.push(f);
        }
    }
    if let Some(f) = buffer_pool(l, &db) {
        out.push(f);
    }
    out.extend(durability(&db));
    out
}

fn query_cache(db: &Db) -> Option<Finding> {
    let m = db.m;
    let qc_type = db.get("query_cache_type");
    let qc_size = db.get("query_cache_size");
    let size = qc_size
        .and_then(|d| webtune_conf::ini::parse_size(d.value()))
        .unwrap_or(1 << 20);
    let on = match qc_type.map(|d| d.value().to_ascii_lowercase()) {
        Some(t) => (t == "1" || t == "on") && size > 0,
        None => qc_size.is_some() && size > 0,
    };
    if !on {
        return None;
    }
    let size_now = (size / (1 << 20)) as i64;
    Some(Finding::new("mariadb.query_cache", Severity::Warn, "mariadb")
        .directives(&["query_cache_type", "query_cache_size"])
        .values(format!("query cache on, {}", mib(size / 1024)), "query_cache_type = 0, query_cache_size = 0")
        .why(format!(
            "Every query (and every write, which invalidates the cached results of its tables) takes the query cache's one global mutex: with several PHP children querying at once they queue on it. {} of cache {}. MariaDB turns it off by default since 10.1.7; MySQL 8 removed it. The trade: a read-mostly site with few concurrent queries may lose the cache's hits; measure with --live (Qcache_hits against Com_select).",
            mib(size / 1024),
            if qc_type.is_none() { "is set without query_cache_type, which turns the cache on at startup" } else { "is on" }
        ))
        .evidence(at(qc_type, "query_cache_type", "OFF"))
        .evidence(at(qc_size, "query_cache_size", "1M"))
        .source("MariaDB manual, Query Cache (\"not recommended … high concurrency\"); MySQLTuner (\"Query cache may be disabled by default due to mutex contention\")")
        .change(Some(set(qc_type, &m.main, Some("mysqld"), "query_cache_type = 0".into())))
        .constrain(
            Constraint::on("mariadb", "query_cache_size", size_now, qc_size, &m.main, Some("mysqld"))
                .unit("M")
                .bound(Bound::Exactly(0), "the query cache off", "MariaDB manual, Query Cache"),
        ))
}

/// The InnoDB buffer pool against the data it caches (MySQLTuner's "InnoDB buffer pool /
/// data size"): with the data known (the datadir's files, `--live`'s information_schema),
/// a pool smaller than the data is raised to data × 1.2 rounded up to 128 MiB (at most 70 %
/// of RAM; the memory budget bounds it further); with the data unknown, no number is
/// made up from RAM: the finding says how to learn the size.
fn buffer_pool(l: &Layers, db: &Db) -> Option<Finding> {
    if db.innodb_off().is_some() {
        return None;
    }
    let (pool, pool_at) = db.int("innodb_buffer_pool_size", 128 << 20);
    let ram = l.host.mem_total_kib * 1024;
    let source = "MariaDB manual, InnoDB buffer pool (\"as large as possible … 70–80% of memory on a dedicated server\"); MySQLTuner (InnoDB buffer pool / data size)";
    let Some(data) = &l.facts.innodb_data else {
        if pool > 128 << 20 || l.host.mem_total_kib < 4 << 20 {
            return None;
        }
        return Some(
            Finding::new("mariadb.buffer_pool", Severity::Info, "mariadb")
                .directives(&["innodb_buffer_pool_size"])
                .values(
                    format!("innodb_buffer_pool_size = {} (the default); the data's size unknown", mib(pool / 1024)),
                    "a pool that holds the InnoDB data (data × 1.2), within the memory budget",
                )
                .why(format!(
                    "The pool caches InnoDB's data and indexes, so its size follows the data, not the RAM: a {} pool for a 100 MiB database wastes memory the web tier needs, and for a 20 GiB one reads go to disk. The data's size is not known here ({}): measure it with SELECT SUM(data_length + index_length) FROM information_schema.tables WHERE engine = 'InnoDB', or run with --live (or --root with the datadir in the copy).",
                    mib(l.host.mem_total_kib * 70 / 100),
                    if l.facts.copied() { "the copy holds no datadir" } else { "the datadir cannot be read" }
                ))
                .evidence(at(pool_at, "innodb_buffer_pool_size", "128M"))
                .source(source),
        );
    };
    let want = (data.value + data.value / 5).div_ceil(128 << 20).max(1) * (128 << 20);
    let cap = ram / 100 * 70;
    if data.value <= pool || ram == 0 {
        return None;
    }
    let rec = want.min(cap).max(pool);
    Some(
        Finding::new("mariadb.buffer_pool", Severity::Warn, "mariadb")
            .directives(&["innodb_buffer_pool_size"])
            .values(format!("innodb_buffer_pool_size = {}", mib(pool / 1024)), format!("innodb_buffer_pool_size = {}M", rec >> 20))
            .why(format!(
                "InnoDB data of {} does not fit a buffer pool of {}: reads go to disk. Data × 1.2, rounded up to 128 MiB = {}, at most 70% of RAM {} = {}.",
                mib(data.value / 1024), mib(pool / 1024), mib(want / 1024), mib(ram / 1024), mib(cap / 1024)
            ))
            .evidence(at(pool_at, "innodb_buffer_pool_size", "128M"))
            .evidence(format!("{}: {}", data.from, mib(data.value / 1024)))
            .source(source)
            .constrain(Constraint::on("mariadb", "innodb_buffer_pool_size", (pool >> 20) as i64, pool_at, db.main(), Some("mysqld")).unit("M").bound(
                Bound::AtLeast((rec >> 20) as i64),
                format!("InnoDB data {} × 1.2, rounded up to 128 MiB, at most 70% of RAM", mib(data.value / 1024)),
                source,
            )),
    )
}

/// Durability traded for speed, named as a trade-off with what is lost, never as a
/// default to restore: `innodb_flush_log_at_trx_commit` 0 or 2, `sync_binlog` 0 with the
/// binary log on.
fn durability(db: &Db) -> Vec<Finding> {
    let mut out = Vec::new();
    if db.innodb_off().is_none() {
        if let Some(d) = db.get("innodb_flush_log_at_trx_commit") {
            let lost = match d.value() {
                "0" => Some("up to about a second of committed transactions on any crash of mysqld or of the host (the log is written and flushed once a second)"),
                "2" => Some("up to about a second of committed transactions when the host crashes or loses power (the log is written at each commit but flushed once a second); a crash of mysqld alone loses nothing"),
                _ => None,
            };
            if let Some(lost) = lost {
                out.push(
                    Finding::new("mariadb.durability.flush_log", Severity::Info, "mariadb")
                        .directives(&["innodb_flush_log_at_trx_commit"])
                        .values(format!("innodb_flush_log_at_trx_commit = {}", d.value()), "a choice to keep knowingly: 1 for no loss, at the cost of an fsync per commit")
                        .why(format!("A trade-off, not a mistake: commits do not wait for the disk, so writes are faster, and what is lost is {lost}. Keep it where those transactions can be lost or redone (a cache, a replica); use 1 where they cannot."))
                        .evidence(format!("{} = {}: {}", d.name, d.value(), d.at()))
                        .source("MariaDB manual, innodb_flush_log_at_trx_commit; MySQLTuner"),
                );
            }
        }
    }
    let binlog = db.get("log_bin").or_else(|| db.get("log_bin_basename"));
    let mysql8 = db.server == Server::MySql80;
    if binlog.is_some() || mysql8 {
        let (v, d) = db.int("sync_binlog", if mysql8 { 1 } else { 0 });
        if v == 0 {
            out.push(
                Finding::new("mariadb.durability.sync_binlog", Severity::Info, "mariadb")
                    .directives(&["sync_binlog", "log_bin"])
                    .values("sync_binlog = 0 with the binary log on", "a choice to keep knowingly: 1 for a binary log that survives a power loss, at the cost of an fsync per commit group")
                    .why("A trade-off: the binary log is left to the OS to flush, so commits are faster; on a power loss or host crash it may lack transactions the tables have, and replicas (or a point-in-time restore) diverge from the primary. Keep 0 without replicas or binlog-based recovery.".to_string())
                    .evidence(at(d, "sync_binlog", 0))
                    .evidence(binlog.map_or("log_bin on (MySQL 8's default)".into(), |b| format!("{}: {}", b.name, b.at())))
                    .source("MariaDB manual, sync_binlog; MySQL manual, sync_binlog (default 1 since 5.7.7)"),
            );
        }
    }
    out
}

/// The redo log against the planned buffer pool: MySQLTuner wants the redo log (all its
/// files) at 25 % of the pool; below 20 % checkpoints come often and writes stall while
/// InnoDB flushes to make room. Each release sizes it its own way.
pub(super) fn derived(l: &Layers, plan: &Plan) -> Vec<Finding> {
    let Some(db) = l.db() else { return Vec::new() };
    if db.innodb_off().is_some() {
        return Vec::new();
    }
    let (pool, pool_at) = db.int("innodb_buffer_pool_size", 128 << 20);
    let pool_mib = plan.value_or("mariadb", "innodb_buffer_pool_size", (pool >> 20) as i64);
    let as_planned = if pool_mib as u64 != pool >> 20 {
        " (as planned)"
    } else {
        ""
    };
    let (size, size_at) = db.int("innodb_log_file_size", 96 << 20);
    let size_mib = (size >> 20) as i64;
    let source = "MySQLTuner (\"InnoDB total log file size equals 25% of buffer pool size\"); MariaDB manual, innodb_log_file_size; MySQL 8.0 manual, \"Redo Log\" (innodb_redo_log_capacity, 8.0.30)";
    if pool_mib <= 0 {
        return Vec::new();
    }
    let want = (pool_mib / 4).max(96);
    let finding = |current: String, recommended: String, why: String| {
        Finding::new("mariadb.redo_log", Severity::Info, "mariadb")
            .directives(&["innodb_log_file_size", "innodb_buffer_pool_size"])
            .values(current, recommended)
            .why(why)
            .evidence(at(size_at, "innodb_log_file_size", format!("{size_mib}M")))
            .evidence(at(pool_at, "innodb_buffer_pool_size", "128M"))
            .source(source)
    };
    let checkpoint = "InnoDB must checkpoint (flush dirty pages) before the redo log fills: a redo log below a fifth of the buffer pool forces frequent checkpoints and write stalls under load";
    match db.server {
        Server::MariaDb => {
            if size_mib * 100 >= pool_mib * 20 {
                return Vec::new();
            }
            vec![finding(
                format!("innodb_log_file_size = {size_mib}M = {:.0}% of the buffer pool {pool_mib}M{as_planned}", size_mib as f64 / pool_mib as f64 * 100.0),
                format!("innodb_log_file_size = {want}M"),
                format!("{checkpoint}. 25% of the pool{as_planned} = {want} MiB. {} uses one redo file (since 10.5), resized at the next start.", db.label()),
            )
            .constrain(
                Constraint::on("mariadb", "innodb_log_file_size", size_mib, size_at, db.main(), Some("mysqld"))
                    .unit("M")
                    .bound(Bound::AtLeast(want), format!("25% of the buffer pool {pool_mib}M"), "MySQLTuner"),
            )]
        }
        Server::MySql57 | Server::MySql80 => {
            let capacity = db.get("innodb_redo_log_capacity");
            let (files, files_at) = db.int("innodb_log_files_in_group", 2);
            let files = files.max(1) as i64;
            let total = match capacity {
                Some(c) => {
                    (webtune_conf::ini::parse_size(c.value()).unwrap_or(100 << 20) >> 20) as i64
                }
                None => size_mib * files,
            };
            if total * 100 >= pool_mib * 20 {
                return Vec::new();
            }
            let new_capacity = db.release.is_some_and(|r| {
                r.server == Server::MySql80 && r.at_least(8, 0) && r.patch.is_some_and(|p| p >= 30)
            });
            let how = if capacity.is_some() || new_capacity {
                format!("MySQL 8.0.30+ sizes it as innodb_redo_log_capacity ({want} MiB), resized online")
            } else {
                format!(
                    "{} sizes it as innodb_log_file_size × innodb_log_files_in_group {files}: {} × {files} = {want} MiB (8.0.30 and later read the same product while innodb_redo_log_capacity is not set, with a deprecation warning)",
                    db.label(),
                    want / files
                )
            };
            let mut f = finding(
                format!("redo log {total}M (innodb_log_file_size {size_mib}M × innodb_log_files_in_group {files}{}) = {:.0}% of the buffer pool {pool_mib}M{as_planned}", if capacity.is_some() { ", or innodb_redo_log_capacity" } else { "" }, total as f64 / pool_mib as f64 * 100.0),
                if capacity.is_some() || new_capacity { format!("innodb_redo_log_capacity = {want}M") } else { format!("innodb_log_file_size = {}M (× {files} files)", want / files) },
                format!("{checkpoint}. 25% of the pool{as_planned} = {want} MiB; {how}."),
            )
            .evidence(at(files_at, "innodb_log_files_in_group", 2));
            f = if capacity.is_some() || new_capacity {
                f.constrain(
                    Constraint::on(
                        "mariadb",
                        "innodb_redo_log_capacity",
                        total,
                        capacity,
                        db.main(),
                        Some("mysqld"),
                    )
                    .unit("M")
                    .bound(
                        Bound::AtLeast(want),
                        format!("25% of the buffer pool {pool_mib}M"),
                        "MySQLTuner; MySQL 8.0 manual",
                    ),
                )
            } else {
                f.constrain(
                    Constraint::on(
                        "mariadb",
                        "innodb_log_file_size",
                        size_mib,
                        size_at,
                        db.main(),
                        Some("mysqld"),
                    )
                    .unit("M")
                    .bound(
                        Bound::AtLeast(want / files),
                        format!("25% of the buffer pool {pool_mib}M over {files} files"),
                        "MySQLTuner; MySQL manual",
                    ),
                )
            };
            vec![f]
        }
    }
}
