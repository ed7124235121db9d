//! Where the memory budget cuts when the planned layers do not fit (issue 35, item 2):
//! where the memory is, each cut no lower than its floor, in this order —
//!
//! 1. MariaDB's connections beyond what the web tier can open (Σ planned pm.max_children,
//!    or mod_php's workers, + 10 for administration): per-connection buffers no client
//!    can use; without a known web tier they are not cut;
//! 2. the InnoDB buffer pool, down to the data it caches × 1.2 (the data known), else to
//!    its 128 MiB default;
//! 3. php-fpm's children, never below the concurrency the layer in front sends (the
//!    planned Apache workers that hand PHP to the pool), else below two per core;
//! 4. Apache's workers, never below two per core (whole processes for threaded MPMs), and
//!    not when they only hand PHP to php-fpm (they are then the front's concurrency).
//!
//! What still does not fit at the floors is a CONFLICT with the figures: nothing is cut
//! below a floor to make the sum come out, and never silently to one or two children.

use super::{mib, Counts, PerProcess};
use crate::change::{Bound, Constraint};
use crate::plan::Plan;
use crate::rules::{fpm_children, ApacheMpm, Layers};

/// The cuts planned and what is left over.
pub(super) struct Cuts {
    pub constraints: Vec<Constraint>,
    /// One line per cut, with its figures.
    lines: Vec<String>,
    /// KiB over the budget at every floor (0: it fits).
    left: u64,
    /// The floors that stopped a cut, with their reasons.
    floors: Vec<String>,
    /// KiB the cuts free in layers other than the buffer pool (the pool's room grows by it).
    pub freed_beside_pool: u64,
}

impl Cuts {
    /// The finding's recommendation: the cuts, and the conflict if any.
    pub fn summary(&self, budget_kib: u64, planned_kib: u64) -> String {
        let cuts = if self.lines.is_empty() {
            "no layer can be cut".to_string()
        } else {
            self.lines.join("; ")
        };
        if self.left == 0 {
            return format!(
                "cut where the memory is, {} planned over the budget {}: {cuts}",
                mib(planned_kib),
                mib(budget_kib)
            );
        }
        format!(
            "CONFLICT, not all written: the layers need {} more than the budget {} even at their floors ({}); cuts planned: {cuts}. Add RAM, move a layer to another host, or lower the front's concurrency",
            mib(self.left),
            mib(budget_kib),
            self.floors.join("; ")
        )
    }
}

const SOURCE: &str =
    "MySQLTuner's maximum memory formula; seed 001 (free RAM / MB per process); seed 000 (two busy workers per core)";

pub(super) fn plan(l: &Layers, plan: &Plan, planned: &Counts, per: &PerProcess, over: u64) -> Cuts {
    let mut c = Cuts {
        constraints: Vec::new(),
        lines: Vec::new(),
        left: over,
        floors: Vec::new(),
        freed_beside_pool: 0,
    };
    let cores = l.host.cores.max(1) as i64;
    let mpm = l.apache.and_then(ApacheMpm::of);
    let apache_planned = mpm
        .as_ref()
        .map(|m| plan.value_or("apache2", m.max_workers_name(), m.max_workers));

    // 1. The database's connections beyond the web tier's. With php-fpm as the web tier,
    // they stay tied to its children (step 3 cuts both together).
    let mut tied: Option<i64> = None;
    if let (Some(db), Some(d)) = (planned.db, l.db()) {
        let clients = if l.php_fpm.and_then(fpm_children).is_some() {
            Some((planned.fpm_children, "Σ pm.max_children as planned"))
        } else {
            l.apache
                .filter(|a| a.mod_php().is_some())
                .and(apache_planned)
                .map(|w| (w, "mod_php's Apache workers as planned"))
        };
        if let Some((clients, what)) = clients {
            let floor = clients.saturating_add(10);
            let (current, at) = d.int("max_connections", 151);
            let n = db.conns;
            if n > floor && db.per_conn_kib > 0 && c.left > 0 {
                let need = c.left.div_ceil(db.per_conn_kib) as i64;
                let to = (n - need).max(floor);
                let freed = ((n - to) as u64) * db.per_conn_kib;
                c.left = c.left.saturating_sub(freed);
                c.freed_beside_pool += freed;
                c.lines.push(format!(
                    "max_connections {n} → {to} (frees {}; {what} {clients} + 10)",
                    mib(freed)
                ));
                c.constraints.push(
                    Constraint::on("mariadb", "max_connections", current as i64, at, d.main(), Some("mysqld")).bound(
                        Bound::AtMost(to),
                        format!("memory budget: {} per connection; no fewer than the web tier's {clients} + 10", mib(db.per_conn_kib)),
                        SOURCE,
                    ),
                );
            }
            if l.php_fpm.and_then(fpm_children).is_some() {
                tied = Some(
                    c.constraints
                        .iter()
                        .find_map(|x| match x.bound {
                            Bound::AtMost(v) if x.directive == "max_connections" => Some(v),
                            _ => None,
                        })
                        .unwrap_or(n),
                );
            } else if c.left > 0 {
                c.floors
                    .push(format!("max_connections ≥ {floor}: {what} {clients} + 10"));
            }
        }
    }

    // 2. The buffer pool, down to the data.
    if let (Some(db), Some(d)) = (planned.db, l.db()) {
        if d.innodb_off().is_none() && c.left > 0 {
            let (floor, why) = match &l.facts.innodb_data {
                Some(data) => (
                    ((data.value + data.value / 5).div_ceil(128 << 20).max(1) * 128) as i64,
                    format!("the InnoDB data {} × 1.2", mib(data.value / 1024)),
                ),
                None => (
                    128,
                    "the 128 MiB default (the data's size unknown)".to_string(),
                ),
            };
            let (current, at) = d.int("innodb_buffer_pool_size", 128 << 20);
            let n = db.pool_mib;
            if n > floor {
                let need = c.left.div_ceil(1024) as i64;
                let to = (n - need).max(floor);
                let freed = ((n - to) as u64) * 1024;
                c.left = c.left.saturating_sub(freed);
                c.lines.push(format!(
                    "innodb_buffer_pool_size {n}M → {to}M (frees {})",
                    mib(freed)
                ));
                c.constraints.push(
                    Constraint::on(
                        "mariadb",
                        "innodb_buffer_pool_size",
                        (current >> 20) as i64,
                        at,
                        d.main(),
                        Some("mysqld"),
                    )
                    .unit("M")
                    .bound(
                        Bound::AtMost(to),
                        format!("memory budget: no smaller than {why}"),
                        SOURCE,
                    ),
                );
            }
            if c.left > 0 {
                c.floors
                    .push(format!("innodb_buffer_pool_size ≥ {floor}M: {why}"));
            }
        }
    }

    // 3. PHP's children, never below what the front sends.
    if let (Some(f), Some((p, _))) = (l.php_fpm, &per.fpm) {
        if let Some((_, at)) = fpm_children(f) {
            if let ([d], true) = (at.as_slice(), c.left > 0) {
                let front = l.topology().apache_fpm.and(apache_planned).map(|w| {
                    (
                        w,
                        format!("the Apache workers that hand it PHP, {w} as planned"),
                    )
                });
                let n = planned.fpm_children;
                let (floor, why) = match front {
                    Some((w, why)) => (w.min(n), why),
                    None => ((2 * cores).min(n), format!("two per core × {cores} cores")),
                };
                // The database's connections follow the children they serve: each child
                // cut frees its PSS and, down to children + 10, a connection's buffers.
                let per_conn = planned.db.map_or(0, |d| d.per_conn_kib);
                let conns_now = tied.unwrap_or(0);
                let freed_at = |to: i64| -> u64 {
                    let php = ((n - to).max(0) as u64).saturating_mul(*p);
                    let conns = match tied {
                        Some(_) => ((conns_now - to.saturating_add(10)).max(0) as u64)
                            .saturating_mul(per_conn),
                        None => 0,
                    };
                    php.saturating_add(conns)
                };
                if n > floor {
                    // The most children that free enough (freed_at falls as `to` grows).
                    let (mut lo, mut hi) = (floor, n);
                    if freed_at(floor) < c.left {
                        hi = floor;
                    }
                    while lo < hi {
                        let mid = lo + (hi - lo + 1) / 2;
                        if freed_at(mid) >= c.left {
                            lo = mid;
                        } else {
                            hi = mid - 1;
                        }
                    }
                    let to = lo;
                    let freed = freed_at(to);
                    c.left = c.left.saturating_sub(freed);
                    c.freed_beside_pool += freed;
                    c.lines.push(format!(
                        "pm.max_children {n} → {to} (frees {})",
                        mib(((n - to) as u64) * p)
                    ));
                    c.constraints.push(
                        Constraint::on(
                            "php-fpm",
                            "pm.max_children",
                            d.count().unwrap_or(n),
                            Some(d),
                            &f.main,
                            None,
                        )
                        .bound(
                            Bound::AtMost(to),
                            format!("memory budget: {} per child; no fewer than {why}", mib(*p)),
                            SOURCE,
                        ),
                    );
                    if let (Some(db), Some(dd)) =
                        (tied.filter(|t| *t > to + 10).and(planned.db), l.db())
                    {
                        let (current, at) = dd.int("max_connections", 151);
                        c.lines.push(format!(
                            "max_connections {} → {} (frees {}; the children as cut + 10)",
                            conns_now,
                            to + 10,
                            mib(((conns_now - to - 10) as u64) * db.per_conn_kib)
                        ));
                        c.constraints.push(
                            Constraint::on("mariadb", "max_connections", current as i64, at, dd.main(), Some("mysqld")).bound(
                                Bound::AtMost(to + 10),
                                format!("memory budget: the php-fpm children it serves, {to} as cut, + 10"),
                                SOURCE,
                            ),
                        );
                    }
                }
                if c.left > 0 {
                    c.floors.push(format!("pm.max_children ≥ {floor}: {why}"));
                    if tied.is_some() {
                        c.floors.push(format!(
                            "max_connections ≥ {}: the children + 10",
                            floor + 10
                        ));
                    }
                }
            }
        }
    }

    // 4. Apache's workers, in whole processes; not when they are the front of php-fpm
    // (their own memory is small, and PHP's children would follow them down: a capacity
    // the user chose, cut for memory PHP takes; that is the conflict to state).
    let fronts_fpm = l.topology().apache_fpm.is_some() && !mpm.as_ref().is_some_and(|m| m.mod_php);
    if let (Some(m), true) = (&mpm, fronts_fpm && c.left > 0) {
        c.floors.push(format!(
            "{}: the front of php-fpm, not cut for memory (lower it and PHP's children follow)",
            m.max_workers_name()
        ));
    }
    if let (Some(a), Some(m), Some((p, _)), Some(n), false) =
        (l.apache, &mpm, &per.apache, apache_planned, fronts_fpm)
    {
        if c.left > 0 {
            let t = m.threads_per_child.max(1);
            let floor = ((2 * cores + t - 1) / t * t).min(n);
            if n > floor {
                let procs = (n + t - 1) / t;
                let floor_procs = floor / t;
                let need = c.left.div_ceil(*p) as i64;
                let to_procs = (procs - need).max(floor_procs).max(1);
                let to = to_procs * t;
                let freed = ((procs - to_procs).max(0) as u64) * p;
                c.left = c.left.saturating_sub(freed);
                c.freed_beside_pool += freed;
                c.lines.push(format!(
                    "{} {n} → {to} (frees {})",
                    m.max_workers_name(),
                    mib(freed)
                ));
                c.constraints.push(
                    Constraint::on(
                        "apache2",
                        m.max_workers_name(),
                        m.max_workers,
                        m.max_workers_at,
                        &a.parsed.main,
                        None,
                    )
                    .bound(
                        Bound::AtMost(to),
                        format!(
                            "memory budget: {} per process; no fewer than two workers per core",
                            mib(*p)
                        ),
                        SOURCE,
                    ),
                );
            }
            if c.left > 0 {
                c.floors
                    .push(format!("{} ≥ {floor}: two per core", m.max_workers_name()));
            }
        }
    }
    c
}
