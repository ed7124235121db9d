//! Helpers shared by the config readers' integration tests.

#[allow(unused_imports)] // each test binary uses its own part of the support module
pub use webtune_testkit::opt_out;
