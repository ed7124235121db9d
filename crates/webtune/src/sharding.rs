//! `--shard i/n`, `--start-at TIME` and `--run-id ID` on the command line, put into the spec
//! (`RunSpec::shard`, `RunSpec::start_at_unix_ms`) and the shard's record
//! (`StartRecord::run_id`). The shares and the run id's rules are the model's
//! (`webtune_model::shard`), `--start-at`'s forms, range and words `webtune_model::start_at`,
//! the wait the engine's.

use webtune_cli::flags::shard::ShardArgs;
use webtune_model::start_at::{parse_start_at, shard_run_id, StartNote};
use webtune_model::{RunResult, RunSpec};

/// What the binary makes of `ShardArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait ShardArgsExt {
    /// Put the shard and the start time into `spec`.
    fn apply(&self, spec: &mut RunSpec) -> anyhow::Result<()>;
    /// Record the run id in a shard's result (`start_at::shard_run_id`).
    fn record(&self, result: &mut RunResult);
}

impl ShardArgsExt for ShardArgs {
    fn apply(&self, spec: &mut RunSpec) -> anyhow::Result<()> {
        spec.shard = self.shard;
        spec.start_at_unix_ms = match &self.start_at {
            Some(text) => Some(parse_start_at(text, now_unix_ms())?),
            None => None,
        };
        Ok(())
    }

    fn record(&self, result: &mut RunResult) {
        if result.spec.shard.is_none() {
            return;
        }
        let id = shard_run_id(
            &result.spec,
            self.run_id.as_deref(),
            self.start_at.as_deref(),
        );
        if let Some(record) = result.start.as_mut() {
            record.run_id = id;
        }
    }
}

fn now_unix_ms() -> u64 {
    webtune_engine::clock::now_unix_ms() as u64
}

/// The note for `spec`'s start now, if it has a `--start-at` (`start_at::start_note`).
pub fn start_note(spec: &RunSpec) -> Option<StartNote> {
    webtune_model::start_at::start_note(spec, now_unix_ms())
}
