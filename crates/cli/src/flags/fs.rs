//! The small-file workload's flags (`webtune fs`, and after `--` of `lab run fs` / `tune fs`).

use crate::output_flags::{OutputFlags, OutputHelp};
use anyhow::bail;
use clap::Parser;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct FsOutput;

impl OutputHelp for FsOutput {
    const JSON: &'static str =
        "Write the full result as JSON (schema webtune.fs/1) to FILE, or \"-\" for stdout";
    const HTML: &'static str =
        "Write a self-contained HTML report (percentiles per operation, time series) to FILE";
    const CSV: Option<&'static str> = Some(
        "Also write the summary as CSV (a header line and one line of figures) to FILE or \"-\"",
    );
    const QUIET: &'static str = "No summary on stdout (files are still written)";
}

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune fs --dir /mnt/test --files 1000 --transactions 50000\n  \
    webtune fs --dir /mnt/test --files 20000 -d 30s --fsync transaction -c 4 --json fs.json\n  \
    webtune compare ext4.json xfs.json\n\
    The workload is postmark's: --files files with sizes uniform in --size are created, then\n\
    each transaction reads or appends to one file (--bias-read) and creates or deletes one\n\
    (--bias-create), then every file is deleted. The pool is a fresh webtune-fs-PID-N folder\n\
    under --dir, deleted at the end, on Ctrl-C, SIGTERM and SIGHUP; after a SIGKILL,\n\
    `webtune lab clean` deletes it. With -c 1 and the same --seed it makes exactly postmark's\n\
    choices.")]
pub struct FsArgs {
    /// Directory to make the pool in (postmark's `set location`).
    #[arg(long = "dir", value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Files in the pool (postmark's `set number`).
    #[arg(long = "files", value_name = "N", default_value_t = 500)]
    pub files: u64,
    /// Transactions to run (default 500, or as many as -d allows).
    #[arg(long = "transactions", value_name = "N")]
    pub transactions: Option<u64>,
    /// Run the transactions for this long instead (e.g. 30s, 2m); with --transactions, the
    /// first limit reached ends them.
    #[arg(short = 'd', long = "duration", value_name = "DURATION")]
    pub duration: Option<String>,
    /// File sizes, uniform in MIN..MAX bytes (k and m suffixes: 4k..64k); one number for
    /// one size.
    #[arg(long = "size", value_name = "MIN..MAX", default_value = "500..10000")]
    pub size: String,
    /// Subdirectories the files are spread over (postmark uses them from 2 on).
    #[arg(long = "subdirs", value_name = "N", default_value_t = 0)]
    pub subdirs: u32,
    /// Read block size, bytes (k, m suffixes).
    #[arg(long = "read-block", value_name = "BYTES", default_value = "512")]
    pub read_block: String,
    /// Write block size, bytes (k, m suffixes).
    #[arg(long = "write-block", value_name = "BYTES", default_value = "512")]
    pub write_block: String,
    /// Chance in 10 of read over append (postmark's scale, 0..10); -1 leaves both out.
    #[arg(
        long = "bias-read",
        value_name = "0-10",
        default_value_t = 5,
        allow_negative_numbers = true
    )]
    pub bias_read: i32,
    /// Chance in 10 of create over delete (0..10); -1 leaves both out.
    #[arg(
        long = "bias-create",
        value_name = "0-10",
        default_value_t = 5,
        allow_negative_numbers = true
    )]
    pub bias_create: i32,
    /// When to force data to disk: never, after every file written, or at the end of every
    /// transaction (the files written, then the directory changed).
    #[arg(long = "fsync", value_name = "WHEN", default_value = "none", value_parser = ["none", "write", "transaction"])]
    pub fsync: String,
    /// Use fdatasync instead of fsync.
    #[arg(long = "fdatasync")]
    pub fdatasync: bool,
    /// buffered (few large system calls), unbuffered (one per block, postmark's
    /// `set buffering false`) or direct (O_DIRECT; unbuffered where the file system refuses it).
    #[arg(long = "io", value_name = "MODE", default_value = "buffered", value_parser = ["buffered", "unbuffered", "direct"])]
    pub io: String,
    /// Workers, each with its own part of the pool and of the transactions.
    #[arg(short = 'c', long = "workers", value_name = "N", default_value_t = 1)]
    pub workers: u32,
    /// Seed of postmark's random-number generator (postmark's default is 42).
    #[arg(long = "seed", value_name = "N", default_value_t = 42)]
    pub seed: u32,
    /// Run the workload once per worker count (e.g. 1,2,4,8) and print one row per count;
    /// --json then writes every level's result (schema webtune.fs-sweep/1).
    #[arg(
        long = "sweep-workers",
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "workers"
    )]
    pub sweep_workers: Vec<u32>,
    /// Length of one interval of the time series (e.g. 1s, 250ms).
    #[arg(long = "interval", value_name = "DURATION", default_value = "1s")]
    pub interval: String,
    #[command(flatten)]
    pub output: OutputFlags<FsOutput>,
}

/// The fs workload's flags after `--`, parsed by `webtune fs`'s own definition.
#[derive(Parser)]
#[command(name = "webtune lab run fs --", disable_version_flag = true)]
pub struct FsLine {
    #[command(flatten)]
    pub fs: FsArgs,
}

/// `webtune fs`'s flags after `--` (`lab run fs`, `tune fs`): the lab picks the directory.
pub fn parse_fs(words: &[String]) -> anyhow::Result<FsArgs> {
    if words
        .iter()
        .any(|w| w == "--dir" || w.starts_with("--dir="))
    {
        bail!("--dir is the lab's to choose: the workload runs on the run's own file system");
    }
    let argv = std::iter::once("webtune lab run fs --".to_string()).chain(words.iter().cloned());
    match FsLine::try_parse_from(argv) {
        Ok(line) => Ok(line.fs),
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => bail!("{}", e.kind()),
    }
}
