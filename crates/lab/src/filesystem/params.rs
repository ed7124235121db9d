//! The lab file system's parameters (`webtune lab params fs`): its kind and size, mount
//! options, mkfs options, the loop device's queue and direct I/O — all private to the run —
//! and the host-wide `vm.dirty_*` sysctls, which are not (`host_sysctl`). Each carries why
//! it matters and what seed 004 did; the inert rules say which do nothing for a kind.

use crate::params::{InertRule, ParamKind, ParamSpec, Value};

/// The kinds of file system the lab makes.
pub const KINDS: &[&str] = &["tmpfs", "ext4", "xfs"];

/// mkfs.xfs refuses file systems under 300 MiB (xfsprogs 5.19 and later).
pub const XFS_MIN_MB: i64 = 300;

/// The host-wide sysctls (under /proc/sys/vm), settable only with `--host-sysctl`.
pub const HOST_SYSCTLS: &[&str] = &[
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "vm.dirty_writeback_centisecs",
];

fn host_int(name: &str, (min, max): (i64, i64), meaning: &'static str) -> ParamSpec {
    ParamSpec {
        name: name.to_string(),
        kind: ParamKind::Int {
            min,
            max,
            keyword: Some("host"),
        },
        default: Value::Word("host"),
        directive: "HOST-WIDE sysctl (needs --host-sysctl)",
        meaning,
    }
}

/// Every parameter, in the order `lab params fs` lists them.
pub fn parameters() -> Vec<ParamSpec> {
    vec![
        ParamSpec::choice(
            "kind",
            KINDS,
            "ext4",
            "mount -t",
            "tmpfs (memory: seed 004's MFS reference), or ext4 / xfs on a loop-mounted image",
        ),
        ParamSpec::int(
            "size_mb",
            (64, 65_536),
            1024,
            "image size / tmpfs size=",
            "MiB; the image is sparse, made in the lab's private directory (xfs needs >= 300)",
        ),
        ParamSpec::choice(
            "atime",
            &["relatime", "noatime", "strictatime"],
            "relatime",
            "mount -o",
            "access-time updates on read; seed 004 mounted noatime (a write per read saved)",
        ),
        ParamSpec::choice(
            "ext4.data",
            &["ordered", "writeback", "journal"],
            "ordered",
            "mount -o data=",
            "ext4 data journaling; writeback is closest to seed 004's soft updates",
        ),
        ParamSpec::int(
            "ext4.commit",
            (1, 300),
            5,
            "mount -o commit=",
            "ext4 seconds between journal commits (more = fewer, larger commits)",
        ),
        ParamSpec::switch(
            "ext4.barrier",
            true,
            "mount -o barrier|nobarrier",
            "ext4 cache flushes at commits; off trades crash safety for fsync speed",
        ),
        ParamSpec::switch(
            "ext4.journal_async_commit",
            false,
            "mount -o journal_async_commit",
            "ext4 commit block written without waiting (not with data=ordered: ext4 refuses it)",
        ),
        ParamSpec::choice(
            "xfs.logbufs",
            &["2", "3", "4", "5", "6", "7", "8"],
            "8",
            "mount -o logbufs=",
            "xfs in-memory log buffers (more absorb bursts of metadata changes)",
        ),
        ParamSpec::choice(
            "xfs.logbsize",
            &["32k", "64k", "128k", "256k"],
            "32k",
            "mount -o logbsize=",
            "xfs log buffer size (larger = fewer log writes under metadata load)",
        ),
        ParamSpec::switch(
            "mkfs.journal",
            true,
            "mkfs.ext4 -O ^has_journal",
            "ext4 with or without a journal (seed 004's soft updates had none)",
        ),
        ParamSpec::choice(
            "mkfs.inode_size",
            &["default", "128", "256", "512", "1024", "2048"],
            "default",
            "mkfs -I / -i size=",
            "bytes per inode (small files' data can live in a large inode)",
        ),
        ParamSpec::choice(
            "mkfs.block_size",
            &["default", "1024", "2048", "4096"],
            "default",
            "mkfs -b",
            "file system block size (small files waste less in small blocks)",
        ),
        ParamSpec::choice(
            "queue.scheduler",
            &["none", "mq-deadline", "kyber", "bfq"],
            "none",
            "/sys/block/loopN/queue/scheduler",
            "I/O scheduler of the run's own loop device",
        ),
        ParamSpec::int(
            "queue.nr_requests",
            (4, 4096),
            128,
            "/sys/block/loopN/queue/nr_requests",
            "requests the loop device's queue holds",
        ),
        ParamSpec::int(
            "queue.read_ahead_kb",
            (0, 16_384),
            128,
            "/sys/block/loopN/queue/read_ahead_kb",
            "read-ahead of the loop device, whole 4 KiB pages (seed 004: vfs.vmiodirenable)",
        ),
        ParamSpec::switch(
            "loop.direct_io",
            false,
            "losetup --direct-io",
            "the loop device reads and writes its image with O_DIRECT (no double caching)",
        ),
        host_int(
            "vm.dirty_ratio",
            (1, 100),
            "percent of memory dirty before writers are made to write back",
        ),
        host_int(
            "vm.dirty_background_ratio",
            (1, 100),
            "percent of memory dirty before background writeback starts",
        ),
        host_int(
            "vm.dirty_expire_centisecs",
            (1, 360_000),
            "age at which dirty data is written back",
        ),
        host_int(
            "vm.dirty_writeback_centisecs",
            (0, 360_000),
            "interval of the writeback threads (0 = off)",
        ),
    ]
}

/// Parameters that do nothing for a kind (or without a journal): accepted, not applied, and
/// not credited by the tuner.
pub fn inert_rules() -> Vec<InertRule> {
    let mut rules = Vec::new();
    for p in [
        "ext4.data",
        "ext4.commit",
        "ext4.barrier",
        "ext4.journal_async_commit",
    ] {
        rules.push(InertRule::new(p, "kind", &["tmpfs", "xfs"]));
        if p != "ext4.barrier" {
            rules.push(InertRule::new(p, "mkfs.journal", &["off"]));
        }
    }
    for p in ["xfs.logbufs", "xfs.logbsize"] {
        rules.push(InertRule::new(p, "kind", &["tmpfs", "ext4"]));
    }
    rules.push(InertRule::new("mkfs.journal", "kind", &["tmpfs", "xfs"]));
    for p in [
        "mkfs.inode_size",
        "mkfs.block_size",
        "queue.scheduler",
        "queue.nr_requests",
        "queue.read_ahead_kb",
        "loop.direct_io",
    ] {
        rules.push(InertRule::new(p, "kind", &["tmpfs"]));
    }
    rules
}
