//! The binary's command modules are siblings (issue 36, item 2): no `*_cmd` module imports
//! another, and no shared module (flags, output, narration, …) imports a command. What two
//! commands share lives in a library crate, in `flags` (the flag structs no command owns)
//! or in a shared module of the binary; a command that reached into another's module would
//! make the two one unit that cannot be read, tested or moved apart. Read from the sources
//! with `webtune_testkit::module_graph`, by top-level module.

use std::path::Path;
use webtune_testkit::module_graph::top_level;

fn is_command(module: &str) -> bool {
    module.ends_with("_cmd")
}

#[test]
fn no_command_module_imports_another_and_no_shared_module_imports_a_command() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = top_level(&src);
    assert!(
        graph.keys().filter(|m| is_command(m)).count() >= 10,
        "the commands were found: {graph:?}"
    );
    let mut climbs = Vec::new();
    for (from, to) in &graph {
        for target in to.iter().filter(|t| is_command(t) && *t != from) {
            climbs.push(format!("{from} imports {target}"));
        }
    }
    assert!(
        climbs.is_empty(),
        "modules that take something from a command's module (move it to a library crate, \
         to flags, or to a shared module of the binary):\n  {}",
        climbs.join("\n  ")
    );
}

/// The grammar lives in `webtune-cli` (issue 36): the binary derives no clap parser, so
/// what a user may type is read in one crate, by man pages, completions and tests alike.
#[test]
fn the_binary_derives_no_grammar() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut stack = vec![src];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    let derives = line.trim_start().starts_with("#[derive(");
                    let grammar = ["Parser", "Args", "Subcommand", "ValueEnum"]
                        .iter()
                        .any(|d| line.contains(d));
                    if derives && grammar {
                        found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "clap derives in the binary (the grammar belongs in crates/cli):\n  {}",
        found.join("\n  ")
    );
}

/// `webtune-cli` depends on nothing that runs anything: its `[dependencies]` are clap's and
/// the model's, never the engine, lab, tuner, search, report, advise, fs or serve.
#[test]
fn the_grammar_crate_depends_on_nothing_that_runs() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let deps: Vec<&str> = text
        .split("[dependencies]")
        .nth(1)
        .expect("a [dependencies] table")
        .split("\n[")
        .next()
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split(['=', '.']).next())
        .map(str::trim)
        .collect();
    let allowed = ["webtune-model", "anyhow", "clap", "clap_complete"];
    let others: Vec<&&str> = deps.iter().filter(|d| !allowed.contains(d)).collect();
    assert!(deps.contains(&"clap"), "{deps:?}");
    assert!(
        others.is_empty(),
        "webtune-cli depends on {others:?}: the grammar may read clap and the model only"
    );
}
