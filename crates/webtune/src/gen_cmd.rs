//! Files generated from the same clap definitions that `--help` prints, so nothing is written
//! twice: `webtune completions SHELL` writes a shell's completion script to stdout, and the
//! hidden `webtune man DIR` writes one man page per command and subcommand (`webtune.1`,
//! `webtune-bench.1`, `webtune-lab-run.1`, …) into DIR, for packagers (`cargo deb`).

use anyhow::Context;
use clap_mangen::Man;
use std::path::Path;
use webtune_cli::gen::{CompletionsArgs, ManArgs};

/// `webtune completions SHELL`: the script on stdout.
pub fn completions(args: CompletionsArgs) -> anyhow::Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(
        args.shell,
        &mut crate::grammar::command(),
        "webtune",
        &mut script,
    );
    // Exit codes as for any printing command: 141 when the reader went away, 4 on failure.
    Ok(crate::output::print_only(&String::from_utf8_lossy(&script)))
}

/// `cmd`'s page and those of its visible subcommands, each footed with the program's name
/// and version (clap_mangen would put only the subcommand's name there).
fn write_pages(cmd: &clap::Command, dir: &Path) -> std::io::Result<()> {
    Man::new(cmd.clone())
        .source(format!("webtune {}", crate::version::SHORT))
        .manual("webtune manual")
        .generate_to(dir)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    Ok(())
}

/// `webtune man DIR`: every visible command's page, then the names written on stdout.
pub fn man(args: ManArgs) -> anyhow::Result<i32> {
    let dir = &args.dir;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut cli = crate::grammar::command().disable_help_subcommand(true);
    cli.build(); // gives each subcommand its page name, `webtune-lab-run`
    write_pages(&cli, dir)
        .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("webtune") && n.ends_with(".1"))
        .collect();
    names.sort();
    let list: String = names
        .iter()
        .map(|name| format!("{}\n", dir.join(name).display()))
        .collect();
    Ok(crate::output::print_only(&list))
}
