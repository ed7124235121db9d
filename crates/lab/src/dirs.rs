//! The private directories and files of lab runs: created with exactly the mode asked
//! (whatever the umask), never over something already there.

use crate::LabError;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Create one directory with `mode`; an existing one is an error.
pub fn make_dir(path: &Path, mode: u32) -> Result<(), LabError> {
    std::fs::DirBuilder::new()
        .mode(mode)
        .create(path)
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)))
        .map_err(|e| LabError::io(format!("creating {}", path.display()), e))
}

/// Write a new file with `mode`; an existing one is an error.
pub fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<(), LabError> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)))
        .map_err(|e| LabError::io(format!("writing {}", path.display()), e))
}

/// Write rendered config files (names relative to `dir`, mode 0600), creating the
/// subdirectories an imported tree keeps (`conf/sites-enabled/…`).
pub fn write_configs(dir: &Path, configs: &[(String, String)]) -> Result<(), LabError> {
    for (name, text) in configs {
        if let Some(parent) = Path::new(name)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir.join(parent))
                .map_err(|e| LabError::io(format!("creating {}", parent.display()), e))?;
        }
        write_file(&dir.join(name), text.as_bytes(), 0o600)?;
    }
    Ok(())
}
