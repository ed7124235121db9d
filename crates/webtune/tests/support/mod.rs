//! Helpers shared by the binary's end-to-end tests.

pub mod lab;
