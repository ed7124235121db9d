//! The HTTP/2 worker's open loop keeps its memory bounded too: requests due while no stream
//! is free wait as jobs only up to a fixed number; the rest of the backlog stays in the
//! schedule and is counted as not sent. One test in its own file, so the process's peak RSS
//! is that run's.

mod support;

use std::io::Read;
use std::time::{Duration, Instant};
use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::{Arrival, LoadMode, RunSpec, StopCondition};

#[test]
fn an_h2_schedule_of_millions_of_due_requests_costs_no_memory() {
    // An h2c server that reads and never answers (no SETTINGS, no response): no request
    // ever gets a stream, so each of the 20,000,000 requests due in the second waits.
    // Listed as a job each, they took about a gigabyte.
    let srv = support::serve_connections(|mut s| {
        let mut buf = [0u8; 4096];
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    });
    let spec = RunSpec {
        url: format!("http://{}/", srv.addr),
        connections: 2,
        threads: 1,
        http2: true,
        streams: 10,
        timeout_ms: 60_000,
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
    assert!(began.elapsed() < Duration::from_secs(15), "the run ends");
    assert_eq!(r.responses, 0);
    let sched = r.schedule.as_ref().expect("an open loop has a schedule");
    assert!(
        sched.not_sent > 19_000_000 && sched.not_sent <= 20_000_000,
        "not sent {}",
        sched.not_sent
    );
    let peak_mib = r.generator.max_rss_kib / 1024;
    assert!(peak_mib < 150, "peak RSS {peak_mib} MiB");
}
