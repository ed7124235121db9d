//! Timeouts across the layers: a backend's keep-alive against the proxy's pool of idle
//! connections to it (the backend must not close a pooled connection before the proxy
//! stops reusing it: nginx's upstream `keepalive_timeout`, 60 s by default, against
//! Apache's `KeepAliveTimeout`, 5 s), Apache's `Timeout` behind nginx's
//! `proxy_read_timeout` (nginx gives up and answers 504 while the worker goes on), and an
//! Apache facing clients without mod_reqtimeout (a slow client holds a worker for the
//! whole `Timeout` per read); and nginx's own client side (`nginx_client`): keep-alive off or
//! held long, client timeouts above nginx's defaults, and request buffering turned off in
//! front of a backend whose workers a slow upload would then hold.

use super::{at, Layers};
use crate::change::Change;
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};
use webtune_conf::apache::ApacheVersion;
use webtune_conf::config::Directive;

/// nginx's upstream keepalive_timeout default (nginx 1.15.3+).
const NGINX_UPSTREAM_KEEPALIVE_S: i64 = 60;

/// A time in seconds as nginx writes it (`60`, `60s`, `1m`, `90s 60s`: the first), or as
/// php-fpm does (`30s`, `1m`); None for what is not one.
pub(crate) fn nginx_secs(v: &str) -> Option<i64> {
    let t = v.split_whitespace().next()?.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: i64 = t[..digits].parse().ok()?;
    Some(match &t[digits..] {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "ms" => (n + 999) / 1000,
        _ => return None,
    })
}

/// An Apache time in seconds (`5`, `300ms` in 2.4's KeepAliveTimeout).
fn apache_secs(d: &Directive) -> Option<i64> {
    let v = d.value().trim();
    match v.strip_suffix("ms") {
        Some(ms) => ms.trim().parse::<i64>().ok().map(|m| (m + 999) / 1000),
        None => v.parse().ok(),
    }
}

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let mut out = nginx_client(l);
    let Some(a) = l.apache else { return out };
    let topology = l.topology();
    let Some((pass, listen, block)) = topology.nginx_apache else {
        out.extend(reqtimeout(l));
        return out;
    };
    let Some(n) = l.nginx else { return out };
    // The pool of idle connections to Apache, when the upstream keeps one.
    if let Some(block) = block {
        let keepalive = n
            .parsed
            .directives
            .iter()
            .find(|d| d.block == block && d.name == "keepalive");
        if let Some(k) = keepalive {
            let upstream = k.context.last().cloned().unwrap_or_default();
            let kt = n
                .parsed
                .directives
                .iter()
                .find(|d| d.block == block && d.name == "keepalive_timeout");
            let kt_v = kt
                .and_then(|d| nginx_secs(d.value()))
                .unwrap_or(NGINX_UPSTREAM_KEEPALIVE_S);
            let on = a
                .get("KeepAlive")
                .is_none_or(|d| d.value().eq_ignore_ascii_case("on"));
            let kat = a.get("KeepAliveTimeout");
            let kat_v = kat.and_then(apache_secs).unwrap_or(5);
            if !on {
                out.push(
                    Finding::new("proxy.backend_keepalive", Severity::Info, "nginx → apache2")
                        .directives(&["KeepAlive", "keepalive"])
                        .values(format!("{upstream}: keepalive {} with Apache's KeepAlive Off", k.value()), "KeepAlive On in Apache (its KeepAliveTimeout above the pool's idle time), or no pool")
                        .why("nginx keeps idle connections to Apache for reuse, but Apache closes each one after its response: the pool stays empty and every request opens a new connection.".to_string())
                        .evidence(format!("keepalive {}: {}", k.value(), k.at()))
                        .evidence(at(a.get("KeepAlive"), "KeepAlive", "On"))
                        .source("nginx manual, ngx_http_upstream_module keepalive; Apache manual, KeepAlive"),
                );
            } else if kat_v <= kt_v {
                let want = (kat_v - 1).max(1);
                let place = match kt {
                    Some(d) => crate::change::set(Some(d), &d.file, None, String::new()),
                    None => Change {
                        file: k.file.clone(),
                        line: None,
                        section: Some(upstream.clone()),
                        text: String::new(),
                    },
                };
                let c = Constraint {
                    place,
                    ..Constraint::on("nginx", "keepalive_timeout", kt_v, kt, &n.parsed.main, Some(&upstream))
                        .unit("s")
                        .bound(
                            Bound::AtMost(want),
                            format!("below Apache's KeepAliveTimeout {kat_v}s, so that nginx drops an idle pooled connection before Apache closes it"),
                            "nginx manual, upstream keepalive_timeout; Apache manual, KeepAliveTimeout",
                        )
                };
                out.push(
                    Finding::new("proxy.backend_keepalive", Severity::Warn, "nginx → apache2")
                        .directives(&["keepalive_timeout", "KeepAliveTimeout", "keepalive"])
                        .values(
                            format!("{upstream}: pooled connections kept {kt_v}s by nginx{}, closed by Apache after KeepAliveTimeout {kat_v}s", if kt.is_none() { " (keepalive_timeout's default 60s)" } else { "" }),
                            format!("keepalive_timeout {want}s; in the upstream (below Apache's {kat_v}s)"),
                        )
                        .why(format!(
                            "Apache closes an idle kept-alive connection after {kat_v} s; nginx reuses one for up to {kt_v} s. A request sent on a connection Apache is closing fails (\"upstream prematurely closed connection\"): nginx retries it on another connection when it may (idempotent methods), else the client gets a 502. The backend must outlive the pool's idle time. The trade: raising Apache's KeepAliveTimeout instead keeps the pool warm longer, but holds {} per idle pooled connection.",
                            match super::ApacheMpm::of(a) {
                                Some(m) if m.mpm == "event" => "nothing more than a socket with the event MPM",
                                Some(m) if m.threaded => "a thread",
                                Some(_) => "a whole process (prefork)",
                                None => "a worker (the MPM unknown)",
                            }
                        ))
                        .evidence(format!("keepalive {}: {}", k.value(), k.at()))
                        .evidence(at(kt, "keepalive_timeout", "60s"))
                        .evidence(at(kat, "KeepAliveTimeout", 5))
                        .evidence(format!("proxy_pass {}: {} → Listen {}: {}", pass.value(), pass.at(), listen.value(), listen.at()))
                        .source("nginx manual, ngx_http_upstream_module (keepalive, keepalive_timeout); Apache manual, KeepAliveTimeout; lab notes (\"upstream prematurely closed connection\" under load)")
                        .constrain(c),
                );
            }
        }
    }
    // Apache's Timeout against nginx's proxy_read_timeout.
    let read = n
        .parsed
        .all("proxy_read_timeout")
        .filter(|d| {
            d.context.len() <= pass.context.len()
                && d.context.iter().zip(&pass.context).all(|(x, y)| x == y)
        })
        .max_by_key(|d| d.context.len());
    let read_v = read.and_then(|d| nginx_secs(d.value())).unwrap_or(60);
    let timeout = a.get("Timeout");
    let default = if a.dialect.version == ApacheVersion::V22 {
        300
    } else {
        60
    };
    let t_v = timeout.and_then(apache_secs).unwrap_or(default);
    if t_v > read_v {
        out.push(
            Finding::new("proxy.backend_timeout", Severity::Info, "nginx → apache2")
                .directives(&["Timeout", "proxy_read_timeout"])
                .values(format!("Apache Timeout {t_v}s > nginx proxy_read_timeout {read_v}s"), format!("Timeout {read_v}"))
                .why(format!(
                    "nginx stops waiting for Apache after {read_v} s and answers 504; Apache's worker goes on with the request (and its waits on the client side of the proxy) for up to {t_v} s, holding a worker nobody waits for. The trade: a request that really needs longer fails in both cases; raise both together for it."
                ))
                .evidence(at(timeout, "Timeout", default))
                .evidence(at(read, "proxy_read_timeout", "60s"))
                .source("Apache manual, Timeout; nginx manual, proxy_read_timeout")
                .constrain(
                    Constraint::on("apache2", "Timeout", t_v, timeout, &a.parsed.main, None)
                        .bound(Bound::AtMost(read_v), format!("nginx's proxy_read_timeout {read_v}s"), "nginx manual, proxy_read_timeout"),
                ),
        );
    }
    out
}

/// An Apache facing clients (no proxy in front) without mod_reqtimeout: a client that
/// sends its request slowly holds a worker for `Timeout` per read (slowloris).
fn reqtimeout(l: &Layers) -> Vec<Finding> {
    let Some(a) = l.apache else { return Vec::new() };
    if a.dialect.version == ApacheVersion::V22
        || a.has_module("reqtimeout_module")
        || a.modules.is_empty()
    {
        return Vec::new();
    }
    let timeout = a.get("Timeout");
    vec![Finding::new("apache.reqtimeout", Severity::Info, "apache2")
        .directives(&["LoadModule", "RequestReadTimeout", "Timeout"])
        .values("mod_reqtimeout not loaded", "LoadModule reqtimeout_module (Debian: a2enmod reqtimeout); its defaults: RequestReadTimeout header=20-40,MinRate=500 body=20,MinRate=500")
        .why(format!(
            "Without mod_reqtimeout a client that sends its request a byte at a time holds a worker for up to Timeout ({} s) per read: a few hundred such clients take every worker (slowloris). mod_reqtimeout limits the time to receive the headers and the body. The trade: a very slow legitimate upload is cut too.",
            timeout.and_then(apache_secs).unwrap_or(60)
        ))
        .evidence(format!("{} LoadModule lines read, none reqtimeout_module", a.modules.len()))
        .evidence(at(timeout, "Timeout", 60))
        .source("Apache manual, mod_reqtimeout; Debian's apache2 (enabled by default)")]
}

/// nginx's defaults on the client side (nginx manual, ngx_http_core_module): keepalive_timeout
/// 75s; client_header_timeout, client_body_timeout and send_timeout 60s.
const NGINX_CLIENT_KEEPALIVE_S: i64 = 75;
const NGINX_CLIENT_TIMEOUT_S: i64 = 60;

/// The client timeouts nginx applies per read or write (not to the whole request).
const NGINX_CLIENT_TIMEOUTS: [&str; 3] = [
    "client_header_timeout",
    "client_body_timeout",
    "send_timeout",
];

/// nginx facing its clients. An idle keep-alive connection costs nginx a connection slot
/// (`worker_connections`) and a little memory, never a worker, so nothing here is more than
/// Info, and each finding says what it trades: keep-alive off makes every request pay a new
/// connection (and TLS handshake); a long keep-alive or a long client timeout holds slots
/// for idle or slow clients. Request buffering off is the cross-layer case: nginx then
/// streams a slow upload to the backend, whose worker (an Apache process, a php-fpm child)
/// waits on the client for `client_body_timeout` per read.
fn nginx_client(l: &Layers) -> Vec<Finding> {
    let Some(n) = l.nginx else { return Vec::new() };
    let facing_clients = |d: &&Directive| {
        !d.context.iter().any(|c| c.starts_with("upstream")) && !d.context.is_empty()
    };
    let mut out = Vec::new();
    let keepalive: Vec<(&Directive, i64)> = n
        .parsed
        .all("keepalive_timeout")
        .filter(facing_clients)
        .filter_map(|d| Some((d, nginx_secs(d.value())?)))
        .collect();
    if let Some(&(off, _)) = keepalive.iter().find(|(_, v)| *v == 0) {
        out.push(
            Finding::new("nginx.keepalive_off", Severity::Info, "nginx")
                .directives(&["keepalive_timeout"])
                .values(format!("keepalive_timeout 0 (client keep-alive off): {}", off.at()), "keepalive_timeout 15s (any short value keeps the reuse)")
                .why("With keep-alive off every request from a client opens a new TCP connection (and a full or resumed TLS handshake), which costs the client a round trip and nginx a connect and an accept per request; a page of 30–50 requests (seed 001) pays it each time. An idle kept-alive connection costs nginx only a slot of worker_connections and a few hundred bytes, never a worker. The trade: every idle client holds a slot for the timeout.".to_string())
                .evidence(format!("keepalive_timeout {}: {}", off.joined(), off.at()))
                .source("seed 001 (KeepAlive On, a short timeout); nginx manual, keepalive_timeout"),
        );
    }
    if let Some(&(long, v)) = keepalive
        .iter()
        .filter(|(_, v)| *v > NGINX_CLIENT_KEEPALIVE_S)
        .max_by_key(|(_, v)| *v)
    {
        out.push(
            Finding::new("nginx.keepalive_timeout", Severity::Info, "nginx")
                .directives(&["keepalive_timeout", "worker_connections"])
                .values(format!("keepalive_timeout {v}s (nginx's default {NGINX_CLIENT_KEEPALIVE_S}s)"), format!("{NGINX_CLIENT_KEEPALIVE_S}s or less, unless the reuse is wanted (TLS)"))
                .why(format!("An idle client keeps its connection open for {v} s: at R new clients a second about R × {v} connections sit idle, each holding one of worker_connections' slots (nginx refuses new connections once they are all taken). The trade: a long timeout saves returning clients a new connection and TLS handshake (why some TLS configs keep 300 s); a short one frees the slots sooner."))
                .evidence(format!("keepalive_timeout {}: {}", long.joined(), long.at()))
                .evidence(at(n.parsed.last("worker_connections"), "worker_connections", 512))
                .source("nginx manual, keepalive_timeout and worker_connections"),
        );
    }
    let slow: Vec<(&Directive, i64)> = NGINX_CLIENT_TIMEOUTS
        .iter()
        .flat_map(|name| n.parsed.all(name))
        .filter(facing_clients)
        .filter_map(|d| Some((d, nginx_secs(d.value())?)))
        .filter(|(_, v)| *v > NGINX_CLIENT_TIMEOUT_S)
        .collect();
    if !slow.is_empty() {
        let mut f = Finding::new("nginx.client_timeouts", Severity::Info, "nginx")
            .directives(&NGINX_CLIENT_TIMEOUTS)
            .values(
                slow.iter().map(|(d, v)| format!("{} {v}s", d.name)).collect::<Vec<_>>().join(", "),
                format!("{NGINX_CLIENT_TIMEOUT_S}s each (nginx's defaults) unless slow links need more"),
            )
            .why("These timeouts apply between two reads or writes, not to the whole request: a client that sends or reads a byte just inside each timeout holds its connection as long as it likes, and a longer timeout lets fewer such clients take every slot of worker_connections (a slow-client attack on nginx costs slots, not workers). The trade: clients on very slow links (large uploads over mobile networks) are cut sooner with the defaults.".to_string())
            .source("nginx manual, client_header_timeout, client_body_timeout, send_timeout");
        for (d, _) in &slow {
            f = f.evidence(format!("{} {}: {}", d.name, d.joined(), d.at()));
        }
        out.push(f);
    }
    // Request buffering off in front of a backend: the upload reaches the backend as it
    // arrives, so a slow client holds a backend worker, not only an nginx slot.
    let unbuffered = ["proxy_request_buffering", "fastcgi_request_buffering"]
        .iter()
        .flat_map(|name| n.parsed.all(name))
        .find(|d| d.value().eq_ignore_ascii_case("off"));
    if let Some(d) = unbuffered {
        let topology = l.topology();
        let backend = if d.name.starts_with("proxy") {
            topology.nginx_apache.map(|_| "Apache")
        } else {
            l.php_fpm.map(|_| "php-fpm")
        };
        if let Some(backend) = backend {
            let body = n.parsed.last("client_body_timeout");
            out.push(
                Finding::new("nginx.request_buffering", Severity::Info, "nginx")
                    .directives(&[d.name.as_str(), "client_body_timeout"])
                    .values(format!("{} off", d.name), format!("{} on (nginx's default)", d.name))
                    .why(format!("With request buffering off nginx passes a request body to {backend} as it arrives, so a client uploading slowly holds one of {backend}'s workers (a process or child, the scarce resource behind nginx) for up to client_body_timeout per read. With buffering on (the default) nginx reads the whole body first and the backend sees it at once. The trade: buffering writes large bodies to nginx's temp files and delays the first byte reaching the backend (why streaming uploads turn it off)."))
                    .evidence(format!("{} {}: {}", d.name, d.joined(), d.at()))
                    .evidence(at(body, "client_body_timeout", "60s"))
                    .source("nginx manual, proxy_request_buffering and fastcgi_request_buffering"),
            );
        }
    }
    out
}
