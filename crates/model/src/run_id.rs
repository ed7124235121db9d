//! The run id a shard run derives from its spec when it is given no `--run-id`: above both
//! `spec` (which holds a run's `Shard`) and `shard` (the notation and the records), so the two
//! do not import each other (issue 36 item 5).

use crate::RunSpec;
use sha2::{Digest, Sha256};

/// The run id of a shard run without `--run-id`: its `--start-at` (absolute, as every
/// shard of one run was given the same) and a fingerprint of the whole test's spec,
/// `start-1796119200000-3f2a9c1b`. None without a start time. The fingerprint leaves out
/// what may differ between the shards of one test (the shard, the thread count, the
/// planned start itself), as the merge's spec comparison does.
pub fn derived_run_id(spec: &RunSpec) -> Option<String> {
    let at = spec.start_at_unix_ms?;
    let mut common = match serde_json::to_value(spec.whole_test()) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    common.remove("threads");
    common.remove("start_at_unix_ms");
    let digest = Sha256::digest(serde_json::Value::Object(common).to_string().as_bytes());
    let short: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("start-{at}-{short}"))
}
