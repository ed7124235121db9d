//! A crate's module graph read from its sources, for the tests that keep the layering
//! checkable (issue 36): which module imports which, by the `crate::…` and `super::…` paths
//! in its code outside `#[cfg(test)] mod … { }` blocks (tests may reach anywhere), and the
//! circles in it. Two granularities: `top_level` (the lab's rule that servers are leaves,
//! `crates/lab/tests/module_graph.rs`) and `files` (one node per source file, for the
//! workspace-wide "no import circle inside a crate" check, `tests/module_circles.rs`).
//!
//! Written here, not taken from a crate: the check needs only `use` paths of our own
//! rustfmt-formatted sources, and a Rust parser (syn) would read far more than that.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A graph: each module and the modules it imports.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// One source file of a crate.
pub struct Source {
    /// The file's module path: `["servers", "nginx"]`; `servers/mod.rs` is `["servers"]`,
    /// lib.rs is `[]`.
    pub module: Vec<String>,
    /// Its code without line comments and test modules.
    pub code: String,
    pub file: PathBuf,
}

/// Every `.rs` file under `src` (a crate's `src/`), read.
pub fn sources(src: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|file| {
            let rel = file.strip_prefix(src).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module
                .last()
                .is_some_and(|m| m == "mod" || m == "lib" || m == "main")
            {
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
/// Drop every `#[cfg(test)]` module with a body: rustfmt puts its closing brace alone at
/// the attribute's indentation.
pub fn without_tests(code: &str) -> String {
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

/// The paths that follow each `crate::` or `super::` in `code`, as their chains of
/// identifiers (`crate::a::b::C` gives `[a, b, C]`; a group `crate::{a, b::c}` gives `[a]`
/// and `[b, c]`; a nested group stops the chain before it), each with how many `super::`
/// led to it.
pub fn chains(code: &str) -> Vec<(usize, Vec<String>)> {
    let bytes = code.as_bytes();
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
            // A group: the chain of each item at depth one.
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
                        let (chain, end) = chain_at(code, k);
                        found.push((supers, chain));
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
            let (chain, end) = chain_at(code, j);
            found.push((supers, chain));
            i = end.max(i + 1);
        }
    }
    found
}

/// The paths' first segments only (`chains`, shortened): what the top-level graph needs.
pub fn paths(code: &str) -> Vec<(usize, String)> {
    chains(code)
        .into_iter()
        .map(|(supers, chain)| (supers, chain.into_iter().next().unwrap_or_default()))
        .collect()
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The identifiers joined by `::` from `at`, and where they end.
fn chain_at(code: &str, at: usize) -> (Vec<String>, usize) {
    let bytes = code.as_bytes();
    let mut chain = Vec::new();
    let mut k = at;
    loop {
        let end = (k..bytes.len())
            .find(|&e| !is_ident(bytes[e]))
            .unwrap_or(bytes.len());
        if end == k {
            break;
        }
        chain.push(code[k..end].to_string());
        if bytes[end..].starts_with(b"::") && bytes.get(end + 2).is_some_and(|&b| is_ident(b)) {
            k = end + 2;
        } else {
            return (chain, end);
        }
    }
    (chain, k)
}

/// lib.rs's `pub use a::b::{X, Y};` lines: each name and the module path it comes from.
fn reexports(lib: &str) -> BTreeMap<String, Vec<String>> {
    let mut map = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let (module, names) = match path.find('{') {
            Some(open) => (path[..open].trim_end_matches("::"), &path[open..]),
            None => match path.rsplit_once("::") {
                Some((module, name)) => (module, name),
                None => continue,
            },
        };
        let module: Vec<String> = module.split("::").map(|s| s.trim().to_string()).collect();
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.split("::").last().unwrap().trim();
            let name = name.rsplit(" as ").next().unwrap().trim();
            if !name.is_empty() {
                map.insert(name.to_string(), module.clone());
            }
        }
    }
    map
}

/// The crate's top-level modules and what each imports (by top-level module); `lib` for an
/// item defined in lib.rs itself. A `super::` path that stays inside a module's own tree is
/// not an edge.
pub fn top_level(src: &Path) -> Graph {
    let sources = sources(src);
    let lib = sources.iter().find(|s| s.module.is_empty()).unwrap();
    let names = reexports(&lib.code);
    let top: BTreeSet<String> = sources
        .iter()
        .filter_map(|s| s.module.first().cloned())
        .collect();
    let mut graph: Graph = top.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for source in sources.iter().filter(|s| !s.module.is_empty()) {
        let from = &source.module[0];
        for (supers, first) in paths(&source.code) {
            if supers > 0 && supers < source.module.len() {
                continue;
            }
            let to = if top.contains(&first) {
                first
            } else if let Some(module) = names.get(&first) {
                module[0].clone()
            } else {
                // The crate root's own items (`crate::settings_for`).
                assert!(
                    first.chars().all(is_ident_char),
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

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// One node per source file (`a::b`, `lib` for the crate root) and the files it imports: a
/// path goes to the deepest module file it names (`crate::a::b::C` to `a::b` when
/// `a/b.rs` exists, else `a`), a name lib.rs re-exports to the module it comes from.
pub fn files(src: &Path) -> Graph {
    let sources = sources(src);
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let names = sources
        .iter()
        .find(|s| s.module.is_empty())
        .map(|lib| reexports(&lib.code))
        .unwrap_or_default();
    let name = |m: &[String]| {
        if m.is_empty() {
            "lib".to_string()
        } else {
            m.join("::")
        }
    };
    let mut graph: Graph = sources
        .iter()
        .map(|s| (name(&s.module), BTreeSet::new()))
        .collect();
    for source in &sources {
        for (supers, chain) in chains(&source.code) {
            // No `super::` means the path began at `crate::`.
            let Some(keep) = source.module.len().checked_sub(supers) else {
                continue;
            };
            let mut at: Vec<String> = if supers == 0 {
                Vec::new()
            } else {
                source.module[..keep].to_vec()
            };
            if at.is_empty() {
                if let Some(module) = chain.first().and_then(|first| names.get(first)) {
                    at = module.clone();
                }
            }
            for segment in &chain {
                let mut deeper = at.clone();
                deeper.push(segment.clone());
                if !modules.contains(&deeper) {
                    break;
                }
                at = deeper;
            }
            // A path may name a module declared inline or by `#[path]`: its nearest file.
            while !modules.contains(&at) && !at.is_empty() {
                at.pop();
            }
            if at != source.module {
                graph
                    .get_mut(&name(&source.module))
                    .unwrap()
                    .insert(name(&at));
            }
        }
    }
    graph
}

/// The graph's circles: its strongly connected components of more than one module, each
/// sorted, in order (Tarjan's algorithm).
pub fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(node: &'a str, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(node, n);
        s.low.insert(node, n);
        s.stack.push(node);
        s.on_stack.insert(node);
        for next in s.graph.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !s.index.contains_key(next) {
                visit(next, s);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(top) = s.stack.pop() {
                s.on_stack.remove(top);
                component.push(top.to_string());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(node, &mut state);
        }
    }
    state.found.sort();
    state.found
}

pub fn show(graph: &BTreeMap<String, BTreeSet<String>>) -> String {
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
