//! Checking a patched copy of a user's config tree, without starting anything: the tree is
//! copied into a private temporary directory as for a run (loopback ports, private pid,
//! log, temp and data paths, includes pointing into the copy; every user line keeps its
//! number), the caller's patch is applied to each copied file, and the server checks the
//! copy: `nginx -t`, `apache2 -t`, `php-fpm -t`, and for MariaDB `mariadbd
//! --defaults-file=COPY --help --verbose` (10.11 has no `--validate-config`; its option
//! parser runs in full before `--help` prints the values, and exits non-zero on an unknown
//! option or a bad value, without opening a data directory). The advisor checks its
//! patches with it (`webtune advise --write-patch`), a copied tree under its `--root`; the
//! command it reports is the one that ran, on the private copy.

use super::{ConfigTree, Import, Server};
use crate::servers::Programs;
use crate::{LabError, Layout};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Why a copy was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyCheck {
    /// The server refused the copy: the command run and the server's words (with the
    /// user's paths).
    Rejected { command: String, message: String },
    /// No check could be made (the server is not installed, the tree cannot be copied).
    NotChecked(String),
}

/// A check the server passed: the command that ran, and what the server warned about
/// (`nginx: [warn] …`, httpd's `AH00318: WARNING: …`), with the user's paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    pub command: String,
    pub warnings: Vec<String>,
}

/// Copy `main`'s tree privately, patch each copied file with `patch(original, copy text)`,
/// and let the server check the copy. Ok: the command that passed.
pub fn check_patched_copy(
    server: Server,
    main: &Path,
    patch: &dyn Fn(&Path, &str) -> String,
) -> Result<String, CopyCheck> {
    check_patched_copy_in(server, main, None, patch).map(|p| p.command)
}

/// `check_patched_copy` for a tree copied under `root` (`advise --root`): its absolute
/// paths (includes, ServerRoot) are the copy's, never this host's. The command said is
/// the one that ran, on the private copy.
pub fn check_patched_copy_in(
    server: Server,
    main: &Path,
    root: Option<&Path>,
    patch: &dyn Fn(&Path, &str) -> String,
) -> Result<Passed, CopyCheck> {
    let not = |what: &str, e: &dyn std::fmt::Display| CopyCheck::NotChecked(format!("{what}: {e}"));
    let opts = webtune_conf::config::Options {
        root: root.map(Path::to_path_buf),
        ..Default::default()
    };
    let tree = ConfigTree::read_with(server, main, &opts)
        .map_err(|e| not("reading the tree for a copy", &e))?;
    let import = Import::new(tree, &[]).map_err(|e| not("copying the tree", &e))?;
    let originals = import.tree.files.clone();
    let programs = Programs::discover();
    let tmp = TempDir::new().map_err(|e| not("making a private directory", &e))?;
    let dir = tmp.0.clone();
    for sub in ["temp", "run", "www"] {
        std::fs::create_dir_all(dir.join(sub))
            .map_err(|e| not("making a private directory", &e))?;
    }
    let ports = crate::process::free_ports(import.port_count())
        .map_err(|e| not("picking loopback ports", &e))?;
    let layout = Layout {
        dir: dir.clone(),
        docroot: dir.join("www"),
        ports,
        privileged: crate::servers::privileged(),
        addresses: 1,
    };
    let rendered = import
        .render(&layout, &programs)
        .map_err(|e| CopyCheck::NotChecked(e.to_string()))?;
    for (name, text) in &rendered.configs {
        let original = originals
            .iter()
            .find(|file| import.copy_name(file) == Path::new(name));
        let text = match original {
            Some(file) => patch(file, text),
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
    // The command as it ran, on the copy (removed after the check), and whose copy it was.
    let ran = |c: String| {
        format!(
            "{c} (on a private copy of {}, removed after the check)",
            main.display()
        )
    };
    if server == Server::MariaDb {
        let args = [
            format!("--defaults-file={}", plan.config_file.display()),
            "--help".into(),
            "--verbose".into(),
        ];
        let command = ran(format!("{} {}", plan.program.display(), args.join(" ")));
        let output = Command::new(&plan.program)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| not(&format!("running {}", plan.program.display()), &e))?;
        if output.status.success() {
            return Ok(Passed {
                command,
                warnings: Vec::new(),
            });
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
        return Err(CopyCheck::Rejected {
            message: restore(&format!("{} ({})", text, output.status)),
            command,
        });
    }
    let command = ran(format!(
        "{} {}",
        plan.program.display(),
        plan.check_args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    ));
    // Run once to keep what the server warns about on a copy it accepts (a warning such
    // as httpd's AH00318 means it changed a value itself); a refusal is said by
    // `process::check_config`, as for a run.
    if let Ok(out) = Command::new(&plan.program)
        .args(&plan.check_args)
        .stdin(Stdio::null())
        .output()
    {
        if out.status.success() {
            let mut warnings: Vec<String> = Vec::new();
            let text = String::from_utf8_lossy(&out.stderr).into_owned()
                + &String::from_utf8_lossy(&out.stdout);
            for line in text.lines().map(str::trim) {
                let lower = line.to_ascii_lowercase();
                if lower.contains("warn") && !lower.contains("syntax ok") {
                    let w = restore(line);
                    if !warnings.contains(&w) {
                        warnings.push(w);
                    }
                }
            }
            return Ok(Passed { command, warnings });
        }
    }
    match crate::process::check_config(plan) {
        Ok(()) => Ok(Passed {
            command,
            warnings: Vec::new(),
        }),
        Err(LabError::ConfigRejected { message, .. }) => Err(CopyCheck::Rejected {
            message: restore(&message),
            command,
        }),
        Err(e) => Err(CopyCheck::NotChecked(e.to_string())),
    }
}

/// A private temporary directory (0700), removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        use std::os::unix::fs::DirBuilderExt;
        static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("webtune-check-{}-{n}", std::process::id()));
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
