//! The JSON result against its documentation: every field `docs/result-schema.md` lists is in
//! a fully populated result, and the result has no field the document does not list. The
//! document is the schema; this test keeps the two from drifting apart.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use webtune_engine::{run, RunControl, Workload};
use webtune_model::{Arrival, LoadMode, ProbeSpec, RunResult, RunSpec, Stage, StopCondition};
use webtune_serve::{EmbeddedServer, ServeOptions};

/// What one section of the document names.
#[derive(Default)]
struct Section {
    /// Backticked names in the first column of its tables.
    fields: BTreeSet<String>,
    /// Those of them whose type says "optional".
    optional: BTreeSet<String>,
    /// Backticked names anywhere in its prose (sections that describe fields in sentences).
    prose: BTreeSet<String>,
}

type Doc = BTreeMap<String, Section>;

/// Section title → what it names.
fn documented() -> Doc {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/result-schema.md"
    ))
    .expect("docs/result-schema.md");
    let mut out = Doc::new();
    let mut section = String::new();
    let ticked = |s: &str| -> Vec<String> {
        s.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            section = title.trim().to_string();
            continue;
        }
        let entry = out.entry(section.clone()).or_default();
        if line.starts_with("| `") {
            let cells: Vec<&str> = line.split('|').collect();
            let names = ticked(cells[1]);
            if cells.get(2).is_some_and(|c| c.contains("optional")) {
                entry.optional.extend(names.iter().cloned());
            }
            entry.fields.extend(names);
        } else if !line.starts_with('|') {
            entry.prose.extend(ticked(line));
        }
    }
    out
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

fn check(section: &str, doc: &Doc, v: &Value) {
    let Section {
        fields: names,
        optional,
        ..
    } = doc
        .get(section)
        .unwrap_or_else(|| panic!("docs/result-schema.md has no section {section:?}"));
    let actual = keys(v);
    let undocumented: Vec<_> = actual.difference(names).collect();
    assert!(
        undocumented.is_empty(),
        "{section}: undocumented fields {undocumented:?}"
    );
    let missing: Vec<_> = names
        .difference(&actual)
        .filter(|n| !optional.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "{section}: documented but absent {missing:?}"
    );
}

/// A result with every optional part present: open loop with a ramp, a scenario with a
/// body check, a probe, warm-up, two repeats, and a lab's server section.
fn populated_result() -> Value {
    let srv = EmbeddedServer::start(ServeOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "[[request]]\nname = \"gif\"\npath = \"/empty.gif\"\nbody_contains = \"GIF89a\"\n\
         [[request]]\nname = \"bytes\"\npath = \"/bytes/{rand:10:20}\"\n",
    )
    .unwrap();
    let spec = RunSpec {
        url: format!("http://{}", srv.local_addr()),
        connections: 8,
        threads: 2,
        stop: StopCondition::Duration { seconds: 1.0 },
        load: LoadMode::Open {
            rate: 200.0,
            arrival: Arrival::Poisson,
        },
        stages: vec![Stage {
            seconds: 1.0,
            target: 200.0,
        }],
        warmup_s: 0.2,
        probe: Some(ProbeSpec {
            url: format!("http://{}/empty.gif", srv.local_addr()),
            rate_per_s: 5.0,
        }),
        interval_ms: 250,
        ..RunSpec::default()
    };
    let workload = Workload::from_scenario_file(&scenario).expect("scenario parses");
    let runs: Vec<RunResult> = (0..2)
        .map(|_| run(&spec, &workload, &RunControl::new(), &mut |_| {}).expect("runs"))
        .collect();
    let mut merged = webtune_report::with_repeats(runs).expect("merged");
    // A stall, so the stalls table has a row to check (runs here are too healthy for one).
    merged.stalls.push(webtune_model::Stall {
        start_s: 0.5,
        length_s: 0.1,
    });
    // The lab's server section with every optional part (the sampler's shape; a real lab
    // run with a dead master is in lab_cli.rs).
    let mut server = webtune_testkit::results::synthetic_server_samples(2);
    server.parameters.insert("KeepAlive".into(), "on".into());
    server.parameters_set.push("KeepAlive".into());
    server.log_messages.push(webtune_model::server::LogMessage {
        server: "apache2 (prefork)".into(),
        level: "error".into(),
        message: "server reached MaxRequestWorkers setting".into(),
        count: 2,
    });
    server.deaths.push(webtune_model::server::ProcessDeath {
        process: "apache2".into(),
        pid: 4123,
        t_s: 1.25,
        how: "killed by SIGKILL".into(),
    });
    server.host = Some(webtune_model::server::HostSection {
        netns: "net:[4026532177]".into(),
        sysctls: [("net.core.somaxconn".to_string(), "128".to_string())].into(),
        addresses: 10,
        client_cpus: "0".into(),
        server_cpus: "1".into(),
        processes: vec![webtune_model::server::HostProcess {
            process: "apache2".into(),
            pid: 4123,
            nofile_soft: 1024,
            nofile_hard: 20000,
            cpus: "1".into(),
        }],
    });
    merged.server = Some(server);
    serde_json::from_str(&merged.to_json_pretty()).unwrap()
}

/// A closed-loop journey run whose walks both complete and fail, so `by_journey` has every
/// field (`failed_by` included).
fn journey_result() -> Value {
    let srv = EmbeddedServer::start(ServeOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("j.toml");
    std::fs::write(
        &scenario,
        "[[journey]]\nname = \"ok\"\n[[journey.step]]\nname = \"gif\"\npath = \"/empty.gif\"\n\
         [[journey]]\nname = \"broken\"\n[[journey.step]]\nname = \"form\"\npath = \"/login\"\n\
         extract = { x = 'nowhere=\"([^\"]+)\"' }\n",
    )
    .unwrap();
    let spec = RunSpec {
        url: format!("http://{}", srv.local_addr()),
        connections: 2,
        threads: 1,
        stop: StopCondition::Requests { count: 20 },
        ..RunSpec::default()
    };
    let workload = Workload::from_scenario_file(&scenario).expect("scenario parses");
    let r = run(&spec, &workload, &RunControl::new(), &mut |_| {}).expect("runs");
    serde_json::from_str(&r.to_json_pretty()).unwrap()
}

#[test]
fn a_journey_results_fields_are_documented() {
    let doc = documented();
    let v = journey_result();
    check("Top level", &doc, &v);
    let journeys = v["by_journey"].as_object().expect("by_journey");
    assert_eq!(journeys.len(), 2);
    for journey in journeys.values() {
        check("by_journey", &doc, journey);
    }
    assert!(v["by_journey"]["broken"]["failed_by"]["form"]["extract"].as_u64() > Some(0));
}

#[test]
fn the_json_result_has_exactly_the_documented_fields() {
    let doc = documented();
    let v = populated_result();
    check("Top level", &doc, &v);
    check("spec", &doc, &v["spec"]);
    check("errors", &doc, &v["errors"]);
    check("timeline", &doc, &v["timeline"][0]);
    check("generator", &doc, &v["generator"]);
    check("schedule", &doc, &v["schedule"]);
    check("validity", &doc, &v["validity"]);
    check("stalls", &doc, &v["stalls"][0]);
    check("by_name and probe", &doc, &v["probe"]);
    for named in v["by_name"].as_object().unwrap().values() {
        check("by_name and probe", &doc, named);
    }
    check("server", &doc, &v["server"]);
    check("server samples", &doc, &v["server"]["samples"][0]);
    check("server deaths", &doc, &v["server"]["deaths"][0]);
    check("server host", &doc, &v["server"]["host"]);
    // Prose sections name their fields in backticks.
    let latency_names = &doc["latency"].prose;
    for (kind, summary) in v["latency"].as_object().unwrap() {
        assert!(latency_names.contains(kind), "latency.{kind} undocumented");
        for k in keys(summary) {
            assert!(
                latency_names.contains(&k),
                "latency.{kind}.{k} undocumented"
            );
        }
    }
    let histogram_names = &doc["histograms"].prose;
    for (kind, text) in v["histograms"].as_object().unwrap() {
        assert!(
            histogram_names.contains(kind),
            "histograms.{kind} undocumented"
        );
        assert!(text.as_str().unwrap().starts_with("HISTF"));
    }
    let repeat_names = &doc["repeats"].prose;
    for k in keys(&v["repeats"][0]) {
        assert!(repeat_names.contains(&k), "repeats[].{k} undocumented");
    }
    // And the populated result reads back as it was written.
    let back = RunResult::from_json(&v.to_string()).unwrap();
    assert_eq!(back.by_name.len(), 2);
    assert!(back.schedule.is_some() && back.probe.is_some() && back.repeats.len() == 2);
    assert_eq!(back.server.map(|s| s.deaths.len()), Some(1));
}

#[test]
fn a_shards_start_record_and_a_merges_sharding_are_documented() {
    let srv = EmbeddedServer::start(ServeOptions::default()).unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let shards: Vec<(String, RunResult)> = (1..=2)
        .map(|index| {
            let spec = RunSpec {
                url: format!("http://{}/empty.gif", srv.local_addr()),
                connections: 2,
                stop: StopCondition::Requests { count: 20 },
                shard: Some(webtune_model::Shard { index, count: 2 }),
                start_at_unix_ms: Some(now_ms + 200),
                ..RunSpec::default()
            };
            let mut r =
                run(&spec, &Workload::request(), &RunControl::new(), &mut |_| {}).expect("runs");
            // As `bench --shard` records it.
            r.start.as_mut().unwrap().run_id = webtune_model::derived_run_id(&r.spec);
            (format!("s{index}.json"), r)
        })
        .collect();
    let shard: Value = serde_json::from_str(&shards[0].1.to_json_pretty()).unwrap();
    let merged = RunResult::merge_shards(shards).expect("merges");
    let merged: Value = serde_json::from_str(&merged.to_json_pretty()).unwrap();
    let names = &documented()["start and sharding"].prose;
    let start = &shard["start"];
    let sharding = &merged["sharding"];
    for (what, v) in [
        ("start", start),
        ("start.window", &start["window"]),
        ("sharding", sharding),
        ("sharding.shards[]", &sharding["shards"][0]),
    ] {
        for k in keys(v) {
            assert!(names.contains(&k), "{what}.{k} undocumented");
        }
    }
    assert!(start["run_id"]
        .as_str()
        .is_some_and(|id| id.starts_with("start-")));
    assert!(sharding["run_id"].is_string() && sharding["start_skew_limit_ms"].is_number());
}
