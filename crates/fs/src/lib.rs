//! webtune-fs: the small-file engine, postmark's workload as a library. A pool of files
//! with sizes uniform in a range, spread over subdirectories; transactions pairing
//! {create, delete} with {read whole file, append}; then the pool deleted (`run`). Each
//! operation's latency goes into its own HDR histogram of the shared model
//! (`webtune_model::fs::FsResult`), with the time series, stalls and generator CPU the HTTP
//! engine reports. postmark's generator is reproduced (`mt`), so one worker with postmark's
//! seed makes exactly postmark's choices; postmark's command language is read by
//! `postmark` and carried out line by line by `postmark_session` (through a `Console` the
//! caller gives: what to print, run and read). Callers that keep track of leftovers (the lab's registry) pass a
//! `PoolKeeper`. It does no formatting and writes no files besides the pool.

pub mod check;
mod error;
pub mod io;
pub mod mt;
pub mod pool;
pub mod postmark;
pub mod postmark_session;
mod run;
pub mod units;
mod worker;

pub use error::FsError;
pub use pool::{NoKeeper, Pool, PoolKeeper, POOL_PREFIX};
pub use run::run;
