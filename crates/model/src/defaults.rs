//! Named defaults that the command-line grammar (`webtune-cli`) prints in `--help` and the
//! libraries that run with them read: one home for each, below both (issue 36: "defaults
//! have one home each"). The tuner and the lab re-export them under their old names.

/// The interleaved proof's time budget (`tune --proof-budget`), as the command line writes it.
pub const DEFAULT_PROOF_BUDGET: &str = "3m";
/// How long `tune --apply`/`--restore` may run (`--apply-timeout`), as written.
pub const DEFAULT_APPLY_TIMEOUT: &str = "10m";
/// The server-side sampling period (`tune --sample-interval`), as written.
pub const DEFAULT_SAMPLE_INTERVAL: &str = "250ms";
/// `advise --verify`'s interleaved protocol's time budget (`--verify-budget`), as written.
pub const DEFAULT_VERIFY_BUDGET: &str = "3m";
/// The posts of seed 003's forum (`--posts`).
pub const SEED_003_POSTS: u64 = 150_000;
/// The forum generator's seed when none is given (`--seed`, `--forum-seed`).
pub const DEFAULT_FORUM_SEED: u64 = 3;
