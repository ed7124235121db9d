//! php-fpm beyond its memory: children against the cores (PHP requests are CPU work
//! between waits on the database: fewer children than cores leaves cores idle), the
//! opcache (off: every request compiles every script; its shared memory counts once in
//! the budget), and `request_terminate_timeout` (0, the default: a stuck script holds
//! its child for ever; the front's read timeout is the most anyone waits for it). PHP's
//! own settings are read where php-fpm reads them: the pool's `php_admin_value` /
//! `php_value`, then the php.ini and `conf.d/*.ini` beside the fpm directory.

use super::{at, Layers};
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};
use std::path::PathBuf;
use webtune_conf::config::Parsed;
use webtune_conf::ini;

/// The ini files PHP reads for php-fpm beside its config: `php.ini`, then `conf.d/*.ini`
/// (sorted), in the fpm directory or its parent (Debian: /etc/php/8.2/fpm/).
fn ini_files(f: &Parsed) -> Vec<PathBuf> {
    let Some(dir) = f.main.parent() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for d in [Some(dir), dir.parent()].into_iter().flatten() {
        let ini = d.join("php.ini");
        if ini.is_file() {
            out.push(ini);
            let mut confd: Vec<PathBuf> = std::fs::read_dir(d.join("conf.d"))
                .map(|r| {
                    r.flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|e| e == "ini"))
                        .collect()
                })
                .unwrap_or_default();
            confd.sort();
            out.extend(confd);
            break;
        }
    }
    out
}

/// A PHP setting for the pool's children, with where it was read: the pool's
/// `php_admin_value[KEY]`/`php_value[KEY]` (`php_admin_flag`/`php_flag` for switches),
/// else the last of the ini files.
pub(crate) fn setting(f: &Parsed, key: &str) -> Option<(String, String)> {
    let names = [
        format!("php_admin_value[{key}]"),
        format!("php_value[{key}]"),
        format!("php_admin_flag[{key}]"),
        format!("php_flag[{key}]"),
    ];
    if let Some(d) = f.directives.iter().rfind(|d| names.contains(&d.name)) {
        return Some((d.value().to_string(), format!("{}: {}", d.name, d.at())));
    }
    let mut found = None;
    for file in ini_files(f) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.starts_with(';') {
                continue;
            }
            if let Some((k, v)) = t.split_once('=') {
                if k.trim() == key {
                    let v = v.split(';').next().unwrap_or(v).trim().trim_matches('"');
                    found = Some((
                        v.to_string(),
                        format!("{key}: {}:{}", file.display(), n + 1),
                    ));
                }
            }
        }
    }
    found
}

fn off(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "0" | "off" | "false" | "no"
    )
}

/// The opcache's shared memory (KiB), counted once for all of php-fpm's children, when
/// the opcache is known to be loaded and on.
pub(crate) fn opcache_kib(f: &Parsed) -> Option<(u64, String)> {
    let loaded = ini_files(f).iter().any(|p| {
        std::fs::read_to_string(p).is_ok_and(|t| {
            t.lines()
                .any(|l| l.trim().starts_with("zend_extension") && l.contains("opcache"))
        })
    });
    if !loaded {
        return None;
    }
    if setting(f, "opcache.enable").is_some_and(|(v, _)| off(&v)) {
        return None;
    }
    match setting(f, "opcache.memory_consumption") {
        Some((v, at)) => {
            let mib: u64 = v.trim().parse().ok()?;
            Some((mib * 1024, at))
        }
        None => Some((
            128 * 1024,
            "opcache.memory_consumption's default 128 (MiB)".into(),
        )),
    }
}

/// The front's read timeout for php-fpm, in seconds: nginx's `fastcgi_read_timeout` (60 s
/// by default) or Apache's `ProxyTimeout`/`Timeout` (60 s) when either is read.
fn front_timeout(l: &Layers) -> Option<(i64, String)> {
    if let (Some(n), Some((pass, _))) = (l.nginx, l.topology().nginx_fpm) {
        let d = n
            .parsed
            .all("fastcgi_read_timeout")
            .filter(|d| {
                d.context.len() <= pass.context.len()
                    && d.context.iter().zip(&pass.context).all(|(a, b)| a == b)
            })
            .max_by_key(|d| d.context.len());
        return Some(
            match d.and_then(|d| Some((super::timeouts::nginx_secs(d.value())?, d))) {
                Some((v, d)) => (v, format!("fastcgi_read_timeout {}: {}", d.value(), d.at())),
                None => (60, "nginx's fastcgi_read_timeout default 60s".into()),
            },
        );
    }
    if let (Some(a), Some(_)) = (l.apache, l.topology().apache_fpm) {
        let d = a.get("ProxyTimeout").or_else(|| a.get("Timeout"));
        return Some(match d.and_then(|d| Some((d.int()?, d))) {
            Some((v, d)) => (v, format!("{} {}: {}", d.name, d.value(), d.at())),
            None => (60, "Apache's Timeout default 60".into()),
        });
    }
    None
}

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let Some(f) = l.php_fpm else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let cores = l.host.cores.max(1) as i64;
    let front = front_timeout(l);
    for pool in ini::pools(f) {
        let Some((children, d)) = &pool.max_children else {
            continue;
        };
        if *children < cores {
            out.push(
                Finding::new("php_fpm.children_cores", Severity::Info, "php-fpm")
                    .directives(&["pm.max_children"])
                    .values(format!("pool {}: pm.max_children {children} on {cores} cores", pool.name), format!("pm.max_children ≥ {cores} (within the memory budget)"))
                    .why(format!("A PHP request is CPU work between waits on the database: with {children} children at most {children} of the {cores} cores run PHP at once, and requests queue while cores idle. One per core at least; two per core keep them busy while half the children wait (seed 000)."))
                    .evidence(format!("pm.max_children = {}: {}", d.value(), d.at()))
                    .evidence(format!("host: {cores} cores"))
                    .source("seed 000 (two busy workers per core); php-fpm manual, pm.max_children")
                    .constrain(
                        Constraint::on("php-fpm", "pm.max_children", *children, Some(d), &f.main, None)
                            .bound(Bound::AtLeast(cores), format!("one child per core × {cores} cores"), "seed 000"),
                    ),
            );
        }
        let rtt = f.directives.iter().rfind(|x| {
            x.name == "request_terminate_timeout" && x.context.first() == Some(&pool.name)
        });
        let rtt_v = rtt
            .and_then(|x| super::timeouts::nginx_secs(x.value()))
            .unwrap_or(0);
        if let Some((front_s, front_at)) = &front {
            if rtt_v == 0 || rtt_v > *front_s {
                let want = *front_s;
                let place = match rtt {
                    Some(x) => crate::change::set(Some(x), &x.file, None, String::new()),
                    None => crate::change::Change {
                        file: d.file.clone(),
                        line: None,
                        section: Some(pool.name.clone()),
                        text: String::new(),
                    },
                };
                let c = Constraint {
                    place,
                    ..Constraint::on(
                        "php-fpm",
                        "request_terminate_timeout",
                        rtt_v,
                        rtt,
                        &f.main,
                        Some(&pool.name),
                    )
                    .unit("s")
                    .bound(
                        Bound::Prefer(want),
                        format!("the front's read timeout: {front_at}"),
                        "php-fpm manual, request_terminate_timeout",
                    )
                };
                out.push(
                    Finding::new("php_fpm.request_terminate_timeout", Severity::Info, "php-fpm")
                        .directives(&["request_terminate_timeout"])
                        .values(
                            format!("pool {}: request_terminate_timeout {}", pool.name, if rtt_v == 0 { "0 (never)".to_string() } else { format!("{rtt_v}s") }),
                            format!("request_terminate_timeout = {want}s"),
                        )
                        .why(format!(
                            "The front stops waiting after {want} s ({front_at}) and answers 504, but the child keeps running the script {}: it holds a child (and its database connection) nobody waits for. max_execution_time does not count time spent in the database or sleeping. The trade: a legitimately long request (an export, an import) is cut at {want} s too; give those a pool of their own.",
                            if rtt_v == 0 { "for ever".to_string() } else { format!("up to {rtt_v} s") }
                        ))
                        .evidence(at(rtt, "request_terminate_timeout", 0))
                        .evidence(front_at.clone())
                        .source("php-fpm manual, request_terminate_timeout; nginx manual, fastcgi_read_timeout")
                        .constrain(c),
                );
            }
        }
    }
    // The opcache off: every request compiles every script it includes.
    if let Some((v, at_)) = setting(f, "opcache.enable").filter(|(v, _)| off(v)) {
        out.push(
            Finding::new("php_fpm.opcache", Severity::Warn, "php-fpm")
                .directives(&["opcache.enable"])
                .values(format!("opcache.enable = {v}"), "opcache.enable = 1")
                .why("Without the opcache each request parses and compiles every PHP file it includes (a framework: hundreds), which is most of a simple page's CPU time.".to_string())
                .evidence(at_)
                .source("PHP manual, OPcache (\"improves PHP performance by storing precompiled script bytecode in shared memory\")"),
        );
    }
    out
}
