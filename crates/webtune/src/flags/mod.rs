//! What the binary makes of the flag groups more than one command reads (their grammar is
//! `webtune_cli::flags`), so that no command module imports another (issue 36, item 2;
//! `tests/command_modules.rs` checks it): bench's (`bench`), smtp's (`smtp`), the fs
//! workload's (`fs`), the capacity search's (`capacity`), the decisive comparison's
//! (`compare`) and the forum's (`forum`). Each maps flags onto a library value (`RunSpec`,
//! `FsSpec`, `SearchSettings`, `interleave::Settings`) and decides nothing else.

pub mod bench;
pub mod capacity;
pub mod compare;
pub mod forum;
pub mod fs;
pub mod smtp;
