//! The `webtune` binary: command-line parsing and wiring only. Each subcommand lives in its
//! own module (`*_cmd.rs`); logic that a library could own lives in the library crates.

mod ab_cmd;
mod advise_cmd;
mod bench_cmd;
mod candidates;
mod capacity_cmd;
mod capacity_search;
mod compare_cmd;
mod decisive;
mod exit;
mod flags;
mod fs_cmd;
mod fs_runs;
mod gate;
mod gen_cmd;
mod help;
mod http_load_cmd;
mod inputs;
mod lab_cmd;
mod merge_cmd;
mod narrate;
mod output;
mod output_flags;
mod postal_cmd;
mod postmark_cmd;
mod report_cmd;
mod running;
mod serve_cmd;
mod sharding;
mod signals;
mod smtp_cmd;
mod sweep_cmd;
mod sweeps;
mod tune_cmd;
mod version;

use clap::{Parser, Subcommand};

/// A fast, honest HTTP load generator and a tuning lab for web servers.
#[derive(Parser)]
#[command(
    name = "webtune",
    version = version::SHORT,
    long_version = version::long(),
    about,
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one load test against a URL (or, with no URL, the embedded target).
    Bench(flags::bench::BenchArgs),
    /// Run the embedded HTTP target (/empty.gif, /bytes/N, /chunked/N, /cpu/US, /sleep/MS,
    /// /status/CODE).
    Serve(serve_cmd::ServeArgs),
    /// ab-compatible front end: ab's flags, ab's output layout.
    Ab(ab_cmd::AbArgs),
    /// http_load-compatible front end: http_load's flags, its output layout.
    #[command(name = "http_load")]
    HttpLoad(http_load_cmd::HttpLoadArgs),
    /// Small-file benchmark (postmark's workload): create/delete paired with read/append on a
    /// pool of files, every operation's latency, fsync modes, -c workers.
    Fs(flags::fs::FsArgs),
    /// postmark-compatible front end: postmark's command language, its report layout.
    Postmark(postmark_cmd::PostmarkArgs),
    /// Render a saved result (JSON) as text, ab, http_load, json, csv or HTML.
    Report(report_cmd::ReportArgs),
    /// The same test at several load levels: throughput, latency and errors vs load.
    Sweep(sweep_cmd::SweepArgs),
    /// Before → after: saved results side by side, with how sure each difference is.
    Compare(compare_cmd::CompareArgs),
    /// The highest request rate a server sustains within SLOs: an open-loop search.
    Capacity(capacity_cmd::CapacityArgs),
    /// Merge the shards of one test (bench --shard I/N) into one result, exactly.
    Merge(merge_cmd::MergeArgs),
    /// Load an SMTP server: sessions, messages, per-phase latency (webtune.smtp/1).
    Smtp(flags::smtp::SmtpArgs),
    /// postal-compatible front end: postal's flags, its per-minute output layout.
    Postal(postal_cmd::PostalArgs),
    /// Start real web stacks (nginx, Apache, PHP) from generated configs and load them.
    Lab(lab_cmd::LabArgs),
    /// Search a stack's configurations under an SLO, prove the winner against the default.
    Tune(tune_cmd::TuneArgs),
    /// Read the host and the servers' own configs; explain every setting that matters.
    Advise(advise_cmd::AdviseArgs),
    /// Write a shell's completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(gen_cmd::CompletionsArgs),
    /// Write the man pages, one per command and subcommand, into a folder (for packagers).
    #[command(hide = true)]
    Man(gen_cmd::ManArgs),
}

fn main() {
    // As Cli::parse(), with --help examples printed verbatim (help.rs).
    let cli: Cli = help::parse();
    if let Err(e) = signals::install() {
        eprintln!("webtune: {e:#}");
        std::process::exit(exit::ERROR);
    }
    let outcome = match cli.command {
        Command::Bench(a) => bench_cmd::run(a),
        Command::Serve(a) => serve_cmd::run(a),
        Command::Ab(a) => ab_cmd::run(a),
        Command::HttpLoad(a) => http_load_cmd::run(a),
        Command::Fs(a) => fs_cmd::run(a),
        Command::Postmark(a) => postmark_cmd::run(a),
        Command::Report(a) => report_cmd::run(a),
        Command::Sweep(a) => sweep_cmd::run(a),
        Command::Compare(a) => compare_cmd::run(a),
        Command::Capacity(a) => capacity_cmd::run(a),
        Command::Merge(a) => merge_cmd::run(a),
        Command::Smtp(a) => smtp_cmd::run(a),
        Command::Postal(a) => postal_cmd::run(a),
        Command::Lab(a) => lab_cmd::run(a),
        Command::Tune(a) => tune_cmd::run(a),
        Command::Advise(a) => advise_cmd::run(a),
        Command::Completions(a) => gen_cmd::completions(a),
        Command::Man(a) => gen_cmd::man(a),
    };
    match outcome {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            output::warn(&format!("{e:#}"));
            std::process::exit(exit::ERROR);
        }
    }
}
