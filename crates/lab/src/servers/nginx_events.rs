//! Which event methods (`events { use … }`) an nginx binary was built with. nginx builds
//! select and poll on Linux only when asked (`--with-select_module`, `--with-poll_module`),
//! and Debian's nginx has neither: a `use` it lacks fails `nginx -t` with "invalid event
//! type". Each method is tried once per binary with `nginx -t` on a three-line config in a
//! temporary directory, and the answer is kept for the process's life.

use crate::LabError;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The methods webtune can ask for, in nginx's order of preference on Linux.
const CANDIDATES: &[&str] = &["epoll", "poll", "select"];

/// The methods of `program` among epoll, poll and select.
pub fn methods(program: &Path) -> Result<Vec<&'static str>, LabError> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Vec<&'static str>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(known) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(program) {
        return Ok(known.clone());
    }
    let found = probe(program)?;
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(program.to_path_buf(), found.clone());
    Ok(found)
}

fn probe(program: &Path) -> Result<Vec<&'static str>, LabError> {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "webtune-nginx-events-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| LabError::io(format!("{}", dir.display()), e))?;
    let result = probe_in(program, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn probe_in(program: &Path, dir: &Path) -> Result<Vec<&'static str>, LabError> {
    let conf = dir.join("probe.conf");
    let log = dir.join("error.log");
    let mut found = Vec::new();
    for method in CANDIDATES {
        let text = format!(
            "error_log {};\npid {};\nevents {{ use {method}; }}\n",
            log.display(),
            dir.join("nginx.pid").display()
        );
        std::fs::write(&conf, text).map_err(|e| LabError::io(format!("{}", conf.display()), e))?;
        let mut prefix = dir.to_path_buf().into_os_string();
        prefix.push("/");
        let out = Command::new(program)
            .arg("-t")
            .arg("-q")
            .arg("-p")
            .arg(prefix)
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(&log)
            .stdin(Stdio::null())
            .output();
        // Not runnable: the start names the missing program; nothing is refused here.
        let Ok(out) = out else {
            return Ok(CANDIDATES.to_vec());
        };
        let said = String::from_utf8_lossy(&out.stderr);
        // Any other failure is not this method's: the start's own check will tell it.
        if out.status.success() || !said.contains("invalid event type") {
            found.push(*method);
        }
    }
    Ok(found)
}
