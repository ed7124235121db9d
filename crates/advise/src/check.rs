//! Every patch is checked by the server itself before it is offered. The tree is copied
//! into a private temporary directory the way the lab imports a user's config
//! (crates/lab/src/import: loopback ports, private pid, log, temp and data paths, includes
//! pointing into the copy; every user line keeps its number), the patch is applied to the
//! copy, and the server checks the copy: `nginx -t -c`, `apache2 -t -f` (with Debian's
//! envvars), `php-fpm -t -y`, and for MariaDB `mariadbd --defaults-file=COPY --help
//! --verbose`: MariaDB 10.11 has no `--validate-config` (MySQL 8.0.16 added it), but its
//! option parser runs in full before `--help` prints the values, and exits non-zero on an
//! unknown option or a bad value, without touching a data directory. The user's files are
//! never touched, and nothing is started.
//!
//! A tree whose patched copy fails is bisected: each finding's changes are checked alone,
//! the ones the server refuses are not written (the finding says why, with the server's
//! words), and the rest are checked together again. A patch that cannot be checked (the
//! server is not installed, or the unpatched copy already fails here) is not written
//! either, and says so.

use crate::finding::Change;
use crate::output::{changes_per_file, patch_text, PatchOptions};
use crate::Advice;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use webtune_lab::import::{ConfigTree, Import, Server};
use webtune_lab::{LabError, Layout, Programs};

/// What the server said about one tree's patch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatchCheck {
    pub server: String,
    pub main: PathBuf,
    /// The check run on the copy (`nginx -t -q -c …`).
    pub command: String,
    /// "passed", "rejected" (some changes left out: see the findings), "not checked".
    pub outcome: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Changes of one tree: file → (source id, change).
type Patch = BTreeMap<PathBuf, Vec<(String, Change)>>;

enum Failure {
    /// The server refused the copy: its words.
    Rejected(String),
    /// No check could be made.
    NotChecked(String),
}

/// Check every tree's patch; leave out (and explain on the finding or the plan) every
/// change that is refused or cannot be checked. Returns one line per tree.
pub fn check_patches(a: &mut Advice, opts: PatchOptions) -> Vec<PatchCheck> {
    let all = changes_per_file(a, opts);
    let mut out = Vec::new();
    for read in a.configs.clone() {
        let Some(server) = server_of(&read.server) else {
            continue;
        };
        let patch: Patch = all
            .iter()
            .filter(|(file, _)| read.files.contains(file))
            .map(|(f, c)| (f.clone(), c.clone()))
            .collect();
        if patch.is_empty() {
            continue;
        }
        let mut command = String::new();
        let mut check = |p: &Patch| run_check(server, &read.main, p, &mut command);
        let (outcome, message) = match check(&patch) {
            Ok(()) => ("passed", String::new()),
            Err(Failure::NotChecked(why)) => {
                reject_all(a, &patch, &format!("not checked: {why}"));
                ("not checked", why)
            }
            Err(Failure::Rejected(whole)) => {
                match check(&Patch::new()) {
                    Err(Failure::Rejected(m) | Failure::NotChecked(m)) => {
                        let why = format!(
                        "not checked: the unpatched copy already fails here ({m}), so the server cannot judge the patch"
                    );
                        reject_all(a, &patch, &why);
                        ("not checked", why)
                    }
                    Ok(()) => {
                        // Each source alone, then the rest together.
                        let mut rest = patch.clone();
                        let mut refused = Vec::new();
                        for id in sources(&patch) {
                            let alone = only(&patch, &id);
                            if let Err(Failure::Rejected(m) | Failure::NotChecked(m)) =
                                check(&alone)
                            {
                                reject(a, &id, &format!("refused by the server's own check of the patched copy: {m}"));
                                rest = without(&rest, &id);
                                refused.push(id);
                            }
                        }
                        if !rest.is_empty() {
                            if let Err(Failure::Rejected(m) | Failure::NotChecked(m)) = check(&rest)
                            {
                                let why = format!(
                                "refused by the server's own check together with the tree's other changes: {m}"
                            );
                                reject_all(a, &rest, &why);
                            }
                        }
                        ("rejected", whole)
                    }
                }
            }
        };
        out.push(PatchCheck {
            server: read.server.clone(),
            main: read.main.clone(),
            command,
            outcome: outcome.into(),
            message,
        });
    }
    out
}

fn server_of(name: &str) -> Option<Server> {
    Some(match name {
        "nginx" => Server::Nginx,
        "apache2" => Server::Apache,
        "php-fpm" => Server::PhpFpm,
        "mariadb" => Server::MariaDb,
        _ => return None,
    })
}

fn sources(p: &Patch) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for (id, _) in p.values().flatten() {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    ids
}

fn only(p: &Patch, id: &str) -> Patch {
    filtered(p, |x| x == id)
}

fn without(p: &Patch, id: &str) -> Patch {
    filtered(p, |x| x != id)
}

fn filtered(p: &Patch, keep: impl Fn(&str) -> bool) -> Patch {
    p.iter()
        .map(|(f, list)| {
            let list: Vec<_> = list.iter().filter(|(i, _)| keep(i)).cloned().collect();
            (f.clone(), list)
        })
        .filter(|(_, list)| !list.is_empty())
        .collect()
}

fn reject_all(a: &mut Advice, p: &Patch, why: &str) {
    for id in sources(p) {
        reject(a, &id, why);
    }
}

/// Leave a source's changes out of the patch, saying why on it: a plan entry (and the
/// findings that bound it), or a finding.
fn reject(a: &mut Advice, id: &str, why: &str) {
    let mut bounded: Vec<String> = Vec::new();
    for k in a.plan.knobs.iter_mut().filter(|k| k.id() == id) {
        k.patch = Some(why.to_string());
        bounded.extend(k.findings().iter().map(|s| s.to_string()));
    }
    for f in a
        .findings
        .iter_mut()
        .filter(|f| f.id == id || bounded.contains(&f.id))
    {
        f.patch = Some(why.to_string());
    }
}

/// A temporary directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        use std::os::unix::fs::DirBuilderExt;
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("webtune-advise-check-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Copy the tree privately, apply `patch`, and let the server check the copy.
fn run_check(
    server: Server,
    main: &Path,
    patch: &Patch,
    command: &mut String,
) -> Result<(), Failure> {
    let not = |what: &str, e: &dyn std::fmt::Display| Failure::NotChecked(format!("{what}: {e}"));
    let tree =
        ConfigTree::read(server, main).map_err(|e| not("reading the tree for a copy", &e))?;
    let import = Import::new(tree, &[]).map_err(|e| not("copying the tree", &e))?;
    let programs = Programs::discover();
    let tmp = TempDir::new().map_err(|e| not("making a private directory", &e))?;
    let dir = tmp.0.clone();
    for sub in ["temp", "run", "www"] {
        std::fs::create_dir_all(dir.join(sub))
            .map_err(|e| not("making a private directory", &e))?;
    }
    let ports = webtune_lab::process::free_ports(import.port_count())
        .map_err(|e| not("picking loopback ports", &e))?;
    let layout = Layout {
        dir: dir.clone(),
        docroot: dir.join("www"),
        ports,
        privileged: is_root(),
        addresses: 1,
    };
    let rendered = import
        .render(&layout, &programs)
        .map_err(|e| Failure::NotChecked(e.to_string()))?;
    let comment = if server == Server::PhpFpm { ";" } else { "#" };
    for (name, text) in &rendered.configs {
        let original = patch
            .iter()
            .find(|(file, _)| import.copy_name(file) == Path::new(name));
        let text = match original {
            Some((_, changes)) => patch_text(text, changes, comment),
            None => text.clone(),
        };
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| not("writing the copy", &e))?;
        }
        std::fs::write(&path, text).map_err(|e| not("writing the copy", &e))?;
    }
    let plan = &rendered.servers[0];
    let restore = |m: &str| import.restore_paths(&dir, m);
    if server == Server::MariaDb {
        let args = [
            format!("--defaults-file={}", plan.config_file.display()),
            "--help".into(),
            "--verbose".into(),
        ];
        *command = restore(&format!("{} {}", plan.program.display(), args.join(" ")));
        let output = Command::new(&plan.program)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| not(&format!("running {}", plan.program.display()), &e))?;
        if output.status.success() {
            return Ok(());
        }
        let err = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("[ERROR]"))
            .map(|l| l.split("[ERROR] ").nth(1).unwrap_or(l).trim())
            .filter(|l| !l.contains("Aborting"))
            .collect();
        let text = if lines.is_empty() {
            err.lines().last().unwrap_or("").to_string()
        } else {
            lines.join(" | ")
        };
        return Err(Failure::Rejected(restore(&format!(
            "{} ({})",
            text, output.status
        ))));
    }
    *command = restore(&format!(
        "{} {}",
        plan.program.display(),
        plan.check_args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    ));
    match webtune_lab::process::check_config(plan) {
        Ok(()) => Ok(()),
        Err(LabError::ConfigRejected { message, .. }) => Err(Failure::Rejected(restore(&message))),
        Err(e) => Err(Failure::NotChecked(e.to_string())),
    }
}
