//! Looking for processes from a test: those whose command line names a path (what a lab
//! start or a pool may have left), counted without zombies. A check for tests only: the
//! lab itself never picks processes to signal by their command line (docs/lab.md).

use std::path::Path;

/// Live (not zombie) processes other than this one whose command line contains `path`.
pub fn processes_naming(path: &Path) -> Vec<i32> {
    let needle = path.to_string_lossy().into_owned();
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&raw).replace('\0', " ");
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
            .unwrap_or(false);
        if pid != me && text.contains(&needle) && !zombie {
            found.push(pid);
        }
    }
    found
}
