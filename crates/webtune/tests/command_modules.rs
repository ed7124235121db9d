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
