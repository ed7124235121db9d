//! The forum's flags, shared by `lab`, `tune` and `advise --verify`: which application a
//! lab stack serves (`App`) and which forum (`DataChoice`: its size and seed).

use webtune_model::defaults;

/// The application a lab stack serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum App {
    /// The built-in site: /empty.gif, /index.html, /cpu/N.
    Site,
    /// Seed 003's PHP forum on a private MariaDB.
    Forum,
}

/// Which forum: its size and seed.
#[derive(clap::Args, Debug, Clone)]
pub struct DataChoice {
    /// Posts in the forum (seed 003: 150,000 posts; 40 forums, 15,000 topics, 5,000 users).
    #[arg(long = "posts", default_value_t = defaults::SEED_003_POSTS)]
    pub posts: u64,
    /// The generator's seed: the same seed gives the same forum.
    #[arg(long = "seed", default_value_t = defaults::DEFAULT_FORUM_SEED)]
    pub seed: u64,
}
