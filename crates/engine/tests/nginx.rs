//! The engine against real nginx from Debian's package (installed by .ci/run): exact counts,
//! connection reuse vs a connection per request, status codes. nginx runs in a private
//! directory with `daemon off;`, one worker, on a free loopback port; it is stopped on drop.

mod support;

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::{ErrorKind, RunResult, RunSpec, StopCondition};

struct Nginx {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: fast shutdown of master and worker.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn nginx_binary() -> PathBuf {
    for p in ["/usr/sbin/nginx", "/usr/local/sbin/nginx"] {
        if Path::new(p).exists() {
            return p.into();
        }
    }
    panic!("nginx is not installed: run .ci/run or `apt-get install nginx-light`");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_nginx(keepalive_requests: u32) -> Nginx {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let docroot = root.join("www");
    std::fs::create_dir(&docroot).unwrap();
    std::fs::write(docroot.join("empty.gif"), [0u8; 43]).unwrap();
    std::fs::write(docroot.join("page.html"), vec![b'x'; 80_000]).unwrap();
    // Workers run as nobody when started as root: let them read the docroot.
    for p in [root, docroot.as_path()] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for f in ["empty.gif", "page.html"] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(docroot.join(f), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let port = free_port();
    let d = root.display();
    let conf = format!(
        "daemon off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/cb;\n  proxy_temp_path {d}/px;\n\
           fastcgi_temp_path {d}/fc;\n  uwsgi_temp_path {d}/uw;\n  scgi_temp_path {d}/sc;\n\
           keepalive_requests {keepalive_requests};\n\
           server {{ listen 127.0.0.1:{port}; root {d}/www; }}\n}}\n"
    );
    std::fs::write(root.join("nginx.conf"), conf).unwrap();
    let child = Command::new(nginx_binary())
        .arg("-p")
        .arg(root)
        .arg("-c")
        .arg(root.join("nginx.conf"))
        .arg("-e")
        .arg(root.join("error.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nginx starts");
    let mut nginx = Nginx {
        child,
        port,
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(_)) = nginx.child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = nginx.child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("nginx exited at start: {err}");
        }
        assert!(Instant::now() < deadline, "nginx did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    nginx
}

fn bench(nginx: &Nginx, path: &str, n: u64, c: u32, keepalive: bool) -> RunResult {
    let spec = RunSpec {
        url: format!("http://127.0.0.1:{}{path}", nginx.port),
        connections: c,
        threads: 2,
        stop: StopCondition::Requests { count: n },
        keepalive,
        ..RunSpec::default()
    };
    run(&spec, &Workload::request(), &RunControl::new(), &mut |_| {}).expect("run starts")
}

#[test]
fn exact_counts_and_connection_reuse_against_nginx() {
    let nginx = start_nginx(1000);
    let r = bench(&nginx, "/empty.gif", 5000, 20, true);
    assert_eq!(r.ok, 5000, "{:?}", r.errors);
    assert_eq!(r.connections_opened, 20);
    assert_eq!(r.body_bytes, 5000 * 43);
    assert_eq!(
        r.server_software.as_deref().map(|s| s.starts_with("nginx")),
        Some(true)
    );

    let r = bench(&nginx, "/empty.gif", 500, 10, false);
    assert_eq!(r.ok, 500, "{:?}", r.errors);
    assert_eq!(r.connections_opened, 500);

    let r = bench(&nginx, "/page.html", 200, 4, true);
    assert_eq!(r.body_bytes, 200 * 80_000);
}

#[test]
fn nginx_closing_after_keepalive_requests_is_not_an_error() {
    // keepalive_requests 10: nginx answers the 10th request with "Connection: close".
    let nginx = start_nginx(10);
    let r = bench(&nginx, "/empty.gif", 1000, 5, true);
    assert_eq!(r.ok, 1000, "{:?}", r.errors);
    assert_eq!(r.errors.total(), 0);
    // At least 1000 / 10 connections; the last one of each connection slot may be cut short
    // by the end of the budget, so up to one more per connection.
    assert!(
        (100..=105).contains(&r.connections_opened),
        "{}",
        r.connections_opened
    );
}

#[test]
fn status_codes_from_nginx_are_counted() {
    let nginx = start_nginx(1000);
    let r = bench(&nginx, "/missing", 300, 3, true);
    assert_eq!(r.status.get(&404), Some(&300));
    assert_eq!(r.errors.get(ErrorKind::UnexpectedStatus), 300);
}
