//! Helpers shared by the lab's integration tests.

#[path = "../../../../testing/opt_out.rs"]
pub mod opt_out;
