//! What a user may type to webtune: the command-line grammar. The `Cli`/`Command` tree, every
//! command's flags (`*Args`) and the flag groups several commands share (`flags`,
//! `output_flags`), their help texts and examples, the value parsers, the parsers of the
//! flags given after `--` (bench's, fs's, smtp's), the version line, and `help::parse` (the
//! examples printed unwrapped). Read without running anything by man pages, completions and
//! tests (astral's uv keeps its grammar in `uv-cli` the same way).
//!
//! It must not do I/O beyond clap's own help and error printing, run anything, or map flags
//! onto library requests: the binary (`crates/webtune`) does that. It depends on clap and
//! `webtune-model` (value types, parsers, named defaults) only; what only a library knows
//! (stack names, the host's CPUs, the engine's features) the binary gives it (`vocabulary`).

pub mod ab;
pub mod advise;
pub mod candidates;
pub mod capacity;
pub mod compare;
pub mod flags;
pub mod gen;
pub mod help;
pub mod http_load;
pub mod lab;
pub mod merge;
pub mod output_flags;
pub mod postal;
pub mod postmark;
pub mod report;
pub mod serve;
pub mod sweep;
pub mod tune;
pub mod version;
pub mod vocabulary;

use clap::{Parser, Subcommand};

/// A fast, honest HTTP load generator and a tuning lab for web servers.
#[derive(Parser)]
#[command(
    name = "webtune",
    version = version::SHORT,
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run one load test against a URL (or, with no URL, the embedded target).
    Bench(flags::bench::BenchArgs),
    /// Run the embedded HTTP target (/empty.gif, /bytes/N, /chunked/N, /cpu/US, /sleep/MS,
    /// /status/CODE).
    Serve(serve::ServeArgs),
    /// ab-compatible front end: ab's flags, ab's output layout.
    Ab(ab::AbArgs),
    /// http_load-compatible front end: http_load's flags, its output layout.
    #[command(name = "http_load")]
    HttpLoad(http_load::HttpLoadArgs),
    /// Small-file benchmark (postmark's workload): create/delete paired with read/append on a
    /// pool of files, every operation's latency, fsync modes, -c workers.
    Fs(flags::fs::FsArgs),
    /// postmark-compatible front end: postmark's command language, its report layout.
    Postmark(postmark::PostmarkArgs),
    /// Render a saved result (JSON) as text, ab, http_load, json, csv or HTML.
    Report(report::ReportArgs),
    /// The same test at several load levels: throughput, latency and errors vs load.
    Sweep(sweep::SweepArgs),
    /// Before → after: saved results side by side, with how sure each difference is.
    Compare(compare::CompareArgs),
    /// The highest request rate a server sustains within SLOs: an open-loop search.
    Capacity(capacity::CapacityArgs),
    /// Merge the shards of one test (bench --shard I/N) into one result, exactly.
    Merge(merge::MergeArgs),
    /// Load an SMTP server: sessions, messages, per-phase latency (webtune.smtp/1).
    Smtp(flags::smtp::SmtpArgs),
    /// postal-compatible front end: postal's flags, its per-minute output layout.
    Postal(postal::PostalArgs),
    /// Start real web stacks (nginx, Apache, PHP) from generated configs and load them.
    Lab(lab::LabArgs),
    /// Search a stack's configurations under an SLO, prove the winner against the default.
    Tune(tune::TuneArgs),
    /// Read the host and the servers' own configs; explain every setting that matters.
    Advise(advise::AdviseArgs),
    /// Write a shell's completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(gen::CompletionsArgs),
    /// Write the man pages, one per command and subcommand, into a folder (for packagers).
    #[command(hide = true)]
    Man(gen::ManArgs),
}
