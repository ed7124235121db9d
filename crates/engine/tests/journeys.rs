//! Journeys end to end against the embedded target's session pages: each virtual user logs
//! in once with its own row of the users file (a CSRF token extracted from the form, the
//! session cookie carried by its jar), reads and writes with it, and walks again; a missing
//! extraction ends the walk under its step; journeys share the users by weight.

mod support;

use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::{ErrorKind, RunSpec, StopCondition};
use webtune_serve::{EmbeddedServer, ServeOptions};

fn target() -> EmbeddedServer {
    EmbeddedServer::start(ServeOptions {
        workers: 1,
        ..ServeOptions::default()
    })
    .expect("embedded target starts")
}

fn scenario(text: &str, users: &str) -> (tempfile::TempDir, Workload) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), users).unwrap();
    let file = dir.path().join("j.toml");
    std::fs::write(&file, text).unwrap();
    let w = Workload::from_scenario_file(&file).expect("scenario parses");
    (dir, w)
}

fn spec(srv: &EmbeddedServer, connections: u32, requests: u64) -> RunSpec {
    RunSpec {
        url: format!("http://{}", srv.local_addr()),
        connections,
        threads: 1,
        stop: StopCondition::Requests { count: requests },
        ..RunSpec::default()
    }
}

const POSTERS: &str = r#"
[[journey]]
name = "posters"
users = "users.csv"
unique_users = true

[[journey.step]]
name = "login_form"
path = "/login"
once = true
extract = { csrf = 'name="csrf" value="([^"]+)"' }

[[journey.step]]
name = "login"
method = "POST"
path = "/login"
headers = { Content-Type = "application/x-www-form-urlencoded" }
body = "user={user:name}&password={user:password}&csrf={var:csrf}"
once = true
expect_status = "200"

[[journey.step]]
name = "read"
repeat = 2

[[journey.step.step]]
name = "account"
path = "/account"
expect_status = "200"
extract = { reply_csrf = 'value="([0-9a-f]+)"' }

[[journey.step.step]]
name = "reply"
method = "POST"
path = "/reply"
body = "csrf={var:reply_csrf}&text=hello"
expect_status = "200"

[[journey.step]]
name = "me"
path = "/api/me"
expect_status = "200"
extract = { me = "json:/user/name" }
"#;

const USERS: &str = "name,password\nann,secret-ann\nbob,secret-bob\ncid,secret-cid\n";

#[test]
fn users_log_in_once_with_their_own_row_and_keep_their_cookie() {
    let srv = target();
    let (_dir, w) = scenario(POSTERS, USERS);
    let r = run(&spec(&srv, 3, 120), &w, &RunControl::new(), &mut |_| {}).expect("runs");
    assert_eq!(r.responses, 120);
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors.summary());
    // Once steps: one login per user, each user with its own row (unique_users).
    let stats = srv.session_stats();
    assert_eq!(stats.logins.len(), 3, "{:?}", stats.logins);
    assert!(stats.logins.values().all(|&n| n == 1), "{:?}", stats.logins);
    assert_eq!(r.by_name["login_form"].responses, 3);
    assert_eq!(r.by_name["login"].responses, 3);
    // The group repeats twice per walk: account, reply, account, reply, me.
    let j = &r.by_journey["posters"];
    assert!(j.completed >= 10, "{j:?}");
    assert_eq!(j.failed, 0);
    let (account, reply, me) = (
        r.by_name["account"].responses,
        r.by_name["reply"].responses,
        r.by_name["me"].responses,
    );
    assert_eq!(me, j.completed, "one /api/me per completed walk");
    assert!(
        reply >= 2 * j.completed && reply <= account,
        "{account} {reply} {me}"
    );
    assert_eq!(
        stats.replies, reply,
        "every reply was accepted (cookie and csrf carried)"
    );
    assert_eq!(j.latency.count, j.completed);
}

#[test]
fn a_missing_extraction_ends_the_walk_under_its_step() {
    let srv = target();
    let text = r#"
[[journey]]
name = "broken"

[[journey.step]]
name = "form"
path = "/login"
extract = { token = 'name="nonce" value="([^"]+)"' }

[[journey.step]]
name = "never"
path = "/empty.gif?t={var:token}"
"#;
    let (_dir, w) = scenario(text, "name\nx\n");
    let r = run(&spec(&srv, 2, 40), &w, &RunControl::new(), &mut |_| {}).expect("runs");
    assert_eq!(r.errors.get(ErrorKind::Extract), 40);
    assert_eq!(r.by_name["form"].errors.get(ErrorKind::Extract), 40);
    assert_eq!(r.by_name["never"].responses, 0);
    let j = &r.by_journey["broken"];
    assert_eq!((j.completed, j.failed), (0, 40));
    assert_eq!(j.failed_by["form"][&ErrorKind::Extract], 40);
}

#[test]
fn users_are_shared_between_journeys_by_weight() {
    let srv = target();
    let text = r#"
[[journey]]
name = "readers"
weight = 3

[[journey.step]]
name = "reader_start"
path = "/empty.gif"
once = true

[[journey.step]]
name = "read"
path = "/bytes/10"
repeat = "rand:1:3"

[[journey]]
name = "writers"
weight = 1

[[journey.step]]
name = "writer_start"
path = "/empty.gif"
once = true

[[journey.step]]
name = "write"
path = "/bytes/20"
"#;
    let (_dir, w) = scenario(text, "name\nx\n");
    let r = run(&spec(&srv, 8, 200), &w, &RunControl::new(), &mut |_| {}).expect("runs");
    assert_eq!(r.errors.total(), 0);
    // 8 users at 3:1: six readers, two writers, each starting once.
    assert_eq!(r.by_name["reader_start"].responses, 6);
    assert_eq!(r.by_name["writer_start"].responses, 2);
    assert!(r.by_journey["readers"].completed > 0);
    assert!(r.by_journey["writers"].completed > 0);
}

#[test]
fn unique_users_need_a_row_per_virtual_user() {
    let srv = target();
    let (_dir, w) = scenario(POSTERS, USERS);
    let e = run(&spec(&srv, 4, 10), &w, &RunControl::new(), &mut |_| {}).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("\"posters\"") && text.contains("unique_users"),
        "{text}"
    );
    assert!(!text.contains('\n'), "{text}");
}

#[test]
fn the_shipped_journey_runs_clean_against_the_embedded_target() {
    let srv = target();
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bench/scenarios/embedded-journey.toml"
    );
    let w = Workload::from_scenario_file(std::path::Path::new(file)).expect("parses");
    let r = run(&spec(&srv, 10, 60), &w, &RunControl::new(), &mut |_| {}).expect("runs");
    assert_eq!(r.responses, 60);
    assert_eq!(r.errors.total(), 0, "{}", r.errors.summary());
    // 10 users at 1:9: one poster, nine readers, each logged in once.
    assert_eq!(r.by_name["login"].responses, 1);
    assert_eq!(r.by_name["reader_login"].responses, 9);
    assert_eq!(srv.session_stats().logins.values().sum::<u64>(), 10);
}

/// The posters' journey without `unique_users`: rows are shared.
fn shared_rows() -> String {
    POSTERS.replace("unique_users = true\n", "")
}

#[test]
fn an_open_loop_starts_each_journey_on_a_fresh_user() {
    let srv = target();
    let (_dir, w) = scenario(&shared_rows(), USERS);
    let mut s = spec(&srv, 16, 0);
    s.stop = StopCondition::Duration { seconds: 1.0 };
    s.load = webtune_model::LoadMode::Open {
        rate: 40.0,
        arrival: webtune_model::Arrival::Uniform,
    };
    let r = run(&s, &w, &RunControl::new(), &mut |_| {}).expect("runs");
    assert_eq!(r.errors.total(), 0, "{}", r.errors.summary());
    // Every arrival is a new user: it logs in (its once steps), walks once, and leaves.
    let logins = r.by_name["login"].responses;
    assert!(
        (30..=41).contains(&logins),
        "{logins} logins for 40 arrivals"
    );
    assert_eq!(srv.session_stats().logins.values().sum::<u64>(), logins);
    let j = &r.by_journey["posters"];
    assert!(j.completed >= 30 && j.completed <= logins, "{j:?}");
    assert_eq!(r.by_name["me"].responses, j.completed);
    // The schedule's arrivals are walks: one lateness per walk (its first step), none for
    // the steps after it.
    let sched = r.schedule.as_ref().expect("open loop");
    assert_eq!(sched.not_sent, 0);
    assert_eq!(sched.lag.count, r.by_name["login_form"].responses);
    assert!(
        sched.lag.count < r.responses / 4,
        "{} of {}",
        sched.lag.count,
        r.responses
    );
}

#[test]
fn an_open_loop_with_unique_users_sends_no_arrival_once_the_rows_are_used() {
    let srv = target();
    let (_dir, w) = scenario(POSTERS, USERS);
    let mut s = spec(&srv, 8, 0);
    s.stop = StopCondition::Duration { seconds: 0.5 };
    s.load = webtune_model::LoadMode::Open {
        rate: 40.0,
        arrival: webtune_model::Arrival::Uniform,
    };
    let r = run(&s, &w, &RunControl::new(), &mut |_| {}).expect("runs");
    assert_eq!(r.by_name["login"].responses, 3, "one walk per row");
    assert!(r.schedule.as_ref().unwrap().not_sent >= 10);
    let stats = srv.session_stats();
    assert!(stats.logins.values().all(|&n| n == 1), "{:?}", stats.logins);
}

#[test]
fn count_journeys_makes_n_count_walks_and_lets_the_last_ones_finish() {
    let srv = target();
    let (_dir, w) = scenario(POSTERS, USERS);
    let mut s = spec(&srv, 3, 7);
    s.count_journeys = true;
    let r = run(&s, &w, &RunControl::new(), &mut |_| {}).expect("runs");
    let j = &r.by_journey["posters"];
    assert_eq!((j.completed, j.failed), (7, 0));
    assert_eq!(r.by_name["me"].responses, 7);
    assert_eq!(r.by_name["login"].responses, 3);
}

#[test]
fn count_journeys_needs_journeys() {
    let srv = target();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mix.toml");
    std::fs::write(&file, "[[request]]\nname = \"a\"\npath = \"/empty.gif\"\n").unwrap();
    let w = Workload::from_scenario_file(&file).unwrap();
    let mut s = spec(&srv, 1, 5);
    s.count_journeys = true;
    let e = run(&s, &w, &RunControl::new(), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("--count journeys"), "{e}");
}

#[test]
fn journeys_may_share_a_step_name_and_its_rows_add_up() {
    let srv = target();
    let text = r#"
[[journey]]
name = "a"
[[journey.step]]
name = "start"
path = "/empty.gif"
once = true
[[journey.step]]
name = "work_a"
path = "/bytes/10"

[[journey]]
name = "b"
[[journey.step]]
name = "start"
path = "/empty.gif"
once = true
[[journey.step]]
name = "work_b"
path = "/bytes/20"
"#;
    let (_dir, w) = scenario(text, "name\nx\n");
    let r = run(&spec(&srv, 4, 40), &w, &RunControl::new(), &mut |_| {}).expect("runs");
    assert_eq!(
        r.by_name["start"].responses, 4,
        "one start per user, both journeys"
    );
    assert_eq!(r.by_name.len(), 3);
    assert_eq!(r.responses, 40);
}
