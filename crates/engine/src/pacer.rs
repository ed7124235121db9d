//! The pacer: when a worker's next request is due, the one answer to it for every worker
//! (HTTP/1.1 and SMTP, HTTP/2, HTTP/3) and both loops, in the shape of vegeta's
//! `lib/pacer.go` (a pacer alone decides when the next hit is due; connection I/O never
//! does). A `Pacer` is built per worker by the coordinator (`Pacer::for_worker`: the
//! worker's share of the rate, or of a closed loop's connection ramp) and owned by the
//! worker's `Base`, which adds what is not pacing: the budget (`-n`), the stop, and how late
//! a send was (`lateness`). The rate over time is a `schedule::Ramp` (the piecewise-linear
//! arithmetic); the pacer walks it one arrival at a time (`take_due`), counts the arrivals a
//! stop leaves unsent from its integral (`backlog`), and keeps the wake-up timer's state.
//!
//! Open loop: how a worker batches its wake-ups without lying about time. One wake-up sends
//! every request that is due, or falls due within `BATCH_SLACK`, and the timer wakes the
//! worker at most once per `MIN_TIMER_GAP`; so closely spaced requests share a wake-up (one
//! `epoll_wait`, one timer arming, and their answers arrive together too) instead of each
//! being its own. Each request keeps its own timestamps: one sent before its intended start
//! counts its latency from when it was really sent (never a latency shorter than the
//! exchange); one sent late counts from its intended start, and its lateness is recorded as
//! schedule lag (generator lag when a connection was free), as before. So a request is sent
//! at most `BATCH_SLACK` early or `MIN_TIMER_GAP - BATCH_SLACK` late by the batching (250 µs
//! either way). With uniform arrivals below 1 / `MIN_TIMER_GAP` requests/s per worker the
//! gap never binds and each request is its own wake-up. The timerfd is armed again only
//! when the time it is set for would not serve the next due request (already fired, too
//! late, or earlier than the slack allows): no timer syscall per request.
//!
//! The answers batch too where their arrival can be known without waking for them (plain
//! TCP under epoll, `worker::rx_stamp`): a worker whose next wake-up is within
//! `ANSWER_WAIT` sleeps until then instead of waking for each answer, so at a high rate it
//! wakes only by the timer, once per `MIN_TIMER_GAP`, and each wake-up sends the gap's due
//! requests and takes the gap's answers. A request then goes out at most `BATCH_SLACK` early
//! or `MIN_TIMER_GAP - BATCH_SLACK` late (tested by simulating such a worker).

use crate::rng::Rng;
use crate::schedule::Ramp;
use std::time::{Duration, Instant};
use webtune_model::{Arrival, LoadMode, RunSpec};

/// How far ahead of its intended start a request may be sent with others in one wake-up.
pub const BATCH_SLACK: Duration = Duration::from_micros(250);

/// Does a wake-up at `now` send the request due at `due`?
pub fn sends_now(due: Instant, now: Instant) -> bool {
    due <= now + BATCH_SLACK
}

/// The instant a request's latency counts from: its intended start, or its real start when
/// the batch sent it early.
pub fn latency_origin(intended: Option<Instant>, started: Instant) -> Instant {
    intended.map_or(started, |due| due.min(started))
}

/// Open loop, answers stamped by the kernel on arrival (`worker::rx_stamp`): a worker whose
/// next wake-up (a due request, most often) is at most this far away sleeps until then
/// rather than waking for each answer, and takes the answers that came meanwhile in that
/// one wake-up. Their latency ends at the stamp, so the wait is not in it; a connection
/// whose answer waits is free for its next request only at the wake-up (so the wait stays
/// short, and the worker wakes for answers as before when no connection is idle).
pub const ANSWER_WAIT: Duration = Duration::from_millis(1);

/// The least time between two wake-ups by the timer (the gap's requests go out together at
/// its end, and their lateness is recorded as generator lag).
pub const MIN_TIMER_GAP: Duration = Duration::from_micros(500);

/// The one-shot wake-up timer's state: when it is set to fire (None once it has fired).
#[derive(Debug, Default)]
pub struct WakeTimer {
    armed_for: Option<Instant>,
    last_fired: Option<Instant>,
    gap: Duration,
}

impl WakeTimer {
    /// The next request is due at `due` (later than `now`): how long from now to arm the
    /// timer, or None when it is already armed for a time that serves `due` (not passed, and
    /// no earlier than `due` less the slack, no later than `due`). The time is `due`, or the
    /// last firing plus the gap when that is later.
    pub fn arm_for(&mut self, due: Instant, now: Instant) -> Option<Duration> {
        let due = self.last_fired.map_or(due, |t| due.max(t + self.gap));
        let serves = self
            .armed_for
            .is_some_and(|t| t > now && t <= due && t + BATCH_SLACK >= due);
        if serves {
            return None;
        }
        self.armed_for = Some(due);
        Some(due.saturating_duration_since(now))
    }

    pub fn new(gap: Duration) -> WakeTimer {
        WakeTimer {
            gap,
            ..WakeTimer::default()
        }
    }

    /// When the timer is set to fire (None: not set, or fired).
    pub fn armed_for(&self) -> Option<Instant> {
        self.armed_for
    }

    /// The timer fired.
    pub fn fired(&mut self) {
        self.last_fired = self.armed_for.take().or(self.last_fired);
    }
}

/// How a worker's requests are paced: a closed loop (the next request when an answer ends,
/// on as many connections as the ramp allows), or an open loop's schedule of due times.
#[derive(Debug, Clone)]
enum Mode {
    Closed {
        /// Connections this worker may keep busy over time (None: all of them).
        ramp: Option<Ramp>,
    },
    Open {
        /// This worker's share of the rate, requests/s over time.
        ramp: Ramp,
        arrival: Arrival,
        /// Work (in requests) before this worker's first one: interleaves the workers.
        first_work: f64,
    },
}

/// One worker's pacer: when its next request is due (see the module's header).
#[derive(Debug)]
pub struct Pacer {
    mode: Mode,
    /// The run's start: due times are seconds after it.
    start: Instant,
    /// Nothing falls due this long after the start, if the run is timed.
    end_s: Option<f64>,
    /// Open loop: the next intended start, and the schedule position (seconds) it is at.
    next: Option<(Instant, f64)>,
    /// When the wake-up timer is set to fire (it is one-shot).
    timer: WakeTimer,
}

impl Default for Pacer {
    /// A closed loop without a ramp, started now (what a worker has once its own pacer is
    /// taken from its configuration).
    fn default() -> Pacer {
        Pacer::new(Mode::Closed { ramp: None }, Instant::now(), None)
    }
}

impl Pacer {
    fn new(mode: Mode, start: Instant, end_s: Option<f64>) -> Pacer {
        Pacer {
            mode,
            start,
            end_s,
            next: None,
            timer: WakeTimer::new(MIN_TIMER_GAP),
        }
    }

    /// Worker pacing for a run of `spec` (this generator's part) started at `start` and
    /// sending for `end_s`: a closed loop's ramp scaled to the worker's `conns` of
    /// `all_conns` connections, or an open loop's rate over the worker's `stream` (its first
    /// arrival and the step between its arrivals, counted in arrivals of the whole test).
    pub fn for_worker(
        spec: &RunSpec,
        start: Instant,
        end_s: Option<f64>,
        stream: (u64, u64),
        conns: u64,
        all_conns: usize,
    ) -> Pacer {
        let mode = match spec.load {
            LoadMode::Closed => Mode::Closed {
                ramp: (!spec.stages.is_empty()).then(|| {
                    Ramp::from_stages(&spec.stages).scaled(conns as f64 / all_conns.max(1) as f64)
                }),
            },
            LoadMode::Open { rate, arrival } => {
                let ramp = if spec.stages.is_empty() {
                    Ramp::constant(rate, end_s.unwrap_or(f64::INFINITY))
                } else {
                    Ramp::from_stages(&spec.stages)
                };
                let (first, step) = stream;
                Mode::Open {
                    ramp: ramp.scaled(1.0 / step as f64),
                    arrival,
                    first_work: first as f64 / step as f64,
                }
            }
        };
        Pacer::new(mode, start, end_s)
    }

    /// Is this an open loop (requests fall due on a schedule)?
    pub fn is_open(&self) -> bool {
        matches!(self.mode, Mode::Open { .. })
    }

    /// Closed loop with a ramp: how many of `conns` connections may be busy at `now`
    /// (None: no ramp, all of them).
    pub fn allowed(&self, now: Instant, conns: usize) -> Option<usize> {
        let Mode::Closed { ramp: Some(ramp) } = &self.mode else {
            return None;
        };
        let t = now.saturating_duration_since(self.start).as_secs_f64();
        Some((ramp.at(t).round() as usize).min(conns))
    }

    /// Open loop, before the first turn: find the first due time. False when none falls due
    /// (nothing to send) or for a closed loop.
    pub fn begin(&mut self, rng: &mut Rng) -> bool {
        self.next = self.due_after(None, rng);
        self.next.is_some()
    }

    /// Open loop: the next request's intended start (None: none will fall due).
    pub fn next_due(&self) -> Option<Instant> {
        self.next.map(|(due, _)| due)
    }

    /// Does a wake-up at `now` send the next request (due, or within the slack)?
    pub fn due_by(&self, now: Instant) -> bool {
        self.next.is_some_and(|(due, _)| sends_now(due, now))
    }

    /// Open loop: the due time after schedule position `t` seconds (None: the first one).
    fn due_after(&self, t: Option<f64>, rng: &mut Rng) -> Option<(Instant, f64)> {
        let Mode::Open {
            ramp,
            arrival,
            first_work,
        } = &self.mode
        else {
            return None;
        };
        let work = match (arrival, t) {
            (Arrival::Poisson, _) => rng.exp(1.0),
            (Arrival::Uniform, None) => *first_work,
            (Arrival::Uniform, Some(_)) => 1.0,
        };
        let next = ramp.advance(t.unwrap_or(0.0), work)?;
        if t.is_some() && self.end_s.is_some_and(|end| next >= end) {
            return None;
        }
        Some((self.start + Duration::from_secs_f64(next), next))
    }

    /// Open loop: the request due by `now` (or within the batching slack), if `admit` lets
    /// it go (the budget); the schedule then moves on to the next arrival. Refused by
    /// `admit`: nothing more falls due. Arrivals are made one at a time as they are taken:
    /// a backlog of due requests (a server or a `-c` cap that cannot keep up, an absurd
    /// rate) is the stretch of the schedule from the next due time to now, never a list, so
    /// memory does not grow with rate × duration.
    #[inline]
    pub fn take_due(
        &mut self,
        now: Instant,
        rng: &mut Rng,
        admit: impl FnOnce() -> bool,
    ) -> Option<Instant> {
        let (due, t) = self.next?;
        if !sends_now(due, now) {
            return None;
        }
        if !admit() {
            self.next = None;
            return None;
        }
        self.next = self.due_after(Some(t), rng);
        Some(due)
    }

    /// Open loop: how many requests fell due by `now` and were not taken, at most `left`
    /// (what the budget has left). Counted from the rate's integral between the oldest of
    /// them and now (exact for uniform arrivals, the expected number for Poisson ones): no
    /// loop over them.
    pub fn backlog(&self, now: Instant, left: Option<u64>) -> u64 {
        let (Some((due, t)), Mode::Open { ramp, arrival, .. }) = (self.next, &self.mode) else {
            return 0;
        };
        if due > now {
            return 0;
        }
        let mut upto = now.saturating_duration_since(self.start).as_secs_f64();
        if let Some(end) = self.end_s {
            upto = upto.min(end);
        }
        let more = ramp.integral(t, upto);
        let more = match arrival {
            Arrival::Uniform => more.floor(),
            Arrival::Poisson => more.round(),
        };
        // `as` saturates: an absurd backlog reads u64::MAX, never wraps.
        let count = (1.0 + more.max(0.0)) as u64;
        left.map_or(count, |left| count.min(left))
    }

    /// Sending stopped: nothing more falls due.
    pub fn stop(&mut self) {
        self.next = None;
    }

    /// The loop wakes at `wake` for its own reasons: when the next due request comes
    /// between `now` and then, how long from now the timer must be armed for it (None: no
    /// such request, or the timer is already set to serve it; `WakeTimer::arm_for`).
    pub fn arm_before(&mut self, wake: Instant, now: Instant) -> Option<Duration> {
        let due = self.next_due()?;
        if due < wake && due > now {
            self.timer.arm_for(due, now)
        } else {
            None
        }
    }

    /// When the wake-up timer is set to fire (None: not set, or fired).
    pub fn timer_set_for(&self) -> Option<Instant> {
        self.timer.armed_for()
    }

    /// The wake-up timer fired.
    pub fn timer_fired(&mut self) {
        self.timer.fired();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    /// The latest a request goes out after its due time by the batching alone, when the
    /// worker wakes only by the timer (answers batched, `ANSWER_WAIT`): a request due just
    /// after the slack of one firing goes at the next, a gap later. Lateness beyond it is
    /// the machine's or a busy connection's, recorded as lag either way.
    const MAX_BATCH_LATE: Duration = MIN_TIMER_GAP.saturating_sub(BATCH_SLACK);

    #[test]
    fn a_wake_up_sends_what_is_due_and_what_falls_due_within_the_slack() {
        let now = Instant::now();
        assert!(sends_now(now - us(500), now));
        assert!(sends_now(now, now));
        assert!(sends_now(now + BATCH_SLACK, now));
        assert!(!sends_now(now + BATCH_SLACK + us(1), now));
    }

    #[test]
    fn latency_never_starts_after_the_request_was_really_sent() {
        let t = Instant::now();
        // Sent 30 µs early in a batch: from the send. Sent 2 ms late: from the intended start.
        assert_eq!(latency_origin(Some(t + us(30)), t), t);
        assert_eq!(latency_origin(Some(t), t + us(2000)), t);
        // Closed loop: from the start.
        assert_eq!(latency_origin(None, t), t);
    }

    #[test]
    fn the_timer_is_armed_again_only_when_its_time_does_not_serve() {
        let t0 = Instant::now();
        let mut w = WakeTimer::new(Duration::ZERO);
        assert_eq!(w.arm_for(t0 + us(100), t0), Some(us(100)));
        // Same due, or a later one within the slack of the armed time: no syscall.
        assert_eq!(w.arm_for(t0 + us(100), t0 + us(10)), None);
        assert_eq!(w.arm_for(t0 + us(100) + BATCH_SLACK, t0 + us(20)), None);
        // Further than the slack: the armed time would wake for nothing; arm again.
        let far = us(100) + BATCH_SLACK + us(200);
        assert_eq!(w.arm_for(t0 + far, t0 + us(30)), Some(far - us(30)));
        // An earlier due than the armed time: arm earlier.
        assert_eq!(w.arm_for(t0 + us(200), t0 + us(40)), Some(us(160)));
        // Fired (or passed): arm again.
        w.fired();
        assert_eq!(w.arm_for(t0 + us(400), t0 + us(210)), Some(us(190)));
        assert_eq!(w.arm_for(t0 + us(500), t0 + us(450)), Some(us(50)));
    }

    #[test]
    fn the_timer_wakes_at_most_once_per_gap_and_never_before_a_due_time() {
        let t0 = Instant::now();
        let mut w = WakeTimer::new(MIN_TIMER_GAP);
        assert_eq!(w.arm_for(t0 + us(10), t0), Some(us(10)));
        w.fired();
        // Due 20 µs after that firing: the wake-up waits for the gap to end.
        let after = w.arm_for(t0 + us(30), t0 + us(11));
        assert_eq!(after, Some(us(10) + MIN_TIMER_GAP - us(11)));
        w.fired();
        // Due long after the gap: at its own time, not earlier.
        let late = us(10) + MIN_TIMER_GAP * 3;
        let now = t0 + us(10) + MIN_TIMER_GAP + us(1);
        assert_eq!(w.arm_for(t0 + late, now), Some(t0 + late - now));
    }

    fn open(rate: f64, seconds: f64, start: Instant) -> Pacer {
        let spec = RunSpec {
            load: LoadMode::Open {
                rate,
                arrival: Arrival::Uniform,
            },
            ..RunSpec::default()
        };
        Pacer::for_worker(&spec, start, Some(seconds), (0, 1), 1, 1)
    }

    #[test]
    fn an_open_loop_hands_out_due_times_one_at_a_time_and_only_when_due() {
        let t0 = Instant::now();
        let mut rng = Rng::seeded(1);
        let mut p = open(1000.0, 1.0, t0);
        assert!(p.is_open() && p.allowed(t0, 10).is_none());
        assert!(p.begin(&mut rng));
        // The first of a single worker's stream is due at the start.
        assert_eq!(p.next_due(), Some(t0));
        assert_eq!(p.take_due(t0, &mut rng, || true), Some(t0));
        // The next is 1 ms later: not due at the start (beyond the slack), due then.
        assert!(!p.due_by(t0));
        assert_eq!(p.take_due(t0, &mut rng, || true), None);
        let at = p.take_due(t0 + us(1000), &mut rng, || true).unwrap();
        assert_eq!(at, t0 + us(1000));
        // The budget refuses: nothing more falls due.
        assert_eq!(p.take_due(t0 + us(5000), &mut rng, || false), None);
        assert_eq!(p.next_due(), None);
    }

    /// Wake only when the timer fires (what a worker batching its answers does), sending at
    /// each wake-up everything due: (requests sent, wake-ups).
    fn timer_only(p: &mut Pacer, rng: &mut Rng, t0: Instant) -> (u64, u64) {
        let (mut now, mut sent, mut wakes) = (t0, 0, 0);
        loop {
            wakes += 1;
            while let Some(due) = p.take_due(now, rng, || true) {
                assert!(due <= now + BATCH_SLACK, "sent more than the slack early");
                assert!(
                    now <= due + MAX_BATCH_LATE,
                    "sent later than the stated lag"
                );
                sent += 1;
            }
            let Some(after) = p.arm_before(t0 + Duration::from_secs(3600), now) else {
                return (sent, wakes);
            };
            now += after;
            p.timer_fired();
        }
    }

    #[test]
    fn a_timer_woken_worker_sends_each_request_within_the_slack_and_many_per_wake_up() {
        let t0 = Instant::now();
        let mut rng = Rng::seeded(7);
        // 20,000 requests/s on one worker, one due every 50 µs, for a little over 0.1 s.
        let mut p = open(20_000.0, 0.10249, t0);
        p.begin(&mut rng);
        let (sent, wakes) = timer_only(&mut p, &mut rng, t0);
        assert_eq!(sent, 2050);
        // The timer fires at most once per gap: about ten requests share each wake-up.
        assert!(sent >= 8 * wakes, "{sent} requests in {wakes} wake-ups");
        // Poisson arrivals: the same bounds, and still several per wake-up.
        let spec = RunSpec {
            load: LoadMode::Open {
                rate: 20_000.0,
                arrival: Arrival::Poisson,
            },
            ..RunSpec::default()
        };
        let mut p = Pacer::for_worker(&spec, t0, Some(0.1), (0, 1), 1, 1);
        p.begin(&mut rng);
        let (sent, wakes) = timer_only(&mut p, &mut rng, t0);
        assert!(sent >= 5 * wakes, "{sent} requests in {wakes} wake-ups");
    }

    #[test]
    fn a_slow_schedule_wakes_once_per_request_at_its_due_time() {
        let t0 = Instant::now();
        let mut rng = Rng::seeded(7);
        // 1,000 requests/s: 1 ms apart, more than the gap: each at its own time, not early.
        let mut p = open(1000.0, 0.05, t0);
        p.begin(&mut rng);
        let mut now = t0;
        for k in 0..50u64 {
            assert_eq!(p.take_due(now, &mut rng, || true), Some(t0 + us(1000 * k)));
            assert_eq!(p.take_due(now, &mut rng, || true), None);
            match p.arm_before(t0 + Duration::from_secs(1), now) {
                Some(after) => now += after,
                None => assert_eq!(k, 49, "the schedule ends after 50"),
            }
            p.timer_fired();
        }
    }

    #[test]
    fn workers_interleave_and_a_timed_schedule_ends() {
        let t0 = Instant::now();
        let mut rng = Rng::seeded(1);
        let spec = RunSpec {
            load: LoadMode::Open {
                rate: 100.0,
                arrival: Arrival::Uniform,
            },
            ..RunSpec::default()
        };
        // The second of two workers: 50/s each, its first arrival half a step in (10 ms).
        let mut p = Pacer::for_worker(&spec, t0, Some(0.05), (1, 2), 1, 2);
        assert!(p.begin(&mut rng));
        assert_eq!(p.next_due(), Some(t0 + us(10_000)));
        let far = t0 + Duration::from_secs(1);
        let taken: Vec<_> = std::iter::from_fn(|| p.take_due(far, &mut rng, || true)).collect();
        // 10, 30 ms; the one at 50 ms is past the end.
        assert_eq!(taken, vec![t0 + us(10_000), t0 + us(30_000)]);
    }

    #[test]
    fn a_stop_counts_the_backlog_from_the_integral_up_to_the_budget() {
        let t0 = Instant::now();
        let mut rng = Rng::seeded(1);
        let mut p = open(1000.0, 10.0, t0);
        p.begin(&mut rng);
        // Nothing taken for 100 ms: the arrivals at 0, 1, …, 100 ms are due.
        let now = t0 + Duration::from_millis(100);
        assert_eq!(p.backlog(now, None), 101);
        assert_eq!(p.backlog(now, Some(7)), 7);
        assert_eq!(p.backlog(t0 - us(1), None), 0, "none due yet");
        p.stop();
        assert_eq!(p.backlog(now, None), 0);
        assert_eq!(p.take_due(now, &mut rng, || true), None);
    }

    #[test]
    fn a_closed_loop_ramp_allows_the_workers_share_of_connections() {
        let t0 = Instant::now();
        let spec = RunSpec {
            stages: vec![webtune_model::Stage {
                seconds: 10.0,
                target: 100.0,
            }],
            ..RunSpec::default()
        };
        // A quarter of the connections: 25 at the end of the ramp, 12.5 → 13 halfway.
        let mut p = Pacer::for_worker(&spec, t0, Some(10.0), (0, 1), 25, 100);
        assert!(!p.is_open());
        assert!(
            !p.begin(&mut Rng::seeded(1)),
            "no schedule in a closed loop"
        );
        assert_eq!(p.allowed(t0 + Duration::from_secs(5), 100), Some(13));
        assert_eq!(p.allowed(t0 + Duration::from_secs(5), 4), Some(4));
        let flat = Pacer::for_worker(&RunSpec::default(), t0, None, (0, 1), 25, 100);
        assert_eq!(flat.allowed(t0, 100), None);
    }

    #[test]
    fn the_timer_is_armed_only_for_a_due_time_before_the_loops_own_wake_up() {
        let t0 = Instant::now();
        let mut rng = Rng::seeded(1);
        let mut p = open(1000.0, 1.0, t0);
        p.begin(&mut rng);
        p.take_due(t0, &mut rng, || true);
        // Next due at 1 ms: the loop wakes at 20 ms anyway, so the timer is armed.
        assert_eq!(p.arm_before(t0 + us(20_000), t0), Some(us(1000)));
        assert_eq!(p.timer_set_for(), Some(t0 + us(1000)));
        // Already set for it: no second arming.
        assert_eq!(p.arm_before(t0 + us(20_000), t0 + us(10)), None);
        p.timer_fired();
        assert_eq!(p.timer_set_for(), None);
        // The loop wakes before the due time for its own reasons: no timer.
        assert_eq!(p.arm_before(t0 + us(500), t0 + us(100)), None);
    }
}
