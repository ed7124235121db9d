//! Memory budget: the sum over the layers (Apache processes or php-fpm children × PSS per
//! process, php-fpm's opcache, MariaDB's global buffers + per-connection buffers ×
//! max_connections, tmpfs the configs write to) against the host's RAM, as configured and
//! as planned. PSS counts shared pages once (seed 000 measured 9.8 MiB RSS but 0.65 MiB
//! PSS per extra mod_php child), so the sum does not double-count as RSS-based calculators
//! do. When the planned layers do not fit, cuts are planned where the memory is
//! (`cuts`), each no lower than its floor; what still does not fit is a stated CONFLICT,
//! never a pool cut to one child.

mod cuts;
mod sources;

use super::{fpm_children, mib, ApacheMpm, Layers};
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};
use crate::plan::Plan;
use sources::{php_memory_limit, tmpfs_layers};

/// Per-process figures used when nothing was measured (stated as assumptions).
const ASSUMED_MOD_PHP_KIB: u64 = 30 * 1024;
const ASSUMED_APACHE_KIB: u64 = 4 * 1024;
const ASSUMED_APACHE_THREADED_KIB: u64 = 12 * 1024;
const ASSUMED_FPM_KIB: u64 = 30 * 1024;

/// Share of RAM the servers may plan for (the rest: kernel, page cache, other programs).
const BUDGET_SHARE: f64 = 0.9;

/// One layer's worst case.
pub(super) struct Layer {
    label: String,
    kib: u64,
    line: String,
}

/// The database's memory: its global buffers and its per-connection buffers.
#[derive(Clone, Copy)]
struct DbMemory {
    /// KiB of buffers other than the buffer pool.
    other_kib: u64,
    pool_mib: i64,
    conns: i64,
    per_conn_kib: u64,
}

impl DbMemory {
    fn kib(&self) -> u64 {
        (self.pool_mib.max(0) as u64 * 1024)
            .saturating_add(self.other_kib)
            .saturating_add((self.conns.max(0) as u64).saturating_mul(self.per_conn_kib))
    }
}

/// Every figure of the budget, for one set of counts (as configured, or as planned).
struct Budget {
    layers: Vec<Layer>,
    sum: u64,
}

/// The counts the budget multiplies: as configured, or as planned.
#[derive(Clone, Copy)]
struct Counts {
    apache_workers: i64,
    fpm_children: i64,
    db: Option<DbMemory>,
}

/// What the budget measured per process, with how.
struct PerProcess {
    apache: Option<(u64, String)>,
    fpm: Option<(u64, String)>,
}

pub(super) fn rules(l: &Layers, plan: &Plan) -> Vec<Finding> {
    let total_kib = l.host.mem_total_kib;
    if total_kib == 0 {
        return Vec::new();
    }
    let mpm = l.apache.and_then(ApacheMpm::of);
    let per = PerProcess {
        apache: l.apache.filter(|_| mpm.is_some()).map(|a| {
            let m = mpm.as_ref().map(|m| (m.mod_php, m.threaded));
            per_process(l, "apache2", &a.parsed.main, || match m {
                Some((true, _)) => ASSUMED_MOD_PHP_KIB,
                Some((false, true)) => ASSUMED_APACHE_THREADED_KIB,
                _ => ASSUMED_APACHE_KIB,
            })
        }),
        fpm: l
            .php_fpm
            .map(|f| per_process(l, "php-fpm", &f.main, || ASSUMED_FPM_KIB)),
    };
    let measured_all = [&per.apache, &per.fpm].iter().all(|p| {
        p.as_ref()
            .is_none_or(|(_, how)| !how.starts_with("assumed"))
    });
    let db = db_memory(l);
    let configured = Counts {
        apache_workers: mpm.as_ref().map_or(0, |m| m.max_workers),
        fpm_children: l.php_fpm.and_then(fpm_children).map_or(0, |(n, _)| n),
        db,
    };
    let planned = Counts {
        apache_workers: mpm.as_ref().map_or(0, |m| {
            plan.value_or("apache2", m.max_workers_name(), m.max_workers)
        }),
        fpm_children: planned_children(l, plan),
        db: db.map(|d| DbMemory {
            pool_mib: plan.value_or("mariadb", "innodb_buffer_pool_size", d.pool_mib),
            conns: plan.value_or("mariadb", "max_connections", d.conns),
            ..d
        }),
    };
    let now = budget(l, &configured, &per);
    // Nothing counted (an Apache whose MPM is unknown, alone): no budget to state.
    if now.layers.iter().all(|x| x.kib == 0) {
        return swap(l).into_iter().collect();
    }
    let then = budget(l, &planned, &per);
    let budget_kib = (total_kib as f64 * BUDGET_SHARE) as u64;
    let sum = now.sum;
    let share = sum as f64 / total_kib as f64 * 100.0;
    // PHP's memory_limit: what one script may take; every child at it is the worst case.
    let php_worst = l.php_fpm.and_then(|f| {
        fpm_children(f)?;
        let (limit, at) = php_memory_limit(f)?;
        let children = planned.fpm_children.max(0) as u64;
        Some((children.saturating_mul(limit / 1024), children, limit, at))
    });
    let worst_over = php_worst.as_ref().is_some_and(|(w, _, _, _)| {
        let fpm = then
            .layers
            .iter()
            .find(|x| x.label == "php-fpm")
            .map_or(0, |x| x.kib);
        then.sum.saturating_sub(fpm).saturating_add(*w) > total_kib
    });
    let mut severity = if sum > total_kib {
        Severity::Critical
    } else if sum > budget_kib {
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
    let calc = |b: &Budget| {
        b.layers
            .iter()
            .map(|x| x.line.clone())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut f = Finding::new(
        "memory.budget",
        severity,
        &now.layers
            .iter()
            .map(|x| x.label.as_str())
            .filter(|x| *x != "php-fpm opcache")
            .collect::<Vec<_>>()
            .join(" + "),
    )
    .source("seed 001 (free RAM / MB per process → ServerLimit), MySQLTuner's maximum memory formula, PSS per process from /proc/PID/smaps_rollup");
    let mut recommended = format!(
        "at most {} ({}% of RAM {})",
        mib(budget_kib),
        (BUDGET_SHARE * 100.0) as u32,
        mib(total_kib)
    );
    let mut directives: Vec<&str> = Vec::new();
    let mut as_planned = String::new();
    let mut freed_beside_pool = 0;
    if then.sum != sum {
        as_planned = format!(
            " As planned (the other findings' values): {}; total {}.",
            calc(&then),
            mib(then.sum)
        );
    }
    if then.sum > budget_kib {
        let c = cuts::plan(l, plan, &planned, &per, then.sum - budget_kib);
        recommended = c.summary(budget_kib, then.sum);
        freed_beside_pool = c.freed_beside_pool;
        for x in &c.constraints {
            directives.push(match x.server.as_str() {
                "php-fpm" => "pm.max_children",
                "apache2" => "MaxRequestWorkers",
                _ if x.directive == "max_connections" => "max_connections",
                _ => "innodb_buffer_pool_size",
            });
        }
        for x in c.constraints {
            f = f.constrain(x);
        }
    }
    if mpm.is_some() {
        directives.push("MaxRequestWorkers");
    }
    if l.php_fpm.is_some() {
        directives.push("pm.max_children");
    }
    if l.mysql.is_some() {
        directives.extend(["innodb_buffer_pool_size", "max_connections"]);
    }
    let mut seen = Vec::new();
    directives.retain(|d| {
        let new = !seen.contains(d);
        seen.push(*d);
        new
    });
    // A buffer pool raised by another finding gets at most what the other layers leave.
    if let (Some(db), Some(d)) = (planned.db, l.db()) {
        let pool_kib = db.pool_mib.max(0) as u64 * 1024;
        let others = then
            .sum
            .saturating_sub(pool_kib)
            .saturating_sub(freed_beside_pool);
        let room = budget_kib.saturating_sub(others) / 1024;
        let (pool, pool_at) = d.int("innodb_buffer_pool_size", 128 << 20);
        if d.innodb_off().is_none() {
            f = f.constrain(
                Constraint::on(
                    "mariadb",
                    "innodb_buffer_pool_size",
                    (pool >> 20) as i64,
                    pool_at,
                    d.main(),
                    Some("mysqld"),
                )
                .unit("M")
                .structural(
                    Bound::AtMost(room as i64),
                    format!(
                        "memory budget: {} − the other layers {}",
                        mib(budget_kib),
                        mib(others)
                    ),
                    "seed 001; MySQLTuner's maximum memory formula",
                ),
            );
        }
    }
    let verdict = if sum > budget_kib {
        "At full load the host swaps, and a swapping web server is slower than one that queues."
    } else {
        "It fits."
    };
    let php = php_worst.as_ref().map_or(String::new(), |(w, children, limit, at)| {
        format!(
            " Worst case for PHP: {children} children × memory_limit {} ({at}) = {}{}.",
            mib(limit / 1024),
            mib(*w),
            if worst_over {
                ", with the other layers more than RAM: a script that reaches memory_limit in many children at once swaps the host; lower memory_limit or pm.max_children"
            } else {
                ", within RAM with the other layers"
            }
        )
    });
    f = f
        .directives(&directives)
        .values(format!("{} worst case ({share:.0}% of RAM)", mib(sum)), recommended)
        .why(format!(
            "Sum over the layers {}; total {} against RAM {} (budget {}% = {}). {verdict}{as_planned}{php}",
            calc(&now),
            mib(sum),
            mib(total_kib),
            (BUDGET_SHARE * 100.0) as u32,
            mib(budget_kib),
        ))
        .evidence(format!(
            "host: MemTotal {}, MemAvailable {}",
            mib(total_kib),
            mib(l.host.mem_available_kib)
        ));
    if let Some(m) = &mpm {
        if let Some(d) = m.max_workers_at {
            f = f.evidence(format!("{} {}: {}", d.name, d.joined(), d.at()));
        }
    }
    if let Some((_, at)) = l.php_fpm.and_then(fpm_children) {
        for d in at {
            f = f.evidence(format!("pm.max_children = {}: {}", d.value(), d.at()));
        }
    }
    if let Some(d) = l.db() {
        for x in [d.get("innodb_buffer_pool_size"), d.get("max_connections")]
            .into_iter()
            .flatten()
        {
            f = f.evidence(format!("{} = {}: {}", x.name, x.value(), x.at()));
        }
    }
    let mut out = vec![f];
    out.extend(swap(l));
    out
}

/// Swap in use on this host now: memory has already run short at some point (a swapped
/// page of a server costs a disk read when touched).
fn swap(l: &Layers) -> Option<Finding> {
    let used = l.host.swap_total_kib.saturating_sub(l.host.swap_free_kib);
    if used < 64 * 1024 || !l.host.judged_for.is_empty() {
        return None;
    }
    let swappiness = l.host.sysctl_int("vm.swappiness");
    Some(
        Finding::new("memory.swap", Severity::Warn, "host")
            .values(
                format!("{} of swap in use (of {})", mib(used), mib(l.host.swap_total_kib)),
                "the memory budget below 90% of RAM (see memory.budget), then watch si/so in vmstat",
            )
            .why(format!(
                "Pages were pushed to swap because RAM ran short at some point; a server's page there costs a disk read the next time it is touched (a stall of milliseconds inside a request). {} MemAvailable is {} now.",
                swappiness.map_or(String::new(), |v| format!("vm.swappiness is {v} (how readily the kernel swaps instead of dropping page cache).")),
                mib(l.host.mem_available_kib)
            ))
            .evidence(format!(
                "host: SwapTotal {}, SwapFree {}",
                mib(l.host.swap_total_kib),
                mib(l.host.swap_free_kib)
            ))
            .source("MySQLTuner (swap in use); Linux /proc/meminfo"),
    )
}

/// Σ pm.max_children as planned (one pool's plan; several pools as configured).
fn planned_children(l: &Layers, plan: &Plan) -> i64 {
    let Some((sum, at)) = l.php_fpm.and_then(fpm_children) else {
        return 0;
    };
    match at.as_slice() {
        [one] => plan
            .get("php-fpm", "pm.max_children")
            .filter(|p| p.bounds.iter().any(|b| b.place.line == Some(one.line)))
            .and_then(|p| p.value)
            .unwrap_or(sum),
        _ => sum,
    }
}

/// The database's buffers, with the server's defaults (MySQLTuner's maximum memory
/// formula: the global buffers, one in-memory temporary table, and per connection the
/// sort, read, read_rnd and join buffers, the thread stack and the binlog cache). The
/// rarer worst case — every connection holding a max_allowed_packet and an in-memory
/// temporary table at once — is said beside it, not planned for: sized by it, a default
/// MariaDB would not fit 2 GiB.
fn db_memory(l: &Layers) -> Option<DbMemory> {
    let db = l.db()?;
    let (pool, _) = db.int("innodb_buffer_pool_size", 128 << 20);
    let (key, _) = db.int("key_buffer_size", 128 << 20);
    let (logbuf, _) = db.int("innodb_log_buffer_size", 16 << 20);
    let (qc, _) = db.int("query_cache_size", 1 << 20);
    let (conns, _) = db.int("max_connections", 151);
    let (tmp, _) = db.int("tmp_table_size", 16 << 20);
    let (heap, _) = db.int("max_heap_table_size", 16 << 20);
    let per_conn: u64 = [
        db.int("sort_buffer_size", 2 << 20).0,
        db.int("read_buffer_size", 128 << 10).0,
        db.int("read_rnd_buffer_size", 256 << 10).0,
        db.int("join_buffer_size", 256 << 10).0,
        db.int("thread_stack", 292 << 10).0,
        db.int("binlog_cache_size", 32 << 10).0,
    ]
    .iter()
    .fold(0u64, |a, b| a.saturating_add(*b));
    let other = [key, logbuf, qc, tmp.min(heap)]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b));
    Some(DbMemory {
        other_kib: other / 1024,
        pool_mib: (pool >> 20).min(i64::MAX as u64) as i64,
        conns: conns.min(i64::MAX as u64) as i64,
        per_conn_kib: per_conn / 1024,
    })
}

/// The layers' worst cases for `counts`.
fn budget(l: &Layers, counts: &Counts, per: &PerProcess) -> Budget {
    let mut layers: Vec<Layer> = Vec::new();
    if let Some(a) = l.apache {
        match (ApacheMpm::of(a), &per.apache) {
            (Some(m), Some((p, how))) => {
                let t = m.threads_per_child.max(1);
                let procs = ((counts.apache_workers.max(0) + t - 1) / t) as u64;
                layers.push(Layer {
                    label: "apache2".into(),
                    kib: procs.saturating_mul(*p),
                    line: format!(
                        "apache2 ({} MPM{}): {procs} processes × {} PSS ({how}) = {}",
                        m.mpm,
                        if m.mod_php { " + mod_php" } else { "" },
                        mib(*p),
                        mib(procs.saturating_mul(*p))
                    ),
                });
            }
            _ => layers.push(Layer {
                label: "apache2".into(),
                kib: 0,
                line: format!("apache2: not counted ({})", super::mpm_unknown(l)),
            }),
        }
    }
    if let (Some(f), Some((p, how))) = (l.php_fpm, &per.fpm) {
        if let Some((_, at)) = fpm_children(f) {
            let n = counts.fpm_children.max(0) as u64;
            layers.push(Layer {
                label: "php-fpm".into(),
                kib: n.saturating_mul(*p),
                line: format!(
                    "php-fpm: {n} children (pm.max_children over {} pools) × {} PSS ({how}) = {}",
                    at.len(),
                    mib(*p),
                    mib(n.saturating_mul(*p))
                ),
            });
            if let Some((kib, how)) = super::php::opcache_kib(f) {
                layers.push(Layer {
                    label: "php-fpm opcache".into(),
                    kib,
                    line: format!(
                        "php-fpm opcache: {} shared by the children ({how})",
                        mib(kib)
                    ),
                });
            }
        }
    }
    if let (Some(d), Some(db)) = (counts.db, l.db()) {
        let kib = d.kib();
        let v = |k: &str, default: u64| db.int(k, default).0 / 1024;
        let tmp = v("tmp_table_size", 16 << 20).min(v("max_heap_table_size", 16 << 20));
        layers.push(Layer {
            label: "mariadb".into(),
            kib,
            line: format!(
                "mariadb ({}): buffers {} (innodb_buffer_pool_size {} MiB + key_buffer_size {} + log buffer {} + query cache {} + a temporary table min(tmp_table_size, max_heap_table_size) {}) + max_connections {} × {} per connection (sort+read+read_rnd+join buffers, thread stack, binlog cache: the worst case) = {}; rarer still, every connection holding a max_allowed_packet of {} and a temporary table of {} at once would add {}",
                db.label(),
                mib(d.other_kib + d.pool_mib.max(0) as u64 * 1024),
                d.pool_mib,
                mib(v("key_buffer_size", 128 << 20)),
                mib(v("innodb_log_buffer_size", 16 << 20)),
                mib(v("query_cache_size", 1 << 20)),
                mib(tmp),
                d.conns,
                mib(d.per_conn_kib),
                mib(kib),
                mib(v("max_allowed_packet", 16 << 20)),
                mib(tmp),
                mib((d.conns.max(0) as u64).saturating_mul(tmp + v("max_allowed_packet", 16 << 20)))
            ),
        });
    }
    layers.extend(tmpfs_layers(l));
    let sum = layers.iter().fold(0u64, |a, x| a.saturating_add(x.kib));
    Budget { layers, sum }
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
