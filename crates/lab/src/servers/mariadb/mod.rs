//! MariaDB (the forum's private database): its parameters (defaults are what Debian 12's
//! mariadb-server 10.11 runs: its 50-server.cnf sets none of them, so they are the
//! server's built-in values, `mariadbd --no-defaults --verbose --help`), its programs, the
//! files of one instance, its `my.cnf` (for a run, or for building the cached data),
//! readiness (the socket answers with the server's greeting), its log, and what of it is
//! worth tuning. Stopped with SIGTERM, MariaDB's orderly shutdown.
//!
//! Sizes are whole MiB or KiB, named in the meaning, so no unit suffix ever comes from the
//! command line. The instance itself (data copy, accounts, SQL) is the forum's
//! (`forum::mariadb`).

use super::{
    find_program, privileged, require, Component, ImportedConfig, Programs, Readiness,
    RenderContext, RenderedServer, Requirement, ServerPlan, ServerType,
};
use crate::params::{ParamSpec, Settings, Value};
use crate::vocab::Tunable;
use crate::LabError;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use webtune_model::server::LogMessage;

mod params;

pub const NEEDS: Requirement = Requirement {
    program: "mariadbd",
    package: "mariadb-server",
};

/// The longest unix socket path the kernel accepts (sun_path is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Most distinct log messages kept.
const MAX_DISTINCT_MESSAGES: usize = 20;

const WHY_CONNECTIONS: &str = "database connections allowed; every PHP process holds one \
    (seed 003: untuned stacks failed at 1024 clients)";
const WHY_BACKLOG: &str = "the database's listen queue for bursts of PHP connects (seed 003)";

/// A start or a check of the database failed.
pub(crate) fn db_failed(message: impl Into<String>) -> LabError {
    LabError::StartFailed {
        server: "mariadb".into(),
        message: message.into(),
    }
}

#[derive(Debug, Clone, Copy)]
pub struct MariaDb;

impl ServerType for MariaDb {
    fn name(&self) -> &'static str {
        "mariadbd"
    }

    fn requirements(&self) -> Vec<Requirement> {
        vec![NEEDS]
    }

    fn program(&self, programs: &Programs) -> Result<PathBuf, LabError> {
        require(&programs.mariadbd, NEEDS)
    }

    fn parameters(&self) -> Vec<ParamSpec> {
        params::parameters()
    }

    /// Combinations the server would quietly ignore.
    fn check_settings(&self, prefix: &str, settings: &Settings) -> Result<(), LabError> {
        let word = |n: &str| match settings.get(&format!("{prefix}{n}")) {
            Some(Value::Word(w)) => w,
            _ => "",
        };
        let int = |n: &str| {
            settings
                .get(&format!("{prefix}{n}"))
                .and_then(|v| v.as_int())
                .unwrap_or(0)
        };
        if word("query_cache_type") != "OFF" && int("query_cache_size") == 0 {
            return Err(LabError::Inconsistent(format!(
                "{prefix}query_cache_type is on but {prefix}query_cache_size=0 leaves the cache disabled; set {prefix}query_cache_size (MiB) too"
            )));
        }
        let pool_size = format!("{prefix}thread_pool_size");
        let pool_size_set = settings.explicitly_set().contains(&pool_size);
        if pool_size_set && word("thread_handling") != "pool-of-threads" {
            return Err(LabError::Inconsistent(format!(
                "{pool_size} only matters with {prefix}thread_handling=pool-of-threads; set that too"
            )));
        }
        Ok(())
    }

    /// A run's instance in the layout's directory (whose `data/` is in place), on its port.
    fn render(&self, c: &RenderContext) -> Result<RenderedServer, LabError> {
        let files = InstanceFiles::in_dir(c.dir());
        let text = render_config(
            &files,
            &render_settings(c.settings, c.prefix),
            Purpose::Run { port: c.port },
        )?;
        let programs = c.programs;
        Ok(RenderedServer {
            configs: vec![("my.cnf".to_string(), text)],
            plan: plan(&files, &files.config, self.program(programs)?, c.port),
        })
    }

    /// The user's my.cnf, copied into the instance directory (see `import::mariadb`), on
    /// the forum's data.
    fn imported_plan(&self, import: &ImportedConfig) -> Result<ServerPlan, LabError> {
        let files = InstanceFiles::in_dir(import.dir);
        Ok(ServerPlan {
            label: "mariadb (your config)".into(),
            ..plan(
                &files,
                &import.config,
                self.program(import.programs)?,
                import.port,
            )
        })
    }

    fn tuning_space(&self, prefix: &str, _cores: i64, _proxy: bool) -> Vec<Tunable> {
        vec![
            Tunable::int(
                format!("{prefix}max_connections"),
                50,
                2000,
                true,
                WHY_CONNECTIONS,
            ),
            Tunable::int(format!("{prefix}back_log"), 50, 4096, true, WHY_BACKLOG),
        ]
    }

    fn log_messages(&self, plan: &ServerPlan) -> Vec<LogMessage> {
        let text = std::fs::read_to_string(&plan.error_log).unwrap_or_default();
        summarise_server_log(&text)
    }
}

/// The plan that runs mariadbd on an instance's files with `config` as its only option
/// file (port 0: a build, no network).
pub fn plan(files: &InstanceFiles, config: &Path, program: PathBuf, port: u16) -> ServerPlan {
    ServerPlan {
        label: "mariadb".into(),
        component: Component::MariaDb,
        program,
        // mariadbd has no config check that leaves the data directory alone.
        check_args: Vec::new(),
        run_args: vec![format!("--defaults-file={}", config.display()).into()],
        config_file: config.to_path_buf(),
        error_log: files.error_log.clone(),
        output_log: files.dir.join("mariadbd.out"),
        port,
        stop_signal: libc::SIGTERM,
        readiness: Readiness::Socket {
            path: files.socket.clone(),
            answers: greets,
        },
    }
}

/// The MariaDB programs the forum needs on this host.
#[derive(Debug, Clone)]
pub struct DbPrograms {
    pub server: PathBuf,
    pub install_db: PathBuf,
    pub client: PathBuf,
}

impl DbPrograms {
    /// Find `mariadbd`, `mariadb-install-db` and the `mariadb` client (or their `mysql`
    /// names); a missing one is named with its Debian package.
    pub fn discover() -> Result<DbPrograms, LabError> {
        let find = |names: &[&str], package: &'static str| -> Result<PathBuf, LabError> {
            find_program(names).ok_or_else(|| LabError::MissingProgram {
                program: names[0].to_string(),
                hint: format!("install the Debian package {package}"),
            })
        };
        Ok(DbPrograms {
            server: find(&["mariadbd", "mysqld"], NEEDS.package)?,
            install_db: find(
                &["mariadb-install-db", "mysql_install_db"],
                "mariadb-server",
            )?,
            client: find(&["mariadb", "mysql"], "mariadb-client")?,
        })
    }

    /// The server's version (`10.11.19`), part of the data cache's key: a data directory
    /// is only reused by the server version that wrote it.
    pub fn server_version(&self) -> Result<String, LabError> {
        let output = Command::new(&self.server)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| LabError::io(format!("running {}", self.server.display()), e))?;
        let text = String::from_utf8_lossy(&output.stdout);
        text.split_whitespace()
            .skip_while(|w| *w != "Ver")
            .nth(1)
            .and_then(|v| v.split('-').next())
            .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
            .map(str::to_string)
            .ok_or_else(|| db_failed(format!("cannot read the version from {text:?}")))
    }
}

/// The files of one instance, all inside its directory.
#[derive(Debug, Clone)]
pub struct InstanceFiles {
    /// The instance directory (0711: the web servers' workers may reach the socket).
    pub dir: PathBuf,
    /// The data directory (0700).
    pub datadir: PathBuf,
    pub socket: PathBuf,
    pub config: PathBuf,
    pub error_log: PathBuf,
}

impl InstanceFiles {
    pub fn in_dir(dir: &Path) -> InstanceFiles {
        InstanceFiles {
            dir: dir.to_path_buf(),
            datadir: dir.join("data"),
            socket: dir.join("mariadb.sock"),
            config: dir.join("my.cnf"),
            error_log: dir.join("mariadbd-error.log"),
        }
    }
}

/// What the instance is for: a run (loopback port, the user's settings) or building the
/// cached data (no network, settings that make the bulk load fast).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Run { port: u16 },
    Build,
}

/// Paths that go into `my.cnf` or SQL must be plain: no space, quote, newline or `#`.
pub(crate) fn check_plain(path: &Path) -> Result<String, LabError> {
    let text = path.to_string_lossy().into_owned();
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._+-".contains(&b));
    if plain {
        Ok(text)
    } else {
        Err(LabError::Directory {
            path: path.to_path_buf(),
            message: "holds characters other than [A-Za-z0-9/._+-]; choose a plainer WEBTUNE_LAB_DIR or WEBTUNE_LAB_CACHE".into(),
        })
    }
}

/// Render `my.cnf`; `parameters` are the `[mariadbd]` lines of the settings (see
/// `render_settings`, used for runs only). Only typed values, a port we chose and paths we
/// made (checked plain) reach it.
pub fn render_config(
    files: &InstanceFiles,
    parameters: &str,
    purpose: Purpose,
) -> Result<String, LabError> {
    let dir = check_plain(&files.dir)?;
    let socket = check_plain(&files.socket)?;
    if socket.len() > MAX_SOCKET_PATH {
        return Err(LabError::Directory {
            path: files.dir.clone(),
            message: format!(
                "the socket path {socket} is longer than {MAX_SOCKET_PATH} bytes; use a shorter WEBTUNE_LAB_DIR"
            ),
        });
    }
    let mut text = format!(
        "# Rendered by webtune lab: the forum's private MariaDB. Every value below was\n\
         # validated by webtune before it was written here.\n\
         [mariadbd]\n\
         datadir = {datadir}\n\
         socket = {socket}\n\
         pid-file = {dir}/mariadbd.pid\n\
         log-error = {error_log}\n\
         secure_file_priv = {dir}\n\
         skip-log-bin\n\
         # Debian 12's 50-server.cnf\n\
         character-set-server = utf8mb4\n\
         collation-server = utf8mb4_general_ci\n\
         # The lab's choice: the forum only reads, so a small redo log is enough and makes\n\
         # the per-run copy of the data directory smaller (the server's default is 96M).\n\
         innodb_log_file_size = 16M\n",
        datadir = check_plain(&files.datadir)?,
        error_log = check_plain(&files.error_log)?,
    );
    if privileged() {
        // mariadbd refuses to run as root unless told to; the lab's files are root's.
        text.push_str("user = root\n");
    }
    match purpose {
        Purpose::Run { port } => {
            text.push_str(&format!("bind-address = 127.0.0.1\nport = {port}\n"));
            text.push_str("# Parameters (webtune lab params: db.*)\n");
            text.push_str(parameters);
        }
        Purpose::Build => {
            text.push_str(
                "skip-networking\n\
                 local_infile = ON\n\
                 innodb_buffer_pool_size = 256M\n\
                 innodb_flush_log_at_trx_commit = 0\n",
            );
        }
    }
    Ok(text)
}

/// The `[mariadbd]` lines for the settings under `prefix`: only typed values, with their
/// units.
pub fn render_settings(settings: &Settings, prefix: &str) -> String {
    let mut out = String::new();
    for (name, value) in settings.iter() {
        let Some(local) = name.strip_prefix(prefix) else {
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

/// Does the socket answer with MariaDB's greeting (protocol version 10)? A server still
/// starting does not listen; one that refuses (too many connections) sends an error
/// packet (0xff) instead. A probe that then just hung up would be logged by the server as
/// "Aborted connection … (This connection closed normally without authentication)" (issue
/// 39), read as a client gone wrong; so it logs in as the administrator (unix_socket
/// authentication, as `admin_sql`) and sends COM_QUIT, as a client that is done.
pub fn greets(socket: &Path) -> bool {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let Some((seq, greeting)) = read_packet(&mut stream) else {
        return false;
    };
    if greeting.first() != Some(&10) {
        return false;
    }
    if let Some(user) = admin_user() {
        let _ = log_in_and_quit(&mut stream, seq, &user);
    }
    true
}

/// The account the lab administers its MariaDB instances with: root when privileged, else
/// the OS user (MariaDB's unix_socket authentication, set up by `mariadb-install-db`); None
/// when the user's name cannot be found.
pub(crate) fn admin_user() -> Option<String> {
    if privileged() {
        return Some("root".into());
    }
    // SAFETY: getpwuid_r writes into the buffers we pass and nothing else.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 4096];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(
            libc::geteuid(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        );
        if rc != 0 || result.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(pwd.pw_name)
            .to_string_lossy()
            .into_owned();
        Some(name)
    }
}

/// One protocol packet: its sequence number and payload (MariaDB's client/server protocol:
/// a 3-byte little-endian length and a sequence byte before each payload).
fn read_packet(stream: &mut UnixStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 4];
    stream.read_exact(&mut head).ok()?;
    let len = u32::from_le_bytes([head[0], head[1], head[2], 0]) as usize;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).ok()?;
    Some((head[3], payload))
}

fn write_packet(stream: &mut UnixStream, seq: u8, payload: &[u8]) -> std::io::Result<()> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut packet = vec![len[0], len[1], len[2], seq];
    packet.extend_from_slice(payload);
    stream.write_all(&packet)
}

/// Answer the greeting with a HandshakeResponse41 for `user` with unix_socket
/// authentication (no password: the server checks the peer's OS user), follow any auth
/// switch with an empty answer (unix_socket needs none), and on OK send COM_QUIT: the
/// server then closes the connection without a warning. Layouts from MariaDB's "Connection"
/// and "COM_QUIT" protocol pages (mariadb.com/kb/en/connection/).
fn log_in_and_quit(stream: &mut UnixStream, greeting_seq: u8, user: &str) -> Option<()> {
    // CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH.
    const CAPABILITIES: u32 = 0x0200 | 0x8000 | 0x0008_0000;
    let mut response = Vec::with_capacity(64 + user.len());
    response.extend_from_slice(&CAPABILITIES.to_le_bytes());
    response.extend_from_slice(&(1u32 << 24).to_le_bytes()); // max packet size
    response.push(33); // utf8_general_ci
    response.extend_from_slice(&[0u8; 23]);
    response.extend_from_slice(user.as_bytes());
    response.push(0);
    response.push(0); // no auth data
    response.extend_from_slice(b"unix_socket\0");
    let mut seq = greeting_seq.wrapping_add(1);
    write_packet(stream, seq, &response).ok()?;
    // An auth switch (0xfe) may come more than once (a user with several methods).
    for _ in 0..4 {
        let (reply_seq, reply) = read_packet(stream)?;
        match reply.first()? {
            0x00 => {
                write_packet(stream, 0, &[0x01]).ok()?; // COM_QUIT
                let mut rest = [0u8; 16];
                let _ = stream.read(&mut rest); // the server's close
                return Some(());
            }
            0xfe => {
                seq = reply_seq.wrapping_add(1);
                write_packet(stream, seq, &[]).ok()?;
            }
            _ => return None,
        }
    }
    None
}

/// mariadbd's log lines (`2026-11-22 18:50:35 5479 [Warning] Aborted connection 5479 to
/// db: 'forum' …`) of warning level or worse, as counted messages: the timestamp, the
/// thread id and every other number are dropped so repeats collapse into one. ("Aborted
/// connection … (Got an error reading communication packets)" tells of clients that went
/// away mid-query.)
pub fn summarise_server_log(text: &str) -> Vec<LogMessage> {
    let mut messages: Vec<LogMessage> = Vec::new();
    for line in text.lines() {
        let (level, marker) = if line.contains("[ERROR]") {
            ("error", "[ERROR]")
        } else if line.contains("[Warning]") {
            ("warn", "[Warning]")
        } else {
            continue;
        };
        let after = line.split_once(marker).map(|(_, m)| m).unwrap_or(line);
        let mut message = String::with_capacity(after.len());
        let mut in_number = false;
        for c in after.trim().chars() {
            if c.is_ascii_digit() {
                if !in_number {
                    message.push('N');
                }
                in_number = true;
            } else {
                in_number = false;
                message.push(c);
            }
        }
        if let Some(seen) = messages
            .iter_mut()
            .find(|m| m.level == level && m.message == message)
        {
            seen.count += 1;
        } else if messages.len() < MAX_DISTINCT_MESSAGES {
            messages.push(LogMessage {
                server: "mariadbd".into(),
                level: level.into(),
                message,
                count: 1,
            });
        }
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(assignments: &[(&str, &str)]) -> Result<Settings, LabError> {
        let params: Vec<ParamSpec> = MariaDb.parameters();
        let pairs: Vec<(String, String)> = assignments
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let s = Settings::from_assignments("mariadb", &params, &pairs)?;
        MariaDb.check_settings("", &s)?;
        Ok(s)
    }

    #[test]
    fn defaults_render_with_units() {
        let text = render_settings(&settings(&[]).unwrap(), "");
        assert!(text.contains("innodb_buffer_pool_size = 128M\n"), "{text}");
        assert!(text.contains("sort_buffer_size = 2048K\n"), "{text}");
        assert!(text.contains("thread_handling = one-thread-per-connection\n"));
        assert!(!text.contains("thread_pool_size"));
        assert!(text.contains("performance_schema = OFF\n"));
    }

    #[test]
    fn refuses_quiet_combinations() {
        assert!(settings(&[("query_cache_type", "ON"), ("query_cache_size", "0")]).is_err());
        assert!(settings(&[("thread_pool_size", "4")]).is_err());
        let s = settings(&[
            ("thread_handling", "pool-of-threads"),
            ("thread_pool_size", "4"),
        ])
        .unwrap();
        assert!(render_settings(&s, "").contains("thread_pool_size = 4\n"));
    }

    #[test]
    fn server_log_lines_collapse_into_counted_messages() {
        let log = "2026-11-22 18:50:35 0 [Note] mariadbd: ready for connections.\n\
            2026-11-22 18:50:35 5479 [Warning] Aborted connection 5479 to db: 'forum' user: 'forum' host: 'localhost' (Got an error reading communication packets)\n\
            2026-11-22 18:50:36 5480 [Warning] Aborted connection 5480 to db: 'forum' user: 'forum' host: 'localhost' (Got an error reading communication packets)\n\
            2026-11-22 18:50:37 0 [ERROR] mariadbd: Out of memory\n";
        let messages = summarise_server_log(log);
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(messages[0].level, "warn");
        assert_eq!(messages[0].count, 2);
        assert!(messages[0]
            .message
            .starts_with("Aborted connection N to db"));
        assert_eq!(messages[1].level, "error");
        assert_eq!(messages[1].message, "mariadbd: Out of memory");
    }
}
