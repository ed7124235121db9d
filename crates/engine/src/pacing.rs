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

use std::time::{Duration, Instant};

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

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

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
}
