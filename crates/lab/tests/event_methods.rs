//! nginx's event method (`use`) and Apache's `EnableSendfile` / `AcceptFilter` as lab
//! parameters (seed 002: nginx's kqueue stalled at -parallel 1, select did not). Each method
//! this nginx has is started for real and serves requests; one it was built without (select
//! and poll in Debian's nginx) is refused before start, in one line naming the ones it has.

use std::time::Duration;
use webtune_lab::{http_get, settings_for, RunningStack, StackKind, StartOptions};

fn start(stack: &str, sets: &[String]) -> Result<RunningStack, webtune_lab::LabError> {
    let kind = StackKind::from_name(stack).expect("known stack");
    let settings = settings_for(kind, sets).expect("valid settings");
    let options = StartOptions {
        stop_grace: Duration::from_secs(3),
        ..StartOptions::default()
    };
    RunningStack::start(kind, &settings, options)
}

fn config(stack: &RunningStack, name: &str) -> String {
    stack
        .rendered()
        .configs
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
        .clone()
}

fn serves_empty_gif(stack: &RunningStack) {
    for _ in 0..20 {
        let (status, body) = http_get(stack.front_address(), "/empty.gif", Duration::from_secs(10))
            .expect("GET /empty.gif");
        assert_eq!(status, 200);
        assert_eq!(body.len(), 43, "the 43-byte empty.gif");
    }
}

/// The methods of the installed nginx, as `webtune_lab` probes them.
fn methods() -> Vec<&'static str> {
    let programs = webtune_lab::servers::Programs::discover();
    let nginx = programs.nginx.clone().expect("nginx installed");
    webtune_lab::servers::nginx_events::methods(&nginx).expect("probe")
}

#[test]
fn each_event_method_serves_or_is_refused_in_one_line() {
    let have = methods();
    assert!(have.contains(&"epoll"), "Linux nginx has epoll: {have:?}");
    for method in ["epoll", "poll", "select"] {
        let sets = vec![format!("use={method}")];
        match start("nginx", &sets) {
            Ok(stack) => {
                assert!(
                    have.contains(&method),
                    "{method} started but was not probed"
                );
                let text = config(&stack, "nginx.conf");
                assert!(
                    text.contains(&format!("    use {method};\n")),
                    "events block has `use {method};`:\n{text}"
                );
                serves_empty_gif(&stack);
                stack.stop().expect("clean stop");
            }
            Err(e) => {
                let line = e.to_string();
                assert!(!have.contains(&method), "{method} is there but: {line}");
                assert!(!line.contains('\n'), "one line: {line}");
                assert!(
                    line.contains(&format!("without the {method} event method"))
                        && line.contains(&format!("it has: {}", have.join(", "))),
                    "names the methods it has: {line}"
                );
            }
        }
    }
}

#[test]
fn auto_writes_no_use_line() {
    let stack = start("nginx", &[]).expect("nginx starts");
    let text = config(&stack, "nginx.conf");
    assert!(!text.contains(" use "), "no use line by default:\n{text}");
    serves_empty_gif(&stack);
    stack.stop().expect("clean stop");
}

#[test]
fn apache_sendfile_and_accept_filter_are_rendered_and_serve() {
    let sets = vec![
        "EnableSendfile=on".to_string(),
        "AcceptFilter=none".to_string(),
    ];
    let stack = start("apache-event", &sets).expect("apache starts");
    let text = config(&stack, "apache2.conf");
    assert!(text.contains("\nEnableSendfile On\n"), "{text}");
    assert!(text.contains("\nAcceptFilter http none\n"), "{text}");
    assert!(text.contains("\nAcceptFilter https none\n"), "{text}");
    serves_empty_gif(&stack);
    stack.stop().expect("clean stop");
    let stack = start("apache-event", &[]).expect("apache starts");
    let text = config(&stack, "apache2.conf");
    assert!(
        text.contains("\nEnableSendfile Off\n"),
        "Apache's default: {text}"
    );
    assert!(
        text.contains("\nAcceptFilter http data\n"),
        "Linux default: {text}"
    );
    stack.stop().expect("clean stop");
}
