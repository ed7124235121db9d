//! The flag groups more than one command reads: bench's (`bench`), smtp's (`smtp`), the fs
//! workload's (`fs`), the capacity search's (`capacity`), the decisive comparison's
//! (`compare`), the forum's (`forum`), `--threshold` (`threshold`) and sharding (`shard`).

pub mod bench;
pub mod capacity;
pub mod compare;
pub mod forum;
pub mod fs;
pub mod shard;
pub mod smtp;
pub mod threshold;
