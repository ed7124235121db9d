//! An open loop's memory does not grow with rate × duration: a schedule far beyond what the
//! server (or any machine) can take leaves its backlog in the schedule, counted as not sent,
//! never listed. This file holds one test so that the process's peak RSS is that run's.

mod support;

use std::time::{Duration, Instant};
use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::{Arrival, LoadMode, RunSpec, StopCondition};

#[test]
fn a_schedule_of_millions_of_due_requests_costs_no_memory() {
    // Two connections to a server that takes 10 ms a request: ~200 of the 20,000,000
    // requests due in the second are sent; the rest wait in the schedule. Listing them took
    // 16 bytes each (320 MB, more with the queue's doubling); counted, they take nothing.
    let srv = support::http_server(|_, _| (Duration::from_millis(10), b"ok".to_vec()));
    let spec = RunSpec {
        url: format!("http://{}/", srv.addr),
        connections: 2,
        threads: 1,
        load: LoadMode::Open {
            rate: 2e7,
            arrival: Arrival::Uniform,
        },
        stop: StopCondition::Duration { seconds: 1.0 },
        ..RunSpec::default()
    };
    let control = RunControl::new();
    let began = Instant::now();
    let r = run(&spec, &Workload::request(), &control, &mut |_| {}).expect("run starts");
    assert!(began.elapsed() < Duration::from_secs(10), "the run ends");
    assert!(r.responses > 0 && r.responses < 1_000, "{}", r.responses);
    let sched = r.schedule.as_ref().expect("an open loop has a schedule");
    // Nearly every due request was never sent, and is counted so.
    assert!(
        sched.not_sent > 19_000_000 && sched.not_sent <= 20_000_000,
        "not sent {}",
        sched.not_sent
    );
    let peak_mib = r.generator.max_rss_kib / 1024;
    assert!(peak_mib < 150, "peak RSS {peak_mib} MiB");
}
