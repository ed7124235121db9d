//! What the sampler reads of a lab file system at each sample: the loop device's
//! `/sys/block/loopN/stat` (I/Os, merges, sectors, flushes, time busy and queued), the
//! host's `Dirty` and `Writeback` (`/proc/meminfo`) and this process's storage I/O
//! (`/proc/self/io`, where the workload runs). Counters become deltas since the last call.

use webtune_model::server::BlockSample;

/// Keeps the last counters of one device (none for tmpfs).
#[derive(Debug, Default)]
pub struct BlockWatch {
    device: String,
    last_stat: [u64; 17],
    last_io: (u64, u64),
}

/// The fields of a block device's `stat` file (17 on Linux 5.5 and later; missing ones 0).
pub fn parse_stat(text: &str) -> [u64; 17] {
    let mut out = [0u64; 17];
    for (i, word) in text.split_whitespace().take(17).enumerate() {
        out[i] = word.parse().unwrap_or(0);
    }
    out
}

/// `Dirty` and `Writeback` of /proc/meminfo, KiB.
pub fn parse_meminfo(text: &str) -> (u64, u64) {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("Dirty"), field("Writeback"))
}

/// `read_bytes` and `write_bytes` of a /proc/PID/io.
pub fn parse_io(text: &str) -> (u64, u64) {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("read_bytes:"), field("write_bytes:"))
}

impl BlockWatch {
    pub fn new(device: &str) -> BlockWatch {
        BlockWatch {
            device: device.to_string(),
            ..BlockWatch::default()
        }
    }

    /// One sample: deltas since the last call (the first call is the baseline).
    pub fn sample(&mut self) -> BlockSample {
        let stat = if self.device.is_empty() {
            [0; 17]
        } else {
            parse_stat(
                &std::fs::read_to_string(format!("/sys/block/{}/stat", self.device))
                    .unwrap_or_default(),
            )
        };
        let (dirty_kib, writeback_kib) =
            parse_meminfo(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default());
        let io = parse_io(&std::fs::read_to_string("/proc/self/io").unwrap_or_default());
        let d = |i: usize| stat[i].saturating_sub(self.last_stat[i]);
        let out = BlockSample {
            device: self.device.clone(),
            reads: d(0),
            read_merges: d(1),
            read_sectors: d(2),
            writes: d(4),
            write_merges: d(5),
            write_sectors: d(6),
            busy_ms: d(9),
            queue_ms: d(10),
            flushes: d(15),
            dirty_kib,
            writeback_kib,
            proc_read_bytes: io.0.saturating_sub(self.last_io.0),
            proc_write_bytes: io.1.saturating_sub(self.last_io.1),
        };
        self.last_stat = stat;
        self.last_io = io;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_files_parse() {
        let s = parse_stat("  10 2 300 4 50 6 700 8 0 90 100 0 0 0 0 3 1\n");
        assert_eq!((s[0], s[4], s[6], s[9], s[15]), (10, 50, 700, 90, 3));
        assert_eq!(
            parse_meminfo(
                "MemFree: 5 kB\nDirty:    1234 kB\nWriteback:  56 kB\nWritebackTmp: 9 kB\n"
            ),
            (1234, 56)
        );
        assert_eq!(
            parse_io("rchar: 1\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n"),
            (4096, 8192)
        );
    }
}
