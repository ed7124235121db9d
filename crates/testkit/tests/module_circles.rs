//! No import circle inside any crate of the workspace, file by file (issue 36, item 5): a
//! circle means two modules that cannot be read, tested or moved apart. The circles that
//! remain are listed in `KNOWN` with the work that would break them; the test fails on any
//! circle that is not (a part of) one of them, so none is added, and on a known one that
//! is gone, so the list stays true.

use std::path::Path;
use webtune_testkit::module_graph::{chains, circles, files, show};

/// Circles that remain, by crate, each as its files (docs/architecture.md, "Circles"): none
/// since issue 36. A new circle is broken at its cause, not listed here.
const KNOWN: &[(&str, &[&str])] = &[];

fn crates() -> Vec<(String, std::path::PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                p.join("src"),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn no_crate_has_an_import_circle_it_did_not_have() {
    let mut report = String::new();
    let mut seen = Vec::new();
    for (name, src) in crates() {
        let graph = files(&src);
        for circle in circles(&graph) {
            let known = KNOWN
                .iter()
                .any(|(c, files)| *c == name && circle.iter().all(|f| files.contains(&f.as_str())));
            if !known {
                report.push_str(&format!("{name}: {}\n", circle.join(" ")));
            }
            seen.push((name.clone(), circle));
        }
        if std::env::var_os("WEBTUNE_SHOW_GRAPH").is_some() {
            eprintln!("== {name}\n{}", show(&graph));
        }
    }
    assert!(report.is_empty(), "import circles:\n{report}");
    for (name, files) in KNOWN {
        assert!(
            seen.iter()
                .any(|(c, circle)| c == name && circle.iter().any(|f| files.contains(&f.as_str()))),
            "{name}: the circle through {files:?} is gone: take it off KNOWN"
        );
    }
}

#[test]
fn the_reader_resolves_paths_to_files() {
    let code = "use crate::{dirs, a::b::C};\nuse super::super::y::z;\nlet q = crate::f(1);";
    assert_eq!(
        chains(code),
        vec![
            (0, vec!["dirs".to_string()]),
            (0, vec!["a".into(), "b".into(), "C".into()]),
            (2, vec!["y".into(), "z".into()]),
            (0, vec!["f".into()]),
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\npub use b::Thing;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "mod inner;\nuse crate::Thing;\n").unwrap();
    std::fs::write(src.join("a/inner.rs"), "use super::super::b::f;\n").unwrap();
    std::fs::write(src.join("b.rs"), "use crate::a::inner::g;\n").unwrap();
    let graph = files(src);
    assert_eq!(
        show(&graph),
        "a -> b\na::inner -> b\nb -> a::inner\nlib -> \n"
    );
    assert_eq!(
        circles(&graph),
        vec![vec!["a::inner".to_string(), "b".to_string()]]
    );
}
