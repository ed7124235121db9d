//! The forum's flags, shared by `lab`, `tune` and `advise --verify`: which application a
//! lab stack serves (`App`) and which forum (`DataChoice`: its size and seed).

use webtune_lab::forum::data;

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
    #[arg(long = "posts", default_value_t = data::SEED_003_POSTS)]
    pub posts: u64,
    /// The generator's seed: the same seed gives the same forum.
    #[arg(long = "seed", default_value_t = data::DEFAULT_SEED)]
    pub seed: u64,
}

impl From<App> for webtune_lab::trial::App {
    fn from(app: App) -> webtune_lab::trial::App {
        match app {
            App::Site => webtune_lab::trial::App::Site,
            App::Forum => webtune_lab::trial::App::Forum,
        }
    }
}

impl From<webtune_lab::trial::App> for App {
    fn from(app: webtune_lab::trial::App) -> App {
        match app {
            webtune_lab::trial::App::Site => App::Site,
            webtune_lab::trial::App::Forum => App::Forum,
        }
    }
}

impl DataChoice {
    /// The lab's name for this choice.
    pub fn forum(&self) -> webtune_lab::trial::ForumData {
        webtune_lab::trial::ForumData {
            posts: self.posts,
            seed: self.seed,
        }
    }
}
