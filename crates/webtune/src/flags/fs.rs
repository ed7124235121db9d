//! `webtune fs`'s flags (`webtune_cli::flags::fs::FsArgs`, postmark's workload) mapped onto an
//! `FsSpec`, also for `lab run fs` and `tune fs`.

use webtune_cli::flags::fs::FsArgs;
use webtune_model::fs::{FsSpec, FsyncMode, IoMode};

fn parse_bytes(flag: &str, text: &str) -> anyhow::Result<u64> {
    webtune_fs::units::parse_bytes(flag, text).map_err(|e| anyhow::anyhow!("{e}"))
}

fn seconds(flag: &str, text: &str) -> anyhow::Result<f64> {
    webtune_model::parse_duration(text)
        .map(|d| d.as_secs_f64())
        .map_err(|e| anyhow::anyhow!("{flag} {text:?}: {e}"))
}

/// The spec the flags describe.
pub fn spec_of(args: &FsArgs) -> anyhow::Result<FsSpec> {
    let (size_min, size_max) =
        webtune_fs::units::parse_size(&args.size).map_err(|e| anyhow::anyhow!("{e}"))?;
    let duration_s = args
        .duration
        .as_deref()
        .map(|d| seconds("-d", d))
        .transpose()?;
    Ok(FsSpec {
        location: args.dir.display().to_string(),
        files: args.files,
        transactions: match (args.transactions, duration_s) {
            (None, None) => Some(500),
            (t, _) => t,
        },
        duration_s,
        size_min,
        size_max,
        subdirs: args.subdirs,
        read_block: parse_bytes("--read-block", &args.read_block)?,
        write_block: parse_bytes("--write-block", &args.write_block)?,
        bias_read: args.bias_read,
        bias_create: args.bias_create,
        io: match args.io.as_str() {
            "unbuffered" => IoMode::Unbuffered,
            "direct" => IoMode::Direct,
            _ => IoMode::Buffered,
        },
        fsync: match args.fsync.as_str() {
            "write" => FsyncMode::Write,
            "transaction" => FsyncMode::Transaction,
            _ => FsyncMode::None,
        },
        fdatasync: args.fdatasync,
        workers: args.workers,
        seed: args.seed,
        interval_s: seconds("--interval", &args.interval)?,
    })
}
