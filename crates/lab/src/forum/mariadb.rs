//! The forum's private MariaDB instance: its registry entry (written before it starts, so
//! `webtune lab clean` reaps one a killed webtune left behind), its directory, the server
//! process (run by the lab's one supervisor, `process`, from the plan `servers::mariadb`
//! makes), and SQL as the administrator. What MariaDB is (parameters, programs, my.cnf,
//! readiness, log) lives in `servers::mariadb`.

use crate::dirs;
use crate::host::ExecLimits;
use crate::process::ServerProcess;
use crate::registry::{self, Entry};
use crate::servers::{Component, ServerPlan};
use crate::LabError;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub(crate) use crate::servers::mariadb::{check_plain, db_failed};
pub use crate::servers::mariadb::{render_config, DbPrograms, InstanceFiles, Purpose};

/// The database the forum lives in, and the account its pages use (reads; a reply's and a
/// session's writes).
pub const DATABASE: &str = "forum";
pub const APP_USER: &str = "forum";

/// How an instance starts and stops: the lab's start options; `DbOptions::database()` gives
/// a database's longer waits.
pub type DbOptions = crate::supervisor::StartOptions;

/// A running MariaDB. `stop()` reports whether the stop was clean; dropping it stops it
/// too.
pub struct RunningDatabase {
    registry_root: PathBuf,
    entry: Entry,
    process: Option<ServerProcess>,
    files: InstanceFiles,
    port: Option<u16>,
    client: PathBuf,
    options: DbOptions,
    stopped: bool,
}

impl RunningDatabase {
    /// Start mariadbd from `plan` on an instance directory whose `data/` is already in
    /// place, with its option files `configs` (names relative to the directory). The
    /// registry entry must already be on disk.
    pub(crate) fn launch(
        registry_root: &Path,
        entry: Entry,
        client: &Path,
        configs: &[(String, String)],
        plan: &ServerPlan,
        options: DbOptions,
    ) -> Result<RunningDatabase, LabError> {
        let files = InstanceFiles::in_dir(&entry.private_dir);
        let mut db = RunningDatabase {
            registry_root: registry_root.to_path_buf(),
            entry,
            process: None,
            files,
            port: (plan.port != 0).then_some(plan.port),
            client: client.to_path_buf(),
            options,
            stopped: false,
        };
        dirs::write_configs(&db.files.dir, configs)?;
        let (root, entry) = (&db.registry_root, &mut db.entry);
        // On disk before mariadbd runs (it waits for that at its gate).
        let process =
            ServerProcess::spawn(plan, &db.files.dir, ExecLimits::default(), &mut |sid| {
                entry.record_session(sid);
                registry::write_entry(root, entry)
            })?;
        let process = db.process.insert(process);
        process.wait_ready(db.options.ready_timeout, db.options.interrupt.as_ref())?;
        Ok(db)
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

    /// The server's session id (= mariadbd's pid), for the sampler.
    pub fn session(&self) -> Option<i32> {
        self.entry.sessions.first().map(|s| s.sid)
    }

    /// Every live process of the instance now (should be one: mariadbd).
    pub fn processes(&self) -> Vec<i32> {
        registry::processes_of(&self.entry)
    }

    /// The warnings and errors mariadbd logged so far, counted.
    pub fn log_messages(&self) -> Vec<webtune_model::server::LogMessage> {
        match &self.process {
            Some(p) => Component::MariaDb.server().log_messages(p.plan()),
            None => Vec::new(),
        }
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
        let stopped = match self.process.as_mut() {
            Some(process) => process.stop(self.options.stop_grace),
            None => Ok(()),
        };
        let left = registry::terminate(&self.entry, libc::SIGKILL, Duration::from_secs(3));
        stopped?;
        if !left.is_empty() {
            return Err(LabError::Survivors {
                server: "mariadbd".into(),
                pids: left,
            });
        }
        if self.options.keep_dir {
            registry::keep_dirs(&self.entry);
        } else {
            // A directory that could not go keeps its entry, so `lab clean` tries again.
            registry::remove_dirs(&self.entry).map_err(|message| LabError::Directory {
                path: self.entry.private_dir.clone(),
                message,
            })?;
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

/// The account the lab administers its instances with (`servers::mariadb::admin_user`).
pub(crate) fn admin_user() -> Result<String, LabError> {
    crate::servers::mariadb::admin_user().ok_or_else(|| {
        db_failed(
            "cannot find the name of the current user (getpwuid); MariaDB's socket authentication needs it",
        )
    })
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
