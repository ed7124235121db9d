//! MariaDB's tunable parameters for the forum's private database: name (`db.` + the
//! server variable), type, range, default, directive and meaning, in the style of the web
//! servers' parameters (`params.rs`). Defaults are what Debian 12's `mariadb-server`
//! (10.11) runs: its `50-server.cnf` sets none of these, so they are the server's built-in
//! values (`mariadbd --no-defaults --verbose --help`). Sizes are whole MiB or KiB, named
//! in the meaning, so no unit suffix ever comes from the command line.

use crate::params::{parse_assignment, ParamKind, ParamSpec, Settings, Value};
use crate::LabError;

/// The prefix that sends a `--set` to the database instead of the web stack.
pub const PREFIX: &str = "db.";

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
        name: format!("{PREFIX}{name}"),
        kind,
        default,
        directive,
        meaning,
    }
}

/// Every database parameter.
pub fn parameters() -> Vec<ParamSpec> {
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

/// The `--set` assignments split into the web stack's and the database's (`db.*`).
pub fn split_assignments(assignments: &[String]) -> (Vec<String>, Vec<String>) {
    assignments
        .iter()
        .cloned()
        .partition(|a| !a.trim_start().starts_with(PREFIX))
}

/// Validate `db.NAME=VALUE` assignments: unknown names and bad values are refused with the
/// range, and combinations the server would quietly ignore are refused too.
pub fn settings_for(assignments: &[String]) -> Result<Settings, LabError> {
    let pairs: Vec<(String, String)> = assignments
        .iter()
        .map(|a| parse_assignment(a))
        .collect::<Result<_, _>>()?;
    let settings = Settings::from_assignments("mariadb", &parameters(), &pairs)?;
    check_consistency(&settings)?;
    Ok(settings)
}

fn check_consistency(settings: &Settings) -> Result<(), LabError> {
    let word = |n: &str| match settings.get(&format!("{PREFIX}{n}")) {
        Some(Value::Word(w)) => w,
        _ => "",
    };
    let int = |n: &str| {
        settings
            .get(&format!("{PREFIX}{n}"))
            .and_then(|v| v.as_int())
            .unwrap_or(0)
    };
    if word("query_cache_type") != "OFF" && int("query_cache_size") == 0 {
        return Err(LabError::Inconsistent(
            "db.query_cache_type is on but db.query_cache_size=0 leaves the cache disabled; set db.query_cache_size (MiB) too".into(),
        ));
    }
    let pool_size_set = settings
        .explicitly_set()
        .iter()
        .any(|n| n == "db.thread_pool_size");
    if pool_size_set && word("thread_handling") != "pool-of-threads" {
        return Err(LabError::Inconsistent(
            "db.thread_pool_size only matters with db.thread_handling=pool-of-threads; set that too".into(),
        ));
    }
    Ok(())
}

/// The `[mariadbd]` lines for the settings: only typed values, with their units.
pub fn render_settings(settings: &Settings) -> String {
    let mut out = String::new();
    for (name, value) in settings.iter() {
        let Some(local) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let text = match (local, value) {
            ("thread_pool_size", Value::Word(_)) => continue,
            ("innodb_buffer_pool_size" | "query_cache_size" | "tmp_table_size", Value::Int(n)) => {
                format!("{n}M")
            }
            ("query_cache_limit" | "sort_buffer_size", Value::Int(n)) => format!("{n}K"),
            (_, Value::Switch(on)) => if on { "ON" } else { "OFF" }.to_string(),
            (_, v) => v.to_string(),
        };
        out.push_str(&format!("{local} = {text}\n"));
        if local == "tmp_table_size" {
            // An in-memory temporary table is bounded by the smaller of the two.
            out.push_str(&format!("max_heap_table_size = {text}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_render_with_units() {
        let s = settings_for(&[]).unwrap();
        let text = render_settings(&s);
        assert!(text.contains("innodb_buffer_pool_size = 128M\n"), "{text}");
        assert!(text.contains("sort_buffer_size = 2048K\n"), "{text}");
        assert!(text.contains("thread_handling = one-thread-per-connection\n"));
        assert!(!text.contains("thread_pool_size"));
        assert!(text.contains("performance_schema = OFF\n"));
    }

    #[test]
    fn refuses_bad_values_and_quiet_combinations() {
        assert!(settings_for(&["db.max_connections=5".into()])
            .unwrap_err()
            .to_string()
            .contains("10..=100000"));
        assert!(settings_for(&["db.innodb_buffer_pool_size=1G".into()]).is_err());
        assert!(settings_for(&["db.nonsense=1".into()]).is_err());
        assert!(settings_for(&[
            "db.query_cache_type=ON".into(),
            "db.query_cache_size=0".into()
        ])
        .is_err());
        assert!(settings_for(&["db.thread_pool_size=4".into()]).is_err());
        let s = settings_for(&[
            "db.thread_handling=pool-of-threads".into(),
            "db.thread_pool_size=4".into(),
        ])
        .unwrap();
        assert!(render_settings(&s).contains("thread_pool_size = 4\n"));
    }

    #[test]
    fn splits_database_assignments() {
        let (web, db) = split_assignments(&[
            "MaxRequestWorkers=4".into(),
            "db.max_connections=300".into(),
        ]);
        assert_eq!(web, vec!["MaxRequestWorkers=4".to_string()]);
        assert_eq!(db, vec!["db.max_connections=300".to_string()]);
    }
}
