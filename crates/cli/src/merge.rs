//! `webtune merge`'s flags.

use crate::flags::threshold::ThresholdArgs;
use crate::output_flags::{OutputFlags, OutputHelp};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune merge s1.json s2.json s3.json --json all.json --html all.html\n  \
    webtune merge results/s*.json --threshold 'p99<=50ms'      (exit 99 when it fails)\n\
    Every input must be a shard of the same test (bench --shard I/N, same flags otherwise)\n\
    and run (the same --run-id, or the same absolute --start-at), and all N shards must be\n\
    there; their measured windows must start within 1 s (or 10% of the test's length, if\n\
    more) of each other. Otherwise merge exits 2 and names the file at fault.")]
// --threshold-abort stops a running test: merge has none, so its help does not offer it (given
// anyway, it is refused in one line).
#[command(mut_arg("threshold_abort", |a| a.hide(true)))]
pub struct MergeArgs {
    /// The shards' results, saved with --json.
    #[arg(required = true, value_name = "SHARD.json")]
    pub files: Vec<PathBuf>,
    /// Layout of the summary on stdout: text, ab, http_load, json, csv or html.
    #[arg(
        short = 'f',
        long = "format",
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub format: webtune_model::format::Format,
    #[command(flatten)]
    pub output: OutputFlags<MergeOutput>,
    #[command(flatten)]
    pub gate: ThresholdArgs,
    /// Merge shards whose starts lie further apart than the limit (1 s or 10% of the test's
    /// length) instead of refusing them; the result is then marked invalid, with the
    /// shards that ran late in its validity reasons.
    #[arg(long = "allow-skew")]
    pub allow_skew: bool,
}

/// The help of merge's output flags.
#[derive(Debug, Clone)]
pub struct MergeOutput;

impl OutputHelp for MergeOutput {
    const JSON: &'static str =
        "Write the merged result as JSON (schema webtune.run/1) to FILE, or \"-\" for stdout";
    const HTML: &'static str = "Write a self-contained HTML report of the merged result to FILE";
    const QUIET: &'static str =
        "No summary on stdout (a --format other than text is still printed)";
}
