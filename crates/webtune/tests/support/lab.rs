//! What the lab's end-to-end tests share: a private lab root per test (reaped and removed
//! when the test ends), the processes still naming it, and what a run left in it.
#![allow(dead_code)] // each test binary uses its own part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const WEBTUNE: &str = env!("CARGO_BIN_EXE_webtune");

/// A lab root of the test's own (`WEBTUNE_LAB_DIR`), so that no other lab user on this
/// machine reaps the test's stacks first; reaped and removed when the test ends.
pub struct LabDir(pub PathBuf);

impl LabDir {
    pub fn new(name: &str) -> LabDir {
        LabDir(std::env::temp_dir().join(format!("webtune-lab-test-{}-{name}", std::process::id())))
    }

    /// webtune with this lab root.
    pub fn command(&self) -> Command {
        self.command_for(WEBTUNE)
    }

    /// Any program with this lab root in its environment (e.g. webtune under `setpriv`).
    pub fn command_for(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("WEBTUNE_LAB_DIR", &self.0);
        command
    }

    /// `lab clean` in this root: it exits 0, names `dir` as reaped, and leaves no process
    /// naming `dir`.
    pub fn clean_reaps(&self, dir: &Path) {
        let output = self
            .command()
            .args(["lab", "clean"])
            .output()
            .expect("run webtune lab clean");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{stdout}");
        assert!(stdout.contains(&dir.display().to_string()), "{stdout}");
        let left = processes_naming(dir);
        assert!(left.is_empty(), "{left:?}");
    }

    /// The registry's entries now, as JSON.
    pub fn registry(&self) -> Vec<serde_json::Value> {
        let Ok(dir) = std::fs::read_dir(self.0.join("registry")) else {
            return Vec::new();
        };
        dir.flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|t| serde_json::from_str(&t).ok())
            .collect()
    }
}

impl Drop for LabDir {
    fn drop(&mut self) {
        let _ = self
            .command()
            .args(["lab", "clean"])
            .stdout(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Live processes whose command line names the directory.
pub use webtune_testkit::procs::processes_naming;

/// Everything left in a lab root after a run: entries other than the empty registry.
pub fn leftovers(root: &Path) -> Vec<String> {
    let mut left: Vec<String> = std::fs::read_dir(root)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "registry")
                .collect()
        })
        .unwrap_or_default();
    left.extend(
        std::fs::read_dir(root.join("registry"))
            .map(|d| {
                d.flatten()
                    .map(|e| format!("registry/{}", e.file_name().to_string_lossy()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default(),
    );
    left
}

/// The stack's private directory, from the lab's "… ready at URL (…, dir DIR)" line.
pub fn ready_dir(line: &str) -> PathBuf {
    let dir = line
        .rsplit_once("dir ")
        .map(|(_, d)| d.trim_end_matches(')').to_string())
        .unwrap_or_else(|| panic!("dir in the ready line: {line}"));
    PathBuf::from(dir)
}

/// Whether this test process may make network namespaces and set sysctls
/// (CAP_SYS_ADMIN in its effective set).
pub fn privileged() -> bool {
    webtune_lab::host::effective_capabilities().is_some_and(|caps| caps & (1 << 21) != 0)
}

/// The inode of the network namespace of process `pid` (a /proc entry's name).
pub fn namespace_of(pid: &str) -> Option<u64> {
    webtune_lab::namespace_of(pid.parse().ok()?)
}

/// Whether the forum's database side is missing here (MariaDB's server, or PHP's mysqli):
/// the forum tests then opt out by the name "mariadb".
pub fn forum_database_missing() -> bool {
    let mysqli = std::fs::read_dir("/usr/lib/php")
        .map(|d| d.flatten().any(|e| e.path().join("mysqli.so").is_file()))
        .unwrap_or(false);
    !mysqli || !Path::new("/usr/sbin/mariadbd").exists()
}
