//! The server side of a lab file system run (`webtune lab run fs`): its parameters, the
//! loop device's I/O, the host's dirty and writeback memory and the CPU, from the samples
//! in `FsResult.server` (`lab::filesystem`).

use std::fmt::Write as _;
use webtune_model::ServerSamples;

/// A few lines: the file system's settings, its device's I/O and flushes, the peak dirty
/// and writeback memory, and where the host's CPU went (iowait included).
pub fn device_summary(s: &ServerSamples, transactions: u64) -> String {
    let mut out = String::new();
    let set: Vec<String> = s
        .parameters_set
        .iter()
        .map(|n| format!("{n}={}", s.parameters.get(n).cloned().unwrap_or_default()))
        .collect();
    let _ = writeln!(
        out,
        "file system: {} ({}), {}",
        s.target,
        s.selector,
        if set.is_empty() {
            "defaults".to_string()
        } else {
            set.join(" ")
        }
    );
    let blocks: Vec<_> = s.samples.iter().filter_map(|x| x.block.as_ref()).collect();
    let secs: f64 = s.samples.iter().map(|x| x.length_s).sum();
    let sum = |f: &dyn Fn(&webtune_model::server::BlockSample) -> u64| -> u64 {
        blocks.iter().map(|b| f(b)).sum()
    };
    let writes = sum(&|b| b.writes);
    let reads = sum(&|b| b.reads);
    let per_tx = |n: u64| {
        if transactions > 0 {
            n as f64 / transactions as f64
        } else {
            0.0
        }
    };
    if blocks.iter().any(|b| !b.device.is_empty()) {
        let _ = writeln!(
            out,
            "  device:     {reads} reads, {writes} writes ({:.2} per transaction), {} flushes, {:.1} MiB written, busy {:.0}%",
            per_tx(writes),
            sum(&|b| b.flushes),
            sum(&|b| b.write_sectors) as f64 * 512.0 / 1048576.0,
            if secs > 0.0 {
                sum(&|b| b.busy_ms) as f64 / 10.0 / secs
            } else {
                0.0
            }
        );
    }
    let peak = |f: &dyn Fn(&webtune_model::server::BlockSample) -> u64| {
        blocks.iter().map(|b| f(b)).max().unwrap_or(0)
    };
    let _ = writeln!(
        out,
        "  page cache: peak Dirty {} KiB, peak Writeback {} KiB (host-wide); this process wrote {:.1} MiB to storage",
        peak(&|b| b.dirty_kib),
        peak(&|b| b.writeback_kib),
        sum(&|b| b.proc_write_bytes) as f64 / 1048576.0
    );
    let cpus = s.cpu_count.max(1) as f64;
    let mean = |f: &dyn Fn(&webtune_model::server::CpuShare) -> f64| -> f64 {
        let total: f64 = s
            .samples
            .iter()
            .map(|x| x.cpus.iter().map(f).sum::<f64>() / cpus * x.length_s)
            .sum();
        if secs > 0.0 {
            total / secs
        } else {
            0.0
        }
    };
    let _ = writeln!(
        out,
        "  host CPU:   user {:.0}%, system {:.0}%, iowait {:.0}%, idle {:.0}% (mean of {} CPUs)",
        mean(&|c| c.user),
        mean(&|c| c.system),
        mean(&|c| c.iowait),
        mean(&|c| c.idle),
        s.cpu_count
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::server::{BlockSample, CpuShare, ServerSample};

    #[test]
    fn sums_the_device_and_names_what_was_set() {
        let mut s = ServerSamples {
            target: "fs-ext4".into(),
            selector: "device loop3".into(),
            cpu_count: 1,
            ..Default::default()
        };
        s.parameters.insert("atime".into(), "noatime".into());
        s.parameters_set.push("atime".into());
        for _ in 0..2 {
            s.samples.push(ServerSample {
                length_s: 1.0,
                cpus: vec![CpuShare {
                    user: 50.0,
                    iowait: 10.0,
                    idle: 40.0,
                    ..Default::default()
                }],
                block: Some(BlockSample {
                    device: "loop3".into(),
                    writes: 50,
                    flushes: 5,
                    dirty_kib: 100,
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        let text = device_summary(&s, 100);
        assert!(
            text.contains("fs-ext4 (device loop3), atime=noatime"),
            "{text}"
        );
        assert!(
            text.contains("100 writes (1.00 per transaction), 10 flushes"),
            "{text}"
        );
        assert!(text.contains("iowait 10%"), "{text}");
    }
}
