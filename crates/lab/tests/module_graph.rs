//! The lab's module graph, read from its sources, has no circle, and every server is a
//! leaf: `servers/` imports only the shared vocabulary (`vocab`, `params`, `error`,
//! `logs`), so the modules that assemble servers (`stacks`, `render`, `tuning`, `tls`, the
//! forum, imports, the supervisor) sit above it. A new server is one module in `servers/`
//! behind `ServerType` and one line in `Component::server`'s list: no other source file
//! matches on a `Component` variant. See docs/architecture.md, "The lab's module graph".
//!
//! The reader is `webtune_testkit::module_graph` (shared with the workspace-wide check
//! for circles). An edge is a `crate::…` path (or a `super::…` path that reaches the crate root) in a
//! module's code outside its `#[cfg(test)] mod … { }` blocks (tests may reach up), named by
//! the top-level module it lands in, through lib.rs's `pub use` lines.

use std::path::Path;
use webtune_testkit::module_graph::{self, circles, paths, show, without_tests, Graph};

/// What `servers/` and the vocabulary may import.
const SERVERS_MAY_USE: &[&str] = &["vocab", "params", "error", "logs"];
const VOCAB_MAY_USE: &[&str] = &["params", "error"];

fn graph() -> Graph {
    module_graph::top_level(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

fn sources() -> Vec<module_graph::Source> {
    module_graph::sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn the_lab_module_graph_has_no_circle() {
    let graph = graph();
    assert!(graph.contains_key("servers") && graph.contains_key("vocab"));
    let found = circles(&graph);
    assert!(found.is_empty(), "circles: {found:?}\n{}", show(&graph));
    for (module, to) in &graph {
        assert!(
            !to.contains("lib"),
            "{module} uses an item defined in lib.rs; lib.rs only declares and re-exports \
             for the modules\n{}",
            show(&graph)
        );
    }
}

#[test]
fn servers_import_only_the_vocabulary() {
    let graph = graph();
    for (module, allowed) in [("servers", SERVERS_MAY_USE), ("vocab", VOCAB_MAY_USE)] {
        let above: Vec<&String> = graph[module]
            .iter()
            .filter(|m| !allowed.contains(&m.as_str()))
            .collect();
        assert!(
            above.is_empty(),
            "{module}/ imports {above:?}; it may import only {allowed:?}\n{}",
            show(&graph)
        );
    }
}

/// The recipe's "one line in a list": `Component::server` is the only place a component
/// becomes behaviour, so no other source matches on a variant.
#[test]
fn only_the_server_list_matches_on_a_component() {
    for source in sources() {
        if source.module == ["servers"] {
            continue;
        }
        for line in source.code.lines() {
            let arm = line.trim_start().starts_with("Component::")
                && (line.contains("=>") || line.trim_end().ends_with('|'));
            assert!(
                !arm,
                "{}: matches on a Component ({}); ask its ServerType instead",
                source.file.display(),
                line.trim()
            );
        }
    }
}

#[test]
fn the_reader_finds_edges_it_is_shown() {
    let code = "use crate::{dirs, LabError};\nuse crate::params::X;\nlet a = super::super::y::z;\nwebtune_crate::q;";
    assert_eq!(
        paths(code),
        vec![
            (0, "dirs".to_string()),
            (0, "LabError".to_string()),
            (0, "params".to_string()),
            (2, "y".to_string()),
        ]
    );
    let kept = without_tests("a\n#[cfg(test)]\nmod tests {\n    use crate::x;\n}\nb\n");
    assert_eq!(kept, "a\nb\n");
}
