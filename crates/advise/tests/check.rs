//! Every patch is checked by the server itself before it is offered (issue 24, item 2):
//! real nginx, Apache, php-fpm and MariaDB check patched private copies; a change a server
//! refuses is not written and its finding says why in the server's words, while the
//! tree's other changes are still written. A missing server fails the test unless the run
//! opts out by name (WEBTUNE_SKIP=nginx,apache2,php-fpm,mariadb).

mod common;

use common::opt_out::opt_out;
use common::Fixture;
use std::path::{Path, PathBuf};
use webtune_advise::check::check_patches;
use webtune_advise::output::{write_patch, PatchOptions};
use webtune_advise::{Advice, Change, ConfigRead, Finding, HostFacts, Plan, Severity};

fn finding(
    id: &str,
    file: &Path,
    line: Option<usize>,
    section: Option<&str>,
    text: &str,
) -> Finding {
    Finding {
        id: id.into(),
        severity: Severity::Warn,
        component: "test".into(),
        directives: Vec::new(),
        current: String::new(),
        recommended: String::new(),
        why: String::new(),
        evidence: Vec::new(),
        source: String::new(),
        changes: vec![Change {
            file: file.to_path_buf(),
            line,
            section: section.map(str::to_string),
            text: text.into(),
        }],
        constraints: Vec::new(),
        patch: None,
    }
}

fn advice(server: &str, main: &Path, findings: Vec<Finding>) -> Advice {
    Advice {
        host: HostFacts::default(),
        configs: vec![ConfigRead {
            server: server.into(),
            main: main.to_path_buf(),
            found: "given".into(),
            files: vec![main.to_path_buf()],
            notes: Vec::new(),
            dialect: None,
        }],
        notes: Vec::new(),
        evidence: None,
        findings,
        plan: Plan::default(),
        patch_checks: Vec::new(),
        live: None,
        incomplete: Vec::new(),
        apache_version: None,
        facts: Default::default(),
    }
}

/// Check, write, and return the patched copy of `main` (None when nothing was written).
fn check_and_write(a: &mut Advice, main: &Path) -> Option<String> {
    a.patch_checks = check_patches(a, PatchOptions::default(), &common::lab_checker);
    let out = tempfile::tempdir().unwrap();
    let written = write_patch(a, out.path(), PatchOptions::default()).unwrap();
    let copy = out.path().join(main.strip_prefix("/").unwrap());
    written
        .contains(&copy)
        .then(|| std::fs::read_to_string(copy).unwrap())
}

fn installed(name: &str) -> bool {
    let p = webtune_lab::servers::Programs::discover();
    match name {
        "nginx" => p.nginx.is_some(),
        "apache2" => p.apache2.is_some(),
        "php-fpm" => p.php_fpm.is_some(),
        _ => p.mariadbd.is_some(),
    }
}

fn patch_of<'a>(a: &'a Advice, id: &str) -> Option<&'a str> {
    a.findings.iter().find(|f| f.id == id)?.patch.as_deref()
}

/// One good and one bad change: the good one is written, the bad one is not and says why.
fn good_and_bad(server: &str, main: PathBuf, good: Finding, bad: Finding, refusal: &str) {
    if !installed(server) {
        return opt_out(server, &format!("{server} is not installed"));
    }
    // The good change alone passes.
    let mut a = advice(server, &main, vec![good.clone()]);
    let text = check_and_write(&mut a, &main)
        .unwrap_or_else(|| panic!("a good patch is written: {:?}", a.patch_checks));
    assert_eq!(a.patch_checks[0].outcome, "passed", "{:?}", a.patch_checks);
    assert!(text.contains(&good.changes[0].text), "{text}");
    // With a bad one: the bad one is left out, with the server's words; the good one stays.
    let mut a = advice(server, &main, vec![good.clone(), bad.clone()]);
    let text = check_and_write(&mut a, &main).expect("the good change is still written");
    assert_eq!(
        a.patch_checks[0].outcome, "rejected",
        "{:?}",
        a.patch_checks
    );
    let why = patch_of(&a, &bad.id).expect("the bad change says why");
    assert!(why.contains(refusal), "{why}");
    assert!(patch_of(&a, &good.id).is_none());
    assert!(text.contains(&good.changes[0].text), "{text}");
    assert!(!text.contains(&bad.changes[0].text), "{text}");
    // The user's file is untouched.
    assert!(!std::fs::read_to_string(&main).unwrap().contains("webtune"));
}

#[test]
fn nginx_checks_its_patched_copy() {
    let fx = Fixture::new();
    let main = fx.file(
        "nginx.conf",
        "worker_processes 1;\nevents {\n    worker_connections 768;\n}\nhttp {\n    sendfile on;\n    server {\n        listen 127.0.0.1:8080;\n        location / {\n            return 200;\n        }\n    }\n}\n",
    );
    good_and_bad(
        "nginx",
        main.clone(),
        finding("good", &main, Some(3), None, "    worker_connections 1024;"),
        finding("bad", &main, None, None, "worker_rlimit_nofile lots;"),
        "\"worker_rlimit_nofile\" directive invalid number",
    );
}

#[test]
fn apache_checks_its_patched_copy() {
    let fx = Fixture::new();
    let main = fx.file(
        "apache2.conf",
        "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so\nLoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so\nServerName localhost\nListen 127.0.0.1:8080\nThreadsPerChild 25\nMaxRequestWorkers 150\n",
    );
    good_and_bad(
        "apache2",
        main.clone(),
        finding("good", &main, Some(6), None, "MaxRequestWorkers 50"),
        // Apache 2.2's name for the same thing… fine; an unknown directive is not.
        finding("bad", &main, None, None, "MaxRequestWorker 25"),
        "Invalid command 'MaxRequestWorker'",
    );
}

#[test]
fn php_fpm_checks_its_patched_copy() {
    let fx = Fixture::new();
    let main = fx.file(
        "www.conf",
        "[www]\nuser = www-data\ngroup = www-data\nlisten = 127.0.0.1:9000\npm = static\npm.max_children = 5\n",
    );
    good_and_bad(
        "php-fpm",
        main.clone(),
        finding("good", &main, Some(6), None, "pm.max_children = 8"),
        finding("bad", &main, None, Some("www"), "pm.max_requests = many"),
        "pm.max_requests",
    );
}

#[test]
fn mariadb_checks_its_patched_copy() {
    let fx = Fixture::new();
    let main = fx.file("my.cnf", "[mysqld]\nmax_connections = 100\n");
    good_and_bad(
        "mariadb",
        main.clone(),
        finding("good", &main, Some(2), None, "max_connections = 210"),
        // Removed in MariaDB 10.0: the server refuses to start with it.
        finding(
            "bad",
            &main,
            None,
            Some("mysqld"),
            "log_slow_queries = /tmp/slow.log",
        ),
        "unknown variable 'log_slow_queries",
    );
}

/// The advisor's own patches for a my.cnf MariaDB 10.11 refuses (a removed option), with the
/// query cache on, and an nginx with one worker: each server accepts the patched copy.
#[test]
fn the_advisors_own_patches_pass_the_servers_checks() {
    for server in ["mariadb", "nginx"] {
        if !installed(server) {
            return opt_out(server, &format!("{server} is not installed"));
        }
    }
    let fx = Fixture::new();
    let cnf = fx.file(
        "my.cnf",
        "[mysqld]\nlog_slow_queries = /tmp/slow.log\ninnodb_file_format = Barracuda\nquery_cache_type = 1\nquery_cache_size = 64M\nmax_connections = 100\n",
    );
    let ngx = fx.file(
        "nginx.conf",
        "worker_processes 1;\nevents {\n    worker_connections 768;\n}\nhttp {\n    sendfile on;\n    server {\n        listen 127.0.0.1:8080;\n    }\n}\n",
    );
    let m = webtune_conf::ini::read(&cnf, webtune_conf::ini::Dialect::MyCnf).unwrap();
    let n = webtune_conf::nginx::read(&ngx).unwrap();
    let h = common::host(2048);
    let (findings, plan) = webtune_advise::rules::plan(&webtune_advise::Layers {
        host: &h,
        apache: None,
        nginx: Some(&n),
        php_fpm: None,
        mysql: Some(&m),
        evidence: None,
        facts: &webtune_advise::Facts::default(),
        live: None,
    });
    let mut a = advice("mariadb", &cnf, findings);
    a.plan = plan;
    a.configs.push(ConfigRead {
        server: "nginx".into(),
        main: ngx.clone(),
        found: "given".into(),
        files: vec![ngx.clone()],
        notes: Vec::new(),
        dialect: None,
    });
    a.patch_checks = check_patches(&mut a, PatchOptions::default(), &common::lab_checker);
    assert_eq!(a.patch_checks.len(), 2, "{:?}", a.patch_checks);
    for c in &a.patch_checks {
        assert_eq!(c.outcome, "passed", "{c:?}");
    }
    let out = tempfile::tempdir().unwrap();
    write_patch(&a, out.path(), PatchOptions::default()).unwrap();
    let text = std::fs::read_to_string(out.path().join(cnf.strip_prefix("/").unwrap())).unwrap();
    assert!(
        text.contains("\nslow_query_log_file = /tmp/slow.log\n"),
        "{text}"
    );
    assert!(text.contains("\nquery_cache_type = 0\n"), "{text}");
    let text = std::fs::read_to_string(out.path().join(ngx.strip_prefix("/").unwrap())).unwrap();
    assert!(text.contains("\nworker_processes auto;\n"), "{text}");
}

/// The bisection, with a checker that refuses any copy holding "bad" (and, to stand for a
/// tree that fails here whatever the patch, one that refuses everything).
#[test]
fn refused_changes_are_found_one_by_one_and_unverifiable_patches_are_not_written() {
    use webtune_advise::check::Checked;
    let fx = Fixture::new();
    let main = fx.file("nginx.conf", "events {\n}\n");
    let refuses_bad =
        |_: &str, main: &Path, _: Option<&Path>, patch: &dyn Fn(&Path, &str) -> String| {
            let text = patch(main, &std::fs::read_to_string(main).unwrap());
            if text.contains("bad") {
                Checked::Rejected {
                    command: "check".into(),
                    message: "bad line".into(),
                }
            } else {
                Checked::Passed {
                    command: "check".into(),
                    warnings: Vec::new(),
                }
            }
        };
    let mut a = advice(
        "nginx",
        &main,
        vec![
            finding("good1", &main, None, None, "worker_processes 2;"),
            finding("bad", &main, None, None, "bad 1;"),
            finding("good2", &main, None, None, "pcre_jit on;"),
        ],
    );
    a.patch_checks = check_patches(&mut a, PatchOptions::default(), &refuses_bad);
    assert_eq!(a.patch_checks[0].outcome, "rejected");
    assert!(patch_of(&a, "bad").unwrap().contains("bad line"));
    assert!(patch_of(&a, "good1").is_none() && patch_of(&a, "good2").is_none());
    let out = tempfile::tempdir().unwrap();
    write_patch(&a, out.path(), PatchOptions::default()).unwrap();
    let text = std::fs::read_to_string(out.path().join(main.strip_prefix("/").unwrap())).unwrap();
    assert!(
        text.contains("worker_processes 2;")
            && text.contains("pcre_jit on;")
            && !text.contains("bad 1;"),
        "{text}"
    );
    // The unpatched tree fails too: nothing can be judged, nothing is written.
    let refuses_all = |_: &str, _: &Path, _: Option<&Path>, _: &dyn Fn(&Path, &str) -> String| {
        Checked::Rejected {
            command: "check".into(),
            message: "unknown directive in an include".into(),
        }
    };
    let mut a = advice(
        "nginx",
        &main,
        vec![finding("good1", &main, None, None, "worker_processes 2;")],
    );
    a.patch_checks = check_patches(&mut a, PatchOptions::default(), &refuses_all);
    assert_eq!(a.patch_checks[0].outcome, "not checked");
    assert!(patch_of(&a, "good1")
        .unwrap()
        .contains("the unpatched copy already fails here"));
    let out = tempfile::tempdir().unwrap();
    assert!(write_patch(&a, out.path(), PatchOptions::default())
        .unwrap()
        .is_empty());
    // No server to check with: not written, and said.
    let absent = |_: &str, _: &Path, _: Option<&Path>, _: &dyn Fn(&Path, &str) -> String| {
        Checked::NotChecked("nginx is not installed".into())
    };
    let mut a = advice(
        "nginx",
        &main,
        vec![finding("good1", &main, None, None, "worker_processes 2;")],
    );
    a.patch_checks = check_patches(&mut a, PatchOptions::default(), &absent);
    assert!(patch_of(&a, "good1")
        .unwrap()
        .contains("not checked: nginx is not installed"));
}

/// What the server warns about on a copy it accepts is kept and said (issue 35, item 9:
/// httpd's own AH00318 went unreported): a warning is a value the server changed itself,
/// or a line it ignores.
#[test]
fn the_servers_warnings_on_an_accepted_copy_are_said() {
    if !installed("nginx") {
        return opt_out("nginx", "nginx is not installed");
    }
    let fx = Fixture::new();
    let main = fx.file(
        "nginx.conf",
        "worker_processes 1;\nevents {\n    worker_connections 768;\n}\nhttp {\n    sendfile on;\n    types {\n        text/html html;\n        text/plain html;\n    }\n    server {\n        listen 127.0.0.1:8080;\n    }\n}\n",
    );
    let mut a = advice(
        "nginx",
        &main,
        vec![finding(
            "good",
            &main,
            Some(3),
            None,
            "    worker_connections 1024;",
        )],
    );
    check_and_write(&mut a, &main).expect("written");
    let c = &a.patch_checks[0];
    assert_eq!(c.outcome, "passed", "{c:?}");
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("duplicate extension \"html\"")),
        "{c:?}"
    );
    // The warning names the user's file, not the copy.
    assert!(c.warnings[0].contains(&main.display().to_string()), "{c:?}");
    let text = webtune_advise::output::text(&a);
    assert!(text.contains("  the server warned: "), "{text}");
}
