//! The config readers (crates/conf) on the configs the lab renders: every one reads, and
//! the values the lab set are read back.

use std::path::{Path, PathBuf};
use webtune_conf::{apache, ini, nginx};
use webtune_lab::servers::Programs;
use webtune_lab::{render, Layout, Settings, StackKind};

fn rendered(stack: StackKind, sets: &[(&str, &str)], dir: &Path) -> Vec<PathBuf> {
    let pairs: Vec<(String, String)> = sets
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let settings = Settings::from_assignments(stack.name(), &stack.parameters(), &pairs).unwrap();
    let layout = Layout {
        dir: dir.to_path_buf(),
        docroot: dir.join("www"),
        ports: (0..stack.components().len() as u16)
            .map(|i| 18080 + i)
            .collect(),
        privileged: false,
        addresses: 1,
    };
    let r = render(stack, &settings, &layout, &Programs::discover()).unwrap();
    r.configs
        .iter()
        .map(|(name, text)| {
            let p = dir.join(name);
            // Some servers' configs live in a subdirectory (Postfix's `config_directory`).
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        })
        .collect()
}

#[test]
fn every_lab_rendered_config_reads() {
    for stack in StackKind::all() {
        let d = tempfile::tempdir().unwrap();
        for file in rendered(*stack, &[], d.path()) {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let ok = if name.starts_with("apache2") {
                apache::read(&file, &[]).map(|c| c.parsed.directives.len())
            } else if name.starts_with("nginx") {
                nginx::read(&file).map(|c| c.parsed.directives.len())
            } else if name.starts_with("php-fpm") {
                ini::read(&file, ini::Dialect::PhpFpm).map(|c| c.directives.len())
            } else {
                continue;
            };
            assert!(ok.unwrap() > 0, "{} of {}", name, stack.name());
        }
    }
}

#[test]
fn lab_values_are_read_back() {
    let d = tempfile::tempdir().unwrap();
    let stack = StackKind::from_name("nginx-apache-worker").unwrap();
    rendered(
        stack,
        &[
            ("backend.MaxRequestWorkers", "50"),
            ("backend.ThreadsPerChild", "25"),
            ("frontend.upstream_keepalive", "16"),
        ],
        d.path(),
    );
    let a = apache::read(&d.path().join("apache2.conf"), &[]).unwrap();
    assert_eq!(a.mpm().unwrap().0, "worker");
    assert_eq!(a.get_int("MaxRequestWorkers").unwrap().0, 50);
    let n = nginx::read(&d.path().join("nginx.conf")).unwrap();
    let ups = n.upstreams();
    assert_eq!(ups.len(), 1);
    assert!(n.parsed.all("keepalive").any(|k| k.value() == "16"));
    assert!(n
        .listens()
        .iter()
        .all(|(d, _)| d.value().starts_with("127.0.0.1:")));
}

/// The lab imports a user's tree as the readers read it: the same `Directive`s the advisor
/// sees, with no copy in between.
#[test]
fn an_imported_tree_is_the_readers_tree() {
    use webtune_lab::import::{ConfigTree, Server};
    let d = tempfile::tempdir().unwrap();
    let stack = StackKind::from_name("nginx-apache-worker").unwrap();
    rendered(stack, &[], d.path());
    let nginx_main = d.path().join("nginx.conf");
    let tree = ConfigTree::read(Server::Nginx, &nginx_main).unwrap();
    let read = nginx::read(&nginx_main).unwrap().parsed;
    assert!(!tree.directives.is_empty());
    assert_eq!(tree.directives, read.directives);
    assert_eq!(tree.files, read.files);
    assert_eq!(tree.root, d.path());
    let apache_main = d.path().join("apache2.conf");
    let tree = ConfigTree::read(Server::Apache, &apache_main).unwrap();
    let read = apache::read(&apache_main, &[]).unwrap();
    assert_eq!(tree.directives, read.parsed.directives);
    assert_eq!(tree.root, read.server_root);
    assert_eq!(tree.env, read.env);
}
