//! A weighted scenario run end to end: each name's share follows its weight, templated values
//! stay in range (checked by the server), a failed body check is counted under its name, and
//! every figure is broken down per name.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::run;
use support::{http_server, TestServer};
use webtune_engine::{RunControl, Workload};
use webtune_model::{ErrorKind, RunSpec, StopCondition};

/// Answers every request ("<html>…</html>" under /page, "plain" elsewhere); counts
/// `/t?id=N` requests whose N is outside 1..=150000.
fn range_checking_server(out_of_range: Arc<AtomicU64>) -> TestServer {
    http_server(move |_, path| {
        if let Some(id) = path.strip_prefix("/t?id=") {
            if !id.parse::<u64>().is_ok_and(|n| (1..=150_000).contains(&n)) {
                out_of_range.fetch_add(1, Ordering::SeqCst);
            }
        }
        let body: &[u8] = if path.starts_with("/page") {
            b"<html>a forum page</html>"
        } else {
            b"plain"
        };
        (Duration::ZERO, body.to_vec())
    })
}

#[test]
fn weighted_scenario_breaks_down_per_name() {
    let bad = Arc::new(AtomicU64::new(0));
    let srv = range_checking_server(bad.clone());
    let addr = srv.addr;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mix.toml");
    std::fs::write(
        &file,
        r#"
[[request]]
name = "list"
weight = 20
path = "/page/list"
body_contains = "</html>"

[[request]]
name = "topic"
weight = 20
path = "/page/topic"
body_contains = "this text is never there"

[[request]]
name = "thread"
weight = 60
path = "/t?id={rand:1:150000}"
"#,
    )
    .unwrap();
    let spec = RunSpec {
        url: format!("http://{addr}"),
        connections: 4,
        threads: 2,
        stop: StopCondition::Requests { count: 5000 },
        ..RunSpec::default()
    };
    let workload = Workload::from_scenario_file(&file).expect("scenario parses");
    let r = run(&spec, &workload, &RunControl::new(), &mut |_| {}).expect("runs");
    assert_eq!(r.responses, 5000);
    assert_eq!(
        bad.load(Ordering::SeqCst),
        0,
        "a templated id left its range"
    );
    let share = |name: &str| r.by_name[name].responses as f64 / 5000.0;
    // Binomial sd at n=5000 is under 0.7 points; allow 3 points.
    assert!((share("list") - 0.20).abs() < 0.03, "{}", share("list"));
    assert!((share("topic") - 0.20).abs() < 0.03, "{}", share("topic"));
    assert!((share("thread") - 0.60).abs() < 0.03, "{}", share("thread"));
    // The failed body check is its own kind, under its own name only.
    let topic = &r.by_name["topic"];
    assert_eq!(topic.errors.get(ErrorKind::BodyCheck), topic.responses);
    assert_eq!(topic.ok, 0);
    assert_eq!(r.by_name["list"].errors.total(), 0);
    assert_eq!(r.by_name["list"].ok, r.by_name["list"].responses);
    assert_eq!(r.errors.get(ErrorKind::BodyCheck), topic.responses);
    // Per-name histograms add up to the total.
    let named: u64 = r.by_name.values().map(|n| n.histogram.count()).sum();
    assert_eq!(named, r.histograms.total.count());
    // Lengths are per name: the two page bodies differ from each other, not within a name.
    assert_eq!(r.by_name["thread"].length_varies, 0);
    assert_eq!(r.by_name["list"].length_varies, 0);
}

#[test]
fn scenario_against_the_embedded_target_runs_clean() {
    let srv = webtune_serve::EmbeddedServer::start(webtune_serve::ServeOptions::default()).unwrap();
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bench/scenarios/embedded-mix.toml"
    );
    let spec = RunSpec {
        url: format!("http://{}", srv.local_addr()),
        connections: 4,
        threads: 2,
        stop: StopCondition::Requests { count: 500 },
        ..RunSpec::default()
    };
    let workload = Workload::from_scenario_file(std::path::Path::new(file)).expect("parses");
    let r = run(&spec, &workload, &RunControl::new(), &mut |_| {}).expect("runs");
    assert_eq!(
        r.spec.scenario.as_deref(),
        Some(file),
        "the result names it"
    );
    assert_eq!(r.spec.scenario_sha256.as_ref().map(String::len), Some(64));
    assert_eq!(r.ok, 500, "{:?}", r.errors);
    assert!(r.by_name.len() >= 3);
}

#[test]
fn think_time_paces_each_connection_in_closed_loop() {
    let _serial = support::one_at_a_time();
    let bad = Arc::new(AtomicU64::new(0));
    let srv = range_checking_server(bad);
    let addr = srv.addr;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("think.toml");
    std::fs::write(
        &file,
        "think = \"100ms\"\n[[request]]\nname = \"only\"\nweight = 1\npath = \"/x\"\n",
    )
    .unwrap();
    let spec = RunSpec {
        url: format!("http://{addr}"),
        connections: 2,
        threads: 1,
        stop: StopCondition::Duration { seconds: 1.0 },
        ..RunSpec::default()
    };
    let workload = Workload::from_scenario_file(&file).expect("scenario parses");
    let r = run(&spec, &workload, &RunControl::new(), &mut |_| {}).expect("runs");
    // Two connections, each one request per ~100 ms for 1 s: about 20, never hundreds.
    assert!((12..=24).contains(&r.responses), "{}", r.responses);
}
