//! The capacity search's flags (`webtune_cli::flags::capacity::SearchArgs`) mapped onto
//! `SearchSettings`, for `capacity` and `lab capacity`.

use webtune_cli::flags::capacity::SearchArgs;
use webtune_model::capacity::SearchSettings;

/// What the binary makes of `SearchArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait SearchArgsExt {
    fn settings(&self) -> SearchSettings;
}

impl SearchArgsExt for SearchArgs {
    fn settings(&self) -> SearchSettings {
        SearchSettings {
            start_rps: self.start_rate,
            min_rps: self.min_rate,
            max_rps: self.max_rate,
            growth: 2.0,
            precision: self.precision,
            max_steps: self.max_steps,
        }
    }
}
