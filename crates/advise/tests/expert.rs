//! The checks an expert expects that the advisor lacked (issue 35, "Missing checks"), each
//! on small fixtures: php-fpm by cores and by its front, its opcache and its
//! request_terminate_timeout; timeouts across the layers; MariaDB's per-connection worst
//! case; MySQLTuner's runtime checks under `--live`, as bounds in the plan; durability
//! trade-offs named as trade-offs; swap in use.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use webtune_advise::live::Live;
use webtune_advise::Severity;

#[test]
fn php_fpm_by_cores_and_by_its_front() {
    // 1 child on 2 cores: at least one per core.
    let (f, plan) = plan_with(
        &host(8192),
        Run {
            fpm: Some("[www]\npm.max_children = 1\npm.max_requests = 500\n"),
            ..Run::default()
        },
    );
    assert!(get(&f, "php_fpm.children_cores").is_some());
    assert_eq!(
        plan.get("php-fpm", "pm.max_children").unwrap().value,
        Some(2)
    );
    // Behind nginx's fastcgi_pass: request_terminate_timeout follows fastcgi_read_timeout.
    let nginx = "events {}\nhttp { server { listen 80; location ~ \\.php$ { fastcgi_pass unix:/run/php/fpm.sock; fastcgi_read_timeout 30s; } } }\n";
    let (f, plan) = plan_with(
        &host(8192),
        Run {
            nginx: Some(nginx),
            fpm: Some(
                "[www]\nlisten = /run/php/fpm.sock\npm.max_children = 8\npm.max_requests = 500\n",
            ),
            ..Run::default()
        },
    );
    let r = get(&f, "php_fpm.request_terminate_timeout").unwrap();
    assert!(r.why.contains("fastcgi_read_timeout 30s"), "{}", r.why);
    assert!(r.why.contains("The trade"), "{}", r.why);
    let k = plan.get("php-fpm", "request_terminate_timeout").unwrap();
    assert_eq!(k.value, Some(30));
    assert_eq!(
        k.change.as_ref().unwrap().text,
        "request_terminate_timeout = 30s"
    );
    assert_eq!(k.change.as_ref().unwrap().section.as_deref(), Some("www"));
    // A pool another nginx does not reach: no front, no timeout to follow.
    let f = findings_with(
        &host(8192),
        Run {
            nginx: Some(nginx),
            fpm: Some(
                "[www]\nlisten = 127.0.0.1:9000\npm.max_children = 8\npm.max_requests = 500\n",
            ),
            ..Run::default()
        },
    );
    assert!(get(&f, "php_fpm.request_terminate_timeout").is_none());
}

#[test]
fn the_opcache_is_read_where_php_reads_it() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.dir.path().join("conf.d")).unwrap();
    fx.file("php.ini", "memory_limit = 64M\n");
    fx.file(
        "conf.d/10-opcache.ini",
        "zend_extension=opcache.so\nopcache.memory_consumption = 256\n",
    );
    let main = fx.file(
        "php-fpm.conf",
        "[www]\npm.max_children = 4\npm.max_requests = 500\n",
    );
    let p = webtune_conf::ini::read(&main, webtune_conf::ini::Dialect::PhpFpm).unwrap();
    let h = host(8192);
    let f = webtune_advise::rules::run(&webtune_advise::Layers {
        host: &h,
        apache: None,
        nginx: None,
        php_fpm: Some(&p),
        mysql: None,
        evidence: None,
        facts: &Default::default(),
        live: None,
    });
    let m = get(&f, "memory.budget").unwrap();
    assert!(
        m.why
            .contains("php-fpm opcache: 256 MiB shared by the children"),
        "{}",
        m.why
    );
    assert!(m.why.contains("memory_limit 64 MiB"), "{}", m.why);
    // Off in the pool: every request compiles its scripts.
    std::fs::write(
        &main,
        "[www]\npm.max_children = 4\npm.max_requests = 500\nphp_admin_flag[opcache.enable] = off\n",
    )
    .unwrap();
    let p = webtune_conf::ini::read(&main, webtune_conf::ini::Dialect::PhpFpm).unwrap();
    let f = webtune_advise::rules::run(&webtune_advise::Layers {
        host: &h,
        apache: None,
        nginx: None,
        php_fpm: Some(&p),
        mysql: None,
        evidence: None,
        facts: &Default::default(),
        live: None,
    });
    assert_eq!(get(&f, "php_fpm.opcache").unwrap().severity, Severity::Warn);
}

#[test]
fn timeouts_across_the_layers() {
    // Apache behind nginx waits longer than nginx does.
    let apache = format!("{EVENT}Listen 8080\nTimeout 300\n");
    let nginx = "events {}\nhttp { server { listen 80; location / { proxy_pass http://127.0.0.1:8080; proxy_read_timeout 60s; } } }\n";
    let (f, plan) = plan_with(
        &host(8192),
        Run {
            apache: Some(&apache),
            nginx: Some(nginx),
            ..Run::default()
        },
    );
    assert!(get(&f, "proxy.backend_timeout").is_some());
    assert_eq!(plan.get("apache2", "Timeout").unwrap().value, Some(60));
    // The backend's keep-alive against the pool: nginx's upstream keepalive_timeout is
    // planned below Apache's KeepAliveTimeout 2, inside the upstream block.
    let nginx = "events {}\nhttp {\n upstream app { server 127.0.0.1:8080; keepalive 16; }\n server { listen 80; location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }\n}\n";
    let (f, plan) = plan_with(
        &host(8192),
        Run {
            apache: Some(&format!("{EVENT}Listen 8080\nKeepAliveTimeout 2\n")),
            nginx: Some(nginx),
            ..Run::default()
        },
    );
    let k = get(&f, "proxy.backend_keepalive").unwrap();
    assert!(k.why.contains("502"), "{}", k.why);
    let p = plan.get("nginx", "keepalive_timeout").unwrap();
    assert_eq!(p.value, Some(1));
    let c = p.change.as_ref().unwrap();
    assert_eq!(
        (c.text.as_str(), c.section.as_deref()),
        ("keepalive_timeout 1s;", Some("upstream app"))
    );
    // Behind a proxy the clients are nginx's: no "KeepAliveTimeout 2" for slow clients.
    assert!(get(&f, "apache.keepalive_timeout").is_none());
    // Without a pool yet, the keep-alive it recommends says how to keep it below Apache's.
    let f = findings_with(
        &host(8192),
        Run {
            apache: Some(&format!("{EVENT}Listen 8080\nKeepAliveTimeout 2\n")),
            nginx: Some("events {}\nhttp { server { listen 80; location / { proxy_pass http://127.0.0.1:8080; } } }\n"),
            ..Run::default()
        },
    );
    let e = get(&f, "proxy.ephemeral_ports").unwrap();
    assert!(
        e.recommended
            .contains("keepalive_timeout 1s, below Apache's KeepAliveTimeout 2s"),
        "{}",
        e.recommended
    );
    // Apache facing clients without mod_reqtimeout.
    let f = findings(Run {
        apache: Some(&format!("{EVENT}Listen 80\n")),
        ..Run::default()
    });
    assert!(get(&f, "apache.reqtimeout").is_some());
    let f = findings(Run {
        apache: Some(&format!(
            "{EVENT}LoadModule reqtimeout_module m/mod_reqtimeout.so\nListen 80\n"
        )),
        ..Run::default()
    });
    assert!(get(&f, "apache.reqtimeout").is_none());
}

#[test]
fn mariadbs_per_connection_worst_case_and_durability() {
    let f = findings_with(
        &host(8192),
        Run {
            mysql: Some("[mysqld]\nmax_connections = 200\ntmp_table_size = 64M\nmax_heap_table_size = 64M\nmax_allowed_packet = 64M\ninnodb_flush_log_at_trx_commit = 2\nlog_bin = mysql-bin\nsync_binlog = 0\n"),
            ..Run::default()
        },
    );
    let m = get(&f, "memory.budget").unwrap();
    assert!(
        m.why.contains("every connection holding a max_allowed_packet of 64 MiB and a temporary table of 64 MiB at once would add 25600 MiB"),
        "{}",
        m.why
    );
    let d = get(&f, "mariadb.durability.flush_log").unwrap();
    assert!(
        d.why.contains("A trade-off") && d.why.contains("power"),
        "{}",
        d.why
    );
    assert!(d.changes.is_empty() && d.constraints.is_empty());
    let s = get(&f, "mariadb.durability.sync_binlog").unwrap();
    assert!(s.why.contains("replicas"), "{}", s.why);
    assert!(s.changes.is_empty());
    // The defaults are not trade-offs to mention.
    let f = findings(Run {
        mysql: Some("[mysqld]\n"),
        ..Run::default()
    });
    assert!(!f.iter().any(|x| x.id.starts_with("mariadb.durability")));
}

fn figures(pairs: &[(&str, &str)]) -> Live {
    let mut s = BTreeMap::new();
    for (k, v) in pairs {
        s.insert(k.to_string(), v.to_string());
    }
    let findings = webtune_advise::live::mariadb_findings(&s, Path::new("/run/mysqld/mysqld.sock"));
    let mut live = Live::default();
    live.figures.insert("mariadb".into(), s);
    live.findings = findings;
    live
}

#[test]
fn mysqltuners_runtime_checks_are_bounds_in_the_plan() {
    let live = figures(&[
        ("Uptime", "864000"),
        ("version", "10.3.39-MariaDB"),
        ("Connections", "10000"),
        ("Threads_created", "9000"),
        ("Max_used_connections", "19"),
        ("max_connections", "151"),
        ("Open_tables", "400"),
        ("Opened_tables", "90000"),
        ("table_open_cache", "400"),
        ("Open_table_definitions", "400"),
        ("table_definition_cache", "400"),
        ("Select_full_join", "50000"),
        ("Slow_queries", "900"),
        ("Questions", "10000"),
        ("Open_files", "950"),
        ("open_files_limit", "1000"),
        ("Innodb_log_waits", "12"),
        ("innodb_log_buffer_size", "16777216"),
        ("skip_name_resolve", "OFF"),
        ("anonymous_accounts", "1"),
        ("passwordless_accounts", "2"),
        ("innodb_buffer_pool_size", "134217728"),
    ]);
    let ids: Vec<&str> = live.findings.iter().map(|f| f.id.as_str()).collect();
    for id in [
        "live.mariadb.thread_cache",
        "live.mariadb.table_open_cache",
        "live.mariadb.table_definition_cache",
        "live.mariadb.joins_without_indexes",
        "live.mariadb.slow_queries",
        "live.mariadb.open_files",
        "live.mariadb.log_waits",
        "live.mariadb.skip_name_resolve",
        "live.mariadb.anonymous_accounts",
        "live.mariadb.passwordless_accounts",
        "live.mariadb.end_of_life",
        "live.mariadb.memory_reached",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    // Beside a my.cnf whose thread_cache_size 16 the web tier is happy with, the live
    // finding's ≥ 19 is in the plan: one value, no contradiction.
    let (f, plan) = plan_with(
        &host(8192),
        Run {
            fpm: Some("[www]\npm.max_children = 10\npm.max_requests = 500\n"),
            mysql: Some("[mysqld]\nthread_cache_size = 16\n"),
            live: Some(live),
            ..Run::default()
        },
    );
    assert_eq!(
        plan.get("mariadb", "thread_cache_size").unwrap().value,
        Some(19)
    );
    let t = get(&f, "live.mariadb.thread_cache").unwrap();
    assert!(
        t.recommended.contains("planned: thread_cache_size = 19"),
        "{}",
        t.recommended
    );
    assert_eq!(
        plan.get("mariadb", "table_definition_cache").unwrap().value,
        Some(800)
    );
    assert_eq!(
        plan.get("mariadb", "innodb_log_buffer_size").unwrap().value,
        Some(32)
    );
}

#[test]
fn live_web_counters_against_the_trees() {
    let mut live = Live::default();
    let mut a = BTreeMap::new();
    a.insert("BusyWorkers".to_string(), "24".to_string());
    live.figures.insert("apache2".into(), a);
    let mut n = BTreeMap::new();
    for (k, v) in [
        ("active", "900"),
        ("waiting", "700"),
        ("reading", "0"),
        ("writing", "200"),
    ] {
        n.insert(k.to_string(), v.to_string());
    }
    live.figures.insert("nginx".into(), n);
    let (f, plan) = plan_with(
        &host(8192),
        Run {
            apache: Some(&format!("{EVENT}Listen 80\nMaxRequestWorkers 25\n")),
            nginx: Some("worker_processes 1;\nevents { worker_connections 1024; }\nhttp {}\n"),
            live: Some(live),
            ..Run::default()
        },
    );
    assert!(get(&f, "live.apache.max_request_workers").is_some());
    let w = get(&f, "live.nginx.worker_connections").unwrap();
    assert!(
        w.recommended.contains("shorter keepalive_timeout"),
        "{}",
        w.recommended
    );
    assert_eq!(
        plan.get("nginx", "worker_connections").unwrap().value,
        Some(2048)
    );
}

#[test]
fn swap_in_use_is_said() {
    let mut h = host(8192);
    h.swap_total_kib = 2 << 20;
    h.swap_free_kib = 1 << 20;
    let f = findings_with(
        &h,
        Run {
            fpm: Some("[www]\npm.max_children = 4\npm.max_requests = 500\n"),
            ..Run::default()
        },
    );
    let s = get(&f, "memory.swap").unwrap();
    assert!(
        s.current.contains("1024 MiB of swap in use"),
        "{}",
        s.current
    );
    h.swap_free_kib = 2 << 20;
    let f = findings_with(
        &h,
        Run {
            fpm: Some("[www]\npm.max_children = 4\npm.max_requests = 500\n"),
            ..Run::default()
        },
    );
    assert!(get(&f, "memory.swap").is_none());
}

#[test]
fn nginx_facing_its_clients() {
    let nginx =
        |body: &str| format!("events {{}}\nhttp {{\n{body}\n server {{ listen 80; }}\n}}\n");
    let f = findings(Run {
        nginx: Some(&nginx("keepalive_timeout 0;")),
        ..Run::default()
    });
    let off = get(&f, "nginx.keepalive_off").unwrap();
    assert_eq!(off.severity, Severity::Info);
    assert!(off.why.contains("new TCP connection"), "{}", off.why);
    assert!(get(&f, "nginx.keepalive_timeout").is_none());
    let f = findings(Run {
        nginx: Some(&nginx(
            "keepalive_timeout 300s;\nclient_body_timeout 5m;\nsend_timeout 30s;",
        )),
        ..Run::default()
    });
    assert!(get(&f, "nginx.keepalive_off").is_none());
    let long = get(&f, "nginx.keepalive_timeout").unwrap();
    assert!(long.current.contains("300s"), "{}", long.current);
    let slow = get(&f, "nginx.client_timeouts").unwrap();
    assert!(
        slow.current.contains("client_body_timeout 300s"),
        "{}",
        slow.current
    );
    assert!(!slow.current.contains("send_timeout"), "{}", slow.current);
    // nginx's defaults and an upstream's keep-alive (the backend side) say nothing here.
    let f = findings(Run {
        nginx: Some(&nginx(
            "keepalive_timeout 65;\nupstream app { server 127.0.0.1:8080; keepalive 8; keepalive_timeout 120s; }",
        )),
        ..Run::default()
    });
    for id in [
        "nginx.keepalive_off",
        "nginx.keepalive_timeout",
        "nginx.client_timeouts",
        "nginx.request_buffering",
    ] {
        assert!(get(&f, id).is_none(), "{id}");
    }
    // Unbuffered uploads reach Apache's workers; without a backend behind it, nothing.
    let proxied = "events {}\nhttp { server { listen 80; location / { proxy_pass http://127.0.0.1:8080; proxy_request_buffering off; } } }\n";
    let f = findings(Run {
        apache: Some(&format!("{EVENT}Listen 8080\n")),
        nginx: Some(proxied),
        ..Run::default()
    });
    let b = get(&f, "nginx.request_buffering").unwrap();
    assert!(b.why.contains("Apache"), "{}", b.why);
    let f = findings(Run {
        nginx: Some(proxied),
        ..Run::default()
    });
    assert!(get(&f, "nginx.request_buffering").is_none());
}
