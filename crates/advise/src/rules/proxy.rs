//! Behind a proxy: backend workers per core (seed 000) for the Apache the proxy passes to
//! (matched by address, `rules/topology.rs`), nginx's worker_connections when every client
//! costs two connections, upstream keepalive with proxy_http_version 1.1, and the
//! ephemeral ports that new upstream connections use up.

use super::{at, ApacheMpm, Layers};
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};
use webtune_conf::config::Directive;
use webtune_conf::nginx::NginxConfig;

/// Seconds a closed connection's port stays in TIME_WAIT on Linux.
const TIME_WAIT_S: i64 = 60;

/// Clients assumed when no run says how many there are.
const ASSUMED_CLIENTS: i64 = 1024;

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let Some(n) = l.nginx else { return Vec::new() };
    let passes = n.proxy_passes();
    let fastcgi = n.parsed.all("fastcgi_pass").next();
    if passes.is_empty() && fastcgi.is_none() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let main = n.parsed.main.clone();
    let cores = l.host.cores.max(1) as i64;

    // Backend workers per core: only for the Apache this nginx proxies to.
    let topology = l.topology();
    let backend = l
        .apache
        .zip(topology.nginx_apache)
        .and_then(|(a, (pass, listen, _))| Some((a, ApacheMpm::of(a)?, pass, listen)));
    if let Some((a, m, first, listen)) = backend {
        let rec = 2 * cores;
        if m.max_workers > rec {
            let severity = if m.max_workers > 4 * rec {
                Severity::Warn
            } else {
                Severity::Info
            };
            let name = m.max_workers_name().to_string();
            out.push(
                Finding::new("proxy.backend_per_core", severity, "nginx → apache2")
                    .directives(&[&name])
                    .values(format!("{name} {} ({} per core)", m.max_workers, m.max_workers / cores), format!("{name} ≈ {rec} (2 per core){}", if m.threaded { format!(", in whole processes of ThreadsPerChild {}", m.threads_per_child) } else { String::new() }))
                    .why(format!(
                        "Behind nginx, Apache never waits on slow clients (nginx buffers them): 2 busy {} per core × {cores} cores = {rec} keep the CPUs busy; more only add memory and context switches.{}",
                        if m.threaded { "threads" } else { "processes" },
                        if m.threaded { format!(" The {} MPM runs them as processes of ThreadsPerChild {} threads: at least one whole process.", m.mpm, m.threads_per_child) } else { String::new() }
                    ))
                    .evidence(format!("proxy_pass {}: {}", first.joined(), first.at()))
                    .evidence(format!("Listen {}: {}", listen.joined(), listen.at()))
                    .evidence(at(m.max_workers_at, "MaxRequestWorkers", m.max_workers))
                    .evidence(format!("host: {cores} cores"))
                    .source("seed 000 (two busy Apache processes per core behind nginx)")
                    .constrain(
                        Constraint::on("apache2", &name, m.max_workers, m.max_workers_at, &a.parsed.main, None).bound(
                            Bound::Prefer(rec),
                            format!("2 busy workers per core × {cores} cores behind nginx"),
                            "seed 000",
                        ),
                    ),
            );
        }
    }

    // Every proxied client holds two connections in a worker.
    let (wp, wp_at) = n.worker_processes(l.host.cores);
    let (wc, wc_at) = n.worker_connections();
    let capacity = wp as i64 * wc / 2;
    let (clients, measured) = match l.evidence {
        Some(e) if e.connections > 0 => (e.connections as i64, true),
        _ => (ASSUMED_CLIENTS, false),
    };
    if capacity < clients {
        let want = (clients * 2 + wp as i64 - 1) / wp as i64;
        let want = (want.max(1) as u64).next_power_of_two() as i64;
        let mut f = Finding::new("nginx.worker_connections", if measured { Severity::Warn } else { Severity::Info }, "nginx")
            .directives(&["worker_connections", "worker_processes"])
            .values(format!("worker_connections {wc}"), format!("worker_connections {want}"))
            .why(format!(
                "Proxying, each client holds a client and an upstream connection: worker_processes {wp} × worker_connections {wc} ÷ 2 = {capacity} clients, below {clients} {}.",
                if measured { "clients of the run" } else { "(an assumed target; give --result for the real one)" }
            ))
            .evidence(at(wc_at, "worker_connections", 512))
            .evidence(at(wp_at, "worker_processes", 1))
            .source("nginx manual, worker_connections (\"includes connections with proxied servers\")");
        let wcc = Constraint::on(
            "nginx",
            "worker_connections",
            wc,
            wc_at,
            &main,
            Some("events"),
        );
        f = f
            .constrain(wcc.bound(
                Bound::AtLeast((clients * 2 + wp as i64 - 1) / wp as i64),
                format!("2 connections × {clients} clients ÷ worker_processes {wp}"),
                "nginx manual, worker_connections",
            ))
            .constrain(wcc.bound(
                Bound::Prefer(want),
                "the next power of two",
                "nginx manual, worker_connections",
            ));
        if let Some(e) = l.evidence.filter(|_| measured) {
            f = f.evidence(e.cite());
        }
        out.push(f);
    }

    // Upstream keepalive.
    let upstreams = n.upstreams();
    let mut without_keepalive: Option<&Directive> = None;
    for p in &passes {
        let target = p
            .value()
            .trim_start_matches("http://")
            .trim_start_matches("https://");
        let host = target.split(['/', ':']).next().unwrap_or("");
        let keepalive = upstreams
            .iter()
            .find(|(name, _)| name == host)
            .and_then(|(_, block)| {
                n.parsed
                    .directives
                    .iter()
                    .find(|d| d.block == *block && d.name == "keepalive")
            });
        match keepalive {
            Some(k) => {
                let version = in_scope(n, p, "proxy_http_version");
                let connection = n
                    .parsed
                    .all("proxy_set_header")
                    .filter(|d| prefix_of(d, p))
                    .find(|d| d.value().eq_ignore_ascii_case("Connection"));
                let v11 = version.is_some_and(|v| v.value() == "1.1");
                let cleared =
                    connection.is_some_and(|c| c.args.get(1).is_some_and(|v| v.is_empty()));
                if !v11 || !cleared {
                    out.push(
                        Finding::new("nginx.upstream_keepalive", Severity::Warn, "nginx")
                            .directives(&["keepalive", "proxy_http_version", "proxy_set_header"])
                            .values(
                                format!(
                                    "keepalive {} with proxy_http_version {}{}",
                                    k.value(),
                                    version.map_or("1.0 (default)", |v| v.value()),
                                    if cleared { "" } else { ", Connection header not cleared" }
                                ),
                                "proxy_http_version 1.1; proxy_set_header Connection \"\";",
                            )
                            .why("nginx speaks HTTP/1.0 to upstreams and sends \"Connection: close\" unless told otherwise: the upstream keepalive pool stays empty and every request opens a new connection.")
                            .evidence(format!("keepalive {}: {}", k.value(), k.at()))
                            .evidence(format!("proxy_pass {}: {}", p.joined(), p.at()))
                            .source("nginx manual, ngx_http_upstream_module keepalive")
                            .change(Some(crate::change::Change { file: p.file.clone(), line: None, section: Some(p.context.join(" > ")), text: "proxy_http_version 1.1;".into() }))
                            .change(Some(crate::change::Change { file: p.file.clone(), line: None, section: Some(p.context.join(" > ")), text: "proxy_set_header Connection \"\";".into() })),
                    );
                }
            }
            None => {
                if without_keepalive.is_none() {
                    without_keepalive = Some(p);
                }
            }
        }
    }
    if let Some(p) = without_keepalive {
        if let Some(f) = ephemeral_ports(l, p) {
            out.push(f);
        }
    }
    out
}

/// Is `d` in a block that encloses `p` (or `p`'s own block)? By block names: an
/// approximation when two sibling blocks have the same name.
fn prefix_of(d: &Directive, p: &Directive) -> bool {
    d.context.len() <= p.context.len() && d.context.iter().zip(&p.context).all(|(a, b)| a == b)
}

/// The innermost `name` that applies at `p`.
pub(super) fn in_scope<'a>(n: &'a NginxConfig, p: &Directive, name: &str) -> Option<&'a Directive> {
    n.parsed
        .all(name)
        .filter(|d| prefix_of(d, p))
        .max_by_key(|d| d.context.len())
}

/// The ports a proxy without upstream keepalive uses up: each new connection's local port
/// waits in TIME_WAIT for 60 s, unless `net.ipv4.tcp_tw_reuse` lets a new outgoing
/// connection take it after 1 s (1: everywhere; 2, the default since Linux 4.19: to
/// loopback only), and a Unix socket uses no port at all.
fn ephemeral_ports(l: &Layers, p: &Directive) -> Option<Finding> {
    let target = p
        .value()
        .trim_start_matches("http://")
        .trim_start_matches("https://");
    if target.starts_with("unix:") {
        return None;
    }
    let host = target.split(['/', ':']).next().unwrap_or("");
    // An upstream block's servers are where the connections go.
    let servers: Vec<String> = match l.nginx.map(|n| n.upstreams()) {
        Some(ups) => match ups.iter().find(|(name, _)| name == host) {
            Some((_, block)) => l
                .nginx
                .map(|n| {
                    n.parsed
                        .directives
                        .iter()
                        .filter(|d| d.block == *block && d.name == "server")
                        .map(|d| d.value().to_string())
                        .collect()
                })
                .unwrap_or_default(),
            None => vec![host.to_string()],
        },
        None => vec![host.to_string()],
    };
    if !servers.is_empty() && servers.iter().all(|s| s.starts_with("unix:")) {
        return None;
    }
    let loopback = !servers.is_empty()
        && servers.iter().all(|s| {
            let h = s.split(':').next().unwrap_or("");
            h == "localhost" || h.starts_with("127.") || s.starts_with("[::1]")
        });
    let reuse = l.host.sysctl_int("net.ipv4.tcp_tw_reuse");
    // Linux's default is 2 (loopback only); unknown counts as the default.
    let reuses = match reuse.unwrap_or(2) {
        1 => true,
        2 => loopback,
        _ => false,
    };
    let hold = if reuses { 1 } else { TIME_WAIT_S };
    let ports = l.host.ephemeral_ports();
    let limit = ports.map(|p| p / hold);
    let rate = l.evidence.map(|e| e.rate()).filter(|r| *r > 0.0);
    let severity = match (limit, rate) {
        (Some(lim), Some(r)) if r > lim as f64 * 0.5 => Severity::Warn,
        _ => Severity::Info,
    };
    let reuse_text = format!(
        "net.ipv4.tcp_tw_reuse {}{}",
        reuse.map_or("2 (the kernel's default; not read)".to_string(), |v| v
            .to_string()),
        if reuses {
            format!(
                ", backend {}: a new connection may reuse a port after 1 s in TIME_WAIT",
                if loopback { "on loopback" } else { "anywhere" }
            )
        } else if loopback {
            String::new()
        } else {
            ", backend not on loopback: no reuse".to_string()
        }
    );
    // The pool must not outlive the backend's own keep-alive (rules/timeouts.rs): with
    // the Apache it reaches known, the recommendation says so.
    let backend = l
        .topology()
        .nginx_apache
        .filter(|(pass, _, _)| *pass == p)
        .and(l.apache)
        .map(|a| {
            let kat = a
                .get("KeepAliveTimeout")
                .and_then(|d| d.int())
                .unwrap_or(5);
            format!(", and in that upstream keepalive_timeout {}s, below Apache's KeepAliveTimeout {kat}s (else Apache closes pooled connections nginx is about to reuse)", (kat - 1).max(1))
        })
        .unwrap_or_default();
    let mut f = Finding::new("proxy.ephemeral_ports", severity, "nginx")
        .directives(&["proxy_pass", "keepalive", "proxy_http_version"])
        .values(format!("proxy_pass {} without upstream keepalive", p.value()), format!("an upstream block with keepalive 16, proxy_http_version 1.1, proxy_set_header Connection \"\"{backend}"))
        .why(format!(
            "Without upstream keepalive every request opens a connection to the backend, whose local port then waits in TIME_WAIT ({TIME_WAIT_S} s, or 1 s where tcp_tw_reuse applies; here {hold} s: {reuse_text}): {} ports ÷ {hold} s ≈ {} new connections per second to one backend address{}.",
            ports.map_or("?".into(), |p| p.to_string()),
            limit.map_or("?".into(), |v| v.to_string()),
            rate.map_or(String::new(), |r| format!(", and the run made {r:.0} requests per second"))
        ))
        .evidence(format!("proxy_pass {}: {}", p.joined(), p.at()))
        .evidence(format!("host: net.ipv4.ip_local_port_range {}", l.host.sysctls.get("net.ipv4.ip_local_port_range").cloned().unwrap_or_default()))
        .evidence(format!("host: {reuse_text}"))
        .source("nginx manual, ngx_http_upstream_module keepalive; Linux TCP TIME_WAIT (60 s); Linux ip-sysctl.rst, tcp_tw_reuse (0, 1, 2 = loopback only, the default)");
    if let Some(e) = l.evidence {
        f = f.evidence(e.cite());
    }
    Some(f)
}
