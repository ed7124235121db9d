//! The fs workload's pools on the host's own file systems (`webtune fs`, `postmark`): each
//! pool is recorded in the lab's registry as a stack with no processes while it exists, so
//! that `webtune lab clean` deletes a pool whose run was killed (SIGKILL leaves no chance
//! for the workload's own cleanup).

use crate::registry::{self, Entry};
use std::path::{Path, PathBuf};
use webtune_fs::PoolKeeper;
use webtune_model::fs::{FsResult, FsSpec};
use webtune_model::StopToken;

/// The name a pool's registry entry carries.
pub const POOL_ENTRY: &str = "fs-pool";

/// Records each pool in the lab's registry for as long as it exists.
#[derive(Default)]
pub struct RegistryKeeper {
    held: Option<(PathBuf, String)>,
}

impl PoolKeeper for RegistryKeeper {
    fn claim(&mut self, pool: &Path) -> Result<(), String> {
        let root = registry::lab_root().map_err(|e| e.to_string())?;
        let entry = Entry::new(POOL_ENTRY, &|_| pool.to_path_buf());
        registry::write_entry(&root, &entry).map_err(|e| e.to_string())?;
        self.held = Some((root, entry.id));
        Ok(())
    }

    fn release(&mut self, _pool: &Path) {
        if let Some((root, id)) = self.held.take() {
            registry::remove_entry(&root, &id);
        }
    }
}

/// Run the workload of `spec` at its own location, its pool registered with the lab.
pub fn run_registered(spec: &FsSpec, stop: &StopToken) -> Result<FsResult, webtune_fs::FsError> {
    webtune_fs::run(spec, stop, &mut RegistryKeeper::default())
}
