//! Helpers shared by the binary's end-to-end tests.

pub mod embedded;
pub mod lab;
#[path = "../../../../testing/opt_out.rs"]
pub mod opt_out;
pub mod smtp_sink;
