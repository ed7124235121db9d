//! MariaDB's parameters (defaults: what Debian 12's mariadb-server 10.11 runs; its
//! 50-server.cnf sets none of these, so they are the server's built-in values). Sizes are
//! whole MiB or KiB, named in the meaning.

use crate::params::{ParamKind, ParamSpec, Value};

fn int(min: i64, max: i64) -> ParamKind {
    ParamKind::Int {
        min,
        max,
        keyword: None,
    }
}

fn spec(
    name: &str,
    kind: ParamKind,
    default: Value,
    directive: &'static str,
    meaning: &'static str,
) -> ParamSpec {
    ParamSpec {
        name: name.to_string(),
        kind,
        default,
        directive,
        meaning,
    }
}

/// Every parameter (names without the forum's `db.` prefix).
pub(super) fn parameters() -> Vec<ParamSpec> {
    vec![
        spec(
            "max_connections",
            int(10, 100_000),
            Value::Int(151),
            "max_connections",
            "connections the server accepts at once; more get \"Too many connections\" (every PHP worker holds one)",
        ),
        spec(
            "thread_cache_size",
            int(0, 16_384),
            Value::Int(151),
            "thread_cache_size",
            "threads kept for reuse after a connection ends; 0 creates a thread per connection (seed 000 tuned MySQL's)",
        ),
        spec(
            "thread_handling",
            ParamKind::Choice(&["one-thread-per-connection", "pool-of-threads"]),
            Value::Word("one-thread-per-connection"),
            "thread_handling",
            "a thread per connection, or MariaDB's thread pool (bounded running threads)",
        ),
        spec(
            "thread_pool_size",
            ParamKind::Int {
                min: 1,
                max: 256,
                keyword: Some("auto"),
            },
            Value::Word("auto"),
            "thread_pool_size",
            "thread groups of the pool (pool-of-threads only); auto = the number of CPUs",
        ),
        spec(
            "back_log",
            int(1, 65_535),
            Value::Int(80),
            "back_log",
            "listen queue of the server socket for connections not yet accepted",
        ),
        spec(
            "innodb_buffer_pool_size",
            int(8, 1_048_576),
            Value::Int(128),
            "innodb_buffer_pool_size",
            "MiB of RAM caching InnoDB pages; the forum's data is served from RAM when it fits",
        ),
        spec(
            "innodb_flush_log_at_trx_commit",
            int(0, 2),
            Value::Int(1),
            "innodb_flush_log_at_trx_commit",
            "1 flushes the redo log at every commit, 2 writes it, 0 neither (the forum only reads)",
        ),
        spec(
            "innodb_adaptive_hash_index",
            ParamKind::Switch,
            Value::Switch(false),
            "innodb_adaptive_hash_index",
            "hash index built from frequent B-tree lookups",
        ),
        spec(
            "table_open_cache",
            int(10, 1_048_576),
            Value::Int(2000),
            "table_open_cache",
            "open table handles kept for reuse across connections",
        ),
        spec(
            "table_definition_cache",
            int(400, 2_097_152),
            Value::Int(400),
            "table_definition_cache",
            "table definitions kept in memory",
        ),
        spec(
            "query_cache_type",
            ParamKind::Choice(&["OFF", "ON", "DEMAND"]),
            Value::Word("OFF"),
            "query_cache_type",
            "cache SELECT results by query text (ON), only for SQL_CACHE (DEMAND), or not",
        ),
        spec(
            "query_cache_size",
            int(0, 4096),
            Value::Int(1),
            "query_cache_size",
            "MiB for the query cache (0 disables it)",
        ),
        spec(
            "query_cache_limit",
            int(1, 65_536),
            Value::Int(1024),
            "query_cache_limit",
            "KiB: larger results are not cached (a thread page's posts are tens of KiB)",
        ),
        spec(
            "sort_buffer_size",
            int(32, 1_048_576),
            Value::Int(2048),
            "sort_buffer_size",
            "KiB per sort (a topic list sorted outside an index would use it)",
        ),
        spec(
            "tmp_table_size",
            int(1, 65_536),
            Value::Int(16),
            "tmp_table_size",
            "MiB an in-memory temporary table may grow to before going to disk",
        ),
        spec(
            "performance_schema",
            ParamKind::Switch,
            Value::Switch(false),
            "performance_schema",
            "the server's own instrumentation (costs some CPU when on)",
        ),
    ]
}
