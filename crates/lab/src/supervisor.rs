//! A running stack: its registry entry (on disk before anything starts), its private
//! directory and document root, its network namespace when `os.*` asks for one, its
//! servers rendered (a lab stack) or imported (a user's config), each checked by the
//! server itself, then started in order and waited for (`process`), and the stop that
//! leaves nothing behind: every server in reverse order, then anything left of the
//! sessions the registry recorded (and of the run's namespace). `RunningStack` stops on drop, so an error or a panic in the caller still
//! tears the stack down.

use crate::host::{self, ExecLimits, HostSettings, OsValues, ThreadPin};
use crate::import::Import;
use crate::netns::{Inside, NetNamespace};
use crate::params::Settings;
use crate::process::{self, ServerProcess};
use crate::registry::{self, CleanReport, Entry};
use crate::render::{self, Layout, Programs, Rendered};
use crate::stacks::StackKind;
use crate::{dirs, LabError};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use webtune_model::StopToken;

pub use crate::process::{http_get, http_request, HttpReply};

/// How a start behaves.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// Longest wait for each server to answer.
    pub ready_timeout: Duration,
    /// Time between the orderly stop signal and SIGKILL.
    pub stop_grace: Duration,
    /// Keep the private directory (configs, logs) after stop.
    pub keep_dir: bool,
    /// The run's stop token (set by the binary's signal handlers): abandons a start in
    /// progress.
    pub interrupt: Option<StopToken>,
    /// CPU sets and loopback addresses (the `os.*` values come with the settings).
    pub host: HostSettings,
}

impl StartOptions {
    /// For a database: crash recovery or a big buffer pool make the start slow, and an
    /// orderly shutdown flushes the pool, so both waits are longer.
    pub fn database() -> StartOptions {
        StartOptions {
            ready_timeout: Duration::from_secs(60),
            stop_grace: Duration::from_secs(30),
            ..StartOptions::default()
        }
    }
}

impl Default for StartOptions {
    fn default() -> Self {
        StartOptions {
            ready_timeout: Duration::from_secs(15),
            stop_grace: Duration::from_secs(5),
            keep_dir: false,
            interrupt: None,
            host: HostSettings::default(),
        }
    }
}

/// What a start runs: a lab stack with its settings, or a user's own config (`import`).
#[derive(Clone, Copy)]
enum Source<'a> {
    Stack(&'a Settings),
    Imported(&'a Import),
}

/// A started stack. Stop it with `stop()` to see whether the stop was clean; dropping it
/// stops it too.
pub struct RunningStack {
    stack: StackKind,
    /// An imported config's target name ("nginx-config"); `stack` is then `External`.
    imported: Option<&'static str>,
    /// The whole chain must answer the lab's CPU-bound page before the start counts (a
    /// PHP stack, or an imported php-fpm behind the lab's nginx).
    php_page: bool,
    root: PathBuf,
    entry: Entry,
    rendered: Rendered,
    servers: Vec<ServerProcess>,
    options: StartOptions,
    stopped: bool,
    reaped: CleanReport,
    /// The `os.*` values of the settings.
    os: OsValues,
    /// The run's private network namespace, when an `os.*` network parameter is set.
    netns: Option<NetNamespace>,
}

impl RunningStack {
    /// Start a stack with validated settings. First reaps what a killed webtune left.
    pub fn start(
        stack: StackKind,
        settings: &Settings,
        options: StartOptions,
    ) -> Result<RunningStack, LabError> {
        if stack == StackKind::External {
            return Err(LabError::Inconsistent(
                "the external stack is not started by the lab; give its URL instead".into(),
            ));
        }
        crate::stacks::check_consistency(stack, settings)?;
        let os = OsValues::from_settings(settings);
        host::check_namespace_privilege(&os, host::effective_capabilities())?;
        options.host.check()?;
        let programs = Programs::discover();
        for (_, component) in stack.components() {
            programs.program_for(component)?;
        }
        Self::start_retrying(stack, Source::Stack(settings), options, &programs)
    }

    /// Start a user's own config, copied into a private directory (see `import`). Its
    /// settings are the server's defaults for the host knobs: none is applied.
    pub fn start_imported(
        import: &Import,
        options: StartOptions,
    ) -> Result<RunningStack, LabError> {
        options.host.check()?;
        let programs = Programs::discover();
        Self::start_retrying(
            StackKind::External,
            Source::Imported(import),
            options,
            &programs,
        )
    }

    fn start_retrying(
        stack: StackKind,
        source: Source,
        options: StartOptions,
        programs: &Programs,
    ) -> Result<RunningStack, LabError> {
        let root = registry::lab_root()?;
        registry::check_passage(&root)?;
        let reaped = registry::clean_stale(&root);
        // The ports are free when picked but released before the servers bind them; on a
        // busy host a client's outgoing connection can take one in between. Such a start
        // fails fast (the server exits), and is retried with new ports.
        let mut attempt = 1;
        loop {
            match Self::start_once(stack, source, &options, programs, &root, &reaped) {
                Err(LabError::StartFailed { server, message })
                    if attempt < 3 && message.contains("in use") =>
                {
                    eprintln!("webtune lab: {server}: port taken meanwhile ({message}); retrying");
                    attempt += 1;
                }
                outcome => return outcome,
            }
        }
    }

    fn start_once(
        stack: StackKind,
        source: Source,
        options: &StartOptions,
        programs: &Programs,
        root: &Path,
        reaped: &CleanReport,
    ) -> Result<RunningStack, LabError> {
        let name = match source {
            Source::Stack(_) => stack.name(),
            Source::Imported(import) => import.target_name(),
        };
        let mut entry = Entry::new(name, &|id| root.join(id));
        entry.docroot = root.join(format!("{}.www", entry.id));
        // The entry goes to disk before anything else exists, so a SIGKILL at any later
        // point leaves something `lab clean` can find.
        registry::write_entry(root, &entry)?;
        let os = match source {
            Source::Stack(settings) => OsValues::from_settings(settings),
            Source::Imported(_) => OsValues::default(),
        };
        let mut running = RunningStack {
            stack,
            imported: matches!(source, Source::Imported(_)).then_some(name),
            php_page: match source {
                Source::Stack(_) => stack.has_php(),
                Source::Imported(import) => import.serves_php(),
            },
            root: root.to_path_buf(),
            entry,
            rendered: Rendered {
                configs: Vec::new(),
                site: Vec::new(),
                servers: Vec::new(),
            },
            servers: Vec::new(),
            options: options.clone(),
            stopped: false,
            reaped: reaped.clone(),
            os,
            netns: None,
        };
        // On any error below, dropping `running` stops what started and removes the files.
        let outcome = running.make_namespace().and_then(|()| {
            // Ports, config checks, the servers and their readiness: all in the namespace.
            let inside = running
                .netns
                .as_ref()
                .map(NetNamespace::enter)
                .transpose()?;
            let outcome = running
                .prepare(source, programs)
                .and_then(|()| running.launch());
            match inside.map(Inside::leave) {
                Some(Err(e)) => Err(e),
                _ => outcome,
            }
        });
        match outcome {
            Ok(()) => Ok(running),
            Err(e) => {
                // A terminal's Ctrl-C also reaches the config checks webtune runs in its own
                // process group; what failed then is the interruption, not the server.
                let interrupted = running.check_interrupt().is_err();
                drop(running);
                Err(if interrupted {
                    LabError::Interrupted
                } else {
                    e
                })
            }
        }
    }

    /// The run's namespace, recorded in the registry before any server exists in it.
    fn make_namespace(&mut self) -> Result<(), LabError> {
        if !self.os.needs_namespace() {
            return Ok(());
        }
        let ns = NetNamespace::create(&self.os.sysctls)?;
        self.entry.netns = Some(ns.inode());
        self.netns = Some(ns);
        registry::write_entry(&self.root, &self.entry)
    }

    fn prepare(&mut self, source: Source, programs: &Programs) -> Result<(), LabError> {
        let dir = self.entry.private_dir.clone();
        let docroot = self.entry.docroot.clone();
        dirs::make_dir(&dir, 0o700)?;
        dirs::make_dir(&docroot, 0o755)?;
        for sub in ["temp", "run"] {
            dirs::make_dir(&dir.join(sub), 0o700)?;
        }
        let ports = process::free_ports(match source {
            Source::Stack(_) => self.stack.components().len(),
            Source::Imported(import) => import.port_count(),
        })?;
        let privileged = crate::servers::privileged();
        let layout = Layout {
            dir: dir.clone(),
            docroot: docroot.clone(),
            ports,
            privileged,
            addresses: self.options.host.addresses.max(1),
        };
        self.rendered = match source {
            Source::Stack(settings) => render::render(self.stack, settings, &layout, programs)?,
            Source::Imported(import) => import.render(&layout, programs)?,
        };
        dirs::write_configs(&dir, &self.rendered.configs)?;
        if self.stack.is_tls() {
            crate::tls::make_certificate(&dir)?;
        }
        for (name, bytes) in &self.rendered.site {
            dirs::write_file(&docroot.join(name), bytes, 0o644)?;
        }
        // Every server makes what it needs on disk, then checks its own config, before
        // anything starts.
        for plan in &self.rendered.servers {
            plan.component.server().prepare(plan, &dir)?;
        }
        for plan in &self.rendered.servers {
            match (process::check_config(plan), source) {
                (
                    Err(LabError::ConfigRejected {
                        server, message, ..
                    }),
                    Source::Imported(i),
                ) => {
                    return Err(LabError::ImportRejected {
                        server,
                        config: i.main().to_path_buf(),
                        message: i.restore_paths(&dir, &message),
                    })
                }
                (outcome, _) => outcome?,
            }
        }
        Ok(())
    }

    fn launch(&mut self) -> Result<(), LabError> {
        let plans = self.rendered.servers.clone();
        let limits = ExecLimits {
            cpus: self.options.host.server_cpus.as_ref().map(|c| c.to_mask()),
            nofile: self.os.nofile,
        };
        for plan in plans {
            let dir = self.entry.private_dir.clone();
            let (root, entry) = (&self.root, &mut self.entry);
            // On disk before the server runs (it waits for that at its gate).
            let process = ServerProcess::spawn(&plan, &dir, limits, &mut |sid| {
                entry.record_session(sid);
                registry::write_entry(root, entry)
            })?;
            self.servers.push(process);
            if let Some(server) = self.servers.last_mut() {
                server.wait_ready(self.options.ready_timeout, self.options.interrupt.as_ref())?;
            }
        }
        if self.php_page {
            // The whole chain answers the CPU-bound page.
            let front = self.front_address();
            let deadline = Instant::now() + self.options.ready_timeout;
            let get = match self.stack.is_tls() {
                true => crate::tls::https_get,
                false => http_get,
            };
            loop {
                match get(front, "/cpu/1", Duration::from_secs(2)) {
                    Ok((200, _)) => break,
                    outcome => {
                        if Instant::now() >= deadline {
                            let what = match outcome {
                                Ok((status, _)) => format!("status {status}"),
                                Err(e) => e.to_string(),
                            };
                            return Err(LabError::StartFailed {
                                server: self.name().to_string(),
                                message: format!(
                                    "GET /cpu/1 gave {what}; logs in {}",
                                    self.entry.private_dir.display()
                                ),
                            });
                        }
                    }
                }
                self.check_interrupt()?;
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    fn check_interrupt(&self) -> Result<(), LabError> {
        match &self.options.interrupt {
            Some(stop) if stop.stop_requested() => Err(LabError::Interrupted),
            _ => Ok(()),
        }
    }

    pub fn stack(&self) -> StackKind {
        self.stack
    }

    /// The stack's name, or an imported config's target name.
    pub fn name(&self) -> &'static str {
        self.imported.unwrap_or_else(|| self.stack.name())
    }

    /// The address clients load (the front server).
    pub fn front_address(&self) -> SocketAddr {
        let port = self.rendered.servers.last().map(|s| s.port).unwrap_or(0);
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// `http://127.0.0.1:PORT` of the front server (`https://` for a TLS stack).
    pub fn base_url(&self) -> String {
        let scheme = match self.stack {
            StackKind::Postfix => "smtp",
            s if s.is_tls() => "https",
            _ => "http",
        };
        format!("{scheme}://{}", self.front_address())
    }

    /// TLS stacks: the lab's self-signed certificate, for the load's `--cacert`.
    pub fn certificate(&self) -> Option<PathBuf> {
        self.stack
            .is_tls()
            .then(|| self.entry.private_dir.join(crate::tls::CERT_FILE))
    }

    /// Every address the front server listens on (127.0.0.1 … 127.0.0.N, `--addresses`).
    pub fn front_addresses(&self) -> Vec<SocketAddr> {
        let port = self.front_address().port();
        (1..=self.options.host.addresses.max(1))
            .map(|i| SocketAddr::from(([127, 0, 0, i as u8], port)))
            .collect()
    }

    /// Put the calling thread where the load must come from: inside the stack's namespace
    /// (so loopback stays the path) and on the client CPUs. Threads started meanwhile (the
    /// engine's workers, the sampler) inherit both; dropping the guard undoes them.
    pub(crate) fn load_side(&self) -> Result<LoadSide, LabError> {
        let inside = self.netns.as_ref().map(NetNamespace::enter).transpose()?;
        let pin = match &self.options.host.client_cpus {
            Some(cpus) => Some(ThreadPin::pin(cpus)?),
            None => None,
        };
        Ok(LoadSide {
            _pin: pin,
            _inside: inside,
        })
    }

    /// What the host settings did, read back from the kernel now (the main processes'
    /// open-file limits and CPUs); None when no host setting was made.
    pub fn host_section(&self) -> Option<webtune_model::server::HostSection> {
        let host = &self.options.host;
        if host.is_default() && self.os == OsValues::default() {
            return None;
        }
        Some(webtune_model::server::HostSection {
            netns: self
                .netns
                .as_ref()
                .map(NetNamespace::name)
                .unwrap_or_default(),
            sysctls: self
                .netns
                .as_ref()
                .map(|n| n.sysctls().clone())
                .unwrap_or_default(),
            addresses: if host.addresses > 1 {
                host.addresses
            } else {
                0
            },
            client_cpus: host
                .client_cpus
                .as_ref()
                .map(|c| c.to_string())
                .unwrap_or_default(),
            server_cpus: host
                .server_cpus
                .as_ref()
                .map(|c| c.to_string())
                .unwrap_or_default(),
            processes: self
                .entry
                .session_ids()
                .into_iter()
                .filter_map(host::process_host)
                .collect(),
        })
    }

    pub fn private_dir(&self) -> &Path {
        &self.entry.private_dir
    }

    pub fn docroot(&self) -> &Path {
        &self.entry.docroot
    }

    /// The rendered configs and the server plans.
    pub fn rendered(&self) -> &Rendered {
        &self.rendered
    }

    /// Session ids of the servers (each server's processes share its session).
    pub fn sessions(&self) -> Vec<i32> {
        self.entry.session_ids()
    }

    /// Every live process of the stack now.
    pub fn processes(&self) -> Vec<i32> {
        registry::processes_of(&self.entry)
    }

    /// The warnings and errors the servers logged so far, deduplicated (read them before
    /// `stop`, which removes the logs with the private directory).
    pub fn log_messages(&self) -> Vec<webtune_model::server::LogMessage> {
        self.rendered
            .servers
            .iter()
            .flat_map(|plan| plan.component.server().log_messages(plan))
            .collect()
    }

    /// What the start reaped from runs a killed webtune left behind.
    pub fn reaped(&self) -> &CleanReport {
        &self.reaped
    }

    /// Stop every server (front first) and verify that none of its processes is left.
    pub fn stop(mut self) -> Result<(), LabError> {
        self.stop_all()
    }

    fn stop_all(&mut self) -> Result<(), LabError> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        let mut first_error = None;
        while let Some(mut server) = self.servers.pop() {
            if let Err(e) = server.stop(self.options.stop_grace) {
                first_error.get_or_insert(e);
            }
        }
        // Anything else of the start: a member of a session whose leader has gone, or a
        // process left in the run's namespace.
        let left = registry::terminate(&self.entry, libc::SIGKILL, Duration::from_secs(1));
        if !left.is_empty() {
            first_error.get_or_insert(LabError::Survivors {
                server: self.name().to_string(),
                pids: left,
            });
        }
        if first_error.is_none() {
            let removed = if self.options.keep_dir {
                registry::keep_dirs(&self.entry);
                Ok(())
            } else {
                registry::remove_dirs(&self.entry)
            };
            // A directory that could not go keeps its entry, so `lab clean` tries again.
            match removed {
                Ok(()) => registry::remove_entry(&self.root, &self.entry.id),
                Err(e) => {
                    first_error.get_or_insert(LabError::Directory {
                        path: self.entry.private_dir.clone(),
                        message: e,
                    });
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for RunningStack {
    fn drop(&mut self) {
        if let Err(e) = self.stop_all() {
            eprintln!("webtune lab: stopping {}: {e}", self.name());
        }
    }
}

/// The load's side of a run (see `RunningStack::load_side`); undone when dropped.
pub struct LoadSide {
    _pin: Option<ThreadPin>,
    _inside: Option<Inside>,
}

impl LoadSide {
    /// Only the client CPUs (a server the lab did not start has no namespace of ours).
    pub fn client_only(host: &HostSettings) -> Result<LoadSide, LabError> {
        let pin = match &host.client_cpus {
            Some(cpus) => Some(ThreadPin::pin(cpus)?),
            None => None,
        };
        Ok(LoadSide {
            _pin: pin,
            _inside: None,
        })
    }
}
