//! The lab commands' requests end to end on real servers, with no command line: a
//! `SweepRequest` becomes one start of the stack loaded at each level, and a `RunRequest`
//! loads the path it was given on the stack it names, each leaving nothing behind.

use std::time::Duration;
use webtune_engine::Workload;
use webtune_lab::trial::{self, App, RunRequest, Silent, SweepRequest};
use webtune_model::{RunSpec, StopCondition, StopToken};

#[test]
fn a_sweep_request_loads_each_level_of_the_stacks_own_site_on_one_start() {
    let request = SweepRequest {
        stack: "nginx".into(),
        connections: vec![1, 3],
        duration: Duration::from_millis(600),
        warmup: Duration::ZERO,
        cooldown: Duration::ZERO,
        pause: Duration::ZERO,
        threads: Some(1),
        sample_interval: Duration::from_millis(100),
        ..SweepRequest::default()
    };
    let swept = request.trial(&mut |_| {}).expect("a sweep of nginx's site");
    assert_eq!(swept.app, App::Site);
    assert_eq!(swept.path, "/empty.gif");
    let outcome = trial::run(&swept.trial, &StopToken::new(), &mut Silent).expect("it runs");
    assert!(!outcome.interrupted);
    let connections: Vec<u32> = outcome
        .levels
        .iter()
        .map(|l| l.result.spec.connections)
        .collect();
    assert_eq!(connections, [1, 3]);
    for level in &outcome.levels {
        assert!(level.result.responses > 0, "{:?} got answers", level.level);
        assert!(level.result.spec.url.ends_with("/empty.gif"));
        assert_eq!(
            level.result.server.as_ref().expect("sampled").target,
            "nginx"
        );
    }
}

#[test]
fn a_run_request_loads_the_given_path_on_the_stack_it_names() {
    let request = RunRequest {
        stack: Some("nginx".into()),
        set: vec!["worker_processes=1".into()],
        sample_interval: Duration::from_millis(100),
        ..RunRequest::default()
    };
    let workload = Workload::request();
    let (target, path) = request
        .target(Some("/index.html"), &workload, &mut |_| {})
        .expect("nginx with a path");
    assert_eq!(path, "/index.html");
    let load = RunSpec {
        url: path,
        connections: 2,
        threads: 1,
        stop: StopCondition::Duration { seconds: 0.5 },
        ..RunSpec::default()
    };
    let trial = request.trial(target, load, workload, 1);
    let outcome = trial::run(&trial, &StopToken::new(), &mut Silent).expect("it runs");
    let result = &outcome.levels[0].result;
    assert!(result.responses > 0);
    assert_eq!(result.errors.total(), 0, "{:?}", result.errors);
    assert!(
        result.spec.url.ends_with("/index.html"),
        "{}",
        result.spec.url
    );
    let server = result.server.as_ref().expect("sampled");
    assert_eq!(server.parameters_set, vec!["worker_processes".to_string()]);
}
