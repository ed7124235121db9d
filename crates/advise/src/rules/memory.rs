//! Memory budget: the sum over the layers (Apache processes or php-fpm children × PSS
//! per process, MariaDB's global buffers + per-connection buffers × max_connections)
//! against the host's RAM. PSS counts shared pages once (seed 000 measured 9.8 MiB RSS
//! but 0.65 MiB PSS per extra mod_php child), so the sum does not double-count as
//! RSS-based calculators do.

use super::{fpm_children, mib, mysql_int, replace, ApacheMpm, Layers};
use crate::finding::{Finding, Severity};

/// Per-process figures used when nothing was measured (stated as assumptions).
const ASSUMED_MOD_PHP_KIB: u64 = 30 * 1024;
const ASSUMED_APACHE_KIB: u64 = 4 * 1024;
const ASSUMED_APACHE_THREADED_KIB: u64 = 12 * 1024;
const ASSUMED_FPM_KIB: u64 = 30 * 1024;

/// Share of RAM the servers may plan for (the rest: kernel, page cache, other programs).
const BUDGET_SHARE: f64 = 0.9;

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
    // The worker pool that can be resized: (directive, per-worker KiB, current count, directive line).
    let mut pools: Vec<(
        String,
        u64,
        i64,
        Option<&webtune_conf::config::Directive>,
        String,
    )> = Vec::new();

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
        if m.threads_per_child <= 1 {
            pools.push((
                m.max_workers_name().to_string(),
                per,
                m.max_workers,
                m.max_workers_at,
                "apache2".into(),
            ));
        }
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
                pools.push((
                    "pm.max_children".into(),
                    per,
                    children,
                    at.first().copied(),
                    "php-fpm".into(),
                ));
            }
        }
    }
    if let Some(m) = l.mysql {
        let (pool, pool_at) = mysql_int(m, "innodb_buffer_pool_size", 128 << 20);
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
        // Saturating: a 2P buffer pool or 2^64 connections is "does not fit", never a wrap.
        let global = [pool, key, logbuf, qc]
            .iter()
            .fold(0u64, |a, b| a.saturating_add(*b));
        let kib = global.saturating_add(conns.saturating_mul(per_conn)) / 1024;
        layers.push(Layer {
            label: "mariadb".into(),
            kib,
            line: format!(
                "mariadb: buffers {} (innodb_buffer_pool_size {} + key_buffer_size {} + log buffer {} + query cache {}) + max_connections {conns} × {} per connection (sort+read+read_rnd+join buffers, thread stack, binlog cache; the worst case) = {}",
                mib(global / 1024), mib(pool / 1024), mib(key / 1024), mib(logbuf / 1024), mib(qc / 1024), mib(per_conn / 1024), mib(kib)
            ),
        });
        for d in [pool_at, conns_at].into_iter().flatten() {
            evidence.push(format!("{} = {}: {}", d.name, d.value(), d.at()));
        }
    }
    if layers.is_empty() {
        return Vec::new();
    }
    let sum: u64 = layers.iter().fold(0u64, |a, x| a.saturating_add(x.kib));
    let budget = (total_kib as f64 * BUDGET_SHARE) as u64;
    let share = sum as f64 / total_kib as f64 * 100.0;
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
        // Shrink the biggest resizable pool so the sum fits.
        if let Some((name, per, count, d, label)) = pools
            .iter()
            .max_by_key(|p| p.1 * p.2.max(0) as u64)
            .cloned()
        {
            let others = sum.saturating_sub(per.saturating_mul(count.max(0) as u64));
            let fit = budget.saturating_sub(others) / per.max(1);
            let fit = fit.max(1) as i64;
            recommended = format!("{name} {fit} (for {label})");
            directives.push(if label == "php-fpm" {
                "pm.max_children"
            } else {
                "MaxRequestWorkers"
            });
            let text = if label == "php-fpm" {
                format!("pm.max_children = {fit}")
            } else {
                format!("{name} {fit}")
            };
            f = f.change(replace(d, text));
            recommended = format!(
                "{recommended}: ({} budget − {} other layers) / {} per process = {fit}",
                mib(budget),
                mib(others),
                mib(per)
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
        ))
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
