//! The search (`webtune-search`; the crate was `webtune-tune`), a library with no I/O
//! besides its journal: the search space (`space`), the objective and SLOs (`objective`),
//! the samplers (`sampler`, and `acquisition` over `gp`'s model), the
//! ask/tell study with its noise floor and racing (`study`, over one trial's vocabulary in
//! `trial`) and its successive halving under a time budget (`halving`), the SQLite journal that lets a
//! study resume (`journal`), the advisor's seeds and their judgement (`advised`), the
//! paired proof (`proof`), per-parameter effects (`effects`) and the `webtune.tune/1`
//! report (`report`; its text here, its HTML page `webtune_report::tune_html`), and the capacity
//! search's pure half (`capacity`, `capacity_judge`: what to try next, how a step is
//! judged). It never starts a process or loads a server, and does not depend on the lab:
//! the caller runs each trial and tells the study what it measured (`paired` runs the
//! proof's pairs through the caller's closure). The orchestration that runs trials in the
//! lab is the `webtune-tuner` crate. The samplers' benchmark suite of synthetic servers is
//! the dev-only `webtune-search-bench` crate (crates/search-bench).

pub mod acquisition;
pub mod advised;
pub mod capacity;
pub mod capacity_judge;
mod edge;
pub mod effects;
pub mod gp;
pub mod halving;
pub mod interleave;
pub mod journal;
pub mod lock;
pub mod objective;
pub mod paired;
pub mod proof;
pub mod report;
pub mod report_verdict;
pub mod sampler;
pub mod space;
pub mod study;
pub mod trial;

// The unit tests drive studies of the benchmarks' five-parameter synthetic server: one copy
// of it, in the dev-only crate, compiled in here for tests only (its paths say
// `webtune_search::`, which this alias resolves to this crate).
#[cfg(test)]
extern crate self as webtune_search;
#[cfg(test)]
#[allow(dead_code)] // the benchmark runners in that file are not used by these tests
#[path = "../../search-bench/src/synthetic.rs"]
mod synthetic;

pub use acquisition::GpSampler;
pub use effects::{effects, Effect};
pub use journal::{Journal, JournalError, Phase, Resumed};
pub use objective::{evaluate, Evaluation, LevelSummary, Objective, Slo, Stat};
pub use proof::{analyze, order, Arm, Proof};
pub use report::{ProofReport, TuneReport};
pub use sampler::{Observation, RandomSampler, Sampler};
pub use space::{Config, KnownKind, KnownParam, Space, SpaceError, Value};
pub use study::{Best, Next, Outcome, Study, StudySettings, Trial, Why};

#[cfg(test)]
mod tests {
    /// The header's promise, kept by the crate graph: the optimizer cannot start a server,
    /// since it does not depend on the lab (the orchestration is `webtune-tuner`), and it
    /// returns values that others draw or run: no engine, no report renderer (issue 36).
    #[test]
    fn the_optimizer_does_not_depend_on_the_lab_the_engine_or_the_renderer() {
        let manifest = include_str!("../Cargo.toml");
        let deps = manifest
            .split("[dependencies]")
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .expect("a [dependencies] table");
        for other in ["webtune-lab", "webtune-engine", "webtune-report"] {
            assert!(!deps.contains(other), "{other}: {deps}");
        }
    }
}
