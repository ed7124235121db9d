//! Timeouts across the layers: a backend's keep-alive against the proxy's pool of idle
//! connections to it (the backend must not close a pooled connection before the proxy
//! stops reusing it: nginx's upstream `keepalive_timeout`, 60 s by default, against
//! Apache's `KeepAliveTimeout`, 5 s), Apache's `Timeout` behind nginx's
//! `proxy_read_timeout` (nginx gives up and answers 504 while the worker goes on), and an
//! Apache facing clients without mod_reqtimeout (a slow client holds a worker for the
//! whole `Timeout` per read).

use super::{at, Layers};
use crate::finding::{Change, Finding, Severity};
use crate::plan::{Bound, Constraint};
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
    let mut out = Vec::new();
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
                    Some(d) => super::set(Some(d), &d.file, None, String::new()),
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
