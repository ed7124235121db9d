//! HTTP/2 through the lab, end to end through the built binary: `webtune lab run` on the
//! TLS stacks with h2 turned on (`http2=on` for nginx, `Protocols_h2=on` for Apache event)
//! and `-- --http2 --streams N` loads them over h2, trusting the lab's own certificate
//! (the trial passes it to the load: no `--cacert`, no `--insecure`).

mod support;

use support::lab::LabDir;

/// `webtune lab run STACK --set SET -- --http2 --streams 10 -c 4 -n N --json … PATH`:
/// asserts it exits 0 and returns the JSON result.
fn lab_run_h2(stack: &str, set: &str, n: u64, path: &str) -> serde_json::Value {
    let lab = LabDir::new(stack);
    std::fs::create_dir_all(&lab.0).unwrap();
    let json = lab.0.join("result.json");
    let output = lab
        .command()
        .args(["lab", "run", stack, "--set", set, "--"])
        .args([
            "--http2",
            "--streams",
            "10",
            "-c",
            "4",
            "-n",
            &n.to_string(),
        ])
        .arg("--json")
        .arg(&json)
        .arg(path)
        .output()
        .expect("run webtune");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("HTTP/2, 10 streams per connection"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&json).expect("json written");
    serde_json::from_str(&text).expect("valid json")
}

fn assert_h2_all_ok(value: &serde_json::Value, n: u64) {
    assert_eq!(value["responses"], n, "{value}");
    assert_eq!(value["status"]["200"], n, "{value}");
    assert_eq!(value["protocol"], "h2", "{value}");
    assert_eq!(value["tls"]["alpn"], "h2", "{value}");
    assert_eq!(value["h2"]["streams_per_connection"], 10, "{value}");
}

#[test]
fn lab_run_nginx_tls_with_http2_on_loads_it_over_h2() {
    let value = lab_run_h2("nginx-tls", "http2=on", 200, "/empty.gif");
    assert_h2_all_ok(&value, 200);
    assert_eq!(value["server"]["parameters"]["http2"], "on", "{value}");
}

#[test]
fn lab_run_apache_event_tls_with_protocols_h2_loads_it_over_h2() {
    let value = lab_run_h2("apache-event-tls", "Protocols_h2=on", 100, "/cpu/1");
    assert_h2_all_ok(&value, 100);
    assert_eq!(
        value["server"]["parameters"]["Protocols_h2"], "on",
        "{value}"
    );
}
