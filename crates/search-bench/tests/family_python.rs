//! The generated family (`surfaces.rs`) evaluated by the Python port agrees with the Rust
//! evaluation: `examples/suite_eval.py` (what `optuna_suite.py` and `bbo_suite.py` use)
//! recomputes noise-free check points of 50 generated servers and of the seven named ones,
//! and rejects a check point that does not agree. Needs python3 (no third-party packages);
//! fails without it.

use std::path::Path;
use std::process::Command;
use webtune_search_bench::suite_run::random_check_points;
use webtune_search_bench::suite_servers::servers;
use webtune_search_bench::surfaces::family;

fn entries() -> Vec<serde_json::Value> {
    let generated = family(1, 50).into_iter().map(|g| (Some(g.shape), g.server));
    let named = servers().into_iter().map(|s| (None, s));
    generated
        .chain(named)
        .map(|(shape, s)| {
            let checks: Vec<serde_json::Value> = random_check_points(&s, 30)
                .into_iter()
                .map(|(c, tp, p99)| serde_json::json!({"config": c, "throughput": tp, "p99_ms": p99}))
                .collect();
            serde_json::json!({"shape": shape, "server": s, "checks": checks})
        })
        .collect()
}

fn python_check(entries: &[serde_json::Value]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("family.json");
    std::fs::write(&file, serde_json::to_string(entries).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/suite_eval.py");
    Command::new("python3")
        .arg(script)
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed to check the Python port: {e}"))
}

#[test]
fn the_python_port_evaluates_the_same_functions() {
    let all = entries();
    let out = python_check(&all);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("57 servers, 1767 check points agree"),
        "{stdout}"
    );
    // A check point 1e-6 off is caught: the agreement is tested, not assumed.
    let mut wrong = all.clone();
    let tp = wrong[3]["checks"][5]["throughput"].as_f64().unwrap();
    wrong[3]["checks"][5]["throughput"] = serde_json::json!(tp * (1.0 + 1e-6));
    assert!(!python_check(&wrong).status.success());
}
