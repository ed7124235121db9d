//! The lab's module graph, read from its sources, has no circle, and every server is a
//! leaf: `servers/` imports only the shared vocabulary (`vocab`, `params`, `error`,
//! `logs`), so the modules that assemble servers (`stacks`, `render`, `tuning`, `tls`, the
//! forum, imports, the supervisor) sit above it. A new server is one module in `servers/`
//! behind `ServerType` and one line in `Component::server`'s list: no other source file
//! matches on a `Component` variant. See docs/architecture.md, "The lab's module graph".
//!
//! An edge is a `crate::…` path (or a `super::…` path that reaches the crate root) in a
//! module's code outside its `#[cfg(test)] mod … { }` blocks (tests may reach up), named by
//! the top-level module it lands in, through lib.rs's `pub use` lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What `servers/` and the vocabulary may import.
const SERVERS_MAY_USE: &[&str] = &["vocab", "params", "error", "logs"];
const VOCAB_MAY_USE: &[&str] = &["params", "error"];

struct Source {
    /// The file's module path: `["servers", "nginx"]`; `servers/mod.rs` is `["servers"]`.
    module: Vec<String>,
    /// Its code without line comments and test modules.
    code: String,
    file: PathBuf,
}

fn sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(&src).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod" || m == "lib") {
                module.pop();
            }
            let text = std::fs::read_to_string(&file).unwrap();
            Source {
                module,
                code: without_tests(&without_comments(&text)),
                file,
            }
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Drop every `#[cfg(test)]` module with a body: rustfmt puts its closing brace alone at
/// the attribute's indentation.
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut lines = code.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let indent = &line[..line.len() - line.trim_start().len()];
            let next = lines.next().unwrap_or_default();
            let item = next.trim_start();
            if (item.starts_with("mod ") || item.starts_with("pub mod ")) && item.ends_with('{') {
                let close = format!("{indent}}}");
                for inner in lines.by_ref() {
                    if inner == close {
                        break;
                    }
                }
            } else {
                out.push_str(next);
                out.push('\n');
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The paths that follow each `anchor` (`crate::`, `super::`) in `code`, as their first
/// segments (a group `crate::{a, b::c}` gives `a` and `b`); with how many `super::` led
/// to them.
fn paths(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let starts = (rest.starts_with(b"crate::") || rest.starts_with(b"super::"))
            && (i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == b'$'));
        if !starts {
            i += 1;
            continue;
        }
        let mut supers = 0;
        let mut j = i;
        if bytes[j..].starts_with(b"crate::") {
            j += "crate::".len();
        }
        while bytes[j..].starts_with(b"super::") {
            supers += 1;
            j += "super::".len();
        }
        if bytes.get(j) == Some(&b'{') {
            // A group: the first identifier of each item at depth one.
            let mut depth = 0;
            let mut k = j;
            let mut expect_item = true;
            while k < bytes.len() {
                match bytes[k] {
                    b'{' => {
                        depth += 1;
                        if depth == 1 {
                            expect_item = true;
                        }
                    }
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' if depth == 1 => expect_item = true,
                    b if depth == 1 && expect_item && is_ident(b) => {
                        let end = (k..bytes.len()).find(|&e| !is_ident(bytes[e])).unwrap();
                        found.push((supers, code[k..end].to_string()));
                        expect_item = false;
                        k = end;
                        continue;
                    }
                    _ => {}
                }
                k += 1;
            }
            i = k;
        } else {
            let end = (j..bytes.len())
                .find(|&e| !is_ident(bytes[e]))
                .unwrap_or(bytes.len());
            found.push((supers, code[j..end].to_string()));
            i = end.max(i + 1);
        }
    }
    found
}

/// lib.rs's `pub use module::{A, B};` lines: each name and the module it comes from.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = path.split_once("::") else {
            continue;
        };
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.split("::").last().unwrap().trim();
            if !name.is_empty() {
                map.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    map
}

/// The lab's top-level modules and what each imports (by top-level module); `lib` for an
/// item defined in lib.rs itself.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let sources = sources();
    let lib = sources.iter().find(|s| s.module.is_empty()).unwrap();
    let names = reexports(&lib.code);
    let top: BTreeSet<String> = sources
        .iter()
        .filter_map(|s| s.module.first().cloned())
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> =
        top.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for source in sources.iter().filter(|s| !s.module.is_empty()) {
        let from = &source.module[0];
        for (supers, first) in paths(&source.code) {
            // `super::` that stays inside the module's own tree is not an edge.
            if supers > 0 && supers < source.module.len() {
                continue;
            }
            let to = if top.contains(&first) {
                first
            } else if let Some(module) = names.get(&first) {
                module.clone()
            } else {
                // The crate root's own items (`crate::settings_for`).
                assert!(
                    first.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                    "{}: cannot read a path at {first:?}",
                    source.file.display()
                );
                "lib".to_string()
            };
            if to != *from {
                graph.get_mut(from).unwrap().insert(to);
            }
        }
    }
    graph
}

fn show(graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    graph
        .iter()
        .map(|(m, to)| {
            format!(
                "{m} -> {}\n",
                to.iter().cloned().collect::<Vec<_>>().join(" ")
            )
        })
        .collect()
}

/// A circle in `graph`, if it has one, as the modules along it.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_lab_module_graph_has_no_circle() {
    let graph = graph();
    assert!(graph.contains_key("servers") && graph.contains_key("vocab"));
    if let Some(c) = circle(&graph) {
        panic!("circle: {}\n{}", c.join(" -> "), show(&graph));
    }
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
