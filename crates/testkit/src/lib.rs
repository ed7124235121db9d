//! What webtune's tests share, in one dev-only crate (never a dependency of a shipped crate,
//! only a dev-dependency): the opt-outs a test takes when this host lacks what it needs
//! (`opt_out`: a missing server fails the test unless `WEBTUNE_SKIP` names it), and results
//! built from known numbers for checking every layout (`results`).

pub mod opt_out;
pub mod results;
