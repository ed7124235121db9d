//! Helpers shared by the config readers' integration tests.

pub mod opt_out;
