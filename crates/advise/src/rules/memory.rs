//! Memory budget: the sum over the layers (Apache processes or php-fpm children × PSS
//! per process, MariaDB's global buffers + per-connection buffers × max_connections)
//! against the host's RAM. PSS counts shared pages once (seed 000 measured 9.8 MiB RSS
//! but 0.65 MiB PSS per extra mod_php child), so the sum does not double-count as
//! RSS-based calculators do.

use super::{fpm_children, mib, mysql_int, ApacheMpm, Layers};
use crate::finding::{Finding, Severity};
use crate::plan::{Bound, Constraint};
use webtune_conf::config::Directive;

/// Per-process figures used when nothing was measured (stated as assumptions).
const ASSUMED_MOD_PHP_KIB: u64 = 30 * 1024;
const ASSUMED_APACHE_KIB: u64 = 4 * 1024;
const ASSUMED_APACHE_THREADED_KIB: u64 = 12 * 1024;
const ASSUMED_FPM_KIB: u64 = 30 * 1024;

/// Share of RAM the servers may plan for (the rest: kernel, page cache, other programs).
const BUDGET_SHARE: f64 = 0.9;

/// A worker pool the budget can cut: `count` units of `per` KiB, each `scale` workers.
struct Pool<'a> {
    server: &'static str,
    name: String,
    per: u64,
    count: i64,
    scale: i64,
    current: i64,
    at: Option<&'a Directive>,
    main: std::path::PathBuf,
}

struct Layer {
    label: String,
    kib: u64,
    line: String,
}

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let total_kib = l.host.mem_total_kib;
    if total_kib == 0 {
        return Vec::new();
    }
    let mut layers: Vec<Layer> = Vec::new();
    let mut evidence: Vec<String> = Vec::new();
    let mut measured_all = true;
    let mut pools: Vec<Pool> = Vec::new();
    // MariaDB's buffer pool: (bytes, its directive, the my.cnf), to bound a larger one.
    let mut buffer_pool = None;

    if let Some(a) = l.apache {
        let m = ApacheMpm::of(a);
        let (per, how) = per_process(l, "apache2", &a.parsed.main, || {
            if m.mod_php {
                ASSUMED_MOD_PHP_KIB
            } else if m.threaded {
                ASSUMED_APACHE_THREADED_KIB
            } else {
                ASSUMED_APACHE_KIB
            }
        });
        measured_all &= !how.starts_with("assumed");
        let procs = m.processes().max(0) as u64;
        layers.push(Layer {
            label: "apache2".into(),
            kib: procs.saturating_mul(per),
            line: format!(
                "apache2 ({} MPM{}): {} processes × {} PSS ({how}) = {}",
                m.mpm,
                if m.mod_php { " + mod_php" } else { "" },
                procs,
                mib(per),
                mib(procs.saturating_mul(per))
            ),
        });
        if let Some(d) = m.max_workers_at {
            evidence.push(format!("{} {}: {}", d.name, d.joined(), d.at()));
        }
        // Threaded MPMs are cut in whole processes of ThreadsPerChild threads.
        pools.push(Pool {
            server: "apache2",
            name: m.max_workers_name().to_string(),
            per,
            count: m.processes(),
            scale: m.threads_per_child,
            current: m.max_workers,
            at: m.max_workers_at,
            main: a.parsed.main.clone(),
        });
    }
    if let Some(f) = l.php_fpm {
        if let Some((children, at)) = fpm_children(f) {
            let (per, how) = per_process(l, "php-fpm", &f.main, || ASSUMED_FPM_KIB);
            measured_all &= !how.starts_with("assumed");
            let n = children.max(0) as u64;
            layers.push(Layer {
                label: "php-fpm".into(),
                kib: n.saturating_mul(per),
                line: format!(
                    "php-fpm: {n} children (pm.max_children over {} pools) × {} PSS ({how}) = {}",
                    at.len(),
                    mib(per),
                    mib(n.saturating_mul(per))
                ),
            });
            for d in &at {
                evidence.push(format!("pm.max_children = {}: {}", d.value(), d.at()));
            }
            if at.len() == 1 {
                pools.push(Pool {
                    server: "php-fpm",
                    name: "pm.max_children".into(),
                    per,
                    count: children,
                    scale: 1,
                    current: children,
                    at: at.first().copied(),
                    main: f.main.clone(),
                });
            }
        }
    }
    if let Some(m) = l.mysql {
        let (pool, pool_at) = mysql_int(m, "innodb_buffer_pool_size", 128 << 20);
        buffer_pool = Some((pool, pool_at, m.main.clone()));
        let (key, _) = mysql_int(m, "key_buffer_size", 128 << 20);
        let (logbuf, _) = mysql_int(m, "innodb_log_buffer_size", 16 << 20);
        let (qc, _) = mysql_int(m, "query_cache_size", 1 << 20);
        let (conns, conns_at) = mysql_int(m, "max_connections", 151);
        let per_conn: u64 = [
            mysql_int(m, "sort_buffer_size", 2 << 20).0,
            mysql_int(m, "read_buffer_size", 128 << 10).0,
            mysql_int(m, "read_rnd_buffer_size", 256 << 10).0,
            mysql_int(m, "join_buffer_size", 256 << 10).0,
            mysql_int(m, "thread_stack", 292 << 10).0,
            mysql_int(m, "binlog_cache_size", 32 << 10).0,
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b));
        // MySQLTuner counts one in-memory temporary table, min(tmp_table_size,
        // max_heap_table_size), among the server's buffers.
        let (tmp, _) = mysql_int(m, "tmp_table_size", 16 << 20);
        let (heap, _) = mysql_int(m, "max_heap_table_size", 16 << 20);
        let tmp = tmp.min(heap);
        // Saturating: a 2P buffer pool or 2^64 connections is "does not fit", never a wrap.
        let global = [pool, key, logbuf, qc, tmp]
            .iter()
            .fold(0u64, |a, b| a.saturating_add(*b));
        let kib = global.saturating_add(conns.saturating_mul(per_conn)) / 1024;
        layers.push(Layer {
            label: "mariadb".into(),
            kib,
            line: format!(
                "mariadb: buffers {} (innodb_buffer_pool_size {} + key_buffer_size {} + log buffer {} + query cache {} + a temporary table min(tmp_table_size, max_heap_table_size) {}) + max_connections {conns} × {} per connection (sort+read+read_rnd+join buffers, thread stack, binlog cache; the worst case) = {}",
                mib(global / 1024), mib(pool / 1024), mib(key / 1024), mib(logbuf / 1024), mib(qc / 1024), mib(tmp / 1024), mib(per_conn / 1024), mib(kib)
            ),
        });
        for d in [pool_at, conns_at].into_iter().flatten() {
            evidence.push(format!("{} = {}: {}", d.name, d.value(), d.at()));
        }
    }
    layers.extend(tmpfs_layers(l));
    if layers.is_empty() {
        return Vec::new();
    }
    // PHP's memory_limit: what one script may take; every child at it is the worst case.
    let php_worst = l.php_fpm.and_then(|f| {
        let (children, _) = fpm_children(f)?;
        let (limit, at) = php_memory_limit(f)?;
        Some((
            (children.max(0) as u64).saturating_mul(limit),
            children,
            limit,
            at,
        ))
    });
    let sum: u64 = layers.iter().fold(0u64, |a, x| a.saturating_add(x.kib));
    let budget = (total_kib as f64 * BUDGET_SHARE) as u64;
    let share = sum as f64 / total_kib as f64 * 100.0;
    let worst_over = php_worst.as_ref().is_some_and(|(w, _, _, _)| {
        let fpm = layers
            .iter()
            .find(|x| x.label == "php-fpm")
            .map_or(0, |x| x.kib);
        sum.saturating_sub(fpm).saturating_add(*w) > total_kib
    });
    let mut severity = if sum > total_kib {
        Severity::Critical
    } else if sum > budget {
        Severity::Warn
    } else {
        Severity::Info
    };
    if !measured_all && severity == Severity::Critical {
        severity = Severity::Warn;
    }
    if worst_over && severity == Severity::Info {
        severity = Severity::Warn;
    }
    let calc = layers
        .iter()
        .map(|x| x.line.clone())
        .collect::<Vec<_>>()
        .join("; ");
    let mut f = Finding::new("memory.budget", severity, &layers.iter().map(|x| x.label.as_str()).collect::<Vec<_>>().join(" + "))
        .source("seed 001 (free RAM / MB per process → ServerLimit), MySQLTuner's maximum memory formula, PSS per process from /proc/PID/smaps_rollup");
    let mut recommended = format!(
        "at most {} ({}% of RAM {})",
        mib(budget),
        (BUDGET_SHARE * 100.0) as u32,
        mib(total_kib)
    );
    let mut directives: Vec<&str> = Vec::new();
    if sum > budget {
        // Shrink the biggest resizable pool so the sum fits: an upper bound on its count.
        if let Some(p) = pools
            .iter()
            .max_by_key(|p| p.per.saturating_mul(p.count.max(0) as u64))
        {
            let others = sum.saturating_sub(p.per.saturating_mul(p.count.max(0) as u64));
            let fit = (budget.saturating_sub(others) / p.per.max(1)).max(1) as i64;
            let cap = fit * p.scale;
            let unit = if p.scale > 1 {
                format!(" processes × ThreadsPerChild {} = {cap}", p.scale)
            } else {
                String::new()
            };
            recommended = format!(
                "{} ≤ {cap} (for {}): ({} budget − {} other layers) / {} per process = {fit}{unit}",
                p.name,
                p.server,
                mib(budget),
                mib(others),
                mib(p.per)
            );
            directives.push(if p.server == "php-fpm" {
                "pm.max_children"
            } else {
                "MaxRequestWorkers"
            });
            f = f.constrain(
                Constraint::on(p.server, &p.name, p.current, p.at, &p.main, None).bound(
                    Bound::AtMost(cap),
                    format!(
                        "memory budget: ({} − {} other layers) / {} per process = {fit}{unit}",
                        mib(budget),
                        mib(others),
                        mib(p.per)
                    ),
                    "MySQLTuner's maximum memory formula; seed 001 (free RAM / MB per process)",
                ),
            );
        }
    }
    directives.extend([
        "MaxRequestWorkers",
        "pm.max_children",
        "innodb_buffer_pool_size",
        "max_connections",
    ]);
    directives.dedup();
    // A buffer pool raised by another finding gets at most what the other layers leave.
    if let Some((pool, at, main)) = &buffer_pool {
        let room = budget.saturating_sub(sum.saturating_sub(pool / 1024)) / 1024;
        f = f.constrain(
            Constraint::on(
                "mariadb",
                "innodb_buffer_pool_size",
                (pool >> 20) as i64,
                *at,
                main,
                Some("mysqld"),
            )
            .unit("M")
            .structural(
                Bound::AtMost(room as i64),
                format!(
                    "memory budget: {} − the other layers {}",
                    mib(budget),
                    mib(sum.saturating_sub(pool / 1024))
                ),
                "seed 001; MySQLTuner's maximum memory formula",
            ),
        );
    }
    f = f
        .directives(&directives)
        .values(format!("{} worst case ({share:.0}% of RAM)", mib(sum)), recommended)
        .why(format!(
            "Sum over the layers {calc}; total {} against RAM {} (budget {}% = {}). {}",
            mib(sum),
            mib(total_kib),
            (BUDGET_SHARE * 100.0) as u32,
            mib(budget),
            if sum > budget {
                "At full load the host swaps, and a swapping web server is slower than one that queues."
            } else {
                "It fits."
            }
        ) + &php_worst.as_ref().map_or(String::new(), |(w, children, limit, at)| format!(
            " Worst case for PHP: {children} children × memory_limit {} ({at}) = {}{}.",
            mib(limit / 1024),
            mib(w / 1024),
            if worst_over { ", with the other layers more than RAM: a script that reaches memory_limit in many children at once swaps the host; lower memory_limit or pm.max_children" } else { ", within RAM with the other layers" }
        )))
        .evidence(format!("host: MemTotal {}, MemAvailable {}", mib(total_kib), mib(l.host.mem_available_kib)));
    for e in evidence {
        f = f.evidence(e);
    }
    vec![f]
}

/// PSS per worker process of a server: from the running server, else from the run's
/// samples when the run loaded that server alone, else the assumption.
fn per_process(
    l: &Layers,
    kind: &str,
    main: &std::path::Path,
    assumed: impl Fn() -> u64,
) -> (u64, String) {
    if let Some(s) = l.host.server_for(kind, main) {
        if let Some(p) = s.pss_per_worker_kib() {
            return (
                p.max(1),
                format!(
                    "measured: {} PSS over {} running workers of pid {}, where RSS would say {} per worker",
                    mib(s.workers_pss_kib),
                    s.workers,
                    s.master_pid,
                    mib(s.workers_rss_kib / s.workers.max(1) as u64)
                ),
            );
        }
    }
    if let Some(e) = l.evidence {
        let single = match kind {
            "apache2" => e.target.starts_with("apache"),
            _ => false,
        };
        if single && e.peak_processes > 0 && e.peak_pss_kib > 0 {
            let p = e.peak_pss_kib / e.peak_processes as u64;
            return (
                p.max(1),
                format!(
                    "measured in {}: peak PSS {} / {} processes",
                    e.file.display(),
                    mib(e.peak_pss_kib),
                    e.peak_processes
                ),
            );
        }
    }
    (
        assumed(),
        "assumed: no running process to measure; run it or give --result".into(),
    )
}

/// PHP's memory_limit for php-fpm's children, in bytes, with where it was read: the pool's
/// `php_admin_value[memory_limit]`/`php_value[memory_limit]`, else the php.ini beside the
/// fpm directory, else PHP's default 128M. None for -1 (no limit).
fn php_memory_limit(f: &webtune_conf::config::Parsed) -> Option<(u64, String)> {
    let parse = |v: &str| webtune_conf::ini::parse_size(v.trim().trim_matches('"'));
    if let Some(d) = f
        .directives
        .iter()
        .rfind(|d| d.name == "php_admin_value[memory_limit]" || d.name == "php_value[memory_limit]")
    {
        return parse(d.value()).map(|v| (v, format!("{}: {}", d.name, d.at())));
    }
    let dir = f.main.parent()?;
    for ini in [dir.join("php.ini"), dir.parent()?.join("php.ini")] {
        let Ok(text) = std::fs::read_to_string(&ini) else {
            continue;
        };
        let line = text
            .lines()
            .enumerate()
            .filter(|(_, l)| {
                l.split('=')
                    .next()
                    .is_some_and(|k| k.trim() == "memory_limit")
            })
            .last();
        if let Some((n, l)) = line {
            let v = l.split_once('=')?.1;
            return parse(v).map(|b| (b, format!("memory_limit: {}:{}", ini.display(), n + 1)));
        }
    }
    Some((128 << 20, "PHP's default 128M: no php.ini read".into()))
}

/// tmpfs mounts the configs write to (nginx's cache and temp paths, MariaDB's tmpdir,
/// PHP's session and upload directories): what is written there lives in RAM, up to the
/// mount's size (an nginx cache's max_size when smaller).
fn tmpfs_layers(l: &Layers) -> Vec<Layer> {
    let mut used: Vec<(String, String, u64)> = Vec::new();
    let mut paths: Vec<(String, String, Option<u64>)> = Vec::new();
    if let Some(n) = l.nginx {
        for d in n
            .parsed
            .directives
            .iter()
            .filter(|d| d.name.ends_with("_cache_path") || d.name.ends_with("_temp_path"))
        {
            let max = d
                .args
                .iter()
                .find_map(|a| a.strip_prefix("max_size="))
                .and_then(webtune_conf::ini::parse_size);
            paths.push((
                d.value().to_string(),
                format!("{} {}: {}", d.name, d.value(), d.at()),
                max,
            ));
        }
    }
    if let Some(m) = l.mysql {
        if let Some(d) = webtune_conf::ini::mysqld_value(m, "tmpdir") {
            paths.push((
                d.value().to_string(),
                format!("tmpdir = {}: {}", d.value(), d.at()),
                None,
            ));
        }
    }
    if let Some(f) = l.php_fpm {
        for d in f.directives.iter().filter(|d| {
            d.name.contains("[session.save_path]") || d.name.contains("[upload_tmp_dir]")
        }) {
            paths.push((
                d.value().trim_matches('"').to_string(),
                format!("{} = {}: {}", d.name, d.value(), d.at()),
                None,
            ));
        }
    }
    for (path, cite, max) in paths {
        let mount = l
            .host
            .tmpfs
            .iter()
            .filter(|(m, _)| std::path::Path::new(&path).starts_with(m))
            .max_by_key(|(m, _)| m.as_os_str().len());
        let Some((m, size)) = mount else { continue };
        let kib = max.map_or(*size, |b| (b / 1024).min(*size));
        let m = m.display().to_string();
        match used.iter_mut().find(|(x, _, _)| *x == m) {
            Some(u) => u.2 = u.2.max(kib),
            None => used.push((m, cite, kib)),
        }
    }
    used.into_iter()
        .map(|(m, cite, kib)| Layer {
            label: "tmpfs".into(),
            kib,
            line: format!("tmpfs {m} (RAM, up to its size): {} for {cite}", mib(kib)),
        })
        .collect()
}
