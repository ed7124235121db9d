//! The live view (`Progress`) is the whole run's, not one worker thread's: open connections
//! summed over every thread, and counts that include every worker's last report.

mod support;

use support::run;
use webtune_engine::{Progress, RunControl, Workload};
use webtune_model::{RunSpec, StopCondition};
use webtune_serve::{EmbeddedServer, ServeOptions};

#[test]
fn progress_sums_every_worker_thread_and_ends_with_the_run_totals() {
    let srv = EmbeddedServer::start(ServeOptions {
        workers: 1,
        ..ServeOptions::default()
    })
    .expect("embedded target starts");
    for threads in [1, 2, 4] {
        let spec = RunSpec {
            // Every request waits 50 ms: all 10 connections stay open and busy.
            url: format!("http://{}/sleep/50", srv.local_addr()),
            connections: 10,
            threads,
            stop: StopCondition::Duration { seconds: 1.2 },
            interval_ms: 200,
            ..RunSpec::default()
        };
        let mut seen: Vec<Progress> = Vec::new();
        let result = run(&spec, &Workload::request(), &RunControl::new(), &mut |p| {
            seen.push(p.clone())
        })
        .expect("run starts");
        let most_open = seen.iter().map(|p| p.open_connections).max().unwrap();
        assert_eq!(most_open, 10, "-t {threads}: open connections seen live");
        let last = seen.last().expect("progress was reported");
        let responses: u64 = result.timeline.iter().map(|s| s.responses).sum();
        assert!(responses > 0);
        assert_eq!(last.responses, responses, "-t {threads}: the last view");
        let errors: u64 = result.timeline.iter().map(|s| s.errors.total()).sum();
        assert_eq!(last.errors, errors, "-t {threads}");
        assert_eq!(last.attempted, responses + errors, "-t {threads}");
    }
}
