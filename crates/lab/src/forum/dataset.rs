//! The forum's data, cached: for each `(posts, seed, schema version, MariaDB version)` a
//! MariaDB data directory already loaded with the generated forum, built once (generate →
//! `mariadb-install-db` → private server → `LOAD DATA LOCAL INFILE` → slow shutdown) and
//! copied for every run, so a lab run neither regenerates nor reloads anything.
//!
//! Cache root: `$WEBTUNE_LAB_CACHE`, else `$XDG_CACHE_HOME/webtune-lab`, else
//! `/var/tmp/webtune-lab-cache-UID` (mode 0700, refused when not ours or a symlink). An
//! entry is built in a `…building…` directory and renamed into place only when complete,
//! so a killed build never leaves a half entry behind (its leftovers are reaped by
//! `lab clean` through the registry).

use super::data::{self, DataSummary, SCHEMA_VERSION, TABLES};
use super::mariadb::{
    self, check_plain, db_failed, DbOptions, DbPrograms, InstanceFiles, Purpose, RunningDatabase,
    APP_USER, DATABASE,
};
use crate::registry::{self, Entry};
use crate::{dirs, LabError};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// A cached, loaded forum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// The cache entry's directory (`data/` inside is the MariaDB data directory).
    #[serde(skip)]
    pub dir: PathBuf,
    pub summary: DataSummary,
    pub server_version: String,
    /// Seconds the build took (generation + load), when it was built.
    pub build_seconds: f64,
    /// Bytes of the data directory.
    pub data_bytes: u64,
    /// True when this call built it; false when it came from the cache.
    #[serde(skip)]
    pub built_now: bool,
}

impl Dataset {
    pub fn datadir(&self) -> PathBuf {
        self.dir.join("data")
    }
}

/// The cache root (created 0700 if missing).
pub fn cache_root() -> Result<PathBuf, LabError> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let root = match (
        std::env::var_os("WEBTUNE_LAB_CACHE"),
        std::env::var_os("XDG_CACHE_HOME"),
    ) {
        (Some(dir), _) if !dir.is_empty() => PathBuf::from(dir),
        (_, Some(dir)) if !dir.is_empty() => PathBuf::from(dir).join("webtune-lab"),
        _ => PathBuf::from(format!("/var/tmp/webtune-lab-cache-{uid}")),
    };
    let bad = |message: String| LabError::Directory {
        path: root.clone(),
        message,
    };
    let made = !root.exists();
    match std::fs::create_dir_all(&root) {
        Ok(()) => {}
        Err(e) => return Err(bad(format!("cannot create it: {e}"))),
    }
    let meta = std::fs::symlink_metadata(&root).map_err(|e| bad(e.to_string()))?;
    if !meta.file_type().is_dir() {
        return Err(bad(
            "is not a directory (remove it or set WEBTUNE_LAB_CACHE)".into(),
        ));
    }
    if meta.uid() != uid {
        return Err(bad(format!(
            "belongs to uid {}, not to you (uid {uid}); set WEBTUNE_LAB_CACHE to a directory of yours",
            meta.uid()
        )));
    }
    // A directory webtune did not make keeps the mode its owner gave it.
    if made {
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| bad(format!("cannot set mode 700: {e}")))?;
    }
    check_plain(&root)?;
    Ok(root)
}

/// The cache entry's name for a dataset.
pub fn cache_key(posts: u64, seed: u64, server_version: &str) -> String {
    format!("forum-v{SCHEMA_VERSION}-p{posts}-s{seed}-mariadb{server_version}")
}

/// The cached dataset for `(posts, seed)` if it is there, without building anything.
pub fn cached(posts: u64, seed: u64) -> Result<Option<Dataset>, LabError> {
    let programs = DbPrograms::discover()?;
    let version = programs.server_version()?;
    let dir = cache_root()?.join(cache_key(posts, seed, &version));
    read_manifest(&dir)
}

fn read_manifest(dir: &Path) -> Result<Option<Dataset>, LabError> {
    let path = dir.join("dataset.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LabError::io(format!("reading {}", path.display()), e)),
    };
    let mut dataset: Dataset = serde_json::from_str(&text).map_err(|e| LabError::Directory {
        path: dir.to_path_buf(),
        message: format!("dataset.json is unreadable ({e}); remove the directory to rebuild it"),
    })?;
    dataset.dir = dir.to_path_buf();
    dataset.built_now = false;
    Ok(Some(dataset))
}

/// Removes a build's directory and registry entry unless the build completed.
struct BuildGuard {
    registry_root: PathBuf,
    entry: registry::Entry,
    done: bool,
}

impl Drop for BuildGuard {
    fn drop(&mut self) {
        if !self.done && registry::remove_dirs(&self.entry).is_ok() {
            registry::remove_entry(&self.registry_root, &self.entry.id);
        }
    }
}

/// The dataset for `(posts, seed)`: from the cache, or built now (and cached). `progress`
/// hears one line per step of a build.
pub fn ensure(
    posts: u64,
    seed: u64,
    options: &DbOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<Dataset, LabError> {
    data::Shape::for_posts(posts)?;
    let programs = DbPrograms::discover()?;
    let version = programs.server_version()?;
    let cache = cache_root()?;
    let key = cache_key(posts, seed, &version);
    let final_dir = cache.join(&key);
    if let Some(dataset) = read_manifest(&final_dir)? {
        return Ok(dataset);
    }
    let started = Instant::now();
    let registry_root = registry::lab_root()?;
    registry::clean_stale(&registry_root);
    let entry = Entry::new("mariadb-build", &|id| cache.join(format!("{key}.{id}")));
    registry::write_entry(&registry_root, &entry)?;
    let mut guard = BuildGuard {
        registry_root: registry_root.clone(),
        entry: entry.clone(),
        done: false,
    };
    let dir = entry.private_dir.clone();
    dirs::make_dir(&dir, 0o700)?;
    let tsv_dir = dir.join("tsv");
    dirs::make_dir(&tsv_dir, 0o700)?;

    progress(&format!("generating {posts} posts (seed {seed})"));
    let summary = data::generate(posts, seed, &tsv_dir)?;
    progress(&format!(
        "generated {} topics in {} forums, {} users, {:.1} MB of text in {:.1} s",
        summary.shape.topics,
        summary.shape.forums,
        summary.shape.users,
        summary.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    ));

    let files = InstanceFiles::in_dir(&dir);
    // A build has its own settings (see `Purpose::Build`), not the run's parameters.
    let config = mariadb::render_config(&files, "", Purpose::Build)?;
    let install_config = dir.join("install.cnf");
    dirs::write_file(&install_config, config.as_bytes(), 0o600)?;
    progress("initialising a MariaDB data directory (mariadb-install-db)");
    install_db(&programs, &install_config, &dir)?;

    let plan = crate::servers::mariadb::plan(&files, &files.config, programs.server.clone(), 0);
    let db = RunningDatabase::launch(
        &registry_root,
        entry.clone(),
        &programs.client,
        &[("my.cnf".to_string(), config)],
        &plan,
        options.clone(),
    )?;
    progress("loading (LOAD DATA LOCAL INFILE)");
    db.admin_sql_with_local_files(&load_sql(&tsv_dir)?)?;
    let count = db.admin_sql("SELECT COUNT(*) FROM forum.posts;")?;
    if count.trim().parse::<u64>().ok() != Some(posts) {
        return Err(db_failed(format!(
            "loaded {} posts instead of {posts}; the log is in {}",
            count.trim(),
            dir.display()
        )));
    }
    // A slow shutdown leaves nothing to recover or purge: every copy starts clean.
    db.admin_sql("SET GLOBAL innodb_fast_shutdown = 0;")?;
    db.stop_keeping_files()?;
    let _ = std::fs::remove_dir_all(&tsv_dir);

    let dataset = Dataset {
        dir: final_dir.clone(),
        summary,
        server_version: version,
        build_seconds: started.elapsed().as_secs_f64(),
        data_bytes: dir_bytes(&files.datadir),
        built_now: true,
    };
    let manifest = serde_json::to_string_pretty(&dataset)
        .map_err(|e| LabError::Inconsistent(format!("internal: dataset manifest: {e}")))?;
    std::fs::write(dir.join("dataset.json"), manifest)
        .map_err(|e| LabError::io(format!("writing {}", dir.display()), e))?;
    match std::fs::rename(&dir, &final_dir) {
        Ok(()) => {
            guard.done = true;
            registry::remove_entry(&registry_root, &entry.id);
            progress(&format!(
                "cached in {} ({:.0} MB, built in {:.1} s)",
                final_dir.display(),
                dataset.data_bytes as f64 / 1e6,
                dataset.build_seconds
            ));
            Ok(dataset)
        }
        // Another build finished first: use its entry (ours is removed by the guard).
        Err(_) => match read_manifest(&final_dir)? {
            Some(theirs) => Ok(theirs),
            None => Err(LabError::Directory {
                path: final_dir,
                message: "exists but holds no dataset.json; remove it and retry".into(),
            }),
        },
    }
}

fn install_db(programs: &DbPrograms, config: &Path, dir: &Path) -> Result<(), LabError> {
    let mut command = Command::new(&programs.install_db);
    command
        .arg(format!("--defaults-file={}", config.display()))
        .args(["--auth-root-authentication-method=socket", "--skip-test-db"])
        .current_dir(dir)
        .stdin(Stdio::null());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        command.arg(format!(
            "--auth-root-socket-user={}",
            mariadb::admin_user()?
        ));
    }
    let output = command
        .output()
        .map_err(|e| LabError::io(format!("running {}", programs.install_db.display()), e))?;
    if output.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    let tail: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let start = tail.len().saturating_sub(3);
    Err(db_failed(format!(
        "mariadb-install-db failed: {}",
        tail[start..].join(" | ")
    )))
}

/// The schema, the bulk load, the accounts' credentials and the pages' database account.
fn load_sql(tsv_dir: &Path) -> Result<String, LabError> {
    let mut sql = format!(
        "CREATE DATABASE {DATABASE} CHARACTER SET utf8mb4;\nUSE {DATABASE};\n{}\n\
         SET SESSION unique_checks = 0;\nSET SESSION foreign_key_checks = 0;\n",
        data::SCHEMA_SQL
    );
    for table in TABLES {
        let file = check_plain(&tsv_dir.join(format!("{table}.tsv")))?;
        sql.push_str(&format!(
            "LOAD DATA LOCAL INFILE '{file}' INTO TABLE {table} CHARACTER SET utf8mb4;\n"
        ));
    }
    sql.push_str(&data::credentials_sql());
    // The pages read everything; logged-in users write: a reply inserts a post and bumps
    // its topic's, forum's and author's counters; a login inserts a session, a page view
    // refreshes it.
    sql.push_str(&format!(
        "ANALYZE TABLE {}, credentials;\n\
         CREATE USER '{APP_USER}'@'localhost' IDENTIFIED BY '{}';\n\
         GRANT SELECT ON {DATABASE}.* TO '{APP_USER}'@'localhost';\n\
         GRANT INSERT ON {DATABASE}.posts TO '{APP_USER}'@'localhost';\n\
         GRANT UPDATE ON {DATABASE}.topics TO '{APP_USER}'@'localhost';\n\
         GRANT UPDATE ON {DATABASE}.forums TO '{APP_USER}'@'localhost';\n\
         GRANT UPDATE ON {DATABASE}.users TO '{APP_USER}'@'localhost';\n\
         GRANT INSERT, UPDATE ON {DATABASE}.sessions TO '{APP_USER}'@'localhost';\n",
        TABLES.join(", "),
        mariadb::random_password()?
    ));
    Ok(sql)
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Copy a cached data directory for one run (`cp -a`, with reflinks where the
/// filesystem has them): the server writes into its copy, never into the cache.
pub(crate) fn copy_datadir(from: &Path, to: &Path) -> Result<(), LabError> {
    let output = Command::new("cp")
        .args(["-a", "--reflink=auto"])
        .arg(from)
        .arg(to)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::io("running cp", e))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(LabError::Directory {
            path: to.to_path_buf(),
            message: format!(
                "copying the cached data failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        })
    }
}
