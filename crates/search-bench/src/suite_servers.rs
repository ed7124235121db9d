//! The suite's named servers (`servers`, `server`), as data in `suite`'s form: HAProxy, web
//! and database servers, each built to test one way a search goes wrong at small budgets.
//! Apart from `suite` (the form and its evaluation) to keep each file short.

use crate::suite::{Latency, ParamDef, Server, Term};
use std::collections::BTreeMap;

fn map(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn int(name: &str, lo: i64, hi: i64, log: bool, default: i64) -> ParamDef {
    ParamDef {
        name: name.into(),
        int: Some([lo, hi]),
        log,
        choices: vec![],
        default: default.to_string(),
    }
}

fn words(name: &str, choices: &[&str], default: &str) -> ParamDef {
    ParamDef {
        name: name.into(),
        int: None,
        log: false,
        choices: choices.iter().map(|s| s.to_string()).collect(),
        default: default.into(),
    }
}

fn bump(param: &str, peak: f64, width: f64, log: bool, depth: f64) -> Term {
    Term::Bump {
        param: param.into(),
        by: None,
        peaks: map(&[("*", peak)]),
        width,
        log,
        depth,
    }
}

fn seed(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The suite's servers.
pub fn servers() -> Vec<Server> {
    let haproxy = |name: &str, noise: f64, what: &str| Server {
        name: name.into(),
        about: format!(
            "HAProxy in front of a pool: threads, maxconn, buffer size and balance algorithm; \
             a broad optimum, {what}"
        ),
        params: vec![
            int("nbthread", 1, 64, true, 1),
            int("maxconn", 100, 100_000, true, 2000),
            int("bufsize_kb", 4, 64, false, 16),
            words(
                "balance",
                &["roundrobin", "leastconn", "source"],
                "roundrobin",
            ),
        ],
        base_throughput: 40_000.0,
        base_p99_ms: 30.0,
        throughput: vec![
            bump("nbthread", 16.0, 1.2, true, 0.95),
            bump("maxconn", 20_000.0, 1.5, true, 0.2),
            bump("bufsize_kb", 24.0, 20.0, false, 0.05),
            Term::Choice {
                param: "balance".into(),
                mult: map(&[("roundrobin", 0.97), ("leastconn", 1.0), ("source", 0.85)]),
            },
        ],
        p99: vec![Latency::Knee {
            param: "nbthread".into(),
            by: None,
            knees: map(&[("*", 48.0)]),
            power: 2.0,
        }],
        slo_p99_ms: 100.0,
        noise,
        start_noise: 0.0,
        seeds: vec![seed(&[("nbthread", "8")])],
    };
    vec![
        Server {
            name: "php-fpm-cliff".into(),
            about: "PHP-FPM on 4 GiB: each child takes 48 MiB; throughput grows with children \
                    until memory (children, OPcache, 300 MiB base) passes RAM and the box swaps \
                    (a cliff: throughput ×0.25, p99 ×4). The optimum sits at the edge."
                .into(),
            params: vec![
                int("pm_max_children", 1, 256, true, 5),
                int("opcache_mb", 32, 1024, true, 128),
                words("pm", &["static", "dynamic", "ondemand"], "dynamic"),
                int("max_requests", 0, 2000, false, 0),
            ],
            base_throughput: 3000.0,
            base_p99_ms: 40.0,
            throughput: vec![
                bump("pm_max_children", 120.0, 1.0, true, 0.95),
                bump("opcache_mb", 256.0, 1.2, true, 0.15),
                Term::Choice {
                    param: "pm".into(),
                    mult: map(&[("static", 1.0), ("dynamic", 0.97), ("ondemand", 0.85)]),
                },
                bump("max_requests", 500.0, 900.0, false, 0.04),
                Term::Cliff {
                    weights: map(&[("pm_max_children", 48.0), ("opcache_mb", 1.0)]),
                    base: 300.0,
                    limit: 4096.0,
                    drop: 0.25,
                    slow: 4.0,
                },
            ],
            p99: vec![
                Latency::Starve {
                    param: "pm_max_children".into(),
                    scale: 8.0,
                },
                Latency::Knee {
                    param: "pm_max_children".into(),
                    by: None,
                    knees: map(&[("*", 400.0)]),
                    power: 2.0,
                },
            ],
            slo_p99_ms: 300.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("pm_max_children", "50")])],
        },
        Server {
            name: "mariadb-contention".into(),
            about: "MariaDB under a write-heavy load: innodb_thread_concurrency has a narrow \
                    optimum at 12 (fewer idles the cores, more contend for the same locks); \
                    buffer pool and I/O threads matter less."
                .into(),
            params: vec![
                int("thread_concurrency", 1, 256, true, 8),
                int("buffer_pool_mb", 128, 8192, true, 128),
                words("flush_method", &["fsync", "O_DIRECT", "O_DSYNC"], "fsync"),
                int("io_threads", 1, 64, true, 4),
            ],
            base_throughput: 5000.0,
            base_p99_ms: 10.0,
            throughput: vec![
                bump("thread_concurrency", 12.0, 0.35, true, 0.6),
                bump("buffer_pool_mb", 4096.0, 1.5, true, 0.5),
                Term::Choice {
                    param: "flush_method".into(),
                    mult: map(&[("fsync", 0.9), ("O_DIRECT", 1.0), ("O_DSYNC", 0.7)]),
                },
                bump("io_threads", 16.0, 1.5, true, 0.1),
            ],
            p99: vec![Latency::Knee {
                param: "thread_concurrency".into(),
                by: None,
                knees: map(&[("*", 64.0)]),
                power: 2.0,
            }],
            slo_p99_ms: 50.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("thread_concurrency", "16")])],
        },
        Server {
            name: "apache-mpm".into(),
            about: "Apache httpd: the MPM changes the best MaxRequestWorkers (prefork 40, \
                    worker 160, event 500) and where p99 starts to climb."
                .into(),
            params: vec![
                words("mpm", &["prefork", "worker", "event"], "prefork"),
                int("max_workers", 1, 1024, true, 64),
                int("keepalive_s", 1, 60, true, 5),
            ],
            base_throughput: 8000.0,
            base_p99_ms: 25.0,
            throughput: vec![
                Term::Bump {
                    param: "max_workers".into(),
                    by: Some("mpm".into()),
                    peaks: map(&[("prefork", 40.0), ("worker", 160.0), ("event", 500.0)]),
                    width: 0.5,
                    log: true,
                    depth: 0.9,
                },
                Term::Choice {
                    param: "mpm".into(),
                    mult: map(&[("prefork", 0.8), ("worker", 0.92), ("event", 1.0)]),
                },
                bump("keepalive_s", 5.0, 1.0, true, 0.1),
            ],
            p99: vec![Latency::Knee {
                param: "max_workers".into(),
                by: Some("mpm".into()),
                knees: map(&[("prefork", 64.0), ("worker", 400.0), ("event", 2000.0)]),
                power: 2.0,
            }],
            slo_p99_ms: 100.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("mpm", "event"), ("max_workers", "256")])],
        },
        Server {
            name: "nginx-infeasible-default".into(),
            about: "nginx as a proxy: one worker with 512 connections queues requests, so the \
                    default (and the one-worker-per-core seed) misses the p99 SLO; the A/A \
                    pair measures an infeasible configuration twice."
                .into(),
            params: vec![
                int("worker_processes", 1, 64, true, 1),
                int("worker_connections", 64, 16384, true, 512),
                int("keepalive_requests", 1, 10000, true, 100),
                words("proxy_buffering", &["on", "off"], "on"),
            ],
            base_throughput: 20_000.0,
            base_p99_ms: 50.0,
            throughput: vec![
                bump("worker_processes", 8.0, 0.8, true, 0.95),
                bump("worker_connections", 4096.0, 1.5, true, 0.3),
                bump("keepalive_requests", 1000.0, 2.0, true, 0.1),
                Term::Choice {
                    param: "proxy_buffering".into(),
                    mult: map(&[("on", 1.0), ("off", 0.9)]),
                },
            ],
            p99: vec![
                Latency::Starve {
                    param: "worker_processes".into(),
                    scale: 2.0,
                },
                Latency::Starve {
                    param: "worker_connections".into(),
                    scale: 2048.0,
                },
                Latency::Knee {
                    param: "worker_processes".into(),
                    by: None,
                    knees: map(&[("*", 24.0)]),
                    power: 2.0,
                },
            ],
            slo_p99_ms: 200.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("worker_processes", "8")])],
        },
        Server {
            name: "gunicorn-slo-cut".into(),
            about: "gunicorn: throughput peaks at 48 workers, but p99 passes the SLO at about \
                    23 (gevent), 20 (gthread) or 16 (sync) workers: the SLO cuts off the \
                    unconstrained optimum, and the best feasible point is at its edge."
                .into(),
            params: vec![
                int("workers", 1, 128, true, 4),
                int("threads", 1, 32, true, 1),
                words("worker_class", &["sync", "gthread", "gevent"], "sync"),
                int("backlog", 64, 4096, true, 2048),
            ],
            base_throughput: 6000.0,
            base_p99_ms: 20.0,
            throughput: vec![
                bump("workers", 48.0, 0.8, true, 0.95),
                bump("threads", 8.0, 1.0, true, 0.3),
                Term::Choice {
                    param: "worker_class".into(),
                    mult: map(&[("sync", 0.8), ("gthread", 0.95), ("gevent", 1.0)]),
                },
                bump("backlog", 512.0, 1.5, true, 0.04),
            ],
            p99: vec![Latency::Knee {
                param: "workers".into(),
                by: Some("worker_class".into()),
                knees: map(&[("sync", 16.5), ("gthread", 20.5), ("gevent", 23.5)]),
                power: 2.0,
            }],
            slo_p99_ms: 40.0,
            noise: 0.08,
            start_noise: 0.0,
            seeds: vec![seed(&[("workers", "17")])],
        },
        haproxy(
            "haproxy-noisy",
            0.15,
            "±15% run-to-run noise (a shared cloud VM)",
        ),
        haproxy(
            "haproxy-quiet",
            0.03,
            "±3% run-to-run noise (a quiet dedicated box)",
        ),
    ]
}

/// The server of this name.
pub fn server(name: &str) -> Option<Server> {
    servers().into_iter().find(|s| s.name == name)
}
