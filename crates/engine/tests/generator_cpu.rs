//! The generator's CPU is its own threads', not the process's: with the target served from
//! the same process (as `webtune bench` without a URL does), the target's CPU must not be
//! charged to the generator, or every such run reads as "the generator was the limit".
//! Alone in its file so no other test's threads share the process.

mod support;

use support::run;
use webtune_engine::{RunControl, Workload};
use webtune_model::validity::LimitedBy;
use webtune_model::{RunSpec, StopCondition};
use webtune_serve::{EmbeddedServer, ServeOptions};

fn process_cpu_s() -> f64 {
    // SAFETY: an all-zero rusage is valid; getrusage only writes into it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) }, 0);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn an_in_process_target_is_not_charged_to_the_generator() {
    let srv = EmbeddedServer::start(ServeOptions {
        workers: 1,
        ..ServeOptions::default()
    })
    .expect("embedded target starts");
    // Every answer costs the target 5 ms of busy-work; the generator only waits for it.
    let spec = RunSpec {
        url: format!("http://{}/cpu/5000", srv.local_addr()),
        connections: 1,
        threads: 1,
        stop: StopCondition::Requests { count: 40 },
        ..RunSpec::default()
    };
    let before = process_cpu_s();
    let r = run(&spec, &Workload::request(), &RunControl::new(), &mut |_| {}).expect("run starts");
    let process = process_cpu_s() - before;
    assert_eq!(r.ok, 40, "{:?}", r.errors);
    let generator = r.generator.user_cpu_s + r.generator.system_cpu_s;
    assert!(
        generator < process / 2.0,
        "generator {generator:.3} s of the process's {process:.3} s: the target was charged"
    );
    assert!(r.validity.cpu_busy < 0.5, "{:?}", r.validity);
    // Not blamed for the target's work; starved of a core by a busy machine is the
    // machine's doing, said as such.
    assert!(
        !r.validity.client_limited || r.validity.limited_by == Some(LimitedBy::Starved),
        "{:?}",
        r.validity
    );
}
