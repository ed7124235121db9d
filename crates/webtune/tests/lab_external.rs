//! `lab run external` samples the server behind the URL, not every process of its name
//! (issue 33, item 8: `--process nginx` summed the user's three nginx processes with another
//! user's three). Two real nginx instances on two ports: the one listening on the URL's port
//! is sampled with its worker; `--pid` picks the other; a URL neither listens on names both
//! as candidates and samples neither.

mod support;

use std::process::Command;
use std::time::Duration;
use support::child::run_bounded;
use support::lab::WEBTUNE;
use webtune_testkit::free_port;
use webtune_testkit::servers::{self, Server};

/// An nginx "somebody else" runs: one worker, its own directory, a 43-byte file.
fn someones_nginx() -> Server {
    let port = free_port();
    servers::start_nginx(
        tempfile::tempdir().unwrap(),
        port,
        &[("empty.gif", &[0u8; 43])],
        &format!("server {{ listen 127.0.0.1:{port}; root {{d}}/www; }}"),
    )
}

/// `lab run external URL EXTRA… -- -c 2 -n 200 --json - /empty.gif`: (code, JSON, stderr).
fn run_external(url: &str, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let (code, stdout, stderr) = run_bounded(
        Command::new(WEBTUNE)
            .args(["lab", "run", "external", url, "--sample-interval", "50ms"])
            .args(extra)
            .args(["--", "-c", "2", "-n", "200", "--json", "-", "/empty.gif"]),
        Duration::from_secs(60),
    );
    let value = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (code, value, stderr)
}

fn peak_processes(v: &serde_json::Value) -> u64 {
    v["server"]["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .filter_map(|s| s["processes"].as_u64())
        .max()
        .unwrap_or(0)
}

#[test]
fn the_nginx_on_the_urls_port_is_sampled_and_another_nginx_is_not() {
    let mine = someones_nginx();
    let other = someones_nginx();
    let (mine_pid, other_pid) = (mine.child.id(), other.child.id());
    let url = format!("http://127.0.0.1:{}", mine.port);

    let (code, v, stderr) = run_external(&url, &["--process", "nginx"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(v["ok"], 200, "{v}");
    let selector = v["server"]["selector"].as_str().unwrap_or_default();
    assert_eq!(
        selector,
        format!(
            "pid {mine_pid} and its children (nginx, listening on port {})",
            mine.port
        )
    );
    // Its master and its one worker; the other nginx's two are never added.
    assert_eq!(peak_processes(&v), 2, "{selector}");

    // --pid: that process and its children, whatever the URL's port.
    let (code, v, stderr) = run_external(&url, &["--pid", &other_pid.to_string()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        v["server"]["selector"],
        format!("pid {other_pid} and its children (nginx, given by --pid)")
    );
    assert_eq!(peak_processes(&v), 2);
    // A pid that is not the named server is refused before any load.
    let (code, _, stderr) = run_external(
        &url,
        &["--process", "apache2", "--pid", &other_pid.to_string()],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("--pid {other_pid} is nginx, not apache2")),
        "{stderr}"
    );
}

#[test]
fn several_candidates_are_named_and_none_is_sampled() {
    let a = someones_nginx();
    let b = someones_nginx();
    // Something else answers at the URL (a proxy, say): no nginx listens on its port.
    let front = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", front.local_addr().unwrap());
    let (code, v, stderr) = run_external(&url, &["--process", "nginx"]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(v, serde_json::Value::Null, "no load ran");
    let line = stderr.trim();
    assert_eq!(line.lines().count(), 1, "{stderr}");
    for server in [&a, &b] {
        assert!(
            line.contains(&format!(
                "pid {} (nginx, listening on {})",
                server.child.id(),
                server.port
            )),
            "{line}"
        );
    }
    assert!(line.contains("none of them listens on port"), "{line}");
    assert!(line.contains("--pid"), "{line}");
}
