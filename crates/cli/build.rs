//! Build script: records the git commit this binary is built from, for `webtune --version`.
//!
//! `WEBTUNE_COMMIT`, when set, wins (a build from a source tarball that knows its commit).
//! Otherwise `git rev-parse` in this crate's directory, but only when git tracks this crate
//! there (a `.crate` unpacked inside some other repository must not take that repository's
//! commit). Anything else, or no git at all, gives "unknown": the build never fails for it.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=WEBTUNE_COMMIT");
    let commit = match std::env::var("WEBTUNE_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => from_git().unwrap_or_else(|| "unknown".to_string()),
    };
    println!("cargo:rustc-env=WEBTUNE_COMMIT={commit}");
}

/// The checkout's HEAD, abbreviated; `None` outside a checkout that tracks this crate.
fn from_git() -> Option<String> {
    git(&["ls-files", "--error-unmatch", "Cargo.toml"])?;
    // Run again when HEAD moves: a commit or checkout writes HEAD's reflog, a branch switch
    // HEAD itself, a commit the branch's ref file. Only files that exist: cargo treats a
    // missing one as changed on every build.
    let mut watch = vec!["HEAD".to_string(), "logs/HEAD".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(branch);
    }
    for name in watch {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    git(&["rev-parse", "--short=12", "HEAD"])
}

/// One git command's trimmed output, run in this crate's directory (where cargo runs build
/// scripts); `None` when git is missing, fails or prints nothing.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}
