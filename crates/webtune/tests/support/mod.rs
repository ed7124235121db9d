//! Helpers shared by the binary's end-to-end tests.

pub mod child;
pub mod embedded;
pub mod lab;
#[allow(unused_imports)] // each test binary uses its own part of the support module
pub use webtune_testkit::opt_out;
pub mod slurm;
pub mod smtp_sink;
