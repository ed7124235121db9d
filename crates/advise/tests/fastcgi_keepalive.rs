//! `php_fpm.fastcgi_keepalive_starves_pool` on config trees: nginx keeping FastCGI
//! connections (`upstream { keepalive K }` + `fastcgi_keep_conn on`) to a php-fpm pool of
//! pm.max_children ≤ worker_processes × K hangs requests (issue 34; the lab test beside the
//! nginx-php-fpm stack shows the hang for real). Each boundary: fires at W × K, silent at
//! W × K + 1, silent without keep_conn, without an upstream keepalive, or for a pool the
//! pass does not reach.

mod common;

use common::*;
use webtune_advise::change::Bound;
use webtune_advise::{Finding, Severity};

const ID: &str = "php_fpm.fastcgi_keepalive_starves_pool";

/// nginx with `worker_processes` (None: not set), an upstream to 127.0.0.1:9000 with
/// `keepalive` (None: no line), and the PHP location's extra lines.
fn nginx(workers: Option<&str>, keepalive: Option<i64>, location: &str) -> String {
    format!(
        "{}events {{ worker_connections 1024; }}\nhttp {{\n upstream php {{\n  server 127.0.0.1:9000;\n{} }}\n server {{\n  listen 80;\n  location ~ \\.php$ {{\n   fastcgi_pass php;\n{location}  }}\n }}\n}}\n",
        workers.map_or(String::new(), |w| format!("worker_processes {w};\n")),
        keepalive.map_or(String::new(), |k| format!("  keepalive {k};\n")),
    )
}

fn fpm(children: i64) -> String {
    format!("[www]\nlisten = 127.0.0.1:9000\npm = static\npm.max_children = {children}\npm.max_requests = 500\n")
}

const KEEP: &str = "   fastcgi_keep_conn on;\n";

fn run(cores: u32, nginx: &str, fpm: &str) -> Vec<Finding> {
    let mut h = host(4096);
    h.cores = cores;
    findings_with(
        &h,
        Run {
            nginx: Some(nginx),
            fpm: Some(fpm),
            ..Run::default()
        },
    )
}

#[test]
fn fires_at_workers_times_keepalive_and_asks_one_child_more() {
    let f = run(2, &nginx(Some("2"), Some(1), KEEP), &fpm(2));
    let s = get(&f, ID).expect("2 children, 2 workers × keepalive 1");
    assert_eq!(s.severity, Severity::Critical);
    assert_eq!(s.component, "nginx → php-fpm");
    assert!(
        s.current
            .contains("pm.max_children 2 ≤ worker_processes 2 × keepalive 1 = 2"),
        "{}",
        s.current
    );
    assert_eq!(s.recommended, "pm.max_children = 3");
    // The trades are said: memory, a connect per request, a smaller keepalive (none here).
    for said in [
        "fastcgi_keep_conn off",
        "memory",
        "no `keepalive` in the upstream keeps none",
        "504",
    ] {
        assert!(s.why.contains(said), "{said}: {}", s.why);
    }
    assert!(s.evidence.iter().any(|e| e.starts_with("keepalive 1: ")));
    assert!(s
        .evidence
        .iter()
        .any(|e| e.starts_with("fastcgi_keep_conn on: ")));
    let c = &s.constraints[0];
    assert_eq!(c.bound, Bound::AtLeast(3));
    // The plan writes it over the pool's line.
    let change = s
        .changes
        .iter()
        .find(|c| c.text == "pm.max_children = 3")
        .unwrap_or_else(|| panic!("{:?}", s.changes));
    assert_eq!(change.line, Some(4));
    // One child fewer is the same hang.
    assert!(get(&run(2, &nginx(Some("2"), Some(1), KEEP), &fpm(1)), ID).is_some());
}

#[test]
fn silent_with_one_child_more_than_the_idle_connections() {
    let f = run(2, &nginx(Some("2"), Some(1), KEEP), &fpm(3));
    assert!(get(&f, ID).is_none());
    // keepalive 2: 4 hangs, 5 serves; the smaller keepalive that would do is named.
    let f = run(2, &nginx(Some("2"), Some(2), KEEP), &fpm(4));
    let s = get(&f, ID).expect("4 children, 2 × 2");
    assert_eq!(s.recommended, "pm.max_children = 5");
    assert!(s.why.contains("`keepalive 1` in the upstream"), "{}", s.why);
    assert!(get(&run(2, &nginx(Some("2"), Some(2), KEEP), &fpm(5)), ID).is_none());
}

#[test]
fn auto_counts_the_cores_and_one_worker_still_hangs_on_its_own_connections() {
    // auto on 4 cores: 4 × 1.
    assert!(get(&run(4, &nginx(Some("auto"), Some(1), KEEP), &fpm(4)), ID).is_some());
    assert!(get(&run(4, &nginx(Some("auto"), Some(1), KEEP), &fpm(5)), ID).is_none());
    // One worker on one core: its own concurrent requests open new connections while its
    // kept one holds the only child (measured: W=1, K=1, 1 child hung requests).
    let s = run(1, &nginx(Some("1"), Some(1), KEEP), &fpm(1));
    assert_eq!(
        get(&s, ID).map(|s| s.recommended.as_str()),
        Some("pm.max_children = 2")
    );
    assert!(get(&run(1, &nginx(Some("1"), Some(1), KEEP), &fpm(2)), ID).is_none());
    // worker_processes 1 (or unset) on 2 cores is advised to auto: the pool is sized for
    // the 2 workers it will have.
    for w in [Some("1"), None] {
        let f = run(2, &nginx(w, Some(1), KEEP), &fpm(2));
        let s = get(&f, ID).expect("sized for the advised workers");
        assert!(s.current.contains("auto (2) as advised"), "{}", s.current);
        assert!(get(&f, "nginx.worker_processes").is_some());
    }
}

#[test]
fn silent_without_kept_connections() {
    // fastcgi_keep_conn off or absent: php-fpm closes after each response.
    for location in ["   fastcgi_keep_conn off;\n", ""] {
        assert!(get(&run(2, &nginx(Some("2"), Some(4), location), &fpm(1)), ID).is_none());
    }
    // No keepalive in the upstream: nothing is cached.
    assert!(get(&run(2, &nginx(Some("2"), None, KEEP), &fpm(1)), ID).is_none());
    // fastcgi_pass to an address: an implicit upstream has no cache.
    let direct = "worker_processes 2;\nevents {}\nhttp { server { location ~ \\.php$ { fastcgi_pass 127.0.0.1:9000; fastcgi_keep_conn on; } } }\n";
    assert!(get(&run(2, direct, &fpm(1)), ID).is_none());
}

#[test]
fn keep_conn_inherited_from_http_counts_and_a_sibling_location_does_not() {
    let inherited =
        nginx(Some("2"), Some(1), "").replace("http {\n", "http {\n fastcgi_keep_conn on;\n");
    assert!(get(&run(2, &inherited, &fpm(2)), ID).is_some());
    let sibling = nginx(Some("2"), Some(1), "").replace(
        "  location ~ \\.php$ {",
        "  location /other { fastcgi_keep_conn on; }\n  location ~ \\.php$ {",
    );
    assert!(get(&run(2, &sibling, &fpm(1)), ID).is_none());
}

#[test]
fn only_the_pool_the_upstream_reaches() {
    // The upstream goes to port 9001; the pool listens on 9000.
    let elsewhere = nginx(Some("2"), Some(1), KEEP).replace("9000", "9001");
    assert!(get(&run(2, &elsewhere, &fpm(1)), ID).is_none());
    // Over a Unix socket, by its path.
    let unix = nginx(Some("2"), Some(1), KEEP).replace("127.0.0.1:9000", "unix:/run/php/fpm.sock");
    let pool = fpm(2).replace("127.0.0.1:9000", "/run/php/fpm.sock");
    let f = run(2, &unix, &pool);
    assert!(get(&f, ID).is_some());
    // Two pools: only the one behind the kept connections.
    let two = format!(
        "{}[other]\nlisten = 127.0.0.1:9002\npm = static\npm.max_children = 1\npm.max_requests = 500\n",
        fpm(2)
    );
    let f = run(2, &nginx(Some("2"), Some(1), KEEP), &two);
    let hits: Vec<&Finding> = f.iter().filter(|x| x.id == ID).collect();
    assert_eq!(hits.len(), 1);
    assert!(
        hits[0].current.starts_with("pool www:"),
        "{}",
        hits[0].current
    );
}

/// The lab's own nginx-php-fpm configs (as `lab config` renders them), read as any tree
/// is: the configuration seed 003's forum tune found hanging is named, with the children
/// the lab test (crates/lab/tests/stacks.rs) then shows answering every request.
#[test]
fn the_lab_stack_it_was_found_on() {
    let advise = |children: &str| {
        let dir = tempfile::tempdir().unwrap();
        let kind = webtune_lab::StackKind::NginxPhpFpm;
        let sets: Vec<String> = [
            "pm=static",
            "worker_processes=2",
            "upstream_keepalive=1",
            children,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let settings = webtune_lab::settings_for(kind, &sets).unwrap();
        let layout = webtune_lab::Layout {
            dir: dir.path().join("stack"),
            docroot: dir.path().join("www"),
            ports: vec![9000, 8081],
            privileged: false,
            addresses: 1,
        };
        let programs = webtune_lab::servers::Programs::discover();
        let rendered = webtune_lab::render(kind, &settings, &layout, &programs).unwrap();
        let text = |name: &str| {
            rendered
                .configs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.clone())
                .unwrap_or_else(|| panic!("no {name}"))
        };
        run(2, &text("nginx.conf"), &text("php-fpm.conf"))
    };
    let f = advise("pm.max_children=1");
    let s = get(&f, ID).expect("the forum's hanging configuration");
    assert_eq!(s.recommended, "pm.max_children = 3");
    assert!(get(&advise("pm.max_children=3"), ID).is_none());
}
