//! How one capacity step is judged: its SLO verdicts, whether the generator rather than the
//! server was the limit (the engine's validity verdict read as it stands, never judged a
//! second time here, or the `-c` connection cap), what that limit's cause was (busy,
//! starved of CPU, the cap), and whether the target was gone (a lab server's main process died, or every
//! connect was refused). Also here: the drift check across steps, which says when the same
//! rate measured again later tells another story (the server changed during the search).
//! The search that uses these verdicts is `capacity`; running it is `capacity_run`.

use webtune_model::capacity::{CapacityStep, StepOutcome};
use webtune_model::threshold::{LatencyStat, Measured};
use webtune_model::{ErrorKind, LatencyHistogram, RunResult, Threshold, Verdict};

/// How one step fared against the SLOs.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub outcome: StepOutcome,
    pub verdicts: Vec<Verdict>,
    /// The SLOs that broke.
    pub broken: Vec<String>,
    /// Why the generator was the limit (`ClientLimited`), or why the target is gone
    /// (`TargetDown`); empty otherwise.
    pub reasons: Vec<String>,
}

/// A run's figures with latency from the actual send (what the server took) instead of
/// from the intended start: what the SLOs would say had no request waited for a connection.
struct ServiceView<'a>(&'a RunResult);

fn stat(h: &LatencyHistogram, s: LatencyStat) -> f64 {
    match s {
        LatencyStat::Percentile(p) => h.percentile(p) as f64,
        LatencyStat::Mean => h.mean(),
        LatencyStat::Min => h.min() as f64,
        LatencyStat::Max => h.max() as f64,
    }
}

impl Measured for ServiceView<'_> {
    fn latency_us(&self, s: LatencyStat) -> f64 {
        stat(&self.0.histograms.service, s)
    }
    fn error_count(&self) -> u64 {
        self.0.error_count()
    }
    fn error_ratio(&self) -> f64 {
        self.0.error_ratio()
    }
    fn rps(&self) -> f64 {
        self.0.requests_per_s
    }
}

/// Did the `-c` cap, not the server, break the SLOs? Every connection was busy at some
/// point and requests waited for one, and judged from the actual send every SLO holds.
fn connection_capped(result: &RunResult, slos: &[Threshold]) -> bool {
    let Some(schedule) = &result.schedule else {
        return false;
    };
    let waited = schedule.connection_wait.p99_us > 0 || schedule.not_sent > 0;
    let at_cap = result.peak_open_connections >= u64::from(result.spec.connections);
    let service = ServiceView(result);
    let holds_on_service = slos
        .iter()
        .filter_map(|t| t.judge(&service, None).ok())
        .all(|v| v.passed);
    waited && at_cap && !result.histograms.service.is_empty() && holds_on_service
}

/// Below this generator CPU share, a generator that sent late was not short of CPU time:
/// its threads were ready but waited for a core that something else (a server on the same
/// cores) held.
pub const STARVED_BELOW: f64 = 0.5;

/// Why the generator was the limit of a client-limited step: what to do about it differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratorCause {
    /// Its threads were busy: more threads (cores) or another machine.
    Busy,
    /// It sent late while mostly idle: its threads waited for a core held by something else.
    Starved,
    /// Every one of the `-c` connections was busy: more connections.
    ConnectionCap,
}

/// The cause behind a client-limited step: the engine's verdict (`validity`, the one rule)
/// when it blamed the generator, with the kernel's run-queue wait when known (waiting for a
/// core longer than running: starved), else its CPU share; otherwise the connection cap.
pub fn generator_cause(result: &RunResult) -> GeneratorCause {
    let v = &result.validity;
    if !v.client_limited {
        GeneratorCause::ConnectionCap
    } else if v
        .cpu_wait
        .map_or(v.cpu_busy < STARVED_BELOW, |wait| wait > v.cpu_busy)
    {
        GeneratorCause::Starved
    } else {
        GeneratorCause::Busy
    }
}

/// Why the step's target is gone, if it is: a lab server's main process died during it, or
/// every connect was refused and nothing answered (the server was killed or stopped).
pub fn target_gone(result: &RunResult) -> Option<String> {
    if let Some(death) = result.server.as_ref().and_then(|s| s.deaths.first()) {
        let when = if death.t_s > 0.0 {
            format!("{:.1} s into the step", death.t_s)
        } else {
            "before the step began".to_string()
        };
        let how = if death.how.is_empty() {
            String::new()
        } else {
            format!(" ({})", death.how)
        };
        return Some(format!(
            "{} (pid {}), a main process of the stack, died {when}{how}",
            death.process, death.pid
        ));
    }
    let refused = result.errors.get(ErrorKind::ConnectRefused);
    (result.responses == 0 && refused > 0 && result.errors.total() == refused).then(|| {
        format!(
            "every connect was refused ({refused} refused, no response): nothing listens at \
             the target"
        )
    })
}

/// A step at `rate` req/s whose run gave `result`, judged against `slos` (`judge_step`).
pub fn judged_step(rate: f64, result: RunResult, slos: &[Threshold]) -> CapacityStep {
    let judged = judge_step(&result, slos);
    CapacityStep {
        rate_rps: rate,
        outcome: judged.outcome,
        verdicts: judged.verdicts,
        broken: judged.broken,
        reasons: judged.reasons,
        result,
    }
}

/// Judge one step: whether the target was still there, its SLO verdicts, and whether the
/// generator was the limit: the engine's validity verdict as it stands (one rule for bench,
/// sweep and capacity, `webtune_model::validity`), or the connection cap.
pub fn judge_step(result: &RunResult, slos: &[Threshold]) -> Judged {
    let verdicts: Vec<Verdict> = slos
        .iter()
        .filter_map(|t| t.judge(result, None).ok())
        .collect();
    let broken: Vec<String> = verdicts
        .iter()
        .filter(|v| !v.passed)
        .map(|v| v.threshold.clone())
        .collect();
    if !result.interrupted {
        if let Some(why) = target_gone(result) {
            return Judged {
                outcome: StepOutcome::TargetDown,
                verdicts,
                broken,
                reasons: vec![why],
            };
        }
    }
    let mut reasons = Vec::new();
    if result.validity.client_limited {
        reasons = result.validity.reasons.clone();
        let busy = result.validity.cpu_busy;
        if busy < STARVED_BELOW && result.validity.cpu_wait.is_none() && !reasons.is_empty() {
            reasons.push(format!(
                "the generator's threads were only {:.0}% busy: they were kept waiting for a \
                 core, not short of CPU time",
                busy * 100.0
            ));
        }
    }
    if reasons.is_empty() && !broken.is_empty() && connection_capped(result, slos) {
        reasons.push(format!(
            "all {} connections (-c) were busy and requests waited for one; from the actual \
             send every SLO held",
            result.spec.connections
        ));
    }
    let outcome = if result.interrupted {
        StepOutcome::Interrupted
    } else if !reasons.is_empty() {
        StepOutcome::ClientLimited
    } else if broken.is_empty() {
        StepOutcome::Held
    } else {
        StepOutcome::Broke
    };
    Judged {
        outcome,
        verdicts,
        broken,
        reasons,
    }
}

/// A latency figure that grew by this factor between two measurements of the same rate…
const DRIFT_FACTOR: f64 = 1.5;
/// …and by at least this share of its SLO's limit, is drift, not noise.
const DRIFT_SHARE_OF_LIMIT: f64 = 0.1;

fn ms(us: f64) -> String {
    format!("{:.1} ms", us / 1000.0)
}

fn rate(r: f64) -> String {
    if r >= 100.0 || r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// Did the server change during the search? Steps that counted (held or broke) are compared
/// with later ones: a rate (or a lower one) that broke after a rate at least as high had
/// held means the server got slower (or is noisy there); the reverse, faster; a rate that
/// held twice with a latency figure grown by half and by a tenth of its limit, slower. One
/// line each, in words; empty when the steps tell one story.
pub fn drift(steps: &[CapacityStep]) -> Vec<String> {
    let counted: Vec<(usize, &CapacityStep)> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.outcome, StepOutcome::Held | StepOutcome::Broke))
        .collect();
    let mut out = Vec::new();
    let pair = |later_outcome: StepOutcome, earlier_ok: &dyn Fn(f64, f64) -> bool| {
        counted
            .iter()
            .filter(|(_, l)| l.outcome == later_outcome)
            .find_map(|&(j, later)| {
                counted
                    .iter()
                    .find(|&&(i, e)| {
                        i < j
                            && e.outcome != later_outcome
                            && earlier_ok(e.rate_rps, later.rate_rps)
                    })
                    .map(|&(i, earlier)| (i, earlier, j, later))
            })
    };
    if let Some((i, e, j, l)) = pair(StepOutcome::Broke, &|held, broke| held >= broke) {
        out.push(format!(
            "the server got slower during the search (or is noisy there): {} req/s held at \
             step {}, then {} req/s broke {} at step {}",
            rate(e.rate_rps),
            i + 1,
            rate(l.rate_rps),
            l.broken.join(", "),
            j + 1
        ));
    }
    if let Some((i, e, j, l)) = pair(StepOutcome::Held, &|broke, held| broke <= held) {
        out.push(format!(
            "the server got faster during the search (a cold start?): {} req/s broke {} at \
             step {}, then {} req/s held at step {}",
            rate(e.rate_rps),
            e.broken.join(", "),
            i + 1,
            rate(l.rate_rps),
            j + 1
        ));
    }
    let mut rates: Vec<f64> = Vec::new();
    for &(_, s) in &counted {
        if s.outcome == StepOutcome::Held && !rates.contains(&s.rate_rps) {
            rates.push(s.rate_rps);
        }
    }
    for r in rates {
        let held: Vec<&(usize, &CapacityStep)> = counted
            .iter()
            .filter(|(_, s)| s.outcome == StepOutcome::Held && s.rate_rps == r)
            .collect();
        let (Some(&&(i, first)), Some(&&(j, last))) = (held.first(), held.last()) else {
            continue;
        };
        if i == j {
            continue;
        }
        for v in last.verdicts.iter().filter(|v| v.unit == "us") {
            let Some(before) = first.verdicts.iter().find(|b| b.threshold == v.threshold) else {
                continue;
            };
            if v.observed >= before.observed * DRIFT_FACTOR
                && v.observed - before.observed >= v.limit * DRIFT_SHARE_OF_LIMIT
            {
                out.push(format!(
                    "the server got slower during the search: at {} req/s {} was {} at step \
                     {} and {} at step {} (limit {})",
                    rate(r),
                    v.metric,
                    ms(before.observed),
                    i + 1,
                    ms(v.observed),
                    j + 1,
                    ms(v.limit)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_model::server::ProcessDeath;
    use webtune_model::{ErrorCounts, Schedule, ServerSamples};
    use webtune_testkit::results::{blank_result, synthetic_result_without_stall};

    fn slos() -> Vec<Threshold> {
        Threshold::parse_all(&["p99<=100ms", "errors<=1%"]).unwrap()
    }

    /// A step of `n` responses of `us` each, no error.
    fn answered(n: u64, us: u64) -> RunResult {
        let mut r = synthetic_result_without_stall(n, &[us]);
        r.errors = ErrorCounts::default();
        r.ok = n;
        r.finish_summaries();
        r
    }

    fn refused(n: u64) -> RunResult {
        let mut r = blank_result();
        for _ in 0..n {
            r.errors.add(ErrorKind::ConnectRefused);
        }
        r
    }

    #[test]
    fn a_step_where_every_connect_was_refused_finds_the_target_gone() {
        let j = judge_step(&refused(412), &slos());
        assert_eq!(j.outcome, StepOutcome::TargetDown);
        assert!(
            j.reasons[0].contains("every connect was refused (412 refused"),
            "{j:?}"
        );
        // Refused connects among answers, or other errors, are a broken step, not a gone
        // target.
        let mut some = answered(100, 1_000);
        some.errors.add(ErrorKind::ConnectRefused);
        assert_ne!(judge_step(&some, &slos()).outcome, StepOutcome::TargetDown);
        let mut mixed = refused(10);
        mixed.errors.add(ErrorKind::RequestTimeout);
        assert_eq!(judge_step(&mixed, &slos()).outcome, StepOutcome::Broke);
        // Nothing attempted is not "down" either.
        assert_ne!(
            judge_step(&blank_result(), &slos()).outcome,
            StepOutcome::TargetDown
        );
    }

    #[test]
    fn a_lab_server_whose_main_process_died_is_down_although_workers_answer() {
        // nginx's master SIGKILLed: the orphaned workers still serve every request.
        let mut r = answered(1000, 1_000);
        r.server = Some(ServerSamples {
            deaths: vec![ProcessDeath {
                process: "nginx".into(),
                pid: 812,
                t_s: 1.5,
                how: "killed by SIGKILL".into(),
            }],
            ..ServerSamples::default()
        });
        let j = judge_step(&r, &slos());
        assert_eq!(j.outcome, StepOutcome::TargetDown);
        assert_eq!(
            j.reasons,
            vec![
                "nginx (pid 812), a main process of the stack, died 1.5 s into the step \
                  (killed by SIGKILL)"
            ]
        );
        // An interrupted step stays interrupted (exit 130 wins).
        r.interrupted = true;
        assert_eq!(judge_step(&r, &slos()).outcome, StepOutcome::Interrupted);
    }

    /// A step the engine called client-limited for its lag, with the generator `busy`.
    fn late(busy: f64) -> RunResult {
        let mut r = answered(100, 1_000);
        let mut schedule = Schedule {
            requested_rate: 100.0,
            achieved_rate: 60.0,
            ..Schedule::default()
        };
        schedule.generator_lag.p99_us = 40_000;
        schedule.generator_lag.max_us = 90_000;
        r.schedule = Some(schedule);
        r.validity.client_limited = true;
        r.validity.cpu_busy = busy;
        r.validity.reasons = vec!["requests were sent late with a connection free".into()];
        r
    }

    #[test]
    fn a_late_generator_at_idle_cpu_was_starved_not_short_of_threads() {
        let starved = late(0.02);
        let j = judge_step(&starved, &slos());
        assert_eq!(j.outcome, StepOutcome::ClientLimited);
        assert!(
            j.reasons
                .iter()
                .any(|r| r.contains("only 2% busy: they were kept waiting for a core")),
            "{j:?}"
        );
        assert_eq!(generator_cause(&starved), GeneratorCause::Starved);
        let busy = late(0.95);
        let j = judge_step(&busy, &slos());
        assert_eq!(j.outcome, StepOutcome::ClientLimited);
        assert!(!j.reasons.iter().any(|r| r.contains("kept waiting")));
        assert_eq!(generator_cause(&busy), GeneratorCause::Busy);
        // The kernel's run-queue wait, when known, decides: waiting longer than running.
        let mut waited = late(0.3);
        waited.validity.cpu_wait = Some(0.65);
        let j = judge_step(&waited, &slos());
        assert!(
            !j.reasons.iter().any(|r| r.contains("kept waiting")),
            "{j:?}"
        );
        assert_eq!(generator_cause(&waited), GeneratorCause::Starved);
        waited.validity.cpu_wait = Some(0.05);
        assert_eq!(generator_cause(&waited), GeneratorCause::Busy);
    }

    #[test]
    fn the_step_follows_the_engines_verdict_and_never_judges_the_generator_again() {
        // The engine said the generator kept up (a late tail at the full rate): the step
        // counts, whatever its lag figures.
        let mut kept = late(0.1);
        kept.validity = webtune_model::Validity::default();
        assert_eq!(judge_step(&kept, &slos()).outcome, StepOutcome::Held);
        // It said the generator was the limit: the step does not count, even when it held
        // and the rate was delivered in full.
        let mut limited = late(0.97);
        if let Some(s) = limited.schedule.as_mut() {
            s.achieved_rate = s.requested_rate;
        }
        let j = judge_step(&limited, &slos());
        assert_eq!(j.outcome, StepOutcome::ClientLimited);
        assert_eq!(j.reasons, limited.validity.reasons);
    }

    fn step(rate: f64, p99_us: u64) -> CapacityStep {
        judged_step(
            rate,
            answered(100, p99_us),
            &Threshold::parse_all(&["p99<=100ms"]).unwrap(),
        )
    }

    #[test]
    fn drift_is_found_where_the_same_rate_tells_another_story_later() {
        // A steady server: bisection and a repeat that agrees.
        let steady = [
            step(50.0, 10_000),
            step(100.0, 300_000),
            step(70.7, 150_000),
            step(59.5, 20_000),
            step(64.8, 200_000),
            step(59.5, 21_000),
        ];
        assert_eq!(drift(&steady), Vec::<String>::new());
        // A server that slows down: 50/s held at step 1 with p99 10 ms; at the end 52.2/s
        // breaks and 50/s, repeated, takes 90 ms.
        let slowing = [
            step(50.0, 10_000),
            step(100.0, 300_000),
            step(70.7, 150_000),
            step(54.5, 120_000),
            step(52.2, 110_000),
            step(50.0, 90_000),
        ];
        let d = drift(&slowing);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].contains("at 50 req/s p99 was 10.0 ms at step 1 and 90.0 ms at step 6"),
            "{d:?}"
        );
        // The repeat broke where the first run held.
        let flipped = [
            step(50.0, 10_000),
            step(100.0, 300_000),
            step(50.0, 150_000),
        ];
        let d = drift(&flipped);
        assert!(
            d[0].contains("50 req/s held at step 1, then 50 req/s broke p99<=100ms at step 3"),
            "{d:?}"
        );
        // A cold start: the first step broke, a higher rate held later.
        let warming = [step(50.0, 150_000), step(25.0, 10_000), step(50.0, 12_000)];
        let d = drift(&warming);
        assert!(d[0].contains("got faster"), "{d:?}");
    }
}
