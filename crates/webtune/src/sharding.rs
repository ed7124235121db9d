//! `--shard i/n`, `--start-at TIME` and `--run-id ID` on the command line, put into the spec
//! (`RunSpec::shard`, `RunSpec::start_at_unix_ms`) and the shard's record
//! (`StartRecord::run_id`). The shares and the run id's rules are the model's
//! (`webtune_model::shard`), `--start-at`'s forms, range and words `webtune_model::start_at`,
//! the wait the engine's.

use webtune_model::start_at::{parse_start_at, shard_run_id, StartNote};
use webtune_model::{parse_run_id, RunResult, RunSpec, Shard};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct ShardArgs {
    /// Run shard I of N of the test: -c, --rate, -n and --stages describe the whole test
    /// and this run takes its share (in open loop every N-th scheduled arrival). Merge the
    /// shards' --json results with `webtune merge`. I counts from 1.
    #[arg(long = "shard", value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Wait for this wall-clock time before starting, so that shards on several machines
    /// start together: RFC 3339 (2026-12-01T10:00:00Z), Unix milliseconds, or +DURATION
    /// from now (+5s); from 1 day ago to 7 days ahead.
    #[arg(long = "start-at", value_name = "TIME")]
    pub start_at: Option<String>,
    /// The run this shard belongs to, the same for every shard (a job id: slurm-4242);
    /// `webtune merge` refuses shards of different runs. Default: derived from an absolute
    /// --start-at and the test's flags; none with a relative one (+5s).
    #[arg(long = "run-id", value_name = "ID", value_parser = parse_run_id, requires = "shard")]
    pub run_id: Option<String>,
}

impl ShardArgs {
    /// Put the shard and the start time into `spec`.
    pub fn apply(&self, spec: &mut RunSpec) -> anyhow::Result<()> {
        spec.shard = self.shard;
        spec.start_at_unix_ms = match &self.start_at {
            Some(text) => Some(parse_start_at(text, now_unix_ms())?),
            None => None,
        };
        Ok(())
    }

    /// Record the run id in a shard's result (`start_at::shard_run_id`).
    pub fn record(&self, result: &mut RunResult) {
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
