//! Helpers shared by the lab's integration tests.

pub mod opt_out;
