//! Apache's MPM arithmetic (MaxRequestWorkers against ServerLimit × ThreadsPerChild,
//! ThreadLimit, spare threads), the MPM against the PHP in use (mod_php needs prefork),
//! KeepAlive's timeout for the MPM in use (for clients, not behind a proxy), and
//! MaxConnectionsPerChild with mod_php; and, on the planned MaxRequestWorkers, the limits
//! that follow it (ServerLimit, StartServers, the spare workers: httpd's AH00318 and its
//! silent caps). With the MPM unknown nothing MPM-specific is sized.

use super::{at, ApacheMpm, Layers};
use crate::change::set;
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};
use crate::plan::Plan;
use webtune_conf::apache::ApacheVersion;

const MANUAL: &str = "Apache 2.4 manual, mpm_common and the MPM pages";

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let Some(a) = l.apache else { return Vec::new() };
    let main = a.parsed.main.clone();
    let Some(m) = ApacheMpm::of(a) else {
        return unknown_mpm_rules(l, a);
    };
    let mrw_name = m.max_workers_name().to_string();
    let mrw_at = at(m.max_workers_at, "MaxRequestWorkers", m.max_workers);
    let mpm_at = mpm_at(a);
    let mut out = Vec::new();
    let mrw = Constraint::on(
        "apache2",
        &mrw_name,
        m.max_workers,
        m.max_workers_at,
        &main,
        None,
    );

    if m.threaded {
        let limit = a.get_int("ThreadLimit");
        let thread_limit = limit.map_or(64, |(v, _)| v);
        if m.threads_per_child > thread_limit {
            out.push(
                Finding::new("apache.mpm.thread_limit", Severity::Warn, "apache2")
                    .directives(&["ThreadsPerChild", "ThreadLimit"])
                    .values(format!("ThreadsPerChild {} > ThreadLimit {thread_limit}", m.threads_per_child), format!("ThreadLimit {}", m.threads_per_child))
                    .why(format!("Apache lowers ThreadsPerChild to ThreadLimit ({thread_limit}); each process runs {thread_limit} threads, not {}.", m.threads_per_child))
                    .evidence(at(m.threads_per_child_at, "ThreadsPerChild", m.threads_per_child))
                    .evidence(at(limit.map(|x| x.1), "ThreadLimit", 64))
                    .source(MANUAL)
                    .constrain(Constraint::on("apache2", "ThreadLimit", thread_limit, limit.map(|x| x.1), &main, None).bound(
                        Bound::AtLeast(m.threads_per_child),
                        format!("ThreadsPerChild {} is capped at ThreadLimit", m.threads_per_child),
                        MANUAL,
                    )),
            );
        }
        if m.max_workers % m.threads_per_child != 0 {
            let down = m.max_workers / m.threads_per_child * m.threads_per_child;
            out.push(
                Finding::new("apache.mpm.multiple", Severity::Info, "apache2")
                    .directives(&[&mrw_name, "ThreadsPerChild"])
                    .values(format!("{mrw_name} {}", m.max_workers), format!("{mrw_name} a multiple of ThreadsPerChild {}", m.threads_per_child))
                    .why(format!(
                        "{mrw_name} {} is not a multiple of ThreadsPerChild {}: Apache rounds it down to {} ({} processes × {}).",
                        m.max_workers, m.threads_per_child, down, down / m.threads_per_child, m.threads_per_child
                    ))
                    .evidence(mrw_at.clone())
                    .evidence(at(m.threads_per_child_at, "ThreadsPerChild", m.threads_per_child))
                    .source(MANUAL)
                    .constrain(mrw.bound(
                        Bound::MultipleOf(m.threads_per_child),
                        format!("whole processes of ThreadsPerChild {}", m.threads_per_child),
                        MANUAL,
                    )),
            );
        }
        let min_spare = a.get_int("MinSpareThreads");
        let max_spare = a.get_int("MaxSpareThreads");
        let (min_v, max_v) = (
            min_spare.map_or(75, |x| x.0),
            max_spare.map_or(250, |x| x.0),
        );
        if max_v < min_v + m.threads_per_child {
            let want = min_v + m.threads_per_child;
            out.push(
                Finding::new("apache.mpm.spare_threads", Severity::Info, "apache2")
                    .directives(&["MaxSpareThreads", "MinSpareThreads", "ThreadsPerChild"])
                    .values(format!("MaxSpareThreads {max_v}"), format!("MaxSpareThreads {want}"))
                    .why(format!("MaxSpareThreads must be ≥ MinSpareThreads + ThreadsPerChild = {min_v} + {} = {want}; Apache raises it itself, so the setting does not mean what it says.", m.threads_per_child))
                    .evidence(at(max_spare.map(|x| x.1), "MaxSpareThreads", 250))
                    .evidence(at(min_spare.map(|x| x.1), "MinSpareThreads", 75))
                    .source(MANUAL)
                    .constrain(Constraint::on("apache2", "MaxSpareThreads", max_v, max_spare.map(|x| x.1), &main, None).bound(
                        Bound::AtLeast(want),
                        format!("MinSpareThreads {min_v} + ThreadsPerChild {}", m.threads_per_child),
                        MANUAL,
                    )),
            );
        }
    }

    // The MPM against the PHP in use.
    if let Some(php) = a.mod_php() {
        if m.threaded {
            out.push(
                Finding::new("apache.mpm.php", Severity::Critical, "apache2")
                    .directives(&["LoadModule"])
                    .values(format!("{} MPM with mod_php", m.mpm), "prefork MPM with mod_php, or event MPM with php-fpm (mod_proxy_fcgi)")
                    .why("mod_php is not thread-safe in Debian's builds: a threaded MPM runs PHP requests of one process concurrently in one interpreter.".to_string())
                    .evidence(mpm_at.clone())
                    .evidence(format!("LoadModule {}: {}", php.name, php.at))
                    .source("PHP manual, installation on Apache 2 (\"use the prefork MPM\"); Debian's libapache2-mod-php conflicts with threaded MPMs"),
            );
        }
    } else if !m.threaded && a.proxies_to_fpm().is_some() {
        out.push(
            Finding::new("apache.mpm.php", Severity::Info, "apache2")
                .directives(&["LoadModule"])
                .values("prefork MPM, PHP in php-fpm", "event MPM (a2dismod mpm_prefork; a2enmod mpm_event)")
                .why("With PHP in php-fpm no Apache process holds an interpreter: prefork's one process per connection only costs memory; event serves idle keep-alive connections without a thread each.".to_string())
                .evidence(mpm_at.clone())
                .source(MANUAL),
        );
    }

    // KeepAlive holds a process (prefork) or thread (worker) for the whole timeout; behind
    // a proxy the clients are the proxy's pooled connections (rules/timeouts.rs).
    let keepalive_on = a
        .get("KeepAlive")
        .is_none_or(|d| d.value().eq_ignore_ascii_case("on"));
    let kat = a.get_int("KeepAliveTimeout");
    let timeout = kat.map_or(5, |x| x.0);
    let behind_proxy = l.topology().nginx_apache.is_some();
    if keepalive_on && m.mpm != "event" && timeout > 5 && !behind_proxy {
        let idle = m.max_workers;
        out.push(
            Finding::new("apache.keepalive_timeout", Severity::Warn, "apache2")
                .directives(&["KeepAliveTimeout", "KeepAlive"])
                .values(format!("KeepAliveTimeout {timeout}"), "KeepAliveTimeout 2")
                .why(format!(
                    "With the {} MPM an idle keep-alive connection holds a whole {} for KeepAliveTimeout: {idle} workers ÷ {timeout} s idle each lets only ≈{} new clients per second in while all wait; 2 s keeps the reuse and frees the worker.",
                    m.mpm,
                    if m.threaded { "thread" } else { "process" },
                    idle / timeout.max(1)
                ))
                .evidence(at(kat.map(|x| x.1), "KeepAliveTimeout", 5))
                .evidence(mpm_at.clone())
                .source("seed 001 (KeepAliveTimeout 15 → 2); Apache manual, KeepAliveTimeout")
                .change(Some(set(kat.map(|x| x.1), &main, None, "KeepAliveTimeout 2".into()))),
        );
    }

    out.extend(max_connections_per_child(a));
    out
}

/// `LoadModule mpm_X_module: FILE:LINE`, or where a compiled-in MPM was learned.
fn mpm_at(a: &webtune_conf::apache::ApacheConfig) -> String {
    a.mpm()
        .map(|(name, lm)| format!("LoadModule mpm_{name}_module: {}", lm.at))
        .unwrap_or_default()
}

/// With the MPM unknown: what does not depend on it (mod_php's recycling), and KeepAlive
/// for an Apache 2.2 or older, whose MPMs (prefork, worker; event was experimental) all
/// hold a worker through the keep-alive wait.
fn unknown_mpm_rules(l: &Layers, a: &webtune_conf::apache::ApacheConfig) -> Vec<Finding> {
    let mut out = max_connections_per_child(a);
    let kat = a.get_int("KeepAliveTimeout");
    let timeout = kat.map_or(15, |x| x.0);
    let keepalive_on = a
        .get("KeepAlive")
        .is_none_or(|d| d.value().eq_ignore_ascii_case("on"));
    if a.dialect.version == ApacheVersion::V22
        && keepalive_on
        && timeout > 5
        && l.topology().nginx_apache.is_none()
    {
        out.push(
            Finding::new("apache.keepalive_timeout", Severity::Warn, "apache2")
                .directives(&["KeepAliveTimeout", "KeepAlive"])
                .values(format!("KeepAliveTimeout {timeout}"), "KeepAliveTimeout 2")
                .why(format!(
                    "Apache 2.2's MPMs (prefork, worker; its event MPM was experimental) hold a worker through the whole keep-alive wait: an idle client holds one for {timeout} s; 2 s keeps the reuse and frees the worker. ({})",
                    super::mpm_unknown(l)
                ))
                .evidence(at(kat.map(|x| x.1), "KeepAliveTimeout", 15))
                .evidence(a.dialect.to_string())
                .source("seed 001 (KeepAliveTimeout 15 → 2); Apache 2.2 manual, KeepAliveTimeout")
                .change(Some(set(kat.map(|x| x.1), &a.parsed.main, None, "KeepAliveTimeout 2".into()))),
        );
    }
    out
}

/// mod_php processes grow; MaxConnectionsPerChild recycles them.
fn max_connections_per_child(a: &webtune_conf::apache::ApacheConfig) -> Vec<Finding> {
    let main = a.parsed.main.clone();
    let mut out = Vec::new();
    let mcpc = a.get_int("MaxConnectionsPerChild");
    if a.mod_php().is_some() && mcpc.is_none_or(|x| x.0 == 0) {
        let name = mcpc.map_or("MaxConnectionsPerChild".to_string(), |x| x.1.name.clone());
        out.push(
            Finding::new("apache.max_connections_per_child", Severity::Info, "apache2")
                .directives(&[&name])
                .values(format!("{name} {}", mcpc.map_or(0, |x| x.0)), format!("{name} 1000"))
                .why("0 means a process lives forever: a PHP extension or script that leaks memory grows every process until the memory budget no longer holds. 1000 connections per child recycles them at a negligible cost.".to_string())
                .evidence(at(mcpc.map(|x| x.1), "MaxConnectionsPerChild", 0))
                .source("seed 001 (MaxRequestsPerChild 1000); Apache manual, MaxConnectionsPerChild")
                .change(Some(set(mcpc.map(|x| x.1), &main, None, format!("{name} 1000")))),
        );
    }
    out
}

/// The limits that follow the planned MaxRequestWorkers: ServerLimit ≥ ⌈MaxRequestWorkers
/// ÷ ThreadsPerChild⌉ processes (httpd otherwise lowers the workers, AH00318 "would
/// exceed ServerLimit"), and StartServers and the spare workers within them (httpd caps
/// StartServers silently, and a MinSpareThreads at or above MaxRequestWorkers keeps it
/// spawning children it may not have: AH10159 "within MinSpareThreads of
/// MaxRequestWorkers"). Prefork counts in processes.
pub(super) fn derived(l: &Layers, plan: &Plan) -> Vec<Finding> {
    let Some(a) = l.apache else { return Vec::new() };
    let Some(m) = ApacheMpm::of(a) else {
        return Vec::new();
    };
    let main = a.parsed.main.clone();
    let mrw_name = m.max_workers_name().to_string();
    let planned = plan.value_or("apache2", &mrw_name, m.max_workers);
    let t = m.threads_per_child;
    let needed = (planned + t - 1) / t;
    let was = if planned == m.max_workers {
        String::new()
    } else {
        format!(" (planned; {} now)", m.max_workers)
    };
    let mut out = Vec::new();
    if needed > m.server_limit {
        let ceiling = m.server_limit * t;
        out.push(Finding::new("apache.mpm.server_limit", Severity::Warn, "apache2")
            .directives(&[&mrw_name, "ServerLimit", "ThreadsPerChild"])
            .values(
                format!("{mrw_name} {planned}{was} > ServerLimit {} × ThreadsPerChild {t} = {ceiling}", m.server_limit),
                format!("ServerLimit {needed}"),
            )
            .why(format!(
                "Apache caps {mrw_name} at ServerLimit × ThreadsPerChild = {} × {t} = {ceiling} and says so only in its log (AH00318 \"would exceed ServerLimit\"); {planned} workers need ⌈{planned} ÷ {t}⌉ = {needed} processes.",
                m.server_limit
            ))
            .evidence(at(m.max_workers_at, "MaxRequestWorkers", m.max_workers))
            .evidence(at(m.server_limit_at, "ServerLimit", m.server_limit))
            .evidence(mpm_at(a))
            .source("Apache 2.4 manual, ServerLimit; httpd's worker.c/event.c (AH00318)")
            .constrain(
                Constraint::on("apache2", "ServerLimit", m.server_limit, m.server_limit_at, &main, None).bound(
                    Bound::AtLeast(needed),
                    format!("⌈{mrw_name} {planned} ÷ ThreadsPerChild {t}⌉ processes"),
                    MANUAL,
                ),
            ));
    }
    if planned == m.max_workers {
        return out;
    }
    // StartServers and the spares, as the MPM reads them (defaults: event/worker 3, 75,
    // 250; prefork 5, 5, 10).
    let (start_default, min_name, min_default) = if m.threaded {
        (3, "MinSpareThreads", 75)
    } else {
        (5, "MinSpareServers", 5)
    };
    let start = a.get_int("StartServers");
    let start_v = start.map_or(start_default, |x| x.0);
    let min = a.get_int(min_name);
    let min_v = min.map_or(min_default, |x| x.0);
    // Processes at the planned workers; the spares a quarter of them (the defaults keep
    // 75 of 400 threads, event/worker; prefork 5 of 256 processes), at least one.
    let processes = needed.max(1);
    let min_cap = (planned / 4).max(1);
    let mut bounds = Vec::new();
    if start_v > processes {
        bounds.push((
            "StartServers",
            start_v,
            start.map(|x| x.1),
            processes,
            format!("at most the {processes} processes of {mrw_name} {planned}"),
        ));
    }
    if min_v >= planned {
        bounds.push((
            min_name,
            min_v,
            min.map(|x| x.1),
            min_cap,
            format!("below {mrw_name} {planned}: a quarter of it, at least 1"),
        ));
    }
    if bounds.is_empty() {
        return out;
    }
    let mut f = Finding::new("apache.mpm.follow", Severity::Info, "apache2")
        .directives(&bounds.iter().map(|b| b.0).chain([mrw_name.as_str()]).collect::<Vec<_>>())
        .values(
            bounds
                .iter()
                .map(|(n, v, _, _, _)| format!("{n} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
                + &format!(" with {mrw_name} {planned}{was}"),
            bounds
                .iter()
                .map(|(n, _, _, cap, _)| format!("{n} ≤ {cap}"))
                .collect::<Vec<_>>()
                .join(", "),
        )
        .why(format!(
            "{mrw_name} planned at {planned} ({processes} process{} of {t}): httpd caps StartServers at the process limit silently, and with {min_name} at or above {mrw_name} it keeps wanting spare workers it cannot start (AH10159 \"within MinSpareThreads of MaxRequestWorkers\" under load). They follow the planned workers.",
            if processes == 1 { "" } else { "es" }
        ))
        .evidence(at(m.max_workers_at, "MaxRequestWorkers", m.max_workers))
        .source("Apache 2.4 manual, StartServers, MinSpareThreads/MinSpareServers; httpd's event.c (AH10159)");
    for (name, v, d, cap, reason) in bounds {
        f = f.evidence(at(d, name, v)).constrain(
            Constraint::on("apache2", name, v, d, &main, None).bound(
                Bound::AtMost(cap),
                reason,
                MANUAL,
            ),
        );
    }
    out.push(f);
    out
}
