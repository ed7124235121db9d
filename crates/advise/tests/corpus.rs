//! `webtune advise` on real, public, third-party config trees (tests/corpus/, sources and
//! licenses in tests/corpus/SOURCES), each read under its own root (`--root`) and judged
//! for one fixed machine (4 cores, 4 GiB), never with this host's files.
//!
//! For each tree, the table `TREES` says what was judged right by reading it: the findings
//! that must be present, the warnings (includes the tree does not ship) that must be
//! there, the dialect said. Every tree then goes through every check of `CHECKS`: add a
//! check there (one function of the tree and its advice) to assert it on the whole corpus,
//! e.g. "no two recommendations conflict" or "every written patch passes the server's
//! own check".

mod common;

use common::opt_out::opt_out;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use webtune_advise::check::{check_patches, Checked};
use webtune_advise::host_facts::HostChoice;
use webtune_advise::output::{changes_per_file, patch_text, PatchOptions};
use webtune_advise::{advise, Advice, Inputs};

/// One server's main file in a tree, at the path the server sees (under the tree's root).
#[derive(Debug, Clone, Copy)]
enum Main {
    Apache(&'static str),
    Nginx(&'static str),
    PhpFpm(&'static str),
    MyCnf(&'static str),
}

/// What a tree must give.
#[derive(Debug)]
enum Expect {
    /// Advice, with these findings (ids) present, these texts among the warnings, and
    /// this beginning of each config's dialect.
    Advice {
        findings: &'static [&'static str],
        warnings: &'static [&'static str],
        dialect: Option<&'static str>,
    },
    /// Refused in one line containing this (the tree is not one the server would start).
    Refused(&'static str),
}

struct Tree {
    name: &'static str,
    mains: &'static [Main],
    expect: Expect,
}

const TREES: &[Tree] = &[
    Tree {
        name: "h5bp-nginx",
        mains: &[Main::Nginx("/etc/nginx/nginx.conf")],
        // worker_connections 8000 with 1 worker, no proxy: nothing to change; its custom.d
        // is the user's to fill.
        expect: Expect::Advice {
            findings: &[],
            warnings: &["include custom.d/*.conf: matches no file"],
            dialect: None,
        },
    },
    Tree {
        name: "h5bp-apache",
        mains: &[Main::Apache("/usr/local/apache2/conf/httpd.conf")],
        expect: Expect::Advice {
            findings: &["memory.budget"],
            warnings: &[],
            dialect: Some("Apache 2.4 (LoadModule mpm_event_module"),
        },
    },
    Tree {
        name: "laradock-nginx",
        mains: &[Main::Nginx("/etc/nginx/nginx.conf")],
        expect: Expect::Advice {
            findings: &[],
            warnings: &[
                "include /etc/nginx/mime.types: no such file",
                "include fastcgi_params: no such file",
            ],
            dialect: None,
        },
    },
    Tree {
        name: "laradock-mysql",
        mains: &[Main::MyCnf("/etc/mysql/conf.d/my.cnf")],
        expect: Expect::Advice {
            findings: &["memory.budget"],
            warnings: &[],
            dialect: Some("MariaDB assumed"),
        },
    },
    Tree {
        name: "laradock-mariadb",
        mains: &[Main::MyCnf("/etc/mysql/conf.d/my.cnf")],
        expect: Expect::Advice {
            findings: &["memory.budget"],
            warnings: &[],
            dialect: Some("MariaDB assumed"),
        },
    },
    Tree {
        name: "laradock-percona",
        mains: &[Main::MyCnf("/etc/mysql/conf.d/my.cnf")],
        expect: Expect::Advice {
            findings: &["memory.budget"],
            warnings: &[],
            dialect: Some("MariaDB assumed"),
        },
    },
    Tree {
        name: "laradock-php-fpm",
        mains: &[Main::PhpFpm("/usr/local/etc/php-fpm.d/xlaravel.pool.conf")],
        // Its keys come before any [section]: it only works included after a file that
        // opened [www]; alone, php-fpm refuses it.
        expect: Expect::Refused("outside any [section]"),
    },
    Tree {
        name: "trafex-nginx",
        mains: &[Main::Nginx("/etc/nginx/nginx.conf")],
        expect: Expect::Advice {
            findings: &[],
            warnings: &[
                "include mime.types: no such file",
                "include fastcgi_params: no such file",
            ],
            dialect: None,
        },
    },
    Tree {
        name: "trafex-php-fpm",
        mains: &[Main::PhpFpm("/etc/php/php-fpm.d/www.conf")],
        expect: Expect::Advice {
            findings: &["memory.budget"],
            warnings: &[],
            dialect: None,
        },
    },
    Tree {
        name: "trafex-apache",
        mains: &[Main::Apache("/etc/apache2/httpd.conf")],
        expect: Expect::Advice {
            findings: &["memory.budget"],
            warnings: &[],
            dialect: Some("Apache 2.4"),
        },
    },
    Tree {
        name: "httpd-2.4",
        mains: &[Main::Apache("/docs/conf/httpd.conf.in")],
        expect: Expect::Advice {
            findings: &["memory.budget"],
            warnings: &[],
            dialect: Some("Apache 2.4 (Require all"),
        },
    },
    Tree {
        name: "httpd-2.2",
        mains: &[Main::Apache("/docs/conf/httpd.conf.in")],
        expect: Expect::Advice {
            findings: &["memory.budget"],
            warnings: &[],
            dialect: Some("Apache 2.2 (Order"),
        },
    },
    Tree {
        name: "httpd-2.0",
        mains: &[Main::Apache("/docs/conf/httpd-std.conf.in")],
        // prefork (built in) with KeepAliveTimeout 15: seed 001's 15 → 2.
        expect: Expect::Advice {
            findings: &["apache.keepalive_timeout", "memory.budget"],
            warnings: &[],
            dialect: Some("Apache 2.2 ("),
        },
    },
    Tree {
        name: "nginx-upstream",
        mains: &[Main::Nginx("/conf/nginx.conf")],
        expect: Expect::Advice {
            findings: &[],
            warnings: &[],
            dialect: None,
        },
    },
    Tree {
        name: "mariadb-docker",
        mains: &[Main::MyCnf("/etc/mysql/mariadb.conf.d/05-docker.cnf")],
        // It includes its own directory: mysqld skips the loop and reads on.
        expect: Expect::Advice {
            findings: &["memory.budget"],
            warnings: &["(an include loop); not read again"],
            dialect: Some("MariaDB ([mariadb] at"),
        },
    },
    Tree {
        name: "docker-php-fpm",
        mains: &[Main::PhpFpm("/usr/local/etc/php-fpm.d/docker.conf")],
        // No pm.max_children here (the image's www.conf has it): nothing to size.
        expect: Expect::Advice {
            findings: &[],
            warnings: &[],
            dialect: None,
        },
    },
];

/// A check run on every tree that gave advice: Err says what is wrong.
type Check = fn(&Tree, &Advice) -> Result<(), String>;

/// Every check, with its name. Add new whole-corpus assertions here.
const CHECKS: &[(&str, Check)] = &[
    ("the findings judged right are present", findings_present),
    ("the includes not shipped are warnings", warnings_present),
    ("the dialect is said", dialect_said),
    (
        "findings on a tree not read in full say so",
        incomplete_marked,
    ),
    ("nothing was read from this host", nothing_from_the_host),
    (
        "no two recommendations for one directive disagree",
        one_value_per_directive,
    ),
    (
        "every patch it would write passes the server's own check",
        written_patches_pass,
    ),
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn inputs(tree: &Tree) -> Inputs {
    let mut i = Inputs {
        root: Some(corpus().join(tree.name)),
        host: HostChoice {
            cores: Some(4),
            ram_kib: Some(4 << 20),
            from: None,
        },
        ..Inputs::default()
    };
    for m in tree.mains {
        match *m {
            Main::Apache(p) => i.apache = Some(p.into()),
            Main::Nginx(p) => i.nginx = Some(p.into()),
            Main::PhpFpm(p) => i.php_fpm = Some(p.into()),
            Main::MyCnf(p) => i.mysql = Some(p.into()),
        }
    }
    i
}

fn warnings(a: &Advice) -> Vec<String> {
    a.configs
        .iter()
        .flat_map(|c| c.warnings().map(ToString::to_string))
        .collect()
}

fn findings_present(t: &Tree, a: &Advice) -> Result<(), String> {
    let Expect::Advice { findings, .. } = t.expect else {
        return Ok(());
    };
    let ids: Vec<&str> = a.findings.iter().map(|f| f.id.as_str()).collect();
    match findings.iter().find(|f| !ids.contains(f)) {
        Some(missing) => Err(format!("{missing} missing from {ids:?}")),
        None => Ok(()),
    }
}

fn warnings_present(t: &Tree, a: &Advice) -> Result<(), String> {
    let Expect::Advice { warnings: want, .. } = t.expect else {
        return Ok(());
    };
    let got = warnings(a);
    match want.iter().find(|w| !got.iter().any(|g| g.contains(*w))) {
        Some(w) => Err(format!("no warning with {w:?} in {got:#?}")),
        None if want.is_empty() && !got.is_empty() => Err(format!("unexpected warnings {got:#?}")),
        None => Ok(()),
    }
}

fn dialect_said(t: &Tree, a: &Advice) -> Result<(), String> {
    let Expect::Advice {
        dialect: Some(want),
        ..
    } = t.expect
    else {
        return Ok(());
    };
    match a.configs.iter().find_map(|c| c.dialect.as_deref()) {
        Some(d) if d.starts_with(want) => Ok(()),
        other => Err(format!("dialect {other:?}, not {want:?}…")),
    }
}

fn incomplete_marked(_: &Tree, a: &Advice) -> Result<(), String> {
    for c in a.configs.iter().filter(|c| c.warnings().next().is_some()) {
        for f in a
            .findings
            .iter()
            .filter(|f| f.component.contains(c.server.as_str()))
        {
            if a.incomplete(&f.id).is_none() {
                return Err(format!(
                    "{} rests on {} not read in full, unmarked",
                    f.id, c.server
                ));
            }
        }
    }
    Ok(())
}

fn nothing_from_the_host(t: &Tree, a: &Advice) -> Result<(), String> {
    let root = corpus().join(t.name);
    for c in &a.configs {
        if let Some(f) = c
            .files
            .iter()
            .find(|f| !f.starts_with(&root) && *f != Path::new("/dev/null"))
        {
            return Err(format!("{} read from this host", f.display()));
        }
    }
    Ok(())
}

/// The directive a change sets: its first word (nginx's and Apache's name, my.cnf's and
/// php-fpm's key before `=`), in lower case.
fn directive_of(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c == '=')
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn one_value_per_directive(_: &Tree, a: &Advice) -> Result<(), String> {
    for (file, changes) in changes_per_file(a, PatchOptions::for_advice(a)) {
        let mut seen: BTreeMap<(Option<String>, String), &str> = BTreeMap::new();
        for (_, c) in &changes {
            let key = (c.section.clone(), directive_of(&c.text));
            match seen.insert(key, &c.text) {
                Some(before) if before.trim() != c.text.trim() => {
                    return Err(format!(
                        "{}: {before:?} and {:?} both recommended",
                        file.display(),
                        c.text
                    ))
                }
                _ => {}
            }
        }
    }
    for p in a.plan.conflicts() {
        if let Some(f) = changes_per_file(a, PatchOptions::for_advice(a))
            .values()
            .flatten()
            .find(|(_, c)| directive_of(&c.text) == p.directive.to_ascii_lowercase())
        {
            return Err(format!(
                "{} is a stated conflict, yet {:?} would be written",
                p.directive, f.1.text
            ));
        }
    }
    Ok(())
}

/// Each server's own check (`nginx -t`, `apache2 -t`, `php-fpm -t`, `mariadbd --help
/// --verbose`, on a private copy) of what `--write-patch` would write after the advisor's
/// check left out what the server refused: run again here, independently of how
/// `check_patches` decided.
fn written_patches_pass(t: &Tree, a: &Advice) -> Result<(), String> {
    let mut a = a.clone();
    let opts = PatchOptions::for_advice(&a);
    a.patch_checks = check_patches(&mut a, opts, &common::lab_checker);
    let written = changes_per_file(&a, opts);
    for read in &a.configs {
        let mine: BTreeMap<&PathBuf, _> = written
            .iter()
            .filter(|(f, _)| read.files.contains(f))
            .collect();
        if mine.is_empty() {
            continue;
        }
        if !installed(&read.server) {
            opt_out(
                &read.server,
                &format!("{}: {} is not installed", t.name, read.server),
            );
            continue;
        }
        let comment = if read.server == "php-fpm" { ";" } else { "#" };
        let apply = |file: &Path, text: &str| match mine.get(&file.to_path_buf()) {
            Some(changes) => patch_text(text, changes, comment),
            None => text.to_string(),
        };
        match common::lab_checker(&read.server, &read.main, a.facts.root.as_deref(), &apply) {
            Checked::Passed { .. } => {}
            other => {
                return Err(format!(
                    "{}'s written patch fails its check: {other:?}",
                    read.server
                ))
            }
        }
    }
    Ok(())
}

fn installed(server: &str) -> bool {
    let p = webtune_lab::servers::Programs::discover();
    match server {
        "nginx" => p.nginx.is_some(),
        "apache2" => p.apache2.is_some(),
        "php-fpm" => p.php_fpm.is_some(),
        _ => p.mariadbd.is_some(),
    }
}

#[test]
fn every_tree_is_judged_as_expected() {
    let mut failures = Vec::new();
    for t in TREES {
        let result = advise(&inputs(t));
        match (&t.expect, result) {
            (Expect::Refused(why), Err(e)) => {
                let e = e.to_string();
                if !e.contains(why) || e.lines().count() != 1 {
                    failures.push(format!("{}: refused with {e:?}, not {why:?}", t.name));
                }
            }
            (Expect::Refused(why), Ok(_)) => {
                failures.push(format!("{}: advice given, not refused ({why})", t.name))
            }
            (Expect::Advice { .. }, Err(e)) => failures.push(format!("{}: failed: {e}", t.name)),
            (Expect::Advice { .. }, Ok(a)) => {
                for (name, check) in CHECKS {
                    if let Err(why) = check(t, &a) {
                        failures.push(format!("{}: {name}: {why}", t.name));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_corpus_has_15_trees_each_with_its_sources() {
    let sources = std::fs::read_to_string(corpus().join("SOURCES")).unwrap();
    let dirs: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let advised = TREES
        .iter()
        .filter(|t| matches!(t.expect, Expect::Advice { .. }))
        .count();
    assert!(advised >= 15, "{advised} trees advised");
    for d in &dirs {
        assert!(sources.contains(d.as_str()), "{d} has no entry in SOURCES");
        assert!(TREES.iter().any(|t| t.name == d), "{d} is not in TREES");
    }
    for t in TREES {
        assert!(
            dirs.iter().any(|d| d == t.name),
            "{} has no directory",
            t.name
        );
    }
}
