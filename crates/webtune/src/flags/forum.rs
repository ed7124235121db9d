//! The forum's flags (`webtune_cli::flags::forum`: `App`, `DataChoice`), shared by `lab`,
//! `tune` and `advise --verify`, mapped onto the lab's names.

use webtune_cli::flags::forum::{App, DataChoice};

/// The lab's name for the application (`--app`).
pub fn lab_app(app: App) -> webtune_lab::trial::App {
    match app {
        App::Site => webtune_lab::trial::App::Site,
        App::Forum => webtune_lab::trial::App::Forum,
    }
}

/// The flag's name for the lab's application.
pub fn flag_app(app: webtune_lab::trial::App) -> App {
    match app {
        webtune_lab::trial::App::Site => App::Site,
        webtune_lab::trial::App::Forum => App::Forum,
    }
}

/// What the binary makes of `DataChoice` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait DataChoiceExt {
    /// The lab's name for this choice.
    fn forum(&self) -> webtune_lab::trial::ForumData;
}

impl DataChoiceExt for DataChoice {
    fn forum(&self) -> webtune_lab::trial::ForumData {
        webtune_lab::trial::ForumData {
            posts: self.posts,
            seed: self.seed,
        }
    }
}
