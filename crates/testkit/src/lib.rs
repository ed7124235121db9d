//! What webtune's tests share, in one dev-only crate (never a dependency of a shipped crate,
//! only a dev-dependency): the opt-outs a test takes when this host lacks what it needs
//! (`opt_out`: a missing server fails the test unless `WEBTUNE_SKIP` names it), results
//! built from known numbers for checking every layout (`results`), and waiting on a
//! condition (a port, a file) instead of sleeping (`wait_until`, `wait_for_port`, with
//! `free_port`), and real servers for the HTTPS tests of more than one crate (`servers`:
//! nginx, `openssl s_server`, self-signed certificates), and the processes whose command
//! line names a path (`procs`), to check that nothing of a run is left; and a crate's module
//! graph read from its sources (`module_graph`), for the tests that keep the layering.

pub mod module_graph;
pub mod opt_out;
pub mod procs;
pub mod results;
pub mod servers;
mod wait;

pub use wait::{free_port, wait_for_port, wait_until};
