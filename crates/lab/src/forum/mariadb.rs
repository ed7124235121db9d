//! The forum's private MariaDB: its programs, its `my.cnf` rendered from validated
//! parameters, and one running instance — own data directory, own socket and loopback
//! port, started in the foreground in its own session, ready when the socket answers with
//! the server's greeting, stopped with SIGTERM (MariaDB's orderly shutdown), then SIGKILL
//! after a grace period, then verified to have left no process. Every instance is recorded
//! in the lab's registry before it starts, so `webtune lab clean` reaps one that a killed
//! webtune left behind.

use super::dbparams;
use crate::params::Settings;
use crate::registry::{self, Entry};
use crate::{procfs, LabError};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The database the forum lives in, and the read-only account its pages use.
pub const DATABASE: &str = "forum";
pub const APP_USER: &str = "forum";

/// The longest unix socket path the kernel accepts (sun_path is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

pub(crate) fn db_failed(message: impl Into<String>) -> LabError {
    LabError::StartFailed {
        server: "mariadb".into(),
        message: message.into(),
    }
}

/// The MariaDB programs on this host.
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
        let find = |names: &[&str], package: &str| -> Result<PathBuf, LabError> {
            names
                .iter()
                .find_map(|n| find_program(n))
                .ok_or_else(|| LabError::MissingProgram {
                    program: names[0].to_string(),
                    hint: format!("install the Debian package {package}"),
                })
        };
        Ok(DbPrograms {
            server: find(&["mariadbd", "mysqld"], "mariadb-server")?,
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

fn find_program(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for extra in ["/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin"] {
        dirs.push(PathBuf::from(extra));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
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

fn privileged() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Render `my.cnf`. Only typed values from `Settings`, a port we chose and paths we made
/// (checked plain) reach it.
pub fn render_config(
    files: &InstanceFiles,
    settings: &Settings,
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
            text.push_str(&dbparams::render_settings(settings));
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

pub(crate) fn make_dir(path: &Path, mode: u32) -> Result<(), LabError> {
    std::fs::DirBuilder::new()
        .mode(mode)
        .create(path)
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)))
        .map_err(|e| LabError::io(format!("creating {}", path.display()), e))
}

pub(crate) fn write_private_file(path: &Path, text: &str) -> Result<(), LabError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| LabError::io(format!("writing {}", path.display()), e))
}

/// How an instance starts and stops: the lab's start options; `DbOptions::database()` gives
/// a database's longer waits.
pub type DbOptions = crate::supervisor::StartOptions;

static INSTANCE_COUNTER: AtomicU32 = AtomicU32::new(0);

/// A new registry entry for an instance in `dir` (the entry's id names the directory in
/// the lab root for runs; builds live in the cache).
pub(crate) fn new_entry(id_prefix: &str, dir_for: &dyn Fn(&str) -> PathBuf) -> Entry {
    let me = std::process::id() as i32;
    let my_start = procfs::read_stat(me).map(|s| s.start_ticks).unwrap_or(0);
    let id = format!(
        "{id_prefix}-{me}-{}",
        INSTANCE_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let dir = dir_for(&id);
    Entry {
        id,
        stack: "mariadb".into(),
        owner_pid: me,
        owner_start_ticks: my_start,
        private_dir: dir.clone(),
        docroot: dir,
        sessions: Vec::new(),
        netns: None,
    }
}

/// A running MariaDB. `stop()` reports whether the stop was clean; dropping it stops it
/// too.
pub struct RunningDatabase {
    registry_root: PathBuf,
    entry: Entry,
    child: Option<Child>,
    files: InstanceFiles,
    port: Option<u16>,
    client: PathBuf,
    options: DbOptions,
    stopped: bool,
}

impl RunningDatabase {
    /// Start mariadbd on an instance directory whose `data/` is already in place, with
    /// `config_text` as its my.cnf. The registry entry must already be on disk.
    pub(crate) fn launch(
        registry_root: &Path,
        entry: Entry,
        programs: &DbPrograms,
        config_text: &str,
        port: Option<u16>,
        options: DbOptions,
    ) -> Result<RunningDatabase, LabError> {
        let files = InstanceFiles::in_dir(&entry.private_dir);
        let mut db = RunningDatabase {
            registry_root: registry_root.to_path_buf(),
            entry,
            child: None,
            files,
            port,
            client: programs.client.clone(),
            options,
            stopped: false,
        };
        write_private_file(&db.files.config, config_text)?;
        let out_path = db.files.dir.join("mariadbd.out");
        let out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&out_path)
            .map_err(|e| LabError::io(format!("creating {}", out_path.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| LabError::io("duplicating a log file handle", e))?;
        let mut command = Command::new(&programs.server);
        command
            .arg(format!("--defaults-file={}", db.files.config.display()))
            .current_dir(&db.files.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        // SAFETY: runs in the child between fork and exec; setsid is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| db_failed(format!("cannot run {}: {e}", programs.server.display())))?;
        db.entry.sessions.push(child.id() as i32);
        db.child = Some(child);
        registry::write_entry(&db.registry_root, &db.entry)?;
        db.wait_ready()?;
        Ok(db)
    }

    fn wait_ready(&mut self) -> Result<(), LabError> {
        let deadline = Instant::now() + self.options.ready_timeout;
        loop {
            if greets(&self.files.socket) {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(db_failed(format!(
                        "mariadbd exited with {status}: {}",
                        self.log_tail()
                    )));
                }
            }
            if Instant::now() >= deadline {
                return Err(db_failed(format!(
                    "no answer on {} within {:?}: {}",
                    self.files.socket.display(),
                    self.options.ready_timeout,
                    self.log_tail()
                )));
            }
            if let Some(stop) = &self.options.interrupt {
                if stop.stop_requested() {
                    return Err(LabError::Interrupted);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The last distinct error lines of the server's log.
    fn log_tail(&self) -> String {
        let mut text = std::fs::read_to_string(&self.files.error_log).unwrap_or_default();
        text.push_str(
            &std::fs::read_to_string(self.files.dir.join("mariadbd.out")).unwrap_or_default(),
        );
        let mut lines: Vec<&str> = Vec::new();
        for line in text.lines().rev().map(str::trim).filter(|l| !l.is_empty()) {
            let message = line.split_once(" [").map(|(_, m)| m).unwrap_or(line);
            if !lines
                .iter()
                .any(|seen| seen.split_once(" [").map(|(_, m)| m).unwrap_or(seen) == message)
            {
                lines.push(line);
            }
            if lines.len() == 3 {
                break;
            }
        }
        lines.reverse();
        if lines.is_empty() {
            format!("nothing in {}", self.files.error_log.display())
        } else {
            lines.join(" | ")
        }
    }

    /// The unix socket the pages connect to.
    pub fn socket(&self) -> &Path {
        &self.files.socket
    }

    /// The loopback TCP port (None for a build instance, which does not listen).
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    pub fn dir(&self) -> &Path {
        &self.files.dir
    }

    pub fn files(&self) -> &InstanceFiles {
        &self.files
    }

    /// The server's session id (= mariadbd's pid), for the sampler.
    pub fn session(&self) -> Option<i32> {
        self.entry.sessions.first().copied()
    }

    /// Every live process of the instance now (should be one: mariadbd).
    pub fn processes(&self) -> Vec<i32> {
        registry::processes_of(&self.entry)
    }

    /// The warnings and errors mariadbd logged so far (`[Warning]`, `[ERROR]`), without
    /// timestamps and ids, deduplicated and counted ("Aborted connection … (Got an error
    /// reading communication packets)" tells of clients that went away mid-query).
    pub fn log_messages(&self) -> Vec<webtune_model::server::LogMessage> {
        let text = std::fs::read_to_string(&self.files.error_log).unwrap_or_default();
        summarise_server_log(&text)
    }

    /// Run SQL as the administrator (over the socket, authenticated as the OS user that
    /// runs the lab) and return the client's tab-separated output, without column names.
    pub fn admin_sql(&self, sql: &str) -> Result<String, LabError> {
        run_client(&self.client, &self.files.socket, &admin_user()?, sql, false)
    }

    /// Like `admin_sql`, allowing `LOAD DATA LOCAL INFILE`.
    pub(crate) fn admin_sql_with_local_files(&self, sql: &str) -> Result<String, LabError> {
        run_client(&self.client, &self.files.socket, &admin_user()?, sql, true)
    }

    /// Stop the server (orderly shutdown, then SIGKILL after the grace period) and verify
    /// that none of its processes is left; then remove its directory (unless kept).
    pub fn stop(mut self) -> Result<(), LabError> {
        self.stop_now()
    }

    pub(crate) fn stop_now(&mut self) -> Result<(), LabError> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let sid = self.session();
        let members = || -> Vec<i32> {
            match sid {
                Some(s) => procfs::session_members(&[s])
                    .into_iter()
                    .map(|p| p.pid)
                    .collect(),
                None => Vec::new(),
            }
        };
        if let Some(child) = self.child.as_mut() {
            let pid = child.id() as i32;
            let gone = child.try_wait().ok().flatten().is_some();
            if !gone {
                // SAFETY: a signal to our own child.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
            // mariadbd died during the run: nothing is left to shut down in order.
            let grace = if gone {
                Duration::ZERO
            } else {
                self.options.stop_grace
            };
            let deadline = Instant::now() + grace;
            let mut clean = false;
            loop {
                let done = child.try_wait().ok().flatten().is_some();
                if done && members().is_empty() {
                    clean = true;
                    break;
                }
                if Instant::now() >= deadline {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if !clean {
                // SAFETY: signals to our own child's process group and its members.
                unsafe {
                    libc::killpg(pid, libc::SIGKILL);
                }
                for member in members() {
                    // SAFETY: as above; ESRCH is ignored.
                    unsafe {
                        libc::kill(member, libc::SIGKILL);
                    }
                }
            }
            let _ = child.wait();
        }
        let entry = self.entry.clone();
        let left = registry::terminate(
            &|| registry::processes_of(&entry),
            libc::SIGKILL,
            Duration::from_secs(3),
        );
        if !left.is_empty() {
            return Err(LabError::Survivors {
                server: "mariadbd".into(),
                pids: left,
            });
        }
        if !self.options.keep_dir {
            registry::remove_dirs(&self.entry);
        }
        registry::remove_entry(&self.registry_root, &self.entry.id);
        Ok(())
    }

    /// Stop the server but keep its directory (a finished build keeps its data).
    pub(crate) fn stop_keeping_files(mut self) -> Result<(), LabError> {
        self.options.keep_dir = true;
        self.stop_now()
    }
}

impl Drop for RunningDatabase {
    fn drop(&mut self) {
        if let Err(e) = self.stop_now() {
            eprintln!("webtune lab: stopping mariadb: {e}");
        }
    }
}

/// Most distinct messages kept.
const MAX_DISTINCT_MESSAGES: usize = 20;

/// mariadbd's log lines (`2026-11-22 18:50:35 5479 [Warning] Aborted connection 5479 to
/// db: 'forum' …`) of warning level or worse, as counted messages: the timestamp, the
/// thread id and every other number are dropped so repeats collapse into one.
pub fn summarise_server_log(text: &str) -> Vec<webtune_model::server::LogMessage> {
    let mut messages: Vec<webtune_model::server::LogMessage> = Vec::new();
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
            messages.push(webtune_model::server::LogMessage {
                server: "mariadbd".into(),
                level: level.into(),
                message,
                count: 1,
            });
        }
    }
    messages
}

/// Does the socket answer with MariaDB's greeting (protocol version 10)? A server still
/// starting does not listen; one that refuses (too many connections) sends an error
/// packet (0xff) instead.
pub fn greets(socket: &Path) -> bool {
    let Ok(mut stream) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).is_ok() && head[4] == 10
}

/// The account the lab administers its instances with: the OS user (MariaDB's
/// unix_socket authentication, set up by `mariadb-install-db`).
pub(crate) fn admin_user() -> Result<String, LabError> {
    if privileged() {
        return Ok("root".into());
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
            return Err(db_failed(
                "cannot find the name of the current user (getpwuid); MariaDB's socket authentication needs it",
            ));
        }
        let name = std::ffi::CStr::from_ptr(pwd.pw_name)
            .to_string_lossy()
            .into_owned();
        Ok(name)
    }
}

fn run_client(
    client: &Path,
    socket: &Path,
    user: &str,
    sql: &str,
    local_files: bool,
) -> Result<String, LabError> {
    let mut command = Command::new(client);
    command
        .arg("--no-defaults")
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--user={user}"))
        .args(["--batch", "--skip-column-names"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if local_files {
        command.arg("--local-infile=1");
    }
    let mut child = command
        .spawn()
        .map_err(|e| LabError::io(format!("running {}", client.display()), e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(sql.as_bytes())
            .map_err(|e| LabError::io("sending SQL to the mariadb client", e))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| LabError::io("waiting for the mariadb client", e))?;
    if !output.status.success() {
        let message = String::from_utf8_lossy(&output.stderr);
        return Err(db_failed(format!(
            "SQL failed: {}",
            message.split_whitespace().collect::<Vec<_>>().join(" ")
        )));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A fresh random password (hex, so it is safe inside an SQL string and a PHP string).
pub(crate) fn random_password() -> Result<String, LabError> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| LabError::io("reading /dev/urandom", e))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A free loopback port (bound, then released just before mariadbd binds it).
pub(crate) fn free_port() -> Result<u16, LabError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(LabError::NoPort)
}

#[cfg(test)]
mod tests {
    use super::*;

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
