//! Helpers shared by the binary's end-to-end tests.

pub mod lab;
pub mod opt_out;
