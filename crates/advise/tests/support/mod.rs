//! Helpers shared by the advisor's integration tests.

pub mod opt_out;
