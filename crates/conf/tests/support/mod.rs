//! Helpers shared by the config readers' integration tests.

#[path = "../../../../testing/opt_out.rs"]
pub mod opt_out;
