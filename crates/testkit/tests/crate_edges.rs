//! No crate edge that docs/architecture.md does not draw (issue 36, item 5): every
//! `webtune-*` entry of a crate's `[dependencies]` must appear in that crate's brackets in
//! the layering diagram ("Read from the bottom layer … up"), and every crate the diagram
//! names must exist. Dev-dependencies are left to the prose under the diagram (tests may
//! reach further). A new edge is drawn in the diagram, with its reason, or not made.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The diagram: each crate it names, with the crates in its brackets (none for a bare name).
fn drawn(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let start = doc
        .find("```\nbottom ")
        .expect("docs/architecture.md has the crate layering diagram");
    let body = &doc[start + 4..];
    let body = &body[..body.find("```").expect("the diagram's block ends")];
    let mut out = BTreeMap::new();
    for line in body.lines() {
        // Drop the layer labels and the notes in parentheses.
        let mut rest = line
            .trim_start_matches("bottom")
            .trim_start_matches("top")
            .trim_start_matches("dev-only")
            .to_string();
        while let (Some(a), Some(b)) = (rest.find('('), rest.find(')')) {
            if a >= b {
                break;
            }
            rest.replace_range(a..=b, "");
        }
        let rest = rest.replace(", the binary", "");
        let mut s = rest.as_str();
        while let Some(word_at) = s.find(|c: char| c.is_ascii_alphabetic()) {
            s = &s[word_at..];
            let end = s
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .unwrap_or(s.len());
            let name = s[..end].to_string();
            s = s[end..].trim_start();
            let mut deps = BTreeSet::new();
            if let Some(inner) = s.strip_prefix('[') {
                let close = inner.find(']').expect("a bracket closes");
                deps = inner[..close]
                    .split(',')
                    .map(|d| d.trim().to_string())
                    .filter(|d| !d.is_empty())
                    .collect();
                s = &inner[close + 1..];
            }
            s = s.trim_start_matches([',', ' ']);
            out.insert(name, deps);
        }
    }
    out
}

/// A crate's `webtune-*` `[dependencies]`, by directory name (`webtune-search` → `search`).
fn actual(manifest: &str, by_package: &BTreeMap<String, String>) -> BTreeSet<String> {
    let Some(deps) = manifest.split("\n[dependencies]\n").nth(1) else {
        return BTreeSet::new();
    };
    let deps = deps.split("\n[").next().unwrap_or("");
    deps.lines()
        .filter_map(|l| l.split(['.', ' ', '=']).next())
        .filter(|name| name.starts_with("webtune"))
        .map(|name| {
            by_package
                .get(name)
                .unwrap_or_else(|| panic!("no crate is the package {name}"))
                .clone()
        })
        .collect()
}

#[test]
fn every_crate_edge_is_drawn_in_the_architecture() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let drawn = drawn(&doc);
    let mut manifests = BTreeMap::new();
    let mut by_package = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let package = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .expect("a package name")
            .to_string();
        by_package.insert(package, name.clone());
        manifests.insert(name, manifest);
    }
    let mut wrong = Vec::new();
    for name in drawn.keys() {
        if !manifests.contains_key(name) {
            wrong.push(format!("the diagram names {name}, which is no crate"));
        }
    }
    for (name, manifest) in &manifests {
        let Some(allowed) = drawn.get(name) else {
            wrong.push(format!("{name} is not in the diagram"));
            continue;
        };
        for dep in actual(manifest, &by_package) {
            if !allowed.contains(&dep) {
                wrong.push(format!(
                    "{name} depends on {dep}, which the diagram does not draw"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's diagram:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_diagram_is_read_as_drawn() {
    let doc = "x\n```\nbottom   model                 conf\n         engine [model]        search [model]\ntop      webtune, the binary [model, engine]\ndev-only bench [model, search] (its examples; a note), testkit [model]\n```\n";
    let d = drawn(doc);
    let names: Vec<&str> = d.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["bench", "conf", "engine", "model", "search", "testkit", "webtune"]
    );
    assert!(d["model"].is_empty());
    assert_eq!(d["webtune"].len(), 2);
    assert!(d["bench"].contains("search") && d["testkit"].contains("model"));
}
