//! `advise --live`: the running servers' own counters, read-only, where users reach for
//! MySQLTuner or apache2buddy: MariaDB's `SHOW GLOBAL STATUS` / `SHOW GLOBAL VARIABLES`
//! over its socket (with the `mariadb` client, as the OS user: MariaDB's unix_socket
//! authentication), Apache's `server-status?auto` and nginx's `stub_status`. Nothing is
//! changed: SHOW and SELECT statements, two GETs. Each source has one wall-clock limit for
//! its whole exchange (`exchange`); a source that does not answer within it, or answers
//! with a page that is not what was asked for, is a note, not an error. The thresholds
//! are MySQLTuner's, each named in its finding.

mod exchange;
mod runtime;

pub(crate) use exchange::run_within;
pub use exchange::timed_out;

use crate::finding::{Finding, Severity};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The limit on each source's whole exchange when none is given (`--live-timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where to read the live counters.
#[derive(Debug, Clone)]
pub struct LiveInputs {
    pub mysql_socket: Option<PathBuf>,
    /// `http://HOST:PORT/server-status?auto`.
    pub apache_status: Option<String>,
    /// `http://HOST:PORT/PATH` of a location with `stub_status`.
    pub nginx_status: Option<String>,
    /// One wall-clock limit per source for its whole exchange (connect, login, every
    /// byte of the answer).
    pub timeout: Duration,
}

impl Default for LiveInputs {
    fn default() -> LiveInputs {
        LiveInputs {
            mysql_socket: None,
            apache_status: None,
            nginx_status: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// What was read, and the findings on it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Live {
    /// The counters read, per source ("mariadb", "apache2", "nginx").
    pub figures: BTreeMap<String, BTreeMap<String, String>>,
    pub notes: Vec<String>,
    #[serde(skip)]
    pub findings: Vec<Finding>,
}

const MYSQLTUNER: &str = "MySQLTuner (mysqltuner.pl), its thresholds";

/// Read every source given.
pub fn read(inputs: &LiveInputs) -> Live {
    let mut live = Live::default();
    if let Some(socket) = &inputs.mysql_socket {
        match mariadb_status(socket, inputs.timeout) {
            Ok(s) => {
                live.findings.extend(mariadb_findings(&s, socket));
                live.figures.insert("mariadb".into(), s);
            }
            Err(e) => live.notes.push(format!("mariadb (live): {e}")),
        }
    }
    if let Some(url) = &inputs.apache_status {
        match exchange::http_get(url, inputs.timeout).and_then(|t| server_status(&t)) {
            Ok(s) => {
                live.findings.extend(apache_findings(&s, url));
                live.figures.insert("apache2".into(), s);
            }
            Err(e) => live.notes.push(format!("apache2 (live): {url}: {e}")),
        }
    }
    if let Some(url) = &inputs.nginx_status {
        match exchange::http_get(url, inputs.timeout).and_then(|t| stub_status(&t)) {
            Ok(s) => {
                live.findings.extend(nginx_findings(&s, url));
                live.figures.insert("nginx".into(), s);
            }
            Err(e) => live.notes.push(format!("nginx (live): {url}: {e}")),
        }
    }
    live
}

/// `SHOW GLOBAL STATUS` and `SHOW GLOBAL VARIABLES`, one map (names as MariaDB prints
/// them), within `limit` for the whole exchange (the client is killed at it).
pub fn mariadb_status(socket: &Path, limit: Duration) -> Result<BTreeMap<String, String>, String> {
    let client = [
        "/usr/bin/mariadb",
        "/usr/bin/mysql",
        "/usr/local/bin/mariadb",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
    .ok_or("no mariadb client (apt-get install mariadb-client)")?;
    let mut command = Command::new(&client);
    command
        .arg("--no-defaults")
        .arg(format!("--socket={}", socket.display()))
        .arg("--batch")
        .arg("--skip-column-names")
        .arg(format!("--connect-timeout={}", limit.as_secs().max(1)))
        // A statement the account may not run (mysql.user) does not stop the others.
        .arg("--force")
        .args(["-e", QUERIES]);
    let (ok, out, err) = exchange::run_output(command, limit)?;
    let mut figures = key_values(&out, '\t');
    if !figures.contains_key("Uptime") {
        return Err(if err.is_empty() {
            "no SHOW GLOBAL STATUS figures in the answer".into()
        } else {
            err
        });
    }
    if !ok && !err.is_empty() {
        figures.insert("webtune_errors".into(), err);
    }
    Ok(figures)
}

/// What `--live` asks MariaDB/MySQL, read-only: the counters and the variables, the InnoDB
/// data's size (the buffer pool is sized from it), and MySQLTuner's account checks
/// (anonymous accounts, accounts without a password).
const QUERIES: &str = "SHOW GLOBAL STATUS; SHOW GLOBAL VARIABLES; \
    SELECT 'innodb_data_bytes', COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables WHERE engine = 'InnoDB'; \
    SELECT 'anonymous_accounts', COUNT(*) FROM mysql.user WHERE user = ''; \
    SELECT 'passwordless_accounts', COUNT(*) FROM mysql.user WHERE user <> '' AND authentication_string = '' AND plugin IN ('', 'mysql_native_password')";

fn key_values(text: &str, sep: char) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(sep)?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

fn num(s: &BTreeMap<String, String>, key: &str) -> Option<f64> {
    s.get(key)?.parse().ok()
}

fn pct(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b * 100.0
    } else {
        0.0
    }
}

/// MySQLTuner's checks on the counters: thread cache hit rate, highest connection usage,
/// aborted connections, temporary tables on disk, InnoDB read efficiency; each says
/// whether the server has run 24 hours, below which MySQLTuner calls its figures
/// unreliable.
pub fn mariadb_findings(s: &BTreeMap<String, String>, socket: &Path) -> Vec<Finding> {
    let g = |k: &str| num(s, k).unwrap_or(0.0);
    let uptime = g("Uptime");
    let young = uptime < 86_400.0;
    let caveat = if young {
        format!(
            " The server has run {:.1} h, under 24 h: the figures may not show a day's load yet.",
            uptime / 3600.0
        )
    } else {
        String::new()
    };
    let cite = format!(
        "SHOW GLOBAL STATUS over {} (Uptime {uptime:.0} s)",
        socket.display()
    );
    let mk = |id: &str, sev: Severity| {
        Finding::new(
            id,
            if young && sev == Severity::Warn {
                Severity::Info
            } else {
                sev
            },
            "mariadb (live)",
        )
        .evidence(cite.clone())
        .source(MYSQLTUNER)
    };
    let mut out = Vec::new();
    let (conns, created) = (g("Connections"), g("Threads_created"));
    let hit = 100.0 - pct(created, conns);
    let max_conn = g("max_connections");
    let used = g("Max_used_connections");
    let aborted = g("Aborted_connects");
    let (tmp, tmp_disk) = (g("Created_tmp_tables"), g("Created_tmp_disk_tables"));
    let (requests, reads) = (
        g("Innodb_buffer_pool_read_requests"),
        g("Innodb_buffer_pool_reads"),
    );
    let efficiency = 100.0 - pct(reads, requests);
    out.push(
        mk("live.mariadb", Severity::Info)
            .values(
                format!(
                    "uptime {:.1} h; {conns:.0} connections, {created:.0} threads created (thread cache hit {hit:.1}%); max used {used:.0} of max_connections {max_conn:.0}; {aborted:.0} aborted connects; {tmp_disk:.0} of {tmp:.0} temporary tables on disk; InnoDB read efficiency {efficiency:.2}%",
                    uptime / 3600.0
                ),
                "see the findings below",
            )
            .why(format!("The server's own counters since it started.{caveat}")),
    );
    if conns >= 100.0 && hit < 50.0 {
        out.push(
            mk("live.mariadb.thread_cache", Severity::Warn)
                .directives(&["thread_cache_size"])
                .values(format!("thread cache hit rate {hit:.1}% ({created:.0} threads created for {conns:.0} connections)"), format!("thread_cache_size ≥ Max_used_connections {used:.0} (at most 256)"))
                .why(format!("1 − Threads_created ÷ Connections = {hit:.1}% < 50%: most connections pay a thread creation.{caveat}")),
        );
    }
    if max_conn > 0.0 && pct(used, max_conn) > 85.0 {
        out.push(
            mk("live.mariadb.max_connections", Severity::Warn)
                .directives(&["max_connections"])
                .values(format!("Max_used_connections {used:.0} = {:.0}% of max_connections {max_conn:.0}", pct(used, max_conn)), "max_connections above the web tier's concurrency (Σ pm.max_children + 10)")
                .why(format!("Highest connection usage above 85%: the next burst gets \"Too many connections\".{caveat}")),
        );
    }
    if conns >= 100.0 && pct(aborted, conns) > 3.0 {
        out.push(
            mk("live.mariadb.aborted_connects", Severity::Warn)
                .values(format!("Aborted_connects {aborted:.0} = {:.1}% of {conns:.0} connections", pct(aborted, conns)), "find the failing clients (wrong password, connect_timeout, max_connect_errors)")
                .why(format!("More than 3% of connection attempts failed.{caveat}")),
        );
    }
    if tmp >= 100.0 && pct(tmp_disk, tmp) > 25.0 {
        out.push(
            mk("live.mariadb.tmp_disk_tables", Severity::Warn)
                .directives(&["tmp_table_size", "max_heap_table_size"])
                .values(format!("{tmp_disk:.0} of {tmp:.0} temporary tables on disk ({:.0}%)", pct(tmp_disk, tmp)), "tmp_table_size and max_heap_table_size raised together (within the memory budget), or queries without TEXT/BLOB in GROUP BY/ORDER BY")
                .why(format!("More than 25% of temporary tables went to disk: larger than min(tmp_table_size, max_heap_table_size), or with columns MEMORY tables cannot hold.{caveat}")),
        );
    }
    if requests >= 10_000.0 && efficiency < 90.0 {
        out.push(
            mk("live.mariadb.buffer_pool_reads", Severity::Warn)
                .directives(&["innodb_buffer_pool_size"])
                .values(format!("InnoDB read efficiency {efficiency:.1}% ({reads:.0} disk reads of {requests:.0} requests)"), "a larger innodb_buffer_pool_size (within the memory budget)")
                .why(format!("1 − Innodb_buffer_pool_reads ÷ Innodb_buffer_pool_read_requests = {efficiency:.1}% < 90%: the working set does not fit the pool.{caveat}")),
        );
    }
    out.extend(runtime::findings(s, &mk, &caveat));
    out
}

/// The characters of mod_status's scoreboard: one per worker slot ("." an open one).
const SCOREBOARD: &str = "_SRWKDCLGI.";

/// Apache's `server-status?auto` as a map, refused when the page is not one (issue 33,
/// item 10: a page of other text must not be read as "-5 busy workers of 0 slots"): it
/// must carry `BusyWorkers` and `IdleWorkers` as whole numbers and a `Scoreboard` of
/// mod_status's characters with room for them, as the nginx reader refuses a page that
/// is not stub_status.
pub fn server_status(text: &str) -> Result<BTreeMap<String, String>, String> {
    let m = key_values(text, ':');
    let refuse = |why: String| Err(format!("not an Apache server-status?auto page ({why})"));
    let count = |k: &str| -> Result<u64, String> {
        let v = m.get(k).ok_or(format!("no {k}"))?;
        v.parse::<u64>()
            .map_err(|_| format!("{k} {v:?} is not a count of workers"))
    };
    let (busy, idle) = match (count("BusyWorkers"), count("IdleWorkers")) {
        (Ok(b), Ok(i)) => (b, i),
        (Err(e), _) | (_, Err(e)) => return refuse(e),
    };
    let Some(board) = m.get("Scoreboard") else {
        return refuse("no Scoreboard".into());
    };
    if let Some(c) = board.chars().find(|c| !SCOREBOARD.contains(*c)) {
        return refuse(format!("{c:?} in the Scoreboard"));
    }
    if busy.saturating_add(idle) > board.len() as u64 {
        return refuse(format!(
            "{busy} busy and {idle} idle workers in a scoreboard of {} slots",
            board.len()
        ));
    }
    Ok(m)
}

/// Apache's `server-status?auto`: busy workers against the scoreboard's slots.
pub fn apache_findings(s: &BTreeMap<String, String>, url: &str) -> Vec<Finding> {
    let busy = num(s, "BusyWorkers").unwrap_or(0.0);
    let idle = num(s, "IdleWorkers").unwrap_or(0.0);
    // Every scoreboard character is a worker slot ("." an open one).
    let slots = s.get("Scoreboard").map_or(0, |b| b.len()) as f64;
    let mut out = vec![Finding::new("live.apache", Severity::Info, "apache2 (live)")
        .values(format!("{busy:.0} busy and {idle:.0} idle workers of {slots:.0} slots; {} requests since start", s.get("Total Accesses").map_or("?", String::as_str)), "see the findings below")
        .why("Apache's scoreboard now (mod_status).".to_string())
        .evidence(format!("GET {url}"))
        .source("Apache manual, mod_status (?auto); apache2buddy")];
    if slots > 0.0 && pct(busy, slots) >= 90.0 {
        out.push(
            Finding::new("live.apache.workers_busy", Severity::Warn, "apache2 (live)")
                .directives(&["MaxRequestWorkers"])
                .values(format!("{busy:.0} of {slots:.0} workers busy ({:.0}%)", pct(busy, slots)), "more workers within the memory budget, or a proxy in front")
                .why("At least 90% of the scoreboard's workers serve requests now: new connections are about to wait in the listen queue.".to_string())
                .evidence(format!("GET {url}"))
                .source("Apache manual, mod_status; apache2buddy"),
        );
    }
    out
}

/// nginx's `stub_status` text as a map: active, accepts, handled, requests, reading,
/// writing, waiting.
pub fn stub_status(text: &str) -> Result<BTreeMap<String, String>, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let after = |label: &str| {
        words
            .iter()
            .position(|w| *w == label)
            .and_then(|i| words.get(i + 1))
            .map(|v| v.to_string())
    };
    let mut m = BTreeMap::new();
    m.insert(
        "active".into(),
        after("connections:").ok_or("not a stub_status page")?,
    );
    let requests_at = words
        .iter()
        .position(|w| *w == "requests")
        .ok_or("not a stub_status page")?;
    for (i, k) in ["accepts", "handled", "requests"].iter().enumerate() {
        m.insert(
            k.to_string(),
            words
                .get(requests_at + 1 + i)
                .ok_or("not a stub_status page")?
                .to_string(),
        );
    }
    for (label, k) in [
        ("Reading:", "reading"),
        ("Writing:", "writing"),
        ("Waiting:", "waiting"),
    ] {
        m.insert(k.into(), after(label).ok_or("not a stub_status page")?);
    }
    Ok(m)
}

pub fn nginx_findings(s: &BTreeMap<String, String>, url: &str) -> Vec<Finding> {
    let g = |k: &str| num(s, k).unwrap_or(0.0);
    let (accepts, handled) = (g("accepts"), g("handled"));
    let mut out = vec![Finding::new("live.nginx", Severity::Info, "nginx (live)")
        .values(format!("{:.0} active connections ({:.0} reading, {:.0} writing, {:.0} waiting); {accepts:.0} accepted, {handled:.0} handled, {:.0} requests", g("active"), g("reading"), g("writing"), g("waiting"), g("requests")), "see the findings below")
        .why("nginx's counters now (ngx_http_stub_status_module).".to_string())
        .evidence(format!("GET {url}"))
        .source("nginx manual, ngx_http_stub_status_module")];
    if accepts > handled {
        out.push(
            Finding::new("live.nginx.dropped", Severity::Warn, "nginx (live)")
                .directives(&["worker_connections", "worker_rlimit_nofile"])
                .values(format!("{:.0} connections accepted but not handled", accepts - handled), "worker_connections and worker_rlimit_nofile raised (see the plan)")
                .why("accepts − handled > 0: nginx closed connections it accepted because a resource limit was reached (worker_connections, or open files).".to_string())
                .evidence(format!("GET {url}"))
                .source("nginx manual, stub_status (\"handled … the same as accepts unless some resource limits have been reached\")"),
        );
    }
    out
}
