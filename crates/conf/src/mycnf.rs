//! What my.cnf means to the server that reads it: which server the tree is written for
//! (MariaDB, MySQL 5.7, MySQL 8: their defaults differ), the release when it is known
//! (`Release`: which option groups it reads, `[mariadb-10.11]` only for 10.11), sizes as
//! `mysqld` parses them
//! (a whole number with K, M, G, T, P or E; `1.5G` and `0x10000000` are refused, as the
//! server refuses them), option-name prefixes (MariaDB takes `key_buffer` for
//! `key_buffer_size`; MySQL removed prefixes in 5.7, MySQL WL#6978), and `skip-innodb`.

use crate::config::{Directive, NoteLevel, Parsed, ReadNote};
use crate::error::ReadError;
use serde::Serialize;

/// The server a my.cnf is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Server {
    #[default]
    MariaDb,
    MySql57,
    MySql80,
}

impl Server {
    pub fn label(self) -> &'static str {
        match self {
            Server::MariaDb => "MariaDB",
            Server::MySql57 => "MySQL 5.7",
            Server::MySql80 => "MySQL 8",
        }
    }
}

/// The server a tree is written for, and why.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Flavor {
    pub server: Server,
    pub why: String,
    /// Nothing in the tree says: MariaDB (Debian's) is assumed.
    pub assumed: bool,
}

impl std::fmt::Display for Flavor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.assumed {
            write!(f, "{} assumed ({})", self.server.label(), self.why)
        } else {
            write!(f, "{} ({})", self.server.label(), self.why)
        }
    }
}

/// A server's release, as `mariadbd --version`, `SELECT VERSION()` or the user says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Release {
    pub server: Server,
    pub major: u32,
    pub minor: u32,
    /// The patch level when known (8.0.30 changed the redo log).
    pub patch: Option<u32>,
}

impl Release {
    /// A release from a version text: `10.11`, `10.11.6`, `mariadb-10.11`, `mysql-8.0.34`,
    /// `10.11.6-MariaDB-0+deb12u1` (`SELECT VERSION()`), `8.0.35-27` (Percona: MySQL's),
    /// or `mariadbd  Ver 10.11.6-MariaDB…`/`mysqld  Ver 8.0.35 for Linux…` (`--version`).
    /// Without a name, major 10 and 11 are MariaDB's, 5 and 8 and 9 MySQL's.
    pub fn parse(text: &str) -> Option<Release> {
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        let t = match lower.find(" ver ") {
            Some(i) => &t[i + 5..],
            None => t,
        };
        let lower = t.to_ascii_lowercase();
        let (named, rest) = if let Some(r) = lower.strip_prefix("mariadb-") {
            (Some(Server::MariaDb), r)
        } else if let Some(r) = lower.strip_prefix("mysql-") {
            (Some(Server::MySql80), r)
        } else {
            (None, lower.trim())
        };
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let mut parts = number.split('.').filter(|p| !p.is_empty());
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next()?.parse().ok()?;
        let patch = parts.next().and_then(|p| p.parse().ok());
        let server = match named {
            Some(Server::MariaDb) => Server::MariaDb,
            _ if rest.contains("mariadb") => Server::MariaDb,
            Some(_) => Server::mysql(major, minor),
            None => match major {
                10..=12 => Server::MariaDb,
                5 | 8 | 9 => Server::mysql(major, minor),
                _ => return None,
            },
        };
        Some(Release {
            server,
            major,
            minor,
            patch,
        })
    }

    /// "MariaDB 10.11", "MySQL 8.0.35".
    pub fn label(&self) -> String {
        let name = match self.server {
            Server::MariaDb => "MariaDB",
            Server::MySql57 | Server::MySql80 => "MySQL",
        };
        match self.patch {
            Some(p) => format!("{name} {}.{}.{p}", self.major, self.minor),
            None => format!("{name} {}.{}", self.major, self.minor),
        }
    }

    /// Is this release `major.minor` or later?
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// Does this server read the option group `section`? Measured for MariaDB 10.11
    /// (`my_print_defaults --mysqld`: `[mysqld]`, `[server]`, `[mysqld-10.11]`,
    /// `[mariadb]`, `[mariadb-10.11]`, `[mariadbd]`, `[mariadbd-10.11]`,
    /// `[client-server]`, `[galera]`; not `[mariadb-10.0]` nor `[server-10.11]`); MySQL reads
    /// `[mysqld]`, `[server]` and `[mysqld-X.Y]` (MySQL manual, "Using Option Files").
    pub fn reads(&self, section: &str) -> bool {
        let own = format!("{}.{}", self.major, self.minor);
        let (base, version) = match section.rsplit_once('-') {
            Some((b, v)) if v.starts_with(|c: char| c.is_ascii_digit()) => (b, Some(v)),
            _ => (section, None),
        };
        let names: &[&str] = match self.server {
            Server::MariaDb => match version {
                None => &[
                    "mysqld",
                    "server",
                    "mariadb",
                    "mariadbd",
                    "client-server",
                    "galera",
                ],
                Some(_) => &["mysqld", "mariadb", "mariadbd"],
            },
            Server::MySql57 | Server::MySql80 => match version {
                None => &["mysqld", "server"],
                Some(_) => &["mysqld"],
            },
        };
        names.contains(&base) && version.is_none_or(|v| v == own)
    }
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

impl Server {
    fn mysql(major: u32, minor: u32) -> Server {
        if (major, minor) >= (8, 0) {
            Server::MySql80
        } else {
            Server::MySql57
        }
    }
}

/// A server section that only one release reads (`[mariadb-10.0]`, `[mysqld-8.0]`).
pub fn versioned_section(section: &str) -> Option<&str> {
    let (_, v) = section.rsplit_once('-')?;
    (v.starts_with(|c: char| c.is_ascii_digit()) && is_server_section(Some(&section.to_string())))
        .then_some(v)
}

/// Keep only the option groups the server reads: with its release known, the sections of
/// other releases (and, for MySQL, MariaDB's groups) are dropped with a note at each; with
/// it unknown, every versioned section is dropped with a warning (what the server does
/// with it cannot be told). `unknown`: why the release is not known, said in the warning.
pub fn settle_release(p: &mut Parsed, release: Option<&Release>, unknown: &str) {
    let mut dropped: Vec<(String, String, usize, std::path::PathBuf)> = Vec::new();
    let mut kept = Vec::with_capacity(p.directives.len());
    for d in std::mem::take(&mut p.directives) {
        let section = d.context.first().cloned().unwrap_or_default();
        let server = is_server_section(Some(&section));
        let read = match release {
            _ if !server => true,
            Some(r) => r.reads(&section),
            None => versioned_section(&section).is_none(),
        };
        if read {
            kept.push(d);
            continue;
        }
        match dropped.iter_mut().find(|x| x.0 == section && x.3 == d.file) {
            Some(x) => x.2 += 1,
            None => dropped.push((section, d.at(), 1, d.file.clone())),
        }
    }
    p.directives = kept;
    for (section, at, count, file) in dropped {
        let options = if count == 1 { "option" } else { "options" };
        let (level, message) = match release {
            Some(r) => (
                NoteLevel::Note,
                format!("[{section}]: {count} {options} not read: {r} does not read this group"),
            ),
            None => (
                NoteLevel::Warning,
                format!(
                    "[{section}]: {count} {options} not applied: only the server of that version reads this group, and the server's version is not known ({unknown})"
                ),
            ),
        };
        p.notes.push(ReadNote {
            level,
            at,
            target: file,
            message,
        });
    }
}

/// Keys only MySQL 8 knows.
const ONLY_MYSQL8: &[&str] = &[
    "innodb_dedicated_server",
    "default_authentication_plugin",
    "authentication_policy",
    "binlog_expire_logs_seconds",
    "innodb_redo_log_capacity",
    "mysqlx",
    "mysqlx_port",
    "mysqlx_bind_address",
    "mysqlx_socket",
    "caching_sha2_password_auto_generate_rsa_keys",
    // Percona XtraDB Cluster 8.0 (a MySQL 8 server).
    "pxc_strict_mode",
    "pxc_encrypt_cluster_traffic",
];
/// Keys MySQL 8 removed that 5.7 has (MariaDB has some of them too: they only tell 5.7
/// from 8 once the tree is MySQL's).
const REMOVED_IN_8: &[&str] = &[
    "query_cache_size",
    "query_cache_type",
    "query_cache_limit",
    "innodb_file_format",
    "innodb_large_prefix",
    "log_warnings",
];

/// Which server the tree is written for.
pub fn flavor(p: &Parsed) -> Flavor {
    let found = |why: String, server| Flavor {
        server,
        why,
        assumed: false,
    };
    for d in &p.directives {
        if let Some(s) = d.context.first() {
            if s == "mariadb"
                || s == "mariadbd"
                || s == "galera"
                || s.starts_with("mariadb-")
                || s.starts_with("mariadbd-")
            {
                return found(format!("[{s}] at {}", d.at()), Server::MariaDb);
            }
        }
        if d.name.starts_with("aria_") {
            return found(format!("{} at {}", d.name, d.at()), Server::MariaDb);
        }
    }
    // Debian's mariadb.conf.d, a file named mariadb*.cnf: not any path with "mariadb" in it.
    let mariadb_file = |f: &&std::path::PathBuf| {
        f.to_string_lossy().contains("mariadb.conf.d")
            || f.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("mariadb"))
    };
    if let Some(f) = p.files.iter().find(mariadb_file) {
        return found(format!("read {}", f.display()), Server::MariaDb);
    }
    if let Some(d) = p
        .directives
        .iter()
        .find(|d| ONLY_MYSQL8.contains(&d.name.as_str()))
    {
        return found(format!("{} at {}", d.name, d.at()), Server::MySql80);
    }
    let mysql = p
        .files
        .iter()
        .find(|f| f.to_string_lossy().contains("mysql.conf.d"));
    if let Some(f) = mysql {
        if let Some(d) = p
            .directives
            .iter()
            .find(|d| REMOVED_IN_8.contains(&d.name.as_str()))
        {
            return found(
                format!(
                    "read {}; {} (removed in 8) at {}",
                    f.display(),
                    d.name,
                    d.at()
                ),
                Server::MySql57,
            );
        }
        return Flavor {
            server: Server::MySql80,
            why: format!(
                "read {} (MySQL's packaging); 8 assumed of its versions",
                f.display()
            ),
            assumed: true,
        };
    }
    Flavor {
        server: Server::MariaDb,
        why: "nothing in the tree tells MariaDB from MySQL".into(),
        assumed: true,
    }
}

/// A server's default of a size or count, in bytes (counts as themselves).
pub fn default_of(server: Server, key: &str) -> Option<u64> {
    const K: u64 = 1 << 10;
    const M: u64 = 1 << 20;
    let common = match key {
        "innodb_buffer_pool_size" => 128 * M,
        "innodb_log_buffer_size" => 16 * M,
        "max_connections" => 151,
        "read_buffer_size" => 128 * K,
        "read_rnd_buffer_size" => 256 * K,
        "join_buffer_size" => 256 * K,
        "binlog_cache_size" => 32 * K,
        "tmp_table_size" | "max_heap_table_size" => 16 * M,
        _ => 0,
    };
    let v = match (server, key) {
        (_, _) if common > 0 => common,
        (Server::MariaDb, "key_buffer_size") => 128 * M,
        (_, "key_buffer_size") => 8 * M,
        (Server::MariaDb, "sort_buffer_size") => 2 * M,
        (_, "sort_buffer_size") => 256 * K,
        (Server::MariaDb, "thread_stack") => 292 * K,
        (Server::MySql57, "thread_stack") => 256 * K,
        (Server::MySql80, "thread_stack") => M,
        (Server::MySql80, "query_cache_size") => 0,
        (_, "query_cache_size") => M,
        (Server::MariaDb, "innodb_log_file_size") => 96 * M,
        (_, "innodb_log_file_size") => 48 * M,
        _ => return None,
    };
    Some(v)
}

/// The server's default of `key` for the tree `p` (by its flavor).
pub fn server_default(p: &Parsed, key: &str) -> Option<u64> {
    default_of(flavor(p).server, key)
}

/// A size as mysqld parses it: a whole decimal number (sign allowed) with at most one
/// suffix K, M, G, T, P or E (1024-based, either case). Err: why the server refuses it.
pub fn parse_size(v: &str) -> Result<u64, String> {
    let t = v.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    if t.starts_with('-') {
        return Err("a negative size".into());
    }
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits == 0 {
        return Err("not a number".into());
    }
    let (num, suffix) = t.split_at(digits);
    let shift = match suffix {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        "p" | "P" => 50,
        "e" | "E" => 60,
        s if s.starts_with('.') => return Err("a fraction (write 1536M, not 1.5G)".into()),
        s if s.starts_with(['x', 'X']) => return Err("a hexadecimal number".into()),
        s => {
            return Err(format!(
                "an unknown suffix {:?}",
                s.chars().next().unwrap_or(' ')
            ))
        }
    };
    let n: u64 = num.parse().map_err(|_| "larger than 2^64".to_string())?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| "larger than 2^64 bytes".to_string())
}

/// The sizes and counts the advisor reads: each is checked as mysqld would.
const SIZES: &[&str] = &[
    "innodb_buffer_pool_size",
    "innodb_log_buffer_size",
    "innodb_log_file_size",
    "innodb_redo_log_capacity",
    "key_buffer_size",
    "query_cache_size",
    "query_cache_limit",
    "max_connections",
    "sort_buffer_size",
    "read_buffer_size",
    "read_rnd_buffer_size",
    "join_buffer_size",
    "thread_stack",
    "binlog_cache_size",
    "tmp_table_size",
    "max_heap_table_size",
    "thread_cache_size",
    "back_log",
    "max_allowed_packet",
    "table_open_cache",
];

/// Every option the prefix rule is checked against: those the advisor reads, and the
/// others that share their first words (so that a prefix is resolved only when mysqld
/// would find it unambiguous).
const OPTIONS: &[&str] = &[
    "innodb_buffer_pool_size",
    "innodb_buffer_pool_instances",
    "innodb_buffer_pool_chunk_size",
    "innodb_buffer_pool_dump_at_shutdown",
    "innodb_buffer_pool_load_at_startup",
    "innodb_buffer_pool_filename",
    "innodb_buffer_pool_dump_pct",
    "innodb_buffer_pool_dump_now",
    "innodb_buffer_pool_load_now",
    "innodb_buffer_pool_load_abort",
    "innodb_log_buffer_size",
    "innodb_log_file_size",
    "innodb_log_files_in_group",
    "innodb_log_group_home_dir",
    "innodb_log_file_buffering",
    "innodb_log_write_ahead_size",
    "key_buffer_size",
    "key_cache_age_threshold",
    "key_cache_block_size",
    "key_cache_division_limit",
    "key_cache_file_hash_size",
    "key_cache_segments",
    "query_cache_size",
    "query_cache_type",
    "query_cache_limit",
    "query_cache_min_res_unit",
    "query_cache_strip_comments",
    "query_cache_wlock_invalidate",
    "query_alloc_block_size",
    "query_prealloc_size",
    "max_connections",
    "max_connect_errors",
    "max_allowed_packet",
    "max_heap_table_size",
    "max_binlog_size",
    "max_binlog_cache_size",
    "max_user_connections",
    "max_tmp_tables",
    "max_sort_length",
    "max_join_size",
    "max_seeks_for_key",
    "max_length_for_sort_data",
    "max_prepared_stmt_count",
    "max_sp_recursion_depth",
    "max_write_lock_count",
    "max_error_count",
    "max_delayed_threads",
    "max_insert_delayed_threads",
    "max_relay_log_size",
    "max_statement_time",
    "max_digest_length",
    "max_execution_time",
    "sort_buffer_size",
    "read_buffer_size",
    "read_rnd_buffer_size",
    "read_only",
    "join_buffer_size",
    "join_buffer_space_limit",
    "join_cache_level",
    "thread_stack",
    "thread_cache_size",
    "thread_handling",
    "thread_pool_size",
    "thread_pool_max_threads",
    "thread_pool_idle_timeout",
    "thread_pool_oversubscribe",
    "thread_pool_stall_limit",
    "binlog_cache_size",
    "binlog_format",
    "binlog_stmt_cache_size",
    "binlog_row_image",
    "tmp_table_size",
    "tmp_memory_table_size",
    "tmp_disk_table_size",
    "tmpdir",
    "table_open_cache",
    "table_open_cache_instances",
    "table_definition_cache",
    "back_log",
];

/// The full name of an option written as an unambiguous prefix (`key_buffer`), if it is
/// one.
pub fn full_name(written: &str) -> Option<&'static str> {
    if OPTIONS.contains(&written) {
        return None;
    }
    let mut it = OPTIONS.iter().filter(|o| o.starts_with(written));
    let first = it.next()?;
    it.next().is_none().then_some(*first)
}

/// `skip-innodb` (or `innodb = OFF`, `disable-innodb`): InnoDB is not loaded and its
/// buffers take nothing.
pub fn innodb_disabled(p: &Parsed) -> Option<&Directive> {
    let off = |d: &&Directive| match d.name.as_str() {
        "skip_innodb" | "disable_innodb" => true,
        "innodb" => matches!(
            d.value().to_ascii_lowercase().as_str(),
            "off" | "0" | "false"
        ),
        _ => false,
    };
    server_directives(p).filter(off).last()
}

/// After a tree is read: prefixes resolved (noted) where the server resolves them, and
/// every size the advisor reads checked as mysqld checks it (refused at `file:line`).
pub(crate) fn settle(p: &mut Parsed) -> Result<(), ReadError> {
    let f = flavor(p);
    let mut notes = Vec::new();
    for d in p.directives.iter_mut() {
        let Some(full) = full_name(&d.name) else {
            continue;
        };
        if !is_server_section(d.context.first()) {
            continue;
        }
        if f.server != Server::MariaDb {
            notes.push(ReadNote {
                level: NoteLevel::Warning,
                at: d.at(),
                target: d.file.clone(),
                message: format!(
                    "{}: {} takes no option prefixes since 5.7 ({full}?): it refuses to \
                     start with an unknown variable",
                    d.name,
                    f.server.label()
                ),
            });
            continue;
        }
        notes.push(ReadNote {
            level: NoteLevel::Note,
            at: d.at(),
            target: d.file.clone(),
            message: format!(
                "{} read as {full} ({} takes an unambiguous prefix of an option's name)",
                d.name,
                f.server.label()
            ),
        });
        d.name = full.to_string();
    }
    p.notes.extend(notes);
    for d in server_directives(p) {
        if !SIZES.contains(&d.name.as_str()) || d.args.is_empty() {
            continue;
        }
        if let Err(why) = parse_size(d.value()) {
            return Err(ReadError::syntax(
                &d.file,
                d.line,
                format!(
                    "{} = {}: not a size {} accepts ({why}); it would refuse to start",
                    d.name,
                    d.value(),
                    f.server.label()
                ),
            ));
        }
    }
    Ok(())
}

/// Is this a section some mysqld reads (`[server]`, `[mysqld]`, `[mariadb]`,
/// `[mariadbd]`, `[client-server]`, `[galera]`, `[mariadb-X.Y]`, `[mariadbd-X.Y]`,
/// `[mysqld-X.Y]`)? Which of them one server reads is its release's
/// (`mycnf::Release::reads`).
pub fn is_server_section(section: Option<&String>) -> bool {
    section.is_some_and(|s| {
        matches!(
            s.as_str(),
            "server" | "mysqld" | "mariadb" | "mariadbd" | "client-server" | "galera"
        ) || s.starts_with("mariadb-")
            || s.starts_with("mariadbd-")
            || s.starts_with("mysqld-")
    })
}

/// The directives of the sections mysqld reads, in file order.
pub fn server_directives(parsed: &Parsed) -> impl Iterator<Item = &Directive> + '_ {
    parsed
        .directives
        .iter()
        .filter(|d| is_server_section(d.context.first()))
}

/// The effective value of a my.cnf key for the server: the last one in a section mysqld
/// reads.
pub fn mysqld_value<'a>(parsed: &'a Parsed, key: &str) -> Option<&'a Directive> {
    server_directives(parsed).filter(|d| d.name == key).last()
}
