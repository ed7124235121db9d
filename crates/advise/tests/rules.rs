//! Each rule on small fixtures: it fires when it should and stays silent when it should
//! not. The host is a fixture too (2 cores, RAM as given, somaxconn 128).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use webtune_advise::host_facts::RunningServer;
use webtune_advise::{Layers, Severity};
use webtune_conf::apache;
use webtune_model::server::LogMessage;

#[test]
fn memory_budget() {
    let conf = format!("{PREFORK_PHP}MaxRequestWorkers 150\nMaxConnectionsPerChild 1000\n");
    let f = findings(Run {
        apache: Some(&conf),
        ..Run::default()
    });
    let m = get(&f, "memory.budget").unwrap();
    // Assumed PSS caps the severity at warn: 150 × 30 MiB = 4500 MiB > 2048 MiB.
    assert_eq!(m.severity, Severity::Warn);
    assert!(m.why.contains("150 processes × 30 MiB"), "{}", m.why);
    assert!(
        m.recommended.starts_with("cut where the memory is")
            && m.recommended.contains("MaxRequestWorkers 150 → 61")
            && m.recommended.ends_with("planned: MaxRequestWorkers 61"),
        "{}",
        m.recommended
    );
    assert_eq!(m.changes[0].line, Some(3));
    assert_eq!(m.changes[0].text, "MaxRequestWorkers 61");
    // Measured PSS of a running Apache makes it critical.
    let mut h = host(2048);
    let f = Fixture::new();
    let main = f.file("apache2.conf", &conf);
    h.servers.push(RunningServer {
        kind: "apache2".into(),
        config: Some(main.clone()),
        master_pid: 1,
        workers: 10,
        workers_pss_kib: 10 * 40 * 1024,
        ..RunningServer::default()
    });
    let a = apache::read(&main, &[]).unwrap();
    let f = webtune_advise::rules::run(&Layers {
        host: &h,
        apache: Some(&a),
        nginx: None,
        php_fpm: None,
        mysql: None,
        evidence: None,
        facts: &webtune_advise::Facts::default(),
        live: None,
    });
    let m = get(&f, "memory.budget").unwrap();
    assert_eq!(m.severity, Severity::Critical);
    assert!(m.why.contains("measured"), "{}", m.why);
    // A running Apache of another config measures nothing about this one.
    h.servers[0].config = Some(PathBuf::from("/elsewhere/apache2.conf"));
    let f = webtune_advise::rules::run(&Layers {
        host: &h,
        apache: Some(&a),
        nginx: None,
        php_fpm: None,
        mysql: None,
        evidence: None,
        facts: &webtune_advise::Facts::default(),
        live: None,
    });
    let m = get(&f, "memory.budget").unwrap();
    assert!(m.why.contains("assumed"), "{}", m.why);
    // Enough RAM: only the calculation, as info.
    let f = findings_with(
        &host(65536),
        Run {
            apache: Some(&conf),
            ..Run::default()
        },
    );
    assert_eq!(get(&f, "memory.budget").unwrap().severity, Severity::Info);
}

#[test]
fn memory_budget_sums_fpm_and_mariadb() {
    let f = findings(Run {
        fpm: Some("[a]\npm.max_children = 40\n[b]\npm.max_children = 40\npm.max_requests = 500\n"),
        mysql: Some("[mysqld]\ninnodb_buffer_pool_size = 1G\nmax_connections = 100\n"),
        ..Run::default()
    });
    let m = get(&f, "memory.budget").unwrap();
    assert!(m.why.contains("80 children"), "{}", m.why);
    assert!(
        m.why.contains("innodb_buffer_pool_size 1024 MiB"),
        "{}",
        m.why
    );
    assert_ne!(m.severity, Severity::Info);
}

#[test]
fn mpm_server_limit() {
    let f = findings(Run {
        apache: Some(&format!(
            "{EVENT}MaxRequestWorkers 800\nThreadsPerChild 25\n"
        )),
        ..Run::default()
    });
    let s = get(&f, "apache.mpm.server_limit").unwrap();
    assert!(
        s.current
            .contains("ServerLimit 16 × ThreadsPerChild 25 = 400"),
        "{}",
        s.current
    );
    assert!(s.recommended.starts_with("ServerLimit 32"));
    let f = findings(Run {
        apache: Some(&format!(
            "{EVENT}ServerLimit 32\nMaxRequestWorkers 800\nThreadsPerChild 25\n"
        )),
        ..Run::default()
    });
    assert!(get(&f, "apache.mpm.server_limit").is_none());
    // Prefork: MaxClients (2.2's name) above ServerLimit's default 256.
    let f = findings(Run {
        apache: Some("LoadModule mpm_prefork_module m/mod_mpm_prefork.so\nMaxClients 300\n"),
        ..Run::default()
    });
    let s = get(&f, "apache.mpm.server_limit").unwrap();
    assert!(s.directives.contains(&"MaxClients".to_string()));
}

#[test]
fn mpm_threads() {
    let f = findings(Run {
        apache: Some(&format!("{WORKER}ThreadsPerChild 100\nMaxRequestWorkers 250\nMinSpareThreads 75\nMaxSpareThreads 100\n")),
        ..Run::default()
    });
    assert!(get(&f, "apache.mpm.thread_limit").is_some());
    assert!(get(&f, "apache.mpm.multiple").is_some());
    assert_eq!(
        get(&f, "apache.mpm.spare_threads").unwrap().recommended,
        "MaxSpareThreads 175"
    );
    let f = findings(Run {
        apache: Some(&format!("{WORKER}ThreadLimit 100\nThreadsPerChild 100\nMaxRequestWorkers 200\nServerLimit 2\nMaxSpareThreads 200\n")),
        ..Run::default()
    });
    for id in [
        "apache.mpm.thread_limit",
        "apache.mpm.multiple",
        "apache.mpm.spare_threads",
        "apache.mpm.server_limit",
    ] {
        assert!(get(&f, id).is_none(), "{id}: {f:#?}");
    }
}

#[test]
fn mpm_and_php() {
    let f = findings(Run {
        apache: Some(&format!("{WORKER}LoadModule php_module m/libphp8.2.so\n")),
        ..Run::default()
    });
    assert_eq!(
        get(&f, "apache.mpm.php").unwrap().severity,
        Severity::Critical
    );
    let f = findings(Run {
        apache: Some(&format!("{PREFORK_PHP}MaxConnectionsPerChild 1000\n")),
        ..Run::default()
    });
    assert!(get(&f, "apache.mpm.php").is_none());
    let f = findings(Run {
        apache: Some("LoadModule mpm_prefork_module m/p.so\nLoadModule proxy_module m/x.so\nLoadModule proxy_fcgi_module m/y.so\n<FilesMatch \\.php$>\n SetHandler \"proxy:unix:/run/php/php-fpm.sock|fcgi://localhost\"\n</FilesMatch>\n"),
        ..Run::default()
    });
    assert_eq!(get(&f, "apache.mpm.php").unwrap().severity, Severity::Info);
}

#[test]
fn keepalive_timeout() {
    let f = findings(Run {
        apache: Some(&format!("{PREFORK_PHP}KeepAliveTimeout 15\n")),
        ..Run::default()
    });
    let k = get(&f, "apache.keepalive_timeout").unwrap();
    assert_eq!(k.recommended, "KeepAliveTimeout 2");
    assert!(k.source.contains("seed 001"));
    let f = findings(Run {
        apache: Some(&format!("{EVENT}KeepAliveTimeout 15\n")),
        ..Run::default()
    });
    assert!(get(&f, "apache.keepalive_timeout").is_none());
    let f = findings(Run {
        apache: Some(&format!(
            "{PREFORK_PHP}KeepAliveTimeout 15\nKeepAlive Off\n"
        )),
        ..Run::default()
    });
    assert!(get(&f, "apache.keepalive_timeout").is_none());
}

#[test]
fn max_connections_per_child_under_its_old_name() {
    let f = findings(Run {
        apache: Some(&format!("{PREFORK_PHP}MaxRequestsPerChild 0\n")),
        ..Run::default()
    });
    let m = get(&f, "apache.max_connections_per_child").unwrap();
    assert_eq!(m.recommended, "MaxRequestsPerChild 1000");
    let f = findings(Run {
        apache: Some(&format!("{PREFORK_PHP}MaxRequestsPerChild 1000\n")),
        ..Run::default()
    });
    assert!(get(&f, "apache.max_connections_per_child").is_none());
}

#[test]
fn backend_per_core_behind_nginx() {
    let f = findings(Run {
        apache: Some(&format!("{PREFORK_PHP}Listen 8080\nMaxRequestWorkers 40\n")),
        nginx: Some(PROXY_KEEPALIVE),
        ..Run::default()
    });
    let b = get(&f, "proxy.backend_per_core").unwrap();
    assert_eq!(b.severity, Severity::Warn);
    assert_eq!(
        b.recommended,
        "MaxRequestWorkers ≈ 4 (2 per core) → planned: MaxRequestWorkers 4"
    );
    let f = findings(Run {
        apache: Some(&format!("{PREFORK_PHP}Listen 8080\nMaxRequestWorkers 4\n")),
        nginx: Some(PROXY_KEEPALIVE),
        ..Run::default()
    });
    assert!(get(&f, "proxy.backend_per_core").is_none());
    // Apache alone: no proxy, no rule.
    let f = findings(Run {
        apache: Some(&format!("{PREFORK_PHP}MaxRequestWorkers 40\n")),
        ..Run::default()
    });
    assert!(get(&f, "proxy.backend_per_core").is_none());
}

#[test]
fn worker_connections_for_proxied_clients() {
    let f = findings(Run {
        nginx: Some(&PROXY_KEEPALIVE.replace("1024", "768")),
        evidence: Some(evidence(1000)),
        ..Run::default()
    });
    let w = get(&f, "nginx.worker_connections").unwrap();
    assert_eq!(w.severity, Severity::Warn);
    // 1 worker × 768 / 2 = 384 < 1000 → 2000 per worker → 2048.
    assert!(w.why.contains("= 384 clients"), "{}", w.why);
    assert_eq!(w.recommended, "worker_connections 2048");
    let f = findings(Run {
        nginx: Some(&PROXY_KEEPALIVE.replace("1024", "4096")),
        evidence: Some(evidence(1000)),
        ..Run::default()
    });
    assert!(get(&f, "nginx.worker_connections").is_none());
}

#[test]
fn upstream_keepalive_and_ports() {
    let f = findings(Run {
        nginx: Some(PROXY_KEEPALIVE),
        ..Run::default()
    });
    assert!(get(&f, "nginx.upstream_keepalive").is_none());
    assert!(get(&f, "proxy.ephemeral_ports").is_none());
    let no_version = PROXY_KEEPALIVE.replace("   proxy_http_version 1.1;\n", "");
    let f = findings(Run {
        nginx: Some(&no_version),
        ..Run::default()
    });
    let u = get(&f, "nginx.upstream_keepalive").unwrap();
    assert!(u.current.contains("1.0 (default)"), "{}", u.current);
    let direct = "events {}\nhttp { server { location / { proxy_pass http://10.0.0.5:8080; } } }\n";
    let f = findings(Run {
        nginx: Some(direct),
        evidence: Some(evidence(10)),
        ..Run::default()
    });
    let p = get(&f, "proxy.ephemeral_ports").unwrap();
    assert!(p.why.contains("28232 ports ÷ 60 s ≈ 470"), "{}", p.why);
    // 1000 requests/s > half of 470 → warn.
    assert_eq!(p.severity, Severity::Warn);
}

#[test]
fn fpm_children_against_mariadb() {
    let fpm = "[a]\npm.max_children = 100\npm.max_requests = 500\n[b]\npm.max_children = 100\npm.max_requests = 500\n";
    let f = findings(Run {
        fpm: Some(fpm),
        mysql: Some("[mysqld]\nmax_connections = 151\nback_log = 50\n"),
        ..Run::default()
    });
    let c = get(&f, "chain.fpm_mysql").unwrap();
    assert_eq!(c.recommended, "max_connections = 210");
    assert!(c.evidence.iter().any(|e| e.contains("my.cnf:2")));
    assert!(get(&f, "chain.mysql_back_log").is_some());
    let f = findings(Run {
        fpm: Some(fpm),
        mysql: Some("[mysqld]\nmax-connections = 300\n"),
        ..Run::default()
    });
    assert!(get(&f, "chain.fpm_mysql").is_none());
    assert!(get(&f, "chain.mysql_back_log").is_none());
}

#[test]
fn fpm_max_requests() {
    let f = findings(Run {
        fpm: Some("[www]\npm.max_children = 5\n"),
        ..Run::default()
    });
    let m = get(&f, "php_fpm.max_requests").unwrap();
    assert_eq!(m.changes[0].section.as_deref(), Some("www"));
    let f = findings(Run {
        fpm: Some("[www]\npm.max_children = 5\npm.max_requests = 500\n"),
        ..Run::default()
    });
    assert!(get(&f, "php_fpm.max_requests").is_none());
}

#[test]
fn thread_cache() {
    let fpm = "[www]\npm.max_children = 30\npm.max_requests = 500\n";
    let f = findings_with(
        &host(8192),
        Run {
            fpm: Some(fpm),
            mysql: Some("[mysqld]\nthread_cache_size = 0\n"),
            ..Run::default()
        },
    );
    assert_eq!(
        get(&f, "mariadb.thread_cache_size").unwrap().recommended,
        "thread_cache_size = 30"
    );
    let f = findings(Run {
        fpm: Some(fpm),
        mysql: Some("[mysqld]\nthread_cache_size = 64\n"),
        ..Run::default()
    });
    assert!(get(&f, "mariadb.thread_cache_size").is_none());
}

#[test]
fn buffer_pool_against_data() {
    // The datadir's InnoDB files (this host's, the tree being this host's own).
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("shop")).unwrap();
    let ibd = std::fs::File::create(d.path().join("shop/orders.ibd")).unwrap();
    ibd.set_len(300 << 20).unwrap(); // sparse: its length is what counts
    let cnf = |pool: &str| {
        let f = d.path().join(format!("my-{pool}.cnf"));
        std::fs::write(
            &f,
            format!(
                "[mysqld]\ndatadir = {}\ninnodb_buffer_pool_size = {pool}\n",
                d.path().display()
            ),
        )
        .unwrap();
        webtune_advise::advise(&webtune_advise::Inputs {
            mysql: Some(f),
            host: webtune_advise::host_facts::HostChoice {
                cores: Some(2),
                ram_kib: Some(2 << 20),
                from: None,
            },
            ..Default::default()
        })
        .unwrap()
        .findings
    };
    let f = cnf("128M");
    let b = get(&f, "mariadb.buffer_pool").unwrap();
    assert_eq!(b.recommended, "innodb_buffer_pool_size = 384M");
    assert!(
        b.evidence.iter().any(|e| e.contains("InnoDB files under")),
        "{:?}",
        b.evidence
    );
    assert!(get(&cnf("1G"), "mariadb.buffer_pool").is_none());
}

#[test]
fn backlog_against_somaxconn() {
    let conf = "events {}\nhttp { server { listen 80 backlog=4096; } }\n";
    let f = findings(Run {
        nginx: Some(conf),
        ..Run::default()
    });
    let b = get(&f, "queue.backlog_somaxconn").unwrap();
    assert!(b.evidence[0].ends_with("nginx.conf:2"), "{:?}", b.evidence);
    let f = findings(Run {
        nginx: Some("events {}\nhttp { server { listen 80 backlog=64; } }\n"),
        ..Run::default()
    });
    assert!(get(&f, "queue.backlog_somaxconn").is_none());
    // Apache's ListenBacklog default 511 > 128.
    let f = findings(Run {
        apache: Some(EVENT),
        ..Run::default()
    });
    assert!(get(&f, "queue.backlog_somaxconn").is_some());
}

#[test]
fn listen_overflows_from_a_run() {
    let mut e = evidence(100);
    e.listen_overflows = 42;
    let f = findings(Run {
        apache: Some(EVENT),
        evidence: Some(e),
        ..Run::default()
    });
    assert!(get(&f, "queue.listen_overflows")
        .unwrap()
        .why
        .contains("dropped 42"));
    let f = findings(Run {
        apache: Some(EVENT),
        evidence: Some(evidence(100)),
        ..Run::default()
    });
    assert!(get(&f, "queue.listen_overflows").is_none());
}

#[test]
fn nofile_against_worker_connections() {
    let f = findings(Run {
        nginx: Some("events { worker_connections 4096; }\n"),
        ..Run::default()
    });
    let n = get(&f, "limits.nofile").unwrap();
    assert!(n.evidence.iter().any(|e| e.contains("assumed")));
    let f = findings(Run {
        nginx: Some("worker_rlimit_nofile 16384;\nevents { worker_connections 4096; }\n"),
        ..Run::default()
    });
    assert!(get(&f, "limits.nofile").is_none());
}

#[test]
fn logged_messages_and_context_switches() {
    let mut e = evidence(100);
    e.log_messages = vec![
        LogMessage { server: "apache2".into(), level: "error".into(), message: "server reached MaxRequestWorkers setting, consider raising the MaxRequestWorkers setting".into(), count: 3 },
        LogMessage { server: "mariadb".into(), level: "error".into(), message: "Too many connections".into(), count: 1 },
    ];
    e.context_switches = 500_000;
    let f = findings(Run {
        evidence: Some(e),
        ..Run::default()
    });
    assert_eq!(
        get(&f, "evidence.apache_workers_full").unwrap().severity,
        Severity::Warn
    );
    assert_eq!(
        get(&f, "evidence.mysql_connections_full").unwrap().severity,
        Severity::Critical
    );
    assert!(get(&f, "evidence.context_switches")
        .unwrap()
        .why
        .contains("500000 context switches ÷ 10000 responses = 50.0"));
    assert_eq!(f[0].severity, Severity::Critical, "most severe first");
    let f = findings(Run {
        evidence: Some(evidence(100)),
        ..Run::default()
    });
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn patch_replaces_lines_and_adds_into_sections() {
    use webtune_advise::output::patch_text;
    use webtune_advise::Change;
    let change = |line: Option<usize>, section: Option<&str>, text: &str| {
        (
            "x".to_string(),
            Change {
                file: Path::new("/f").into(),
                line,
                section: section.map(str::to_string),
                text: text.into(),
            },
        )
    };
    let out = patch_text(
        "[www]\n  pm.max_children = 5\n",
        &[
            change(Some(2), None, "pm.max_children = 9"),
            change(None, Some("www"), "pm.max_requests = 500"),
        ],
        ";",
    );
    assert_eq!(out, "[www]\n; webtune advise [x]: added\npm.max_requests = 500\n  ; webtune advise [x]: was: pm.max_children = 5\n  pm.max_children = 9\n");
    let out = patch_text(
        "[client]\nport=1\n",
        &[change(None, Some("mysqld"), "max_connections = 210")],
        "#",
    );
    assert!(
        out.ends_with("\n[mysqld]\n# webtune advise [x]: added\nmax_connections = 210\n"),
        "{out}"
    );
    // A rewrite of several lines keeps the line's indentation on each.
    let out = patch_text(
        "[mysqld]\n  log_slow_queries = /s.log\n",
        &[change(
            Some(2),
            None,
            "slow_query_log = 1\nslow_query_log_file = /s.log",
        )],
        "#",
    );
    assert_eq!(out, "[mysqld]\n  # webtune advise [x]: was: log_slow_queries = /s.log\n  slow_query_log = 1\n  slow_query_log_file = /s.log\n");
    // Into a named nginx block: `upstream app {`.
    let out = patch_text(
        "http {\n  upstream app {\n    server 127.0.0.1:8080;\n  }\n}\n",
        &[change(None, Some("upstream app"), "keepalive_timeout 4s;")],
        "#",
    );
    assert_eq!(out, "http {\n  upstream app {\n    # webtune advise [x]: added\n    keepalive_timeout 4s;\n    server 127.0.0.1:8080;\n  }\n}\n");
    // A pool fragment's keys go before any section.
    let out = patch_text(
        "pm.max_children = 5\n[other]\nx = 1\n",
        &[change(
            None,
            Some(webtune_conf::ini::FRAGMENT_POOL),
            "pm.max_requests = 500",
        )],
        ";",
    );
    assert_eq!(
        out,
        "pm.max_children = 5\n; webtune advise [x]: added\npm.max_requests = 500\n[other]\nx = 1\n"
    );
}
