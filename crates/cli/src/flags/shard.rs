//! `--shard I/N`, `--run-id` and `--start-at`: one shard of a test run as several processes.

use webtune_model::parse_run_id;
use webtune_model::Shard;

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
