//! The `webtune` binary: what is parsed (the grammar is crate `webtune-cli`) mapped onto
//! library requests, run, printed, with exit codes and signals. Each subcommand lives in its
//! own module (`*_cmd.rs`); logic that a library could own lives in the library crates.

mod ab_cmd;
mod advise_cmd;
mod bench_cmd;
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
mod grammar;
mod http_load_cmd;
mod inputs;
mod lab_cmd;
mod merge_cmd;
mod narrate;
mod output;
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

use webtune_cli::{Cli, Command};

fn main() {
    // As Cli::parse(), with the libraries' vocabulary (grammar.rs) and --help examples printed
    // verbatim (webtune_cli::help).
    let cli: Cli = webtune_cli::help::parse(grammar::command());
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
