//! The tuner's core, as a library with no I/O besides its journal: the search space
//! (`space`), the objective and SLOs (`objective`), the samplers (`sampler`, `gp`), the
//! ask/tell study with its noise floor and racing (`study`), the SQLite journal that lets a
//! study resume (`journal`), the paired proof (`proof`), per-parameter effects (`effects`)
//! and the `webtune.tune/1` report (`report`); the samplers' benchmark suite of synthetic
//! servers (`suite`, `suite_run`, and the older single `synthetic`). It never starts a process or loads a
//! server: the caller runs each trial and tells the study what it measured.

pub mod capacity;
pub mod capacity_judge;
pub mod capacity_run;
pub mod driver;
pub mod effects;
pub mod gp;
pub mod html;
pub mod journal;
pub mod lock;
pub mod objective;
pub mod paired;
pub mod proof;
pub mod report;
pub mod rules;
pub mod sampler;
pub mod space;
pub mod study;
pub mod subject;
pub mod suite;
pub mod suite_run;
pub mod synthetic;

pub use effects::{effects, Effect};
pub use gp::GpSampler;
pub use journal::{Journal, JournalError, Phase, Resumed};
pub use objective::{evaluate, Evaluation, LevelSummary, Objective, Slo, Stat};
pub use proof::{analyze, order, Arm, Proof};
pub use report::{ProofReport, TuneReport};
pub use sampler::{Observation, RandomSampler, Sampler};
pub use space::{Config, KnownKind, KnownParam, Space, SpaceError, Value};
pub use study::{Best, Next, Outcome, Settings, Study, Trial, Why};
