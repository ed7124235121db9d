//! The tuner's orchestration: where the study (`webtune-search`, which never starts a
//! process) meets the lab. `driver` runs a tune — each configuration measured (`measure`)
//! as a lab trial (`webtune_lab::trial`) or, for `--maximize capacity`, a capacity search
//! (`capacity_run`, also `webtune capacity`'s), `tune external`'s `--apply`/`--restore`
//! hooks, the proof's pairs through `webtune_search::paired`, the journal; `subject` says what
//! is tuned (a lab stack, the forum on one, a server behind `--apply`) and turns a
//! configuration into a trial target; `request::checks` are what a tune request must follow before
//! anything runs; `slo_verdict` is the proof's verdict where the SLOs speak; `advice` turns `webtune advise`'s findings on the stack's rendered config
//! into a seed (`tune --from-advice`); `interleaved` runs a decisive comparison
//! (`compare --live`, `lab compare`) block by block with the engine, `lab_pair` on two lab
//! stacks at once (`pair_request`: `lab compare`'s two arms as a value), `interleaved_proof` as tune's proof, `interleaved_search` as tune's
//! search (each candidate against the incumbent); `sequential_proof` judges the
//! sequential pairs. `request` is a tune as a value (`TuneRequest`, its defaults, the
//! `Job` it becomes); `resume` continues one from its journal alone.

pub mod advice;
pub mod advise_verify;
pub mod capacity_request;
pub mod capacity_run;
pub mod driver;
pub mod error;
pub mod interleaved;
pub mod interleaved_proof;
pub mod interleaved_search;
pub mod job;
pub mod lab_pair;
mod measure;
pub mod pair_request;
pub mod request;
pub mod resume;
mod sequential_proof;
pub mod slo_verdict;
pub mod subject;
