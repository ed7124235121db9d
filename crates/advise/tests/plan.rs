//! One plan per knob (issue 24, item 2): the contradictions found on real trees, each
//! reconciled into one value per directive, or stated as a conflict and not written.

mod common;

use common::*;
use std::path::PathBuf;
use webtune_advise::output::{changes_per_file, ApacheDialect, PatchOptions};
use webtune_advise::plan::Plan;
use webtune_advise::{Advice, ConfigRead, Finding, Severity};

/// Every change any finding or the plan would write for `directive`, by text.
fn written(f: &[Finding], plan: &Plan, directive: &str) -> Vec<String> {
    let mut all: Vec<String> = f
        .iter()
        .flat_map(|x| &x.changes)
        .chain(plan.knobs.iter().filter_map(|p| p.change.as_ref()))
        .filter(|c| c.text.starts_with(directive))
        .map(|c| c.text.clone())
        .collect();
    all.sort();
    all.dedup();
    all
}

#[test]
fn three_findings_on_max_request_workers_become_one_value() {
    // event MPM, MaxRequestWorkers 410 (above ServerLimit 16 × 25 = 400, not a multiple
    // of 25) behind nginx on 2 cores (2 per core wants 4): once 400, 25 and 4.
    let conf = format!("{EVENT}Listen 8080\nThreadsPerChild 25\nMaxRequestWorkers 410\n");
    let (f, plan) = plan_with(
        &host(2048),
        Run {
            apache: Some(&conf),
            nginx: Some(PROXY_KEEPALIVE),
            ..Run::default()
        },
    );
    let k = plan.get("apache2", "MaxRequestWorkers").unwrap();
    // ≥ ThreadsPerChild and a multiple of it: 4 → 25 (one process), never below.
    assert_eq!(k.value, Some(25), "{k:#?}");
    assert_eq!(
        written(&f, &plan, "MaxRequestWorkers"),
        ["MaxRequestWorkers 25"]
    );
    // Every bound is listed with its reason and the finding (or the server) behind it.
    let ids: Vec<&str> = k.bounds.iter().map(|b| b.finding.as_str()).collect();
    assert!(
        ids.contains(&"proxy.backend_per_core") && ids.contains(&"apache.mpm.multiple"),
        "{ids:?}"
    );
    assert!(k
        .bounds
        .iter()
        .any(|b| b.structural && b.reason.contains("ThreadsPerChild 25")));
    // 25 workers fit ServerLimit 16: no finding asks for ServerLimit 17 any more.
    assert!(get(&f, "apache.mpm.server_limit").is_none(), "{f:#?}");
    for id in ["proxy.backend_per_core", "apache.mpm.multiple"] {
        let r = &get(&f, id).unwrap().recommended;
        assert!(r.ends_with("planned: MaxRequestWorkers 25"), "{id}: {r}");
    }
}

#[test]
fn threaded_mpm_is_sized_in_processes_and_server_limit_follows() {
    // worker MPM, 2 cores behind nginx: never "MaxRequestWorkers 4" with ThreadsPerChild 25.
    let conf = format!("{WORKER}Listen 8080\nThreadsPerChild 25\nMaxRequestWorkers 150\n");
    let (f, plan) = plan_with(
        &host(2048),
        Run {
            apache: Some(&conf),
            nginx: Some(PROXY_KEEPALIVE),
            ..Run::default()
        },
    );
    assert_eq!(
        plan.get("apache2", "MaxRequestWorkers").unwrap().value,
        Some(25)
    );
    let why = &get(&f, "proxy.backend_per_core").unwrap().why;
    assert!(why.contains("ThreadsPerChild 25"), "{why}");
    // ServerLimit follows the planned MaxRequestWorkers: 800 under ServerLimit 16 needs 32.
    let conf = format!("{EVENT}ThreadsPerChild 25\nMaxRequestWorkers 800\n");
    let (f, plan) = plan_with(
        &host(65536),
        Run {
            apache: Some(&conf),
            ..Run::default()
        },
    );
    assert_eq!(plan.get("apache2", "ServerLimit").unwrap().value, Some(32));
    assert_eq!(written(&f, &plan, "ServerLimit"), ["ServerLimit 32"]);
    // The memory budget cuts a threaded MPM in whole processes of 25 threads.
    let (f, plan) = plan_with(
        &host(128),
        Run {
            apache: Some(&conf),
            ..Run::default()
        },
    );
    let mrw = plan
        .get("apache2", "MaxRequestWorkers")
        .unwrap()
        .value
        .unwrap();
    assert_eq!(mrw % 25, 0, "{mrw}");
    assert!((25..800).contains(&mrw), "{mrw}");
    // … and ServerLimit is not raised for the 800 that the budget cut.
    assert!(get(&f, "apache.mpm.server_limit").is_none(), "{f:#?}");
}

#[test]
fn worker_rlimit_nofile_stays_within_nr_open_or_is_a_stated_conflict() {
    let mut h = host(2048);
    h.sysctls.insert("fs.nr_open".into(), "1048576".into());
    let proxy = |wc: u32| {
        format!("events {{ worker_connections {wc}; }}\nhttp {{ upstream app {{ server 127.0.0.1:8080; keepalive 16; }}\n server {{ location / {{ proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\"; }} }} }}\n")
    };
    // 300000 × 2 = 600000 needed; twice that (1200000) is preferred, but ≤ fs.nr_open.
    let conf = proxy(300_000);
    let (f, plan) = plan_with(
        &h,
        Run {
            nginx: Some(&conf),
            ..Run::default()
        },
    );
    assert_eq!(
        plan.get("nginx", "worker_rlimit_nofile").unwrap().value,
        Some(1_048_576)
    );
    assert_eq!(
        written(&f, &plan, "worker_rlimit_nofile"),
        ["worker_rlimit_nofile 1048576;"]
    );
    // 600000 × 2 = 1200000 needed > fs.nr_open: a conflict, said, and nothing written.
    let conf = proxy(600_000);
    let (f, plan) = plan_with(
        &h,
        Run {
            nginx: Some(&conf),
            ..Run::default()
        },
    );
    let k = plan.get("nginx", "worker_rlimit_nofile").unwrap();
    assert_eq!(k.value, None);
    assert!(
        k.conflict.as_deref().unwrap().contains("fs.nr_open")
            || k.bounds.iter().any(|b| b.reason.contains("fs.nr_open"))
    );
    assert!(written(&f, &plan, "worker_rlimit_nofile").is_empty());
    let r = &get(&f, "limits.nofile").unwrap().recommended;
    assert!(r.contains("CONFLICT, not written"), "{r}");
}

#[test]
fn time_wait_counts_tcp_tw_reuse_and_loopback() {
    let direct = |to: &str| {
        format!(
            "events {{}}\nhttp {{ server {{ location / {{ proxy_pass http://{to}:8080; }} }} }}\n"
        )
    };
    let mut h = host(2048);
    h.sysctls.insert("net.ipv4.tcp_tw_reuse".into(), "2".into());
    // Loopback with the default tcp_tw_reuse 2: ports are reused after 1 s.
    let conf = direct("127.0.0.1");
    let f = findings_with(
        &h,
        Run {
            nginx: Some(&conf),
            evidence: Some(evidence(10)),
            ..Run::default()
        },
    );
    let p = get(&f, "proxy.ephemeral_ports").unwrap();
    assert!(p.why.contains("28232 ports ÷ 1 s ≈ 28232"), "{}", p.why);
    assert_eq!(p.severity, Severity::Info);
    // Another host: 60 s.
    let conf = direct("10.0.0.5");
    let f = findings_with(
        &h,
        Run {
            nginx: Some(&conf),
            evidence: Some(evidence(10)),
            ..Run::default()
        },
    );
    assert!(get(&f, "proxy.ephemeral_ports")
        .unwrap()
        .why
        .contains("÷ 60 s"));
    // tcp_tw_reuse 1 reuses everywhere; 0 nowhere, loopback included.
    h.sysctls.insert("net.ipv4.tcp_tw_reuse".into(), "1".into());
    let f = findings_with(
        &h,
        Run {
            nginx: Some(&conf),
            ..Run::default()
        },
    );
    assert!(get(&f, "proxy.ephemeral_ports")
        .unwrap()
        .why
        .contains("÷ 1 s"));
    h.sysctls.insert("net.ipv4.tcp_tw_reuse".into(), "0".into());
    let conf = direct("127.0.0.1");
    let f = findings_with(
        &h,
        Run {
            nginx: Some(&conf),
            ..Run::default()
        },
    );
    assert!(get(&f, "proxy.ephemeral_ports")
        .unwrap()
        .why
        .contains("÷ 60 s"));
    // A Unix socket uses no port.
    let f = findings_with(&h, Run { nginx: Some("events {}\nhttp { server { location / { proxy_pass http://unix:/run/app.sock; } } }\n"), ..Run::default() });
    assert!(get(&f, "proxy.ephemeral_ports").is_none());
}

#[test]
fn context_switches_with_other_load_on_the_host_are_not_blamed_on_the_server() {
    let mut e = evidence(100);
    e.context_switches = 500_000;
    e.involuntary_switches = 400_000;
    // The server used 2 s of CPU, the host's CPUs were busy 10 s: others used 8 s.
    e.server_cpu_s = 2.0;
    e.host_busy_cpu_s = 10.0;
    let f = findings(Run {
        evidence: Some(e.clone()),
        ..Run::default()
    });
    let c = get(&f, "evidence.context_switches").unwrap();
    assert!(c.directives.is_empty(), "{c:#?}");
    assert!(
        c.recommended.starts_with("no change to the server"),
        "{}",
        c.recommended
    );
    assert!(c.why.contains("other processes 8.0 s (80%)"), "{}", c.why);
    // The server was the load: fewer workers.
    e.server_cpu_s = 9.0;
    let f = findings(Run {
        evidence: Some(e),
        ..Run::default()
    });
    let c = get(&f, "evidence.context_switches").unwrap();
    assert!(
        c.recommended.contains("fewer busy workers"),
        "{}",
        c.recommended
    );
}

#[test]
fn the_database_is_sized_for_the_web_tiers_planned_concurrency() {
    // 200 children cut by the memory budget (2 GiB, 30 MiB each) to 61: max_connections 151
    // is enough for 61 + 10; before, chain.fpm_mysql asked for 210.
    let fpm = "[www]\npm.max_children = 200\npm.max_requests = 500\n";
    let (f, plan) = plan_with(
        &host(2048),
        Run {
            fpm: Some(fpm),
            mysql: Some("[mysqld]\nmax_connections = 151\nthread_cache_size = 0\n"),
            ..Run::default()
        },
    );
    let children = plan
        .get("php-fpm", "pm.max_children")
        .unwrap()
        .value
        .unwrap();
    assert!(children < 151 - 10, "{children}");
    assert!(get(&f, "chain.fpm_mysql").is_none(), "{f:#?}");
    // thread_cache_size follows the planned children, not the configured 200.
    let t = plan.get("mariadb", "thread_cache_size").unwrap();
    assert_eq!(t.value, Some(children));
}

#[test]
fn apache_22_patches_name_max_clients() {
    let fx = Fixture::new();
    let main = fx.file("httpd.conf", &format!("{PREFORK_PHP}ServerLimit 256\n"));
    let a = webtune_conf::apache::read(&main, &[]).unwrap();
    let h = host(2048);
    let (findings, plan) = webtune_advise::rules::plan(&webtune_advise::Layers {
        host: &h,
        apache: Some(&a),
        nginx: None,
        php_fpm: None,
        mysql: None,
        evidence: None,
        facts: &webtune_advise::Facts::default(),
        live: None,
    });
    let advice = Advice {
        host: h.clone(),
        configs: vec![ConfigRead {
            server: "apache2".into(),
            main: main.clone(),
            found: "given".into(),
            files: vec![main.clone()],
            notes: Vec::new(),
            dialect: None,
        }],
        notes: Vec::new(),
        evidence: None,
        findings,
        plan,
        patch_checks: Vec::new(),
        live: None,
        incomplete: Vec::new(),
        apache_version: None,
        facts: Default::default(),
    };
    let texts = |dialect| -> Vec<String> {
        changes_per_file(&advice, PatchOptions { apache: dialect })
            .values()
            .flatten()
            .map(|(_, c)| c.text.clone())
            .collect()
    };
    let v24 = texts(ApacheDialect::V24);
    assert!(v24.contains(&"MaxRequestWorkers 61".to_string()), "{v24:?}");
    let v22 = texts(ApacheDialect::V22);
    assert!(v22.contains(&"MaxClients 61".to_string()), "{v22:?}");
    assert!(
        v22.contains(&"MaxRequestsPerChild 1000".to_string()),
        "{v22:?}"
    );
    assert!(!v22
        .iter()
        .any(|t| t.starts_with("MaxRequestWorkers") || t.starts_with("MaxConnectionsPerChild")));
    let _ = PathBuf::new();
}
