//! `webtune fs`: postmark's small-file workload with the flags a sysadmin expects, mapped
//! onto `webtune_fs::run`, and the pool registered with the lab so that `webtune lab clean`
//! removes it after a SIGKILL. Also reads saved fs results for `compare`.

use crate::output::{self, Outputs};
use crate::output_flags::{OutputFlags, OutputHelp};
use std::path::{Path, PathBuf};
use webtune_fs::PoolKeeper;
use webtune_model::fs::{FsResult, FsSpec, FsyncMode, IoMode};

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

fn parse_bytes(flag: &str, text: &str) -> anyhow::Result<u64> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, mult) = match t.strip_suffix(['k', 'm', 'g']) {
        Some(d) if t.ends_with('k') => (d, 1u64 << 10),
        Some(d) if t.ends_with('m') => (d, 1 << 20),
        Some(d) => (d, 1 << 30),
        None => (t.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|v| v.checked_mul(mult))
        .ok_or_else(|| anyhow::anyhow!("{flag} {text:?}: give bytes, e.g. 512, 4k or 1m"))
}

fn parse_size(text: &str) -> anyhow::Result<(u64, u64)> {
    match text.split_once("..") {
        Some((a, b)) => Ok((parse_bytes("--size", a)?, parse_bytes("--size", b)?)),
        None => {
            let v = parse_bytes("--size", text)?;
            Ok((v, v))
        }
    }
}

fn seconds(flag: &str, text: &str) -> anyhow::Result<f64> {
    webtune_model::parse_duration(text)
        .map(|d| d.as_secs_f64())
        .map_err(|e| anyhow::anyhow!("{flag} {text:?}: {e}"))
}

/// The spec the flags describe.
pub fn spec_of(args: &FsArgs) -> anyhow::Result<FsSpec> {
    let (size_min, size_max) = parse_size(&args.size)?;
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

/// Records each pool in the lab's registry (as a stack with no processes), so that
/// `webtune lab clean` deletes a pool whose run was killed.
#[derive(Default)]
pub struct RegistryKeeper {
    held: Option<(PathBuf, String)>,
}

impl PoolKeeper for RegistryKeeper {
    fn claim(&mut self, pool: &Path) -> Result<(), String> {
        let root = webtune_lab::registry::lab_root().map_err(|e| e.to_string())?;
        let entry = webtune_lab::registry::Entry::new("fs-pool", &|_| pool.to_path_buf());
        webtune_lab::registry::write_entry(&root, &entry).map_err(|e| e.to_string())?;
        self.held = Some((root, entry.id));
        Ok(())
    }

    fn release(&mut self, _pool: &Path) {
        if let Some((root, id)) = self.held.take() {
            webtune_lab::registry::remove_entry(&root, &id);
        }
    }
}

/// Run the workload of `spec` with the process's stop token and the registry keeper.
pub fn run_spec(spec: &FsSpec) -> anyhow::Result<FsResult> {
    let stop = crate::signals::stop_token();
    let mut keeper = RegistryKeeper::default();
    webtune_fs::run(spec, &stop, &mut keeper).map_err(|e| anyhow::anyhow!("{e}"))
}

pub fn run(args: FsArgs) -> anyhow::Result<i32> {
    let o = &args.output;
    output::check_all([
        ("--json", o.json.as_deref()),
        ("--html", o.html.as_deref()),
        ("--csv", o.csv.as_deref()),
    ])?;
    let spec = spec_of(&args)?;
    webtune_fs::check::check(&spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    if !args.sweep_workers.is_empty() {
        return sweep(&args, spec);
    }
    let result = run_spec(&spec)?;
    let mut outputs = Outputs::new();
    if !o.quiet {
        outputs.stdout(&webtune_report::fs::render_fs_text(&result));
    }
    if let Some(dest) = &o.json {
        outputs.file("--json", dest, &(result.to_json_pretty() + "\n"));
    }
    if let Some(dest) = &o.csv {
        outputs.file("--csv", dest, &webtune_report::fs::render_fs_csv(&result));
    }
    if let Some(dest) = &o.html {
        outputs.file("--html", dest, &webtune_report::fs::render_fs_html(&result));
    }
    Ok(outputs.exit_code(own_status(std::slice::from_ref(&result))))
}

/// The status of fs runs (one, or a sweep's levels) by their outcome: 130 when stopped;
/// 1 when a file system failed under the workload (out of space, read-only, I/O errors:
/// one `webtune:` line says so per run) or a run did no transaction and had failures.
pub fn own_status(levels: &[FsResult]) -> i32 {
    for r in levels {
        if let Some(failure) = r.storage_failure() {
            crate::output::warn(&failure);
        }
    }
    if crate::signals::stop_requested() || levels.iter().any(|r| r.interrupted) {
        crate::exit::INTERRUPTED
    } else if levels
        .iter()
        .any(|r| r.storage_failure().is_some() || (r.transactions == 0 && r.errors() > 0))
    {
        crate::exit::NO_SUCCESS
    } else {
        crate::exit::SUCCESS
    }
}

/// `--sweep-workers`: one run per worker count, every spec checked before the first runs.
fn sweep(args: &FsArgs, spec: FsSpec) -> anyhow::Result<i32> {
    let specs: Vec<FsSpec> = args
        .sweep_workers
        .iter()
        .map(|&workers| FsSpec {
            workers,
            ..spec.clone()
        })
        .collect();
    for s in &specs {
        webtune_fs::check::check(s).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let mut levels = Vec::new();
    for s in &specs {
        if crate::signals::stop_requested() {
            break;
        }
        levels.push(run_spec(s)?);
    }
    let o = &args.output;
    let mut outputs = Outputs::new();
    if !o.quiet {
        outputs.stdout(&webtune_report::fs::render_fs_sweep_text(&levels));
    }
    sweep_files(&mut outputs, o, &levels)?;
    Ok(outputs.exit_code(own_status(&levels)))
}

/// `compare` on saved results: None when they are not fs results (HTTP runs go on as
/// before); fs results are compared here. Mixing the two is refused.
pub fn compare(
    files: &[PathBuf],
    labels: Vec<String>,
    html: Option<&str>,
    thresholds: &[String],
) -> anyhow::Result<Option<i32>> {
    let texts = files
        .iter()
        .map(|f| crate::inputs::read_saved_text(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let is_fs: Vec<bool> = texts
        .iter()
        .map(|t| webtune_model::fs::schema_of(t).as_deref() == Some(webtune_model::fs::FS_SCHEMA))
        .collect();
    if !is_fs.contains(&true) {
        return Ok(None);
    }
    if let Some(i) = is_fs.iter().position(|f| !f) {
        anyhow::bail!(
            "{} is not an fs result (webtune.fs/1): compare fs results with fs results",
            files[i].display()
        );
    }
    if !thresholds.is_empty() {
        anyhow::bail!("--threshold judges HTTP results; it does not apply to fs results yet");
    }
    let results = texts
        .iter()
        .zip(files)
        .map(|(t, f)| FsResult::from_json(t).map_err(|e| anyhow::anyhow!("{}: {e}", f.display())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let inputs: Vec<(String, &FsResult)> = labels.into_iter().zip(results.iter()).collect();
    let mut outputs = Outputs::new();
    if let Some(dest) = html {
        outputs.file(
            "--html",
            dest,
            &webtune_report::fs::render_fs_compare_html(&inputs),
        );
    }
    outputs.stdout(&webtune_report::fs::render_fs_compare_text(&inputs));
    Ok(Some(outputs.exit_code(crate::exit::SUCCESS)))
}

/// A sweep's files (`--json` as `webtune.fs-sweep`, `--csv`, `--html`), for `fs
/// --sweep-workers` and `lab sweep fs`.
pub fn sweep_files(
    outputs: &mut Outputs,
    o: &OutputFlags<FsOutput>,
    levels: &[webtune_model::fs::FsResult],
) -> anyhow::Result<()> {
    if let Some(dest) = &o.json {
        let sweep = webtune_model::fs::FsSweep {
            schema: webtune_model::fs::FS_SWEEP_SCHEMA.into(),
            levels: levels.to_vec(),
        };
        let text = serde_json::to_string_pretty(&sweep)? + "\n";
        outputs.file("--json", dest, &text);
    }
    if let Some(dest) = &o.csv {
        outputs.file(
            "--csv",
            dest,
            &webtune_report::fs::render_fs_sweep_csv(levels),
        );
    }
    if let Some(dest) = &o.html {
        outputs.file(
            "--html",
            dest,
            &webtune_report::fs::render_fs_sweep_html(levels),
        );
    }
    Ok(())
}
