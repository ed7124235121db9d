//! Starts every stack for real (Debian's nginx, apache2, mod_php, php-fpm), loads it with a
//! handful of requests over loopback, checks answers and rendered configs, and checks that
//! no process of the stack is left after stop and after a failed start, and after its
//! php-fpm master was killed (which the sampler records).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use webtune_conf::procfs;
use webtune_lab::{
    http_get, settings_for, LabError, ProcessSelector, RunningStack, ServerSampler, StackKind,
    StartOptions,
};

/// Stops the stack when the test ends, even when an assertion failed first (and then
/// lets the next start of a stack `leftovers_of` looks for begin).
struct Guard {
    stack: Option<RunningStack>,
    _turn: Option<MutexGuard<'static, ()>>,
}

/// The failed-start tests look for leftovers by the stack's name (`leftovers_of`), which
/// would also find a stack of that name another test of this process runs beside them:
/// starts of those stacks take turns.
static NAMED_STARTS: Mutex<()> = Mutex::new(());
const LOOKED_FOR: [&str; 2] = ["nginx-php-fpm", "nginx-apache"];

fn named_start_turn() -> MutexGuard<'static, ()> {
    NAMED_STARTS.lock().unwrap_or_else(|e| e.into_inner())
}

impl Guard {
    fn stack(&self) -> &RunningStack {
        self.stack.as_ref().expect("stack present until stop")
    }

    /// Stop, check the stop was clean and no process of the start is left.
    fn stop_and_verify(mut self) {
        let stack = self.stack.take().expect("stack present until stop");
        let dir = stack.private_dir().to_path_buf();
        let sessions = stack.sessions();
        stack.stop().expect("clean stop");
        assert_no_process_left(&dir, &sessions);
        assert!(!dir.exists(), "private dir removed after stop");
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Dropping a RunningStack stops it.
        self.stack.take();
    }
}

fn assert_no_process_left(dir: &Path, sessions: &[i32]) {
    let members = procfs::session_members(sessions);
    assert!(members.is_empty(), "session members left: {members:?}");
    let mentioning = webtune_testkit::procs::processes_naming(dir);
    assert!(
        mentioning.is_empty(),
        "processes naming {dir:?} left: {mentioning:?}"
    );
}

fn start(stack: &str, sets: &[&str]) -> Guard {
    let kind = StackKind::from_name(stack).expect("known stack");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let settings = settings_for(kind, &sets).expect("valid settings");
    let options = StartOptions {
        stop_grace: Duration::from_secs(3),
        ..StartOptions::default()
    };
    let turn = LOOKED_FOR.contains(&stack).then(named_start_turn);
    match RunningStack::start(kind, &settings, options) {
        Ok(s) => Guard {
            stack: Some(s),
            _turn: turn,
        },
        Err(e) => panic!("{stack} did not start: {e}"),
    }
}

fn get(stack: &RunningStack, path: &str) -> (u16, Vec<u8>) {
    http_get(stack.front_address(), path, Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

fn config<'a>(stack: &'a RunningStack, name: &str) -> &'a str {
    &stack
        .rendered()
        .configs
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

/// A handful of requests: static files everywhere, the CPU page where PHP runs.
fn load_briefly(stack: &RunningStack, php: bool) {
    for _ in 0..5 {
        let (status, body) = get(stack, "/empty.gif");
        assert_eq!(status, 200);
        assert_eq!(body.len(), 43);
    }
    let (status, body) = get(stack, "/index.html");
    assert_eq!(status, 200);
    assert_eq!(body.len(), webtune_lab::PAGE_BYTES);
    if php {
        for _ in 0..3 {
            let (status, body) = get(stack, "/cpu/2000");
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
            assert!(String::from_utf8_lossy(&body).starts_with("cpu 2000 us"));
        }
        // 50 ms of CPU: enough to show in /proc's tick-resolution CPU counters.
        let (status, _) = get(stack, "/cpu.php?us=50000");
        assert_eq!(status, 200);
    }
}

/// Load briefly while the sampler runs; check what it saw of the stack's processes.
fn sampled_load(stack: &RunningStack, php: bool) -> webtune_model::ServerSamples {
    let sampler = ServerSampler::start(
        stack.stack().name(),
        ProcessSelector::Sessions(stack.sessions()),
        Duration::from_millis(50),
    );
    std::thread::sleep(Duration::from_millis(60));
    load_briefly(stack, php);
    std::thread::sleep(Duration::from_millis(60));
    let samples = sampler.finish();
    assert!(samples.samples.len() >= 2, "{samples:?}");
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    assert_eq!(samples.cpu_count as usize, cpus);
    let last = samples.samples.last().expect("a sample");
    assert_eq!(last.cpus.len(), cpus);
    assert!(
        last.processes as usize >= stack.sessions().len(),
        "{last:?}"
    );
    assert!(last.threads >= last.processes);
    assert!(last.rss_kib > 0 && last.pss_kib > 0, "{last:?}");
    assert!(last.open_fds > 0);
    let switches: u64 = samples
        .samples
        .iter()
        .map(|s| s.voluntary_ctxt_switches)
        .sum();
    assert!(switches > 0, "serving requests switches context");
    let text = webtune_report::server_summary::summarise(&samples, 10);
    assert!(text.contains("busiest cpu"), "{text}");
    assert!(text.contains("per response"), "{text}");
    samples
}

#[test]
fn nginx_serves_static_files_and_stops_clean() {
    let guard = start("nginx", &["worker_processes=1", "keepalive_requests=50"]);
    let stack = guard.stack();
    let samples = sampled_load(stack, false);
    // nginx: master and one worker.
    assert!(
        samples.samples.iter().any(|s| s.processes == 2),
        "{samples:?}"
    );
    let conf = config(stack, "nginx.conf");
    assert!(conf.contains("worker_processes 1;"));
    assert!(conf.contains("keepalive_requests 50;"));
    assert!(conf.contains("daemon off;"));
    // Master and one worker, in the master's session.
    assert!(stack.processes().len() >= 2, "{:?}", stack.processes());
    let mode = std::fs::metadata(stack.private_dir()).map(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.permissions().mode() & 0o777
    });
    assert_eq!(mode.ok(), Some(0o700));
    guard.stop_and_verify();
}

#[test]
fn apache_prefork_runs_php_and_stops_clean() {
    let guard = start(
        "apache-prefork",
        &["MaxRequestWorkers=4", "StartServers=2", "KeepAlive=off"],
    );
    let stack = guard.stack();
    let samples = sampled_load(stack, true);
    // Parent plus at most MaxRequestWorkers children.
    assert!(
        samples.samples.iter().all(|s| s.processes <= 5),
        "{samples:?}"
    );
    let cpu: f64 = samples
        .samples
        .iter()
        .map(|s| s.cpu_user_s + s.cpu_system_s)
        .sum();
    assert!(
        cpu > 0.0,
        "the CPU page burned CPU in the stack's processes"
    );
    let conf = config(stack, "apache2.conf");
    assert!(conf.contains("\nMaxRequestWorkers 4\n"));
    assert!(conf.contains("\nKeepAlive Off\n"));
    assert!(conf.contains("mod_mpm_prefork.so"));
    guard.stop_and_verify();
}

#[test]
fn apache_worker_and_event_run_php_fpm_and_stop_clean() {
    for (stack, extra) in [
        ("apache-worker", "ThreadsPerChild=10"),
        ("apache-event", "AsyncRequestWorkerFactor=1.5"),
    ] {
        let guard = start(stack, &[extra, "pm.max_children=3", "MaxRequestWorkers=50"]);
        let s = guard.stack();
        load_briefly(s, true);
        assert!(config(s, "php-fpm.conf").contains("pm.max_children = 3"));
        assert!(config(s, "apache2.conf").contains(&extra.replace('=', " ")));
        // php-fpm and apache: two sessions.
        assert_eq!(s.sessions().len(), 2);
        guard.stop_and_verify();
    }
}

#[test]
fn nginx_apache_proxies_to_the_backend_and_stops_clean() {
    let guard = start(
        "nginx-apache",
        &[
            "backend.MaxRequestWorkers=4",
            "backend.StartServers=3",
            "frontend.upstream_keepalive=8",
        ],
    );
    let stack = guard.stack();
    load_briefly(stack, true);
    assert!(config(stack, "apache2.conf").contains("\nMaxRequestWorkers 4\n"));
    assert!(config(stack, "nginx.conf").contains("keepalive 8;"));
    guard.stop_and_verify();
}

#[test]
fn nginx_apache_event_with_upstream_keepalive_runs_php_and_stops_clean() {
    let guard = start(
        "nginx-apache-event",
        &[
            "backend.pm.max_children=4",
            "frontend.upstream_keepalive=4",
            "frontend.proxy_buffering=off",
        ],
    );
    let stack = guard.stack();
    load_briefly(stack, true);
    let nginx = config(stack, "nginx.conf");
    assert!(nginx.contains("proxy_buffering off;"));
    assert!(nginx.contains("proxy_http_version 1.1;"));
    assert!(config(stack, "apache2.conf").contains("mod_mpm_event.so"));
    // php-fpm, Apache, nginx: three sessions.
    assert_eq!(stack.sessions().len(), 3);
    guard.stop_and_verify();
}

#[test]
fn nginx_php_fpm_runs_php_and_stops_clean() {
    let guard = start("nginx-php-fpm", &["pm=static", "pm.max_children=2"]);
    let stack = guard.stack();
    load_briefly(stack, true);
    assert!(config(stack, "php-fpm.conf").contains("pm = static"));
    guard.stop_and_verify();
}

/// Requests of `/cpu/20000` from 8 clients at once, each up to 5 in turn and stopping at its
/// first failure (so a hung stack costs one `timeout` per client, not 5): (answered 200,
/// timed out, failed otherwise).
fn concurrent_php(stack: &RunningStack, timeout: Duration) -> (usize, usize, Vec<String>) {
    const CLIENTS: usize = 8;
    let address = stack.front_address();
    let start = std::sync::Barrier::new(CLIENTS);
    let outcomes: Vec<Vec<Result<u16, std::io::Error>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let mut out = Vec::new();
                    for _ in 0..5 {
                        let r = http_get(address, "/cpu/20000", timeout).map(|(status, _)| status);
                        let stop = !matches!(r, Ok(200));
                        out.push(r);
                        if stop {
                            break;
                        }
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut ok, mut timed_out, mut other) = (0, 0, Vec::new());
    for r in outcomes.into_iter().flatten() {
        match r {
            Ok(200) => ok += 1,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                timed_out += 1
            }
            Ok(status) => other.push(format!("status {status}")),
            Err(e) => other.push(e.to_string()),
        }
    }
    (ok, timed_out, other)
}

/// Issue 34 (the advisor's `php_fpm.fastcgi_keepalive_starves_pool`): with nginx keeping
/// FastCGI connections (`upstream_keepalive` K, which renders `fastcgi_keep_conn on`) each
/// php-fpm child stays with the connection it accepted until nginx closes it, and nginx
/// keeps up to K idle ones per worker: with pm.max_children ≤ workers × K a request on a
/// new connection waits in php-fpm's backlog for a child that never frees. Seed 003's
/// forum configuration (1 child, 2 workers, keepalive 1) hangs requests; the advised
/// workers × K + 1 = 3 children serve every one. A count of answers, not a timing: a
/// 20 ms page not answered in 10 s is hung.
#[test]
fn kept_fastcgi_connections_starve_a_small_pool_and_one_child_more_serves() {
    const HUNG: Duration = Duration::from_secs(10);
    let base = ["pm=static", "worker_processes=2", "upstream_keepalive=1"];
    let guard = start(
        "nginx-php-fpm",
        &[&base[..], &["pm.max_children=1"]].concat(),
    );
    let stack = guard.stack();
    let nginx = config(stack, "nginx.conf");
    assert!(nginx.contains("keepalive 1;") && nginx.contains("fastcgi_keep_conn on;"));
    assert!(nginx.contains("worker_processes 2;"));
    assert!(config(stack, "php-fpm.conf").contains("pm.max_children = 1"));
    let (ok, timed_out, other) = concurrent_php(stack, HUNG);
    assert!(other.is_empty(), "{other:?}");
    assert!(
        timed_out >= 1,
        "1 child behind 2 workers × keepalive 1: some request hangs ({ok} answered)"
    );
    guard.stop_and_verify();

    let guard = start(
        "nginx-php-fpm",
        &[&base[..], &["pm.max_children=3"]].concat(),
    );
    let (ok, timed_out, other) = concurrent_php(guard.stack(), HUNG);
    assert!(other.is_empty(), "{other:?}");
    assert_eq!(
        (ok, timed_out),
        (40, 0),
        "3 children > 2 workers × keepalive 1: every request answered"
    );
    guard.stop_and_verify();
}

/// Processes of this test process's starts of `stack`, found by their directory names.
fn leftovers_of(stack: &str) -> Vec<i32> {
    let root = webtune_lab::registry::lab_root().expect("lab root");
    let prefix: PathBuf = root.join(format!("{stack}-{}-", std::process::id()));
    let needle = prefix.to_string_lossy().into_owned();
    procfs::all_pids()
        .into_iter()
        .filter(|p| procfs::cmdline(*p).is_some_and(|c| c.contains(&needle)))
        .collect()
}

#[test]
fn a_config_the_server_rejects_leaves_nothing_behind() {
    // Each value is in range, but php-fpm refuses start_servers above max_spare_servers.
    let _turn = named_start_turn();
    let kind = StackKind::NginxPhpFpm;
    let sets = vec![
        "pm.start_servers=5".to_string(),
        "pm.max_spare_servers=3".to_string(),
    ];
    let settings = settings_for(kind, &sets).expect("each value passes validation");
    let outcome = RunningStack::start(kind, &settings, StartOptions::default());
    match outcome {
        Err(LabError::ConfigRejected {
            server, message, ..
        }) => {
            assert_eq!(server, "php-fpm");
            assert!(message.contains("start_servers"), "{message}");
        }
        Err(other) => panic!("expected the server to reject the config, got {other}"),
        Ok(_) => panic!("php-fpm accepted start_servers > max_spare_servers"),
    }
    assert!(leftovers_of("nginx-php-fpm").is_empty());
}

#[test]
fn a_server_that_dies_at_start_leaves_nothing_behind() {
    // nginx-apache: the backend starts; the frontend's nginx passes `nginx -t` but cannot
    // run 1 worker with 2 connections for its listener and upstream, so the start fails
    // after the backend is already up. Both must be gone.
    let _turn = named_start_turn();
    let kind = StackKind::from_name("nginx-apache").expect("known");
    let settings =
        settings_for(kind, &["frontend.worker_connections=2".to_string()]).expect("in range");
    let options = StartOptions {
        ready_timeout: Duration::from_secs(3),
        ..StartOptions::default()
    };
    match RunningStack::start(kind, &settings, options) {
        Err(LabError::StartFailed { server, message }) => {
            assert_eq!(server, "frontend nginx");
            assert!(message.contains("worker_connections"), "{message}");
        }
        Err(other) => panic!("expected a failed start, got {other}"),
        Ok(_) => panic!("nginx ran with 2 worker_connections"),
    }
    assert!(leftovers_of("nginx-apache").is_empty());
}

#[test]
fn unknown_and_out_of_range_parameters_are_refused_before_start() {
    let kind = StackKind::from_name("apache-prefork").expect("known");
    let err = settings_for(kind, &["MaxRequestWorkers=0".to_string()]).unwrap_err();
    assert!(err.to_string().contains("1..=20000"), "{err}");
    let err = settings_for(kind, &["ThreadsPerChild=4".to_string()]).unwrap_err();
    assert!(
        err.to_string().contains("lab params apache-prefork"),
        "{err}"
    );
    let err = settings_for(kind, &["KeepAlive=On\nUser root".to_string()]).unwrap_err();
    assert!(err.to_string().contains("on|off"), "{err}");
}

#[test]
fn the_servers_warnings_are_collected_from_their_logs() {
    // One PHP process and four requests at once: php-fpm warns that it reached
    // pm.max_children (its maintenance runs once a second, so the load lasts ~1.6 s).
    let guard = start(
        "nginx-php-fpm",
        &[
            "pm.max_children=1",
            "pm.start_servers=1",
            "pm.min_spare_servers=1",
            "pm.max_spare_servers=1",
        ],
    );
    let stack = guard.stack();
    let address = stack.front_address();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                http_get(address, "/cpu/400000", Duration::from_secs(20)).map(|(s, _)| s)
            })
        })
        .collect();
    for client in clients {
        let status = client.join().expect("client thread");
        assert_eq!(status.ok(), Some(200));
    }
    let messages = stack.log_messages();
    let reached = messages
        .iter()
        .find(|m| m.message.contains("pm.max_children"))
        .unwrap_or_else(|| panic!("no max_children warning in {messages:?}"));
    assert_eq!(reached.server, "php-fpm");
    assert_eq!(reached.level, "warn");
    guard.stop_and_verify();
}

#[test]
fn a_killed_php_fpm_master_is_recorded_and_the_stop_leaves_nothing() {
    let guard = start("apache-worker", &[]);
    let stack = guard.stack();
    // Backends first: php-fpm's session, then Apache's; each id is its master's pid.
    let sessions = stack.sessions();
    let master = sessions[0];
    let comm = procfs::read_stat(master).expect("php-fpm runs").comm;
    assert!(comm.starts_with("php-fpm"), "{comm}");
    let sampler = ServerSampler::start(
        stack.stack().name(),
        ProcessSelector::Sessions(sessions),
        Duration::from_millis(50),
    );
    load_briefly(stack, true);
    // SAFETY: a signal to the stack's php-fpm master, a child of this test process.
    unsafe {
        libc::kill(master, libc::SIGKILL);
    }
    std::thread::sleep(Duration::from_millis(200));
    let samples = sampler.finish();
    assert_eq!(samples.deaths.len(), 1, "{:?}", samples.deaths);
    let death = &samples.deaths[0];
    assert_eq!((death.process.as_str(), death.pid), (comm.as_str(), master));
    assert_eq!(death.how, "killed by SIGKILL");
    assert!(death.t_s > 0.0, "{death:?}");
    let text = webtune_report::server_summary::summarise(&samples, 10);
    assert!(
        text.contains(&format!("DIED       {comm} main process (pid {master})")),
        "{text}"
    );
    // The orphaned workers are stopped with the rest: nothing is left.
    guard.stop_and_verify();
}
