//! What the advisor reads and for which machine: a tree with includes it does not ship is
//! judged anyway (warnings name the includes, the findings they touch say they may be
//! incomplete, a missing MPM include says the defaults were assumed); `root` reads a copied
//! tree's absolute paths under it; `host` judges for another machine.

use std::path::{Path, PathBuf};
use webtune_advise::host_facts::HostChoice;
use webtune_advise::{advise, Inputs};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

fn small_host() -> HostChoice {
    HostChoice {
        cores: Some(2),
        ram_kib: Some(1 << 20),
        from: None,
    }
}

#[test]
fn a_tree_with_missing_includes_is_judged_and_says_what_may_be_incomplete() {
    let d = tempfile::tempdir().unwrap();
    let main = write(
        d.path(),
        "httpd.conf",
        "LoadModule php7_module modules/libphp7.so\nInclude conf/extra/httpd-mpm.conf\nKeepAlive On\nKeepAliveTimeout 15\n",
    );
    let a = advise(&Inputs {
        apache: Some(main.clone()),
        host: small_host(),
        ..Inputs::default()
    })
    .expect("advice goes on past a missing include");
    let c = &a.configs[0];
    let text: Vec<String> = c.notes.iter().map(ToString::to_string).collect();
    let at = format!("{}:2", main.display());
    assert!(
        text.iter()
            .any(|n| n.starts_with(&at) && n.contains("no such file")),
        "{text:#?}"
    );
    // No MPM loaded by what was read, none compiled in known: the MPM is not assumed.
    assert!(
        text.iter()
            .any(|n| n.starts_with(&at)
                && n.contains("MPM not known: the include here was not read")),
        "{text:#?}"
    );
    assert!(!a.findings.is_empty());
    for f in a
        .findings
        .iter()
        .filter(|f| f.component.contains("apache2"))
    {
        let i = a
            .incomplete(&f.id)
            .unwrap_or_else(|| panic!("{} not marked", f.id));
        assert_eq!(i.because, vec![at.clone()]);
    }
    let out = webtune_advise::output::text(&a);
    assert!(out.contains("incomplete:  may be"), "{out}");
    assert!(
        out.contains(&format!(
            "warning: apache2: {at}: Include conf/extra/httpd-mpm.conf"
        )),
        "{out}"
    );
    let json = serde_json::to_value(&a).unwrap();
    assert!(json["incomplete"][0]["because"][0]
        .as_str()
        .unwrap()
        .ends_with(":2"));
    assert_eq!(json["configs"][0]["notes"][0]["level"], "warning");
}

#[test]
fn a_root_keeps_the_host_out_of_a_copied_tree() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    write(root, "etc/nginx/nginx.conf", "worker_processes 3;\nevents { worker_connections 64; }\nhttp { include /etc/nginx/conf.d/*.conf; }\n");
    write(
        root,
        "etc/nginx/conf.d/app.conf",
        "server { listen 80 backlog=100; location / { proxy_pass http://127.0.0.1:9; } }\n",
    );
    // The given path is the tree's own (absolute) one, and discovery looks under the root.
    let a = advise(&Inputs {
        nginx: Some(PathBuf::from("/etc/nginx/nginx.conf")),
        root: Some(root.to_path_buf()),
        discover: true,
        host: small_host(),
        ..Inputs::default()
    })
    .unwrap();
    assert_eq!(a.configs.len(), 1, "{:#?}", a.configs);
    assert_eq!(a.configs[0].main, root.join("etc/nginx/nginx.conf"));
    assert!(a.configs[0]
        .files
        .contains(&root.join("etc/nginx/conf.d/app.conf")));
    assert!(a.configs[0].notes.is_empty(), "{:#?}", a.configs[0].notes);
    assert!(a
        .findings
        .iter()
        .any(|f| f.id == "nginx.worker_connections"));
}

#[test]
fn another_machine_is_judged_with_its_own_facts() {
    let d = tempfile::tempdir().unwrap();
    let main = write(d.path(), "nginx.conf", "events {}\n");
    let a = advise(&Inputs {
        nginx: Some(main.clone()),
        host: HostChoice {
            cores: Some(64),
            ram_kib: webtune_advise::host_facts::parse_ram("1.5T"),
            from: None,
        },
        ..Inputs::default()
    })
    .unwrap();
    assert_eq!(a.host.cores, 64);
    assert_eq!(a.host.mem_total_kib, 3 << 29);
    assert!(
        a.host.servers.is_empty(),
        "this host's servers measure nothing there"
    );
    assert!(a.host.judged_for.contains("--cores 64"));
    // --host-from: the host of a saved `advise --json` from that machine.
    let saved = d.path().join("there.json");
    std::fs::write(
        &saved,
        serde_json::to_string(&serde_json::json!({"host": a.host})).unwrap(),
    )
    .unwrap();
    let b = advise(&Inputs {
        nginx: Some(main.clone()),
        host: HostChoice {
            from: Some(saved.clone()),
            cores: Some(8),
            ram_kib: None,
        },
        ..Inputs::default()
    })
    .unwrap();
    assert_eq!((b.host.cores, b.host.mem_total_kib), (8, 3 << 29));
    // A saved run: its server's CPU count and sysctls.
    let run = d.path().join("run.json");
    std::fs::write(
        &run,
        r#"{"server": {"cpu_count": 12, "host": {"sysctls": {"net.core.somaxconn": "4096"}}}}"#,
    )
    .unwrap();
    let c = advise(&Inputs {
        nginx: Some(main),
        host: HostChoice {
            from: Some(run),
            ram_kib: Some(4 << 20),
            cores: None,
        },
        ..Inputs::default()
    })
    .unwrap();
    assert_eq!(c.host.cores, 12);
    assert_eq!(c.host.sysctl_int("net.core.somaxconn"), Some(4096));
    assert_eq!(webtune_advise::host_facts::parse_ram("12"), None);
}

#[test]
fn huge_numbers_never_wrap_and_the_trees_server_gives_the_defaults() {
    let d = tempfile::tempdir().unwrap();
    let fpm = write(
        d.path(),
        "php-fpm.conf",
        "[a]\npm.max_children = 18446744073709551615\n[b]\npm.max_children = 18446744073709551615\n",
    );
    let my = write(
        d.path(),
        "my.cnf",
        "[mysqld]\nskip-innodb\nkey_buffer = 8M\ninnodb_buffer_pool_size = 2P\n",
    );
    let a = advise(&Inputs {
        php_fpm: Some(fpm),
        mysql: Some(my),
        host: small_host(),
        ..Inputs::default()
    })
    .unwrap();
    let m = a.findings.iter().find(|f| f.id == "memory.budget").unwrap();
    assert!(!m.why.contains("It fits"), "{}", m.why);
    assert!(m.severity <= webtune_advise::Severity::Warn, "{m:?}");
    assert!(
        m.why.contains("php-fpm: 9223372036854775807 children"),
        "{}",
        m.why
    );
    // skip-innodb: no buffer pool; key_buffer is key_buffer_size.
    assert!(
        m.why
            .contains("innodb_buffer_pool_size 0 MiB + key_buffer_size 8 MiB"),
        "{}",
        m.why
    );
    // The release is this host's mariadbd's when one is installed, else unknown.
    let dialect = a.configs[1].dialect.as_deref().unwrap();
    assert!(dialect.starts_with("MariaDB"), "{dialect}");
    // MySQL 8's defaults for MySQL 8's tree (sort_buffer_size 256 KiB, thread_stack 1 MiB,
    // key_buffer_size 8 MiB, no query cache).
    let my8 = write(
        d.path(),
        "my8.cnf",
        "[mysqld]\ninnodb_dedicated_server = ON\n",
    );
    let a = advise(&Inputs {
        mysql: Some(my8),
        host: small_host(),
        ..Inputs::default()
    })
    .unwrap();
    let m = a.findings.iter().find(|f| f.id == "memory.budget").unwrap();
    assert!(
        m.why
            .contains("key_buffer_size 8 MiB + log buffer 16 MiB + query cache 0 MiB"),
        "{}",
        m.why
    );
    assert!(a.configs[0]
        .dialect
        .as_deref()
        .unwrap()
        .starts_with("MySQL 8 (innodb_dedicated_server at "));
}
