//! `webtune advise` on real, public, third-party config trees (tests/corpus/, sources and
//! licenses in tests/corpus/SOURCES), each read under its own root (`--root`) and judged
//! for one fixed machine (4 cores, 8 GiB), never with this host's files (issue 35, "How
//! we know").
//!
//! For each tree, the table `TREES` says what an expert judged by reading it: the findings
//! they expect (present), the findings they reject (absent: an id, or `id: text` for a
//! finding with that id whose text says that), the warnings (includes the tree does not
//! ship) that must be there, the dialect said. Every tree then goes through every check of
//! `CHECKS`, the rejections that hold for any tree: no two recommendations conflict, every
//! written patch passes the server's own check, nothing MPM-specific is sized for an
//! unknown MPM, no count is cut to one or two, no InnoDB setting where InnoDB is off, no
//! buffer pool sized from RAM alone, MariaDB's terms never used for MySQL. Grow it with each
//! rule: a tree that shows what the rule is about, and the finding expected or rejected.

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
    /// Advice, with these findings (ids) present, these rejected (an id, or `id: text`),
    /// these texts among the warnings, and this beginning of each config's dialect.
    Advice {
        findings: &'static [&'static str],
        rejected: &'static [&'static str],
        warnings: &'static [&'static str],
        dialect: Option<&'static str>,
    },
    /// Refused in one line containing this (the tree is not one the server would start).
    #[allow(dead_code)]
    Refused(&'static str),
}

struct Tree {
    name: &'static str,
    mains: &'static [Main],
    /// The database's release, as `--mysql-version` gives it (a copied tree's server is
    /// not asked).
    mysql_version: Option<&'static str>,
    expect: Expect,
}

/// Findings no single-server tree may give: they need another layer read.
const CROSS_LAYER: &[&str] = &["proxy.backend_per_core", "chain.", "proxy.backend_"];

const TREES: &[Tree] = &[
    Tree {
        name: "h5bp-nginx",
        mains: &[Main::Nginx("/etc/nginx/nginx.conf")],
        mysql_version: None,
        // worker_connections 8000 with worker_processes auto, no proxy: nothing to change;
        // its custom.d is the user's to fill.
        expect: Expect::Advice {
            findings: &[],
            rejected: &[
                "nginx.worker_processes",
                "nginx.worker_connections",
                "limits.nofile",
            ],
            warnings: &["include custom.d/*.conf: matches no file"],
            dialect: None,
        },
    },
    Tree {
        name: "h5bp-apache",
        mains: &[Main::Apache("/usr/local/apache2/conf/httpd.conf")],
        mysql_version: None,
        // event MPM with its defaults; mod_reqtimeout not loaded, facing clients.
        expect: Expect::Advice {
            findings: &["memory.budget", "apache.reqtimeout"],
            rejected: &[
                "apache.mpm.none",
                "apache.keepalive_timeout",
                "apache.mpm.dead_block",
            ],
            warnings: &[],
            dialect: Some("Apache 2.4 (LoadModule mpm_event_module"),
        },
    },
    Tree {
        name: "laradock-nginx",
        mains: &[Main::Nginx("/etc/nginx/nginx.conf")],
        mysql_version: None,
        expect: Expect::Advice {
            findings: &["limits.nofile"],
            rejected: &["proxy.ephemeral_ports"],
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
        mysql_version: None,
        // The data's size is not in the copy: said, and the pool not sized from RAM.
        expect: Expect::Advice {
            findings: &[
                "memory.budget",
                "mariadb.buffer_pool: the data's size unknown",
            ],
            rejected: &["mariadb.redo_log"],
            warnings: &[],
            dialect: Some("MariaDB assumed"),
        },
    },
    Tree {
        name: "laradock-mariadb",
        mains: &[Main::MyCnf("/etc/mysql/conf.d/my.cnf")],
        mysql_version: None,
        expect: Expect::Advice {
            findings: &["memory.budget", "mariadb.buffer_pool"],
            rejected: &["mariadb.redo_log"],
            warnings: &[],
            dialect: Some("MariaDB assumed"),
        },
    },
    Tree {
        name: "laradock-percona",
        mains: &[Main::MyCnf("/etc/mysql/conf.d/my.cnf")],
        mysql_version: None,
        expect: Expect::Advice {
            findings: &["memory.budget", "mariadb.buffer_pool"],
            rejected: &["mariadb.redo_log"],
            warnings: &[],
            dialect: Some("MariaDB assumed"),
        },
    },
    Tree {
        name: "laradock-php-fpm",
        mains: &[Main::PhpFpm("/usr/local/etc/php-fpm.d/xlaravel.pool.conf")],
        mysql_version: None,
        // Its keys come before any [section]: a fragment included after [www]. Read as
        // that pool's keys, with a warning (issue 35, item 11).
        expect: Expect::Advice {
            findings: &["memory.budget", "php_fpm.max_requests: the including pool"],
            rejected: &[],
            warnings: &["before any [section]: a pool fragment"],
            dialect: None,
        },
    },
    Tree {
        name: "trafex-nginx",
        mains: &[Main::Nginx("/etc/nginx/nginx.conf")],
        mysql_version: None,
        expect: Expect::Advice {
            findings: &["limits.nofile"],
            rejected: &["nginx.worker_processes"],
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
        mysql_version: None,
        // 100 children × PHP's default memory_limit 128M is more than 8 GiB: a worst case
        // worth a warning; the children's PSS (3 GiB) fits.
        expect: Expect::Advice {
            findings: &["memory.budget: 100 children × memory_limit 128 MiB"],
            rejected: &["memory.budget: CONFLICT", "php_fpm.children_cores"],
            warnings: &[],
            dialect: None,
        },
    },
    Tree {
        name: "trafex-apache",
        mains: &[Main::Apache("/etc/apache2/httpd.conf")],
        mysql_version: None,
        expect: Expect::Advice {
            findings: &["memory.budget"],
            rejected: &["apache.mpm.none", "apache.mpm.dead_block"],
            warnings: &[],
            dialect: Some("Apache 2.4"),
        },
    },
    Tree {
        name: "httpd-2.4",
        mains: &[Main::Apache("/docs/conf/httpd.conf.in")],
        mysql_version: None,
        // Upstream's template: no LoadModule mpm_* (configure compiles the MPM in unless
        // told to build it shared). Unknown, not missing; nothing MPM-specific sized.
        expect: Expect::Advice {
            findings: &["apache.mpm.unknown"],
            rejected: &[
                "apache.mpm.none",
                "apache.mpm.server_limit",
                "apache.keepalive_timeout",
                "memory.budget",
            ],
            warnings: &[],
            dialect: Some("Apache 2.4 (Require all"),
        },
    },
    Tree {
        name: "httpd-2.4-installed",
        mains: &[Main::Apache("/usr/local/apache2/conf/httpd.conf")],
        mysql_version: None,
        // The same, as `make install` writes it for a build with the MPM compiled in
        // (issue 35, item 4).
        expect: Expect::Advice {
            findings: &["apache.mpm.unknown"],
            rejected: &[
                "apache.mpm.none",
                "apache.mpm.server_limit",
                "apache.keepalive_timeout",
                "apache.reqtimeout",
                "memory.budget",
            ],
            warnings: &[],
            dialect: Some("Apache 2.4 (LoadModule authz_core_module"),
        },
    },
    Tree {
        name: "httpd-2.2",
        mains: &[Main::Apache("/docs/conf/httpd.conf.in")],
        mysql_version: None,
        // 2.2's MPMs (prefork, worker) hold a worker through KeepAliveTimeout 15.
        expect: Expect::Advice {
            findings: &["apache.keepalive_timeout"],
            rejected: &["apache.mpm.none", "apache.mpm.server_limit"],
            warnings: &[],
            dialect: Some("Apache 2.2 (Order"),
        },
    },
    Tree {
        name: "httpd-2.0",
        mains: &[Main::Apache("/docs/conf/httpd-std.conf.in")],
        mysql_version: None,
        // KeepAliveTimeout 15: seed 001's 15 → 2.
        expect: Expect::Advice {
            findings: &["apache.keepalive_timeout"],
            rejected: &["apache.mpm.none"],
            warnings: &[],
            dialect: Some("Apache 2.2 ("),
        },
    },
    Tree {
        name: "nginx-upstream",
        mains: &[Main::Nginx("/conf/nginx.conf")],
        mysql_version: None,
        expect: Expect::Advice {
            findings: &["nginx.worker_processes"],
            rejected: &["limits.nofile"],
            warnings: &[],
            dialect: None,
        },
    },
    Tree {
        name: "mariadb-docker",
        mains: &[Main::MyCnf("/etc/mysql/mariadb.conf.d/05-docker.cnf")],
        mysql_version: None,
        // It includes its own directory: mysqld skips the loop and reads on.
        expect: Expect::Advice {
            findings: &["memory.budget"],
            rejected: &["mariadb.redo_log"],
            warnings: &["(an include loop); not read again"],
            dialect: Some("MariaDB ([mariadb] at"),
        },
    },
    Tree {
        name: "docker-php-fpm",
        mains: &[Main::PhpFpm("/usr/local/etc/php-fpm.d/docker.conf")],
        mysql_version: None,
        // No pm.max_children here (the image's www.conf has it): nothing to size.
        expect: Expect::Advice {
            findings: &[],
            rejected: &["memory.budget", "php_fpm.max_requests"],
            warnings: &[],
            dialect: None,
        },
    },
    Tree {
        name: "debian-mariadb",
        mains: &[Main::MyCnf("/etc/mysql/mariadb.cnf")],
        mysql_version: Some("10.11"),
        // Debian 12's MariaDB 10.11 tree, with its [mariadb-10.11] section, read as 10.11
        // reads it (issue 35, item 6).
        expect: Expect::Advice {
            findings: &["memory.budget: MariaDB 10.11", "mariadb.buffer_pool"],
            rejected: &["mariadb.removed.", "mariadb.query_cache"],
            warnings: &[],
            dialect: Some("MariaDB 10.11 (--mysql-version 10.11)"),
        },
    },
    Tree {
        name: "pxc-8.0",
        mains: &[Main::MyCnf("/etc/mysql/node.cnf")],
        mysql_version: Some("mysql-8.0.35"),
        // Percona XtraDB Cluster 8.0: MySQL 8's terms, and innodb_flush_log_at_trx_commit
        // = 2 named as the trade-off it is (issue 35, item 6; durability).
        expect: Expect::Advice {
            findings: &[
                "mariadb.durability.flush_log: power",
                "memory.budget: MySQL 8.0.35",
            ],
            rejected: &["mariadb.redo_log: one redo file", "mariadb.removed."],
            warnings: &[],
            dialect: Some("MySQL 8.0.35"),
        },
    },
    Tree {
        name: "rhel-httpd",
        mains: &[Main::Apache("/etc/httpd/conf/httpd.conf")],
        mysql_version: None,
        // RHEL's httpd package tree: 00-mpm.conf loads event; 01-cgi.conf loads mod_cgid
        // or mod_cgi in <IfModule mpm_*> blocks: not dead MPM tuning (issue 35, item 5).
        expect: Expect::Advice {
            findings: &["memory.budget: event MPM"],
            rejected: &[
                "apache.mpm.dead_block",
                "apache.mpm.none",
                "apache.reqtimeout",
            ],
            warnings: &[],
            dialect: Some("Apache 2.4"),
        },
    },
];

/// A check run on every tree that gave advice: Err says what is wrong.
type Check = fn(&Tree, &Advice) -> Result<(), String>;

/// Every check, with its name. Add new whole-corpus assertions here.
const CHECKS: &[(&str, Check)] = &[
    ("the findings judged right are present", findings_present),
    ("the findings judged wrong are absent", findings_rejected),
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
        "no count is cut to one or two, no InnoDB setting where InnoDB is off",
        no_silent_cuts,
    ),
    (
        "nothing MPM-specific is sized for an unknown MPM",
        unknown_mpm_unsized,
    ),
    (
        "the buffer pool is never sized from RAM alone",
        pool_from_data_only,
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
            ram_kib: Some(8 << 20),
            from: None,
        },
        mysql_version: tree.mysql_version.map(str::to_string),
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

/// Does a finding match `pattern`: `id` (a trailing `.` is a prefix), or `id: text` with
/// the text in its current value, recommendation or why?
fn matches(f: &webtune_advise::Finding, pattern: &str) -> bool {
    let (id, text) = match pattern.split_once(": ") {
        Some((id, text)) => (id, Some(text)),
        None => (pattern, None),
    };
    let id_ok = if id.ends_with('.') {
        f.id.starts_with(id)
    } else {
        f.id == id
    };
    id_ok
        && text
            .is_none_or(|t| f.current.contains(t) || f.recommended.contains(t) || f.why.contains(t))
}

fn findings_present(t: &Tree, a: &Advice) -> Result<(), String> {
    let Expect::Advice { findings, .. } = t.expect else {
        return Ok(());
    };
    let ids: Vec<&str> = a.findings.iter().map(|f| f.id.as_str()).collect();
    match findings
        .iter()
        .find(|p| !a.findings.iter().any(|f| matches(f, p)))
    {
        Some(missing) => Err(format!("{missing} missing from {ids:?}")),
        None => Ok(()),
    }
}

fn findings_rejected(t: &Tree, a: &Advice) -> Result<(), String> {
    let Expect::Advice { rejected, .. } = t.expect else {
        return Ok(());
    };
    let single = t.mains.len() == 1;
    for f in &a.findings {
        if let Some(p) = rejected.iter().find(|p| matches(f, p)) {
            return Err(format!(
                "{} ({p}) given: {} → {}",
                f.id, f.current, f.recommended
            ));
        }
        if single && CROSS_LAYER.iter().any(|c| f.id.starts_with(c)) {
            return Err(format!(
                "{}: a cross-layer finding on one server's tree",
                f.id
            ));
        }
    }
    Ok(())
}

/// Every change the advice would write: (file, line, text).
fn written(a: &Advice) -> Vec<(PathBuf, Option<usize>, String)> {
    changes_per_file(a, PatchOptions::for_advice(a))
        .into_iter()
        .flat_map(|(f, list)| {
            list.into_iter()
                .map(move |(_, c)| (f.clone(), c.line, c.text))
        })
        .collect()
}

fn no_silent_cuts(_: &Tree, a: &Advice) -> Result<(), String> {
    for (file, line, text) in written(a) {
        let t = text.replace(' ', "");
        for name in [
            "pm.max_children=",
            "MaxRequestWorkers",
            "MaxClients",
            "max_connections=",
        ] {
            if let Some(v) = t.strip_prefix(name).and_then(|v| v.parse::<i64>().ok()) {
                if v <= 2 {
                    return Err(format!("{}: {text} written", file.display()));
                }
            }
        }
        if let (Some(l), Ok(src)) = (line, std::fs::read_to_string(&file)) {
            let old = src
                .lines()
                .nth(l - 1)
                .unwrap_or("")
                .trim()
                .replace('-', "_");
            if old.starts_with("skip_innodb") || old.starts_with("innodb") && old.contains("OFF") {
                return Err(format!("{}:{l}: {old} replaced by {text}", file.display()));
            }
        }
    }
    Ok(())
}

fn unknown_mpm_unsized(_: &Tree, a: &Advice) -> Result<(), String> {
    if !a.findings.iter().any(|f| f.id == "apache.mpm.unknown") {
        return Ok(());
    }
    for k in &a.plan.knobs {
        if k.server == "apache2"
            && [
                "MaxRequestWorkers",
                "MaxClients",
                "ServerLimit",
                "ThreadsPerChild",
                "StartServers",
            ]
            .iter()
            .any(|d| d.eq_ignore_ascii_case(&k.directive))
        {
            return Err(format!("{} planned with the MPM unknown", k.directive));
        }
    }
    Ok(())
}

fn pool_from_data_only(_: &Tree, a: &Advice) -> Result<(), String> {
    if a.facts.innodb_data.is_some() {
        return Ok(());
    }
    match written(a)
        .into_iter()
        .find(|(_, _, t)| t.starts_with("innodb_buffer_pool_size") && !t.contains("= 0"))
    {
        Some((f, _, t)) => Err(format!("{}: {t} with the data's size unknown", f.display())),
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
fn the_corpus_has_20_trees_each_with_its_sources() {
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
    assert!(advised >= 20, "{advised} trees advised");
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
