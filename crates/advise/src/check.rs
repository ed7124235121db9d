//! Every patch is checked by the server itself before it is offered. The check of one
//! tree is the caller's `Checker` (the binary passes the lab's
//! `import::check::check_patched_copy`: a private copy, patched, checked by `nginx -t`,
//! `apache2 -t`, `php-fpm -t` or `mariadbd --help --verbose`), so that this crate stays
//! below the lab. The user's files are never touched, and nothing is started.
//!
//! A tree whose patched copy fails is bisected: each finding's changes are checked alone,
//! the ones the server refuses are not written (the finding says why, with the server's
//! words), and the rest are checked together again. A patch that cannot be checked (the
//! server is not installed, or the unpatched copy already fails here) is not written
//! either, and says so.

use crate::change::Change;
use crate::output::{changes_per_file, patch_text, PatchOptions};
use crate::Advice;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// What the server warned about on the patched copy it accepted (httpd's `AH00318:
    /// WARNING: MaxRequestWorkers … would exceed ServerLimit`: a value it changed itself).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Changes of one tree: file → (source id, change).
type Patch = BTreeMap<PathBuf, Vec<(String, Change)>>;

/// What a tree's check said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// The server accepted the patched copy (the command run, and what it warned about).
    Passed {
        command: String,
        warnings: Vec<String>,
    },
    /// The server refused it: the command and its words.
    Rejected { command: String, message: String },
    /// No check could be made, and why.
    NotChecked(String),
}

/// Check one tree: its server ("nginx", "apache2", "php-fpm", "mariadb"), its main file,
/// the copied tree's root (`--root`: the tree's absolute paths lie under it, never on this
/// host), and the patch as a function of (original file, copied text) → patched text.
pub type Checker<'a> =
    &'a dyn Fn(&str, &Path, Option<&Path>, &dyn Fn(&Path, &str) -> String) -> Checked;

enum Failure {
    /// The server refused the copy: its words.
    Rejected(String),
    /// No check could be made.
    NotChecked(String),
}

/// Check every tree's patch; leave out (and explain on the finding or the plan) every
/// change that is refused or cannot be checked. Returns one line per tree.
pub fn check_patches(a: &mut Advice, opts: PatchOptions, checker: Checker) -> Vec<PatchCheck> {
    let all = changes_per_file(a, opts);
    let mut out = Vec::new();
    for read in a.configs.clone() {
        let server = read.server.as_str();
        if !["nginx", "apache2", "php-fpm", "mariadb"].contains(&server) {
            continue;
        }
        let patch: Patch = all
            .iter()
            .filter(|(file, _)| read.files.contains(file))
            .map(|(f, c)| (f.clone(), c.clone()))
            .collect();
        if patch.is_empty() {
            continue;
        }
        let mut command = String::new();
        let mut warnings = Vec::new();
        let root = a.facts.root.clone();
        let mut check = |p: &Patch| {
            run_check(
                checker,
                server,
                &read.main,
                root.as_deref(),
                p,
                (&mut command, &mut warnings),
            )
        };
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
            warnings,
        });
    }
    out
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

/// Check `main`'s tree with `patch` applied to the copies of its files.
fn run_check(
    checker: Checker,
    server: &str,
    main: &Path,
    root: Option<&Path>,
    patch: &Patch,
    (command, warnings): (&mut String, &mut Vec<String>),
) -> Result<(), Failure> {
    let comment = if server == "php-fpm" { ";" } else { "#" };
    let apply = |file: &Path, text: &str| match patch.get(file) {
        Some(changes) => patch_text(text, changes, comment),
        None => text.to_string(),
    };
    match checker(server, main, root, &apply) {
        Checked::Passed {
            command: c,
            warnings: w,
        } => {
            *command = c;
            *warnings = w;
            Ok(())
        }
        Checked::Rejected {
            command: c,
            message,
        } => {
            *command = c;
            Err(Failure::Rejected(message))
        }
        Checked::NotChecked(why) => Err(Failure::NotChecked(why)),
    }
}
