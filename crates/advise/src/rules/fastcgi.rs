//! nginx → php-fpm over kept FastCGI connections: a pool too small for the idle
//! connections nginx keeps to it hangs requests (issue 34, found by seed 003's forum tune).
//!
//! With `fastcgi_keep_conn on` a php-fpm child keeps serving the connection it accepted
//! until nginx closes it (php-fpm serves one connection per child at a time), and nginx
//! keeps up to `keepalive K` idle connections per worker in the `upstream`'s cache (nginx
//! manual, ngx_http_upstream_module `keepalive`: "the maximum number of idle keepalive
//! connections … preserved in the cache of each worker process"; it "does not limit the
//! total number of connections … a worker process can open"). A worker with no idle
//! connection of its own opens a new one; that one waits in php-fpm's listen backlog until
//! some kept connection is closed. With pm.max_children ≤ worker_processes × K every child
//! can be held by an idle kept connection while requests wait: a hang until
//! `fastcgi_read_timeout` (a 504), not a slowdown. With one child more, one is always free
//! or busy, and a busy one frees. Measured in the lab (docs/experiments.md, issue 34):
//! children = W × K hung requests at W=1,2,4; W × K + 1 served every one.

use super::proxy::in_scope;
use super::topology::nginx_fpm_passes;
use super::{at, Layers};
use crate::change::{Bound, Constraint};
use crate::finding::{Finding, Severity};
use webtune_conf::ini;

/// nginx's default `fastcgi_read_timeout` and upstream `keepalive_timeout`, in seconds.
const NGINX_DEFAULT_TIMEOUT_S: i64 = 60;

pub(super) fn rules(l: &Layers) -> Vec<Finding> {
    let (Some(n), Some(f)) = (l.nginx, l.php_fpm) else {
        return Vec::new();
    };
    let cores = l.host.cores.max(1);
    let (now, wp_at) = n.worker_processes(cores);
    // worker_processes 1 on more cores is advised to `auto` (nginx.worker_processes): the
    // pool must hold for the workers as advised, not only as found.
    let advised_auto = cores > 1 && wp_at.is_none_or(|d| d.value() == "1");
    let workers = if advised_auto { cores } else { now } as i64;
    let workers_text = if advised_auto {
        format!("worker_processes {now} now, auto ({cores}) as advised by nginx.worker_processes")
    } else {
        format!("worker_processes {workers}")
    };
    let pools = ini::pools(f);
    let mut out = Vec::new();
    let mut said: Vec<String> = Vec::new();
    for (pass, block, pool_name) in nginx_fpm_passes(n, f) {
        if said.contains(&pool_name) {
            continue;
        }
        let Some(block) = block else { continue };
        let upstream = |name: &str| {
            n.parsed
                .directives
                .iter()
                .rfind(|d| d.block == block && d.name == name)
        };
        let Some(keepalive) = upstream("keepalive") else {
            continue;
        };
        let Some(k) = keepalive.int().filter(|k| *k > 0) else {
            continue;
        };
        let Some(keep) = in_scope(n, pass, "fastcgi_keep_conn").filter(|d| d.value() == "on")
        else {
            continue;
        };
        let Some(pool) = pools.iter().find(|p| p.name == pool_name) else {
            continue;
        };
        let Some((children, mc)) = &pool.max_children else {
            continue;
        };
        let held = workers.saturating_mul(k);
        if *children > held {
            continue;
        }
        said.push(pool_name.clone());
        let want = held.saturating_add(1);
        let smaller_k = (children - 1) / workers;
        let lower_k = if smaller_k >= 1 {
            format!("`keepalive {smaller_k}` in the upstream keeps fewer (and connects more often)")
        } else {
            "no `keepalive` in the upstream keeps none (a connect per request, as with fastcgi_keep_conn off)".to_string()
        };
        let read_timeout = in_scope(n, pass, "fastcgi_read_timeout").map_or_else(
            || format!("fastcgi_read_timeout {NGINX_DEFAULT_TIMEOUT_S}s (default)"),
            |d| format!("fastcgi_read_timeout {}", d.value()),
        );
        let idle = upstream("keepalive_timeout").map_or_else(
            || format!("keepalive_timeout {NGINX_DEFAULT_TIMEOUT_S}s (default)"),
            |d| format!("keepalive_timeout {}", d.value()),
        );
        let finding = Finding::new(
            "php_fpm.fastcgi_keepalive_starves_pool",
            Severity::Critical,
            "nginx → php-fpm",
        )
        .directives(&[
            "pm.max_children",
            "keepalive",
            "fastcgi_keep_conn",
            "worker_processes",
        ])
        .values(
            format!(
                "pool {pool_name}: pm.max_children {children} ≤ {workers_text} × keepalive {k} = {held}, with fastcgi_keep_conn on"
            ),
            format!("pm.max_children = {want}"),
        )
        .why(format!(
            "With fastcgi_keep_conn on a php-fpm child serves the connection it accepted until nginx closes it, and each of the {workers} nginx workers keeps up to {k} idle connection{} to the pool: {held} children can be held by idle connections. A worker without an idle connection of its own opens a new one, which waits in php-fpm's backlog until a kept connection closes (the upstream's {idle}, counted from its last request): with {children} children every one can be held while requests wait — a hang, answered 504 after {read_timeout}. Children > workers × keepalive = {held} leave one free or busy, and a busy one frees (measured in the lab: children = workers × keepalive hung requests, one child more served every one). The trades: {want} children cost memory (the budget says whether they fit); `fastcgi_keep_conn off` costs a connect per PHP request (cheap on loopback or a Unix socket); {lower_k}.",
            if k == 1 { "" } else { "s" }
        ))
        .evidence(format!("pm.max_children = {}: {}", mc.value(), mc.at()))
        .evidence(format!("keepalive {}: {}", keepalive.value(), keepalive.at()))
        .evidence(format!("fastcgi_keep_conn {}: {}", keep.value(), keep.at()))
        .evidence(format!("fastcgi_pass {}: {}", pass.joined(), pass.at()))
        .evidence(at(wp_at, "worker_processes", 1))
        .evidence(format!("host: {cores} cores"))
        .source("nginx manual, ngx_http_upstream_module keepalive (idle connections cached per worker; the total not limited) and ngx_http_fastcgi_module fastcgi_keep_conn; php-fpm manual, pm.max_children; measured in the lab (issue 34, docs/experiments.md)")
        .constrain(
            Constraint::on("php-fpm", "pm.max_children", *children, Some(mc), &f.main, None).bound(
                Bound::AtLeast(want),
                format!("> {workers_text} × keepalive {k} idle kept connections"),
                "nginx manual, upstream keepalive and fastcgi_keep_conn; php-fpm manual, pm.max_children",
            ),
        );
        out.push(finding);
    }
    out
}
