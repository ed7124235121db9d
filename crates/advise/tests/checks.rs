//! The checks MySQLTuner and apache2buddy users expect (issue 24, item 3), each on small
//! fixtures: it fires with its calculation, and stays silent when it should.

mod common;

use common::*;
use std::path::PathBuf;
use webtune_advise::Severity;

/// The InnoDB data `bytes`, as the datadir or --live tells it.
fn data(bytes: u64) -> webtune_advise::Facts {
    webtune_advise::Facts {
        innodb_data: Some(webtune_advise::facts::Known {
            value: bytes,
            from: "the datadir".into(),
        }),
        ..Default::default()
    }
}

#[test]
fn buffer_pool_sized_from_the_data_never_from_ram_alone() {
    let big = host(16384);
    // 3 GiB of data for a 128M pool: data × 1.2 rounded up to 128 MiB = 3712M.
    let (f, plan) = plan_with(
        &big,
        Run {
            mysql: Some("[mysqld]\nmax_connections = 100\n"),
            facts: data(3 << 30),
            ..Run::default()
        },
    );
    let b = get(&f, "mariadb.buffer_pool").unwrap();
    assert_eq!(b.severity, Severity::Warn);
    assert!(b.why.contains("InnoDB data of 3072 MiB"), "{}", b.why);
    assert_eq!(
        plan.get("mariadb", "innodb_buffer_pool_size")
            .unwrap()
            .value,
        Some(3712)
    );
    // Both do not fit on 8 GiB: 1 GiB of data wants 1280M, 200 php-fpm children × 30 MiB
    // and 151 connections take the rest; PHP's children are cut (to at least two per
    // core), the pool keeps what the data needs, within the budget's room.
    let (f, plan) = plan_with(
        &host(8192),
        Run {
            mysql: Some("[mysqld]\n"),
            fpm: Some("[www]\npm.max_children = 200\npm.max_requests = 500\n"),
            facts: data(1 << 30),
            ..Run::default()
        },
    );
    let pool = plan.get("mariadb", "innodb_buffer_pool_size").unwrap();
    assert_eq!(pool.value, Some(1280), "{pool:#?}");
    assert!(
        pool.bounds
            .iter()
            .any(|b| b.finding == "memory.budget" && b.reason.starts_with("memory budget")),
        "{pool:#?}"
    );
    let children = plan.get("php-fpm", "pm.max_children").unwrap();
    let v = children.value.unwrap();
    assert!((4..200).contains(&v), "{children:#?}");
    let m = get(&f, "memory.budget").unwrap();
    assert!(
        m.recommended.contains("pm.max_children 200 → "),
        "{}",
        m.recommended
    );
    // The data unknown: said, with how to learn it, and no number made up from RAM.
    let (f, plan) = plan_with(
        &big,
        Run {
            mysql: Some("[mysqld]\n"),
            ..Run::default()
        },
    );
    let b = get(&f, "mariadb.buffer_pool").unwrap();
    assert_eq!(b.severity, Severity::Info);
    assert!(b.why.contains("information_schema"), "{}", b.why);
    assert!(b.changes.is_empty() && b.constraints.is_empty());
    assert!(plan.get("mariadb", "innodb_buffer_pool_size").is_none());
    // A pool that holds the data, or no InnoDB: silent.
    for cnf in [
        "[mysqld]\ninnodb_buffer_pool_size = 8G\n",
        "[mysqld]\nskip-innodb\n",
    ] {
        let f = findings_with(
            &big,
            Run {
                mysql: Some(cnf),
                facts: data(3 << 30),
                ..Run::default()
            },
        );
        assert!(get(&f, "mariadb.buffer_pool").is_none(), "{cnf}");
    }
}

#[test]
fn query_cache_on() {
    let f = findings(Run {
        mysql: Some("[mysqld]\nquery_cache_type = 1\nquery_cache_size = 64M\n"),
        ..Run::default()
    });
    let q = get(&f, "mariadb.query_cache").unwrap();
    assert!(q.why.contains("mutex"), "{}", q.why);
    assert!(
        q.changes.iter().any(|c| c.text == "query_cache_type = 0"),
        "{:?}",
        q.changes
    );
    assert!(
        q.changes.iter().any(|c| c.text == "query_cache_size = 0M"),
        "{:?}",
        q.changes
    );
    // A size alone turns it on at startup (MariaDB 10.11, measured).
    let f = findings(Run {
        mysql: Some("[mysqld]\nquery_cache_size = 16M\n"),
        ..Run::default()
    });
    assert!(get(&f, "mariadb.query_cache").is_some());
    for off in [
        "[mysqld]\n",
        "[mysqld]\nquery_cache_type = 0\nquery_cache_size = 16M\n",
        "[mysqld]\nquery_cache_type = ON\nquery_cache_size = 0\n",
    ] {
        let f = findings(Run {
            mysql: Some(off),
            ..Run::default()
        });
        assert!(get(&f, "mariadb.query_cache").is_none(), "{off}");
    }
}

#[test]
fn options_that_stop_the_server_from_starting() {
    let f = findings(Run {
        mysql: Some("[mysqld]\nlog_slow_queries = /var/log/mysql/slow.log\ntable_cache = 400\nthread_concurrency = 8\ninnodb_file_format = Barracuda\n"),
        ..Run::default()
    });
    let slow = get(&f, "mariadb.removed.log_slow_queries").unwrap();
    assert_eq!(slow.severity, Severity::Critical);
    assert_eq!(
        slow.changes[0].text,
        "slow_query_log = 1\nslow_query_log_file = /var/log/mysql/slow.log"
    );
    assert_eq!(slow.changes[0].line, Some(2));
    let t = get(&f, "mariadb.removed.table_cache").unwrap();
    assert_eq!(t.severity, Severity::Warn);
    assert!(t.why.contains("MySQL 8 refuses"), "{}", t.why);
    assert!(
        t.why
            .contains("sets both table_open_cache and table_definition_cache"),
        "{}",
        t.why
    );
    assert_eq!(t.changes[0].text, "table_open_cache = 400");
    for id in [
        "mariadb.removed.thread_concurrency",
        "mariadb.removed.innodb_file_format",
    ] {
        let x = get(&f, id).unwrap();
        assert_eq!(x.severity, Severity::Warn, "{id}");
        assert!(x.changes[0].text.starts_with("# "), "{id}: {:?}", x.changes);
    }
    // skip-locking, spelt with a dash, is the same option.
    let f = findings(Run {
        mysql: Some("[mysqld]\nskip-locking\n"),
        ..Run::default()
    });
    assert!(get(&f, "mariadb.removed.skip_locking").is_some());
    let f = findings(Run {
        mysql: Some("[mysqld]\nslow_query_log = 1\n"),
        ..Run::default()
    });
    assert!(!f.iter().any(|x| x.id.starts_with("mariadb.removed")));
}

#[test]
fn no_mpm_loaded() {
    // httpd asked (`httpd -l`) lists no MPM compiled in: Apache 2.4 will not start.
    let none_built_in = webtune_advise::Facts {
        apache_compiled_in: Some(webtune_advise::facts::Known {
            value: vec!["core.c".into(), "mod_so.c".into()],
            from: "/usr/sbin/apache2 -l".into(),
        }),
        ..Default::default()
    };
    let f = findings(Run {
        apache: Some("Listen 80\nMaxRequestWorkers 50\n"),
        facts: none_built_in.clone(),
        ..Run::default()
    });
    let n = get(&f, "apache.mpm.none").unwrap();
    assert_eq!(n.severity, Severity::Critical);
    assert!(n.why.contains("AH00534"), "{}", n.why);
    assert!(n.why.contains("/usr/sbin/apache2 -l"), "{}", n.why);
    // Not asked (a copied tree): the MPM is unknown, not missing.
    let f = findings(Run {
        apache: Some("Listen 80\nMaxRequestWorkers 50\n"),
        ..Run::default()
    });
    assert!(get(&f, "apache.mpm.none").is_none());
    let f = findings(Run {
        apache: Some(EVENT),
        facts: none_built_in,
        ..Run::default()
    });
    assert!(get(&f, "apache.mpm.none").is_none());
}

#[test]
fn dead_tuning_blocks() {
    let prefork = "LoadModule mpm_prefork_module m/mod_mpm_prefork.so\n";
    let conf = format!("{prefork}<IfModule mpm_event_module>\n    StartServers 4\n    MaxRequestWorkers 400\n</IfModule>\n<IfModule worker.c>\n    ThreadsPerChild 50\n</IfModule>\n<IfModule mpm_prefork_module>\n    MaxRequestWorkers 40\n</IfModule>\n");
    let f = findings(Run {
        apache: Some(&conf),
        ..Run::default()
    });
    let dead: Vec<_> = f
        .iter()
        .filter(|x| x.id == "apache.mpm.dead_block")
        .collect();
    assert_eq!(dead.len(), 2, "{dead:#?}");
    assert!(
        dead.iter()
            .any(|d| d.current.contains("mpm_event_module> at")
                && d.current.ends_with(":2: StartServers, MaxRequestWorkers")),
        "{dead:#?}"
    );
    // prefork has its own MaxRequestWorkers: info, citing it; worker's ThreadsPerChild has none: warn.
    let event = dead
        .iter()
        .find(|d| d.current.contains("mpm_event"))
        .unwrap();
    assert_eq!(event.severity, Severity::Info);
    assert!(
        event
            .evidence
            .iter()
            .any(|e| e.starts_with("MaxRequestWorkers 40")),
        "{:?}",
        event.evidence
    );
    let worker = dead
        .iter()
        .find(|d| d.current.contains("mpm_worker"))
        .unwrap();
    assert_eq!(worker.severity, Severity::Warn);
    // The loaded MPM's own block, and negated blocks, are not dead.
    let f = findings(Run { apache: Some(&format!("{prefork}<IfModule !mpm_event_module>\nTimeout 30\n</IfModule>\n<IfModule mpm_prefork_module>\nMaxRequestWorkers 40\n</IfModule>\n")), ..Run::default() });
    assert!(get(&f, "apache.mpm.dead_block").is_none(), "{f:#?}");
}

#[test]
fn one_nginx_worker_on_a_multi_core_host() {
    let f = findings(Run {
        nginx: Some("worker_processes 1;\nevents {}\n"),
        ..Run::default()
    });
    let w = get(&f, "nginx.worker_processes").unwrap();
    assert_eq!(w.changes[0].text, "worker_processes auto;");
    assert_eq!(w.changes[0].line, Some(1));
    // Not set: nginx's default is 1 too.
    let f = findings(Run {
        nginx: Some("events {}\n"),
        ..Run::default()
    });
    assert!(get(&f, "nginx.worker_processes").is_some());
    let f = findings(Run {
        nginx: Some("worker_processes auto;\nevents {}\n"),
        ..Run::default()
    });
    assert!(get(&f, "nginx.worker_processes").is_none());
    let mut one = host(2048);
    one.cores = 1;
    let f = findings_with(
        &one,
        Run {
            nginx: Some("events {}\n"),
            ..Run::default()
        },
    );
    assert!(get(&f, "nginx.worker_processes").is_none());
}

#[test]
fn memory_budget_counts_tmp_tables_php_memory_limit_and_tmpfs() {
    let f = findings(Run {
        mysql: Some("[mysqld]\ntmp_table_size = 256M\nmax_heap_table_size = 64M\n"),
        ..Run::default()
    });
    let m = get(&f, "memory.budget").unwrap();
    assert!(
        m.why
            .contains("min(tmp_table_size, max_heap_table_size) 64 MiB"),
        "{}",
        m.why
    );
    // 20 children × memory_limit 256M = 5120 MiB > RAM 2048 MiB: a worst case that swaps.
    let f = findings(Run {
        fpm: Some("[www]\npm.max_children = 20\npm.max_requests = 500\nphp_admin_value[memory_limit] = 256M\n"),
        ..Run::default()
    });
    let m = get(&f, "memory.budget").unwrap();
    assert!(
        m.why.contains("20 children × memory_limit 256 MiB"),
        "{}",
        m.why
    );
    assert!(m.why.contains("php-fpm.conf:4"), "{}", m.why);
    assert_eq!(m.severity, Severity::Warn);
    // A 4 GiB tmpfs holding nginx's cache (max_size 3g) counts 3 GiB of RAM.
    let mut h = host(8192);
    h.tmpfs
        .push((PathBuf::from("/var/cache/nginx-ram"), 4 << 20));
    let f = findings_with(&h, Run {
        nginx: Some("events {}\nhttp {\n    proxy_cache_path /var/cache/nginx-ram/c levels=1:2 keys_zone=c:10m max_size=3g;\n}\n"),
        ..Run::default()
    });
    let m = get(&f, "memory.budget").unwrap();
    assert!(
        m.why
            .contains("tmpfs /var/cache/nginx-ram (RAM, up to its size): 3072 MiB"),
        "{}",
        m.why
    );
}

#[test]
fn redo_log_against_the_planned_buffer_pool() {
    let f = findings_with(
        &host(16384),
        Run {
            mysql: Some("[mysqld]\ninnodb_buffer_pool_size = 8G\n"),
            ..Run::default()
        },
    );
    let r = get(&f, "mariadb.redo_log").unwrap();
    assert!(
        r.current.contains("96M = 1% of the buffer pool 8192M"),
        "{}",
        r.current
    );
    assert_eq!(r.recommended, "innodb_log_file_size = 2048M");
    // Against the planned pool: the 128M default planned up to the data (3 GiB × 1.2).
    let (f, plan) = plan_with(
        &host(16384),
        Run {
            mysql: Some("[mysqld]\n"),
            facts: data(3 << 30),
            ..Run::default()
        },
    );
    assert!(get(&f, "mariadb.redo_log")
        .unwrap()
        .why
        .contains("(as planned)"));
    assert_eq!(
        plan.get("mariadb", "innodb_log_file_size").unwrap().value,
        Some(928)
    );
    let f = findings_with(
        &host(16384),
        Run {
            mysql: Some("[mysqld]\ninnodb_buffer_pool_size = 8G\ninnodb_log_file_size = 2G\n"),
            ..Run::default()
        },
    );
    assert!(get(&f, "mariadb.redo_log").is_none());
}
