//! MySQLTuner's runtime checks beyond the first five (mysqltuner.pl's `mysql_stats`,
//! `mysql_myisam`, `mysql_innodb`, `security_recommendations`, `validate_mysql_version`),
//! each with MySQLTuner's threshold named: the table cache and the table definition cache,
//! joins without indexes, the slow-query share, open files against the limit, the MyISAM
//! key buffer's use, InnoDB log waits, name resolution, anonymous and password-less
//! accounts, an end-of-life release, and the memory the server has actually reached.

use super::{num, pct};
use crate::finding::{Finding, Severity};
use std::collections::BTreeMap;

/// Releases and the month their maintenance ends (MariaDB's maintenance policy page and
/// MySQL's lifecycle). A release not listed is not judged.
const END_OF_LIFE: &[(&str, u32, u32, (i32, u32))] = &[
    ("MariaDB", 10, 0, (2019, 3)),
    ("MariaDB", 10, 1, (2020, 10)),
    ("MariaDB", 10, 2, (2022, 5)),
    ("MariaDB", 10, 3, (2023, 5)),
    ("MariaDB", 10, 4, (2024, 6)),
    ("MariaDB", 10, 5, (2025, 6)),
    ("MariaDB", 10, 6, (2026, 7)),
    ("MariaDB", 10, 11, (2028, 2)),
    ("MariaDB", 11, 4, (2029, 5)),
    ("MySQL", 5, 5, (2018, 12)),
    ("MySQL", 5, 6, (2021, 2)),
    ("MySQL", 5, 7, (2023, 10)),
    ("MySQL", 8, 0, (2026, 4)),
    ("MySQL", 8, 4, (2032, 4)),
];

/// This month, from the clock (days since 1970 to a civil date: Howard Hinnant's
/// `civil_from_days`).
fn this_month() -> (i32, u32) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400) as i32 + i32::from(month <= 2);
    (year, month)
}

/// The checks, each made with `mk(id, severity)` (which adds the evidence, the source
/// and, under 24 h of uptime, lowers warnings to info).
pub(super) fn findings(
    s: &BTreeMap<String, String>,
    mk: &dyn Fn(&str, Severity) -> Finding,
    caveat: &str,
) -> Vec<Finding> {
    let g = |k: &str| num(s, k).unwrap_or(0.0);
    let has = |k: &str| s.contains_key(k);
    let mut out = Vec::new();
    let days = (g("Uptime") / 86_400.0).max(1.0 / 24.0);

    // Table cache: Open_tables ÷ Opened_tables (MySQLTuner: < 20 % → raise it).
    let (open, opened, cache) = (g("Open_tables"), g("Opened_tables"), g("table_open_cache"));
    if opened >= 1000.0 && has("table_open_cache") {
        let hit = pct(open, opened);
        if hit < 20.0 && open >= cache * 0.95 {
            out.push(
                mk("live.mariadb.table_open_cache", Severity::Warn)
                    .directives(&["table_open_cache"])
                    .values(format!("table cache hit rate {hit:.1}% ({open:.0} open of {opened:.0} opened; table_open_cache {cache:.0}, full)"), format!("table_open_cache ≥ {:.0}", (cache * 1.5).max(open + 64.0)))
                    .why(format!("Open_tables ÷ Opened_tables = {hit:.1}% < 20% with the cache full: tables are closed and reopened all the time (each reopen costs a file open and a definition read). Raise it by half, within open_files_limit.{caveat}")),
            );
        }
    }
    let (defs, def_cache) = (g("Open_table_definitions"), g("table_definition_cache"));
    if has("table_definition_cache") && def_cache > 0.0 && defs >= def_cache {
        out.push(
            mk("live.mariadb.table_definition_cache", Severity::Warn)
                .directives(&["table_definition_cache"])
                .values(format!("Open_table_definitions {defs:.0} ≥ table_definition_cache {def_cache:.0}"), format!("table_definition_cache ≥ {:.0}", defs + 400.0))
                .why(format!("The definition cache is full: table definitions are read from disk again and again. MySQLTuner raises it above the number of tables (here at least the {defs:.0} open ones, + 400).{caveat}")),
        );
    }
    // Joins without indexes: Select_full_join + Select_range_check per day > 250.
    let joins = g("Select_full_join") + g("Select_range_check");
    if joins / days > 250.0 {
        out.push(
            mk("live.mariadb.joins_without_indexes", Severity::Warn)
                .directives(&["join_buffer_size"])
                .values(format!("{joins:.0} joins without indexes ({:.0} a day)", joins / days), "add the missing indexes (the slow log with log_queries_not_using_indexes shows them); a larger join_buffer_size only hides them")
                .why(format!("Select_full_join + Select_range_check = {joins:.0} over {days:.1} days, more than MySQLTuner's 250 a day: each scans a whole table per row of the other.{caveat}")),
        );
    }
    // Slow queries: more than 5 % of all questions.
    let (slow, questions) = (g("Slow_queries"), g("Questions"));
    if questions >= 1000.0 && pct(slow, questions) > 5.0 {
        out.push(
            mk("live.mariadb.slow_queries", Severity::Warn)
                .directives(&["long_query_time", "slow_query_log"])
                .values(format!("{slow:.0} slow queries = {:.1}% of {questions:.0}", pct(slow, questions)), "find them in the slow log (slow_query_log = 1) and index or rewrite them")
                .why(format!("Slow_queries ÷ Questions above MySQLTuner's 5% (long_query_time {} s).{caveat}", s.get("long_query_time").map_or("?", String::as_str))),
        );
    }
    // Open files against the limit: above 85 %.
    let (files, limit) = (g("Open_files"), g("open_files_limit"));
    if limit > 0.0 && pct(files, limit) > 85.0 {
        out.push(
            mk("live.mariadb.open_files", Severity::Warn)
                .directives(&["open_files_limit", "table_open_cache"])
                .values(format!("Open_files {files:.0} = {:.0}% of open_files_limit {limit:.0}", pct(files, limit)), "a larger open_files_limit (LimitNOFILE in the service unit), or a smaller table_open_cache")
                .why(format!("Above MySQLTuner's 85%: at the limit, opening a table fails with \"Too many open files\".{caveat}")),
        );
    }
    // The MyISAM key buffer: used share, and its read miss rate.
    let (key_size, unused, block) = (
        g("key_buffer_size"),
        g("Key_blocks_unused"),
        g("key_cache_block_size"),
    );
    if key_size >= 16.0 * 1048576.0 && block > 0.0 {
        let used = 100.0 - pct(unused * block, key_size);
        if used < 10.0 && g("Key_read_requests") < 1000.0 {
            out.push(
                mk("live.mariadb.key_buffer", Severity::Info)
                    .directives(&["key_buffer_size"])
                    .values(format!("key buffer {:.0} MiB, {used:.1}% used, {:.0} key reads requested", key_size / 1048576.0, g("Key_read_requests")), "a smaller key_buffer_size (MyISAM indexes only; the memory is free for InnoDB)")
                    .why(format!("The key buffer caches MyISAM indexes only, and this server barely uses it: {used:.1}% of it holds blocks. The trade: a MyISAM table used later would start cold.{caveat}")),
            );
        }
    }
    // InnoDB log waits: the log buffer was too small for a transaction.
    let waits = g("Innodb_log_waits");
    if waits > 0.0 && has("innodb_log_buffer_size") {
        let buf = g("innodb_log_buffer_size");
        out.push(
            mk("live.mariadb.log_waits", Severity::Warn)
                .directives(&["innodb_log_buffer_size"])
                .values(format!("Innodb_log_waits {waits:.0} with innodb_log_buffer_size {:.0} MiB", buf / 1048576.0), format!("innodb_log_buffer_size ≥ {:.0}M", (buf * 2.0 / 1048576.0).max(16.0)))
                .why(format!("Transactions waited for room in the redo log buffer {waits:.0} times: each wait is a flush in the commit's path. MySQLTuner raises the buffer when Innodb_log_waits > 0.{caveat}")),
        );
    }
    // Name resolution for every connection.
    if s.get("skip_name_resolve")
        .is_some_and(|v| v.eq_ignore_ascii_case("OFF"))
    {
        out.push(
            mk("live.mariadb.skip_name_resolve", Severity::Info)
                .directives(&["skip_name_resolve"])
                .values("skip_name_resolve OFF", "skip_name_resolve = ON, if every account's host is an address or localhost")
                .why("Each new connection's address is looked up in DNS (a slow or failing resolver delays every PHP request that connects). The trade: accounts granted to host names stop matching, so only turn it on after checking SELECT host FROM mysql.user.".to_string()),
        );
    }
    // Accounts.
    for (key, id, what) in [
        (
            "anonymous_accounts",
            "live.mariadb.anonymous_accounts",
            "anonymous accounts (user '')",
        ),
        (
            "passwordless_accounts",
            "live.mariadb.passwordless_accounts",
            "accounts without a password",
        ),
    ] {
        let n = g(key);
        if n > 0.0 {
            out.push(
                mk(id, Severity::Warn)
                    .values(format!("{n:.0} {what}"), "drop them, or set a password (mariadb-secure-installation)")
                    .why(format!("Anyone who reaches the server can log in through them: MySQLTuner flags every {what}.")),
            );
        }
    }
    // The release's end of life.
    if let Some(r) = s
        .get("version")
        .and_then(|v| webtune_conf::mycnf::Release::parse(v))
    {
        let name = if r.server == webtune_conf::mycnf::Server::MariaDb {
            "MariaDB"
        } else {
            "MySQL"
        };
        if let Some((_, _, _, end)) = END_OF_LIFE
            .iter()
            .find(|(n, a, b, _)| *n == name && *a == r.major && *b == r.minor)
        {
            if this_month() > *end {
                out.push(
                    mk("live.mariadb.end_of_life", Severity::Warn)
                        .values(format!("{name} {}.{} (version {})", r.major, r.minor, s.get("version").map_or("", String::as_str)), "a maintained release (an LTS)")
                        .why(format!("{name} {}.{}'s maintenance ended in {}-{:02}: no security fixes since.", r.major, r.minor, end.0, end.1)),
                );
            }
        }
    }
    // The memory actually reached: global buffers + Max_used_connections × per-thread.
    let per_thread = [
        "read_buffer_size",
        "read_rnd_buffer_size",
        "sort_buffer_size",
        "thread_stack",
        "max_allowed_packet",
        "join_buffer_size",
    ]
    .iter()
    .map(|k| g(k))
    .sum::<f64>();
    let global = [
        "key_buffer_size",
        "innodb_buffer_pool_size",
        "innodb_log_buffer_size",
        "query_cache_size",
    ]
    .iter()
    .map(|k| g(k))
    .sum::<f64>()
        + g("tmp_table_size").min(g("max_heap_table_size"));
    if has("innodb_buffer_pool_size") {
        let reached = global + g("Max_used_connections") * per_thread;
        out.push(
            mk("live.mariadb.memory_reached", Severity::Info)
                .values(format!("{:.0} MiB reached (MySQLTuner's \"maximum reached memory usage\")", reached / 1048576.0), "see memory.budget for the worst case at max_connections")
                .why(format!("Global buffers {:.0} MiB + Max_used_connections {:.0} × per-thread buffers {:.1} MiB: what the busiest moment since start could have taken.", global / 1048576.0, g("Max_used_connections"), per_thread / 1048576.0)),
        );
    }
    out
}
