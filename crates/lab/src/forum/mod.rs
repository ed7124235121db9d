//! Seed 003's workload: a PHP forum (our own, in `crates/lab/apps/forum/`) on a private
//! MariaDB, with deterministic generated data.
//!
//! - `data`: the generator (forums, topics, users, posts with realistic shapes), its TSV
//!   files and checksum;
//! - `dataset`: the loaded MariaDB data directory, cached per `(posts, seed)`;
//! - `dbparams`: MariaDB's tunable parameters (`db.*`);
//! - `mariadb`: one private MariaDB instance (config, start, readiness, stop, registry);
//! - `app`: the PHP files, their per-run configuration, the scenario;
//! - `ForumDatabase` and `ForumStack` (here): a started database with the forum's account,
//!   and a PHP-capable lab stack serving the forum on it.
//!
//! It does not make load or decide what is best: it starts, serves and stops.

pub mod app;
pub mod data;
pub mod dataset;
pub mod dbparams;
pub(crate) mod mariadb;
mod rng;

pub use mariadb::{DbOptions, DbPrograms, RunningDatabase};

use crate::import::Import;
use crate::params::Settings;
use crate::process::{self, http_get};
use crate::registry::{self, Entry};
use crate::render::Layout;
use crate::servers::{Component, Programs, RenderContext};
use crate::stacks::StackKind;
use crate::supervisor::{RunningStack, StartOptions};
use crate::{dirs, LabError};
use data::DataSummary;
use dataset::Dataset;
use mariadb::{db_failed, InstanceFiles};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// What the forum needs on this host besides a PHP-capable stack, and whether it is
/// there: (what, where it was found, the Debian package that provides it).
pub fn requirements() -> Vec<(&'static str, Option<std::path::PathBuf>, &'static str)> {
    let programs = DbPrograms::discover().ok();
    vec![
        (
            "mariadbd",
            programs.as_ref().map(|p| p.server.clone()),
            "mariadb-server",
        ),
        (
            "mariadb (client)",
            programs.as_ref().map(|p| p.client.clone()),
            "mariadb-client",
        ),
        ("PHP mysqli", php_mysqli(), "php-mysql"),
    ]
}

/// PHP's mysqli extension, which the pages use: Debian's `/usr/lib/php/API/mysqli.so`,
/// or the `modules` directories other distributions use.
pub fn php_mysqli() -> Option<std::path::PathBuf> {
    let debian = std::fs::read_dir("/usr/lib/php")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("mysqli.so"));
    let others = ["/usr/lib64/php/modules", "/usr/lib/php/modules"]
        .iter()
        .map(|d| std::path::Path::new(d).join("mysqli.so"));
    debian.chain(others).find(|p| p.is_file())
}

/// The private database of one run, with the forum loaded and a fresh password for the
/// pages' account.
pub struct ForumDatabase {
    db: RunningDatabase,
    password: String,
    /// Signs the login form's token (`app::render_config`); fresh for every run.
    secret: String,
    summary: DataSummary,
}

/// How the forum's database is configured: the lab's my.cnf rendered from `db.*`
/// settings, or a copy of the user's own my.cnf (`--mysql-config`, see `import`).
#[derive(Debug, Clone)]
pub enum DbConfig {
    Generated(Settings),
    Imported(Box<Import>),
}

impl From<Settings> for DbConfig {
    fn from(settings: Settings) -> DbConfig {
        DbConfig::Generated(settings)
    }
}

impl DbConfig {
    /// The parameters results record: every `db.*` value, or the overrides of the copy.
    pub fn parameters(&self) -> Vec<(String, String)> {
        match self {
            DbConfig::Generated(s) => s
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            DbConfig::Imported(import) => import.overrides().to_vec(),
        }
    }

    /// The parameters set explicitly, in the order given.
    pub fn explicitly_set(&self) -> Vec<String> {
        match self {
            DbConfig::Generated(s) => s.explicitly_set().to_vec(),
            DbConfig::Imported(import) => {
                import.overrides().iter().map(|(n, _)| n.clone()).collect()
            }
        }
    }

    /// "defaults", the settings that differ from them, or the user's config.
    pub fn describe(&self) -> String {
        match self {
            DbConfig::Generated(s) => s.describe_changes(),
            DbConfig::Imported(import) => format!("your my.cnf {}", import.describe()),
        }
    }
}

impl ForumDatabase {
    /// Copy the cached data directory into a new instance directory under the lab root,
    /// render its my.cnf from `settings` (`db.*`), start it and set the account's password.
    pub fn start(
        dataset: &Dataset,
        settings: &Settings,
        options: DbOptions,
    ) -> Result<ForumDatabase, LabError> {
        Self::start_with(dataset, &DbConfig::Generated(settings.clone()), options)
    }

    /// Like `start`, with the lab's my.cnf or a copy of the user's.
    pub fn start_with(
        dataset: &Dataset,
        config: &DbConfig,
        options: DbOptions,
    ) -> Result<ForumDatabase, LabError> {
        let programs = DbPrograms::discover()?;
        let root = registry::lab_root()?;
        registry::check_passage(&root)?;
        registry::clean_stale(&root);
        let entry = Entry::new("mariadb", &|id| root.join(id));
        // On disk before anything exists, so a SIGKILL later leaves something to reap.
        registry::write_entry(&root, &entry)?;
        let prepared = (|| {
            // 0711: the web servers' workers (www-data when the lab runs as root) pass
            // through to the socket; they cannot list the directory, and data/ is 0700.
            dirs::make_dir(&entry.private_dir, 0o711)?;
            let files = InstanceFiles::in_dir(&entry.private_dir);
            dataset::copy_datadir(&dataset.datadir(), &files.datadir)?;
            let port = process::free_ports(1)?[0];
            let layout = Layout {
                dir: entry.private_dir.clone(),
                docroot: entry.private_dir.clone(),
                ports: vec![port],
                privileged: crate::servers::privileged(),
                addresses: 1,
            };
            let programs = Programs::discover();
            match config {
                DbConfig::Generated(settings) => {
                    let rendered = Component::MariaDb.server().render(&RenderContext {
                        stack: "forum",
                        prefix: dbparams::PREFIX,
                        settings,
                        layout: &layout,
                        programs: &programs,
                        port,
                        backend_port: 0,
                        front: false,
                        tls: false,
                        account: None,
                    })?;
                    Ok((rendered.configs, rendered.plan))
                }
                DbConfig::Imported(import) => {
                    let mut rendered = import.render(&layout, &programs)?;
                    match rendered.servers.pop() {
                        Some(plan) => Ok((rendered.configs, plan)),
                        None => Err(db_failed("internal: an imported my.cnf without a plan")),
                    }
                }
            }
        })();
        let (configs, plan) = match prepared {
            Ok(r) => r,
            Err(e) => {
                if registry::remove_dirs(&entry).is_ok() {
                    registry::remove_entry(&root, &entry.id);
                }
                return Err(e);
            }
        };
        let db = RunningDatabase::launch(&root, entry, &programs.client, &configs, &plan, options)?;
        let password = mariadb::random_password()?;
        db.admin_sql(&format!(
            "ALTER USER '{}'@'localhost' IDENTIFIED BY '{password}';",
            mariadb::APP_USER
        ))?;
        Ok(ForumDatabase {
            db,
            password,
            secret: mariadb::random_password()?,
            summary: dataset.summary.clone(),
        })
    }

    /// The PHP configuration the pages read.
    pub fn app_config(&self) -> Result<String, LabError> {
        app::render_config(self.db.socket(), &self.password, &self.secret)
    }

    pub fn database(&self) -> &RunningDatabase {
        &self.db
    }

    pub fn summary(&self) -> &DataSummary {
        &self.summary
    }

    /// Stop the server and verify nothing is left.
    pub fn stop(self) -> Result<(), LabError> {
        self.db.stop()
    }
}

/// A PHP-capable lab stack serving the forum, with its private database: the database
/// starts first and stops last.
pub struct ForumStack {
    // Dropped in declaration order: the web stack first, then the database.
    stack: Option<RunningStack>,
    database: Option<ForumDatabase>,
}

impl ForumStack {
    /// Start the database from the cached dataset, then the stack, then install the forum
    /// into the stack's document root and wait until a forum page answers through the
    /// front server.
    pub fn start(
        stack: StackKind,
        web_settings: &Settings,
        db_config: &DbConfig,
        dataset: &Dataset,
        start: StartOptions,
        db_options: DbOptions,
    ) -> Result<ForumStack, LabError> {
        if !stack.has_php() {
            return Err(LabError::Inconsistent(format!(
                "the forum needs PHP; {} serves static files only (use apache-prefork, apache-worker, apache-event, nginx-apache or nginx-php-fpm)",
                stack.name()
            )));
        }
        if php_mysqli().is_none() {
            return Err(LabError::MissingProgram {
                program: "PHP's mysqli extension".into(),
                hint: "install the Debian package php-mysql".into(),
            });
        }
        let ready_timeout = start.ready_timeout;
        let database = ForumDatabase::start_with(dataset, db_config, db_options)?;
        let running = RunningStack::start(stack, web_settings, start)?;
        app::install(running.docroot(), &database.app_config()?)?;
        let forum = ForumStack {
            stack: Some(running),
            database: Some(database),
        };
        forum.wait_for_page(ready_timeout)?;
        Ok(forum)
    }

    /// Wait until a topic page answers through the front server. Its failure is the
    /// forum's, not the database's (which has started by then): the message used to say
    /// "mariadb did not start" for a page that timed out because of the web stack's own
    /// settings (nginx's `upstream_keepalive` K with no more php-fpm children than nginx
    /// workers × K can hold every child on an idle kept connection: 2026-11-29's forum
    /// tune; the advisor's `php_fpm.fastcgi_keepalive_starves_pool`).
    fn wait_for_page(&self, timeout: Duration) -> Result<(), LabError> {
        const PAGE_WAIT: Duration = Duration::from_secs(5);
        let address = self.front_address();
        let deadline = Instant::now() + timeout;
        loop {
            let outcome = http_get(address, "/viewtopic.php?t=1", PAGE_WAIT);
            match &outcome {
                Ok((200, body)) if contains(body, app::PAGE_MARKER.as_bytes()) => return Ok(()),
                _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
                _ => return Err(page_failed(&self.base_url(), outcome, PAGE_WAIT)),
            }
        }
    }

    fn running(&self) -> Option<&RunningStack> {
        self.stack.as_ref()
    }

    /// The address clients load (the front server).
    pub fn front_address(&self) -> SocketAddr {
        self.running()
            .map(|s| s.front_address())
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// `http://127.0.0.1:PORT` of the front server.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.front_address())
    }

    pub fn stack(&self) -> Option<&RunningStack> {
        self.running()
    }

    pub fn database(&self) -> Option<&ForumDatabase> {
        self.database.as_ref()
    }

    /// Session ids of every server, the database's included (for the sampler).
    pub fn sessions(&self) -> Vec<i32> {
        let mut sessions = self.running().map(|s| s.sessions()).unwrap_or_default();
        if let Some(sid) = self.database.as_ref().and_then(|d| d.db.session()) {
            sessions.push(sid);
        }
        sessions
    }

    /// The warnings and errors every server logged so far, the database's included
    /// (read them before `stop`, which removes the logs).
    pub fn log_messages(&self) -> Vec<webtune_model::server::LogMessage> {
        let mut messages = self.running().map(|s| s.log_messages()).unwrap_or_default();
        if let Some(db) = &self.database {
            messages.extend(db.db.log_messages());
        }
        messages
    }

    /// Every live process of the stack and the database now.
    pub fn processes(&self) -> Vec<i32> {
        let mut pids = self.running().map(|s| s.processes()).unwrap_or_default();
        if let Some(db) = &self.database {
            pids.extend(db.db.processes());
        }
        pids
    }

    /// Stop the web stack, then the database; the first error is reported, both are
    /// stopped either way.
    pub fn stop(mut self) -> Result<(), LabError> {
        let web = self.stack.take().map(|s| s.stop()).unwrap_or(Ok(()));
        let db = self.database.take().map(|d| d.stop()).unwrap_or(Ok(()));
        web.and(db)
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Why the forum's first page did not come: the forum's failure, with a timed-out read
/// said in words ("no answer within 5 s", not "Resource temporarily unavailable").
fn page_failed(
    base_url: &str,
    outcome: std::io::Result<(u16, Vec<u8>)>,
    wait: Duration,
) -> LabError {
    let what = match outcome {
        Ok((status, body)) => format!(
            "status {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            format!("no answer within {} s", wait.as_secs())
        }
        Err(e) => e.to_string(),
    };
    LabError::StartFailed {
        server: "the forum".into(),
        message: format!(
            "GET /viewtopic.php?t=1 through {base_url} gave {what} (its database and web servers are up)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_page_that_times_out_is_the_forums_failure_in_words() {
        let timed_out = Err(std::io::Error::from(std::io::ErrorKind::WouldBlock));
        let e = page_failed("http://127.0.0.1:9", timed_out, Duration::from_secs(5)).to_string();
        assert_eq!(
            e,
            "the forum did not start: GET /viewtopic.php?t=1 through http://127.0.0.1:9 gave \
             no answer within 5 s (its database and web servers are up)"
        );
        let e = page_failed(
            "u",
            Ok((502, b"Bad Gateway".to_vec())),
            Duration::from_secs(5),
        );
        assert!(
            e.to_string().contains("gave status 502: Bad Gateway"),
            "{e}"
        );
    }
}
