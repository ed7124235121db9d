//! Open loop: where a request's send lateness went. A request sent after its intended start
//! was late for one of two reasons: every connection was busy (a slow or stalled server, or
//! the `-c` cap), which is the server's time and already inside its latency from the
//! intended start; or a connection was free and the generator did not send in time (its
//! timer, its CPU), which is the client's own fault. A worker keeps a `BusyClock` of the
//! stretches in which none of its connections was idle, and `split_lateness` reads back how
//! much of a request's [intended start, send] fell in them. The clock keeps at most
//! `MAX_STRETCHES` stretches: under a backlog that never clears (every due request's answer
//! frees a connection that the next due request takes at once), the oldest two are merged,
//! their gap — a moment with a connection free while requests were due, the loop's own
//! turn-around — counted busy. Memory stays bounded however long the backlog lasts.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Ended stretches kept at most (32 bytes each).
pub const MAX_STRETCHES: usize = 4096;

/// The stretches of time in which every connection of a worker was busy, recent ones only.
#[derive(Debug, Default)]
pub struct BusyClock {
    /// Stretches that have ended, oldest first, as (start, end); they never overlap.
    closed: VecDeque<(Instant, Instant)>,
    /// The start of the stretch under way, when every connection is busy now.
    open: Option<Instant>,
}

impl BusyClock {
    /// From `now` on, every connection is busy (`true`) or at least one is idle (`false`).
    /// Calls whose `now` is a little older than an earlier call's are clamped, not reordered.
    pub fn set(&mut self, all_busy: bool, now: Instant) {
        match (all_busy, self.open) {
            (true, None) => {
                let after_last = self.closed.back().map_or(now, |&(_, end)| now.max(end));
                self.open = Some(after_last);
            }
            (false, Some(start)) => {
                self.open = None;
                if now > start {
                    self.closed.push_back((start, now));
                }
                if self.closed.len() > MAX_STRETCHES {
                    if let (Some((start, _)), Some((_, end))) =
                        (self.closed.pop_front(), self.closed.pop_front())
                    {
                        self.closed.push_front((start, end));
                    }
                }
            }
            _ => {}
        }
    }

    /// How much of [`from`, `to`] every connection was busy.
    pub fn busy_within(&self, from: Instant, to: Instant) -> Duration {
        let overlap =
            |start: Instant, end: Instant| end.min(to).saturating_duration_since(start.max(from));
        let mut busy = self.open.map_or(Duration::ZERO, |start| {
            if to > start {
                to.saturating_duration_since(start.max(from))
            } else {
                Duration::ZERO
            }
        });
        for &(start, end) in self.closed.iter().rev() {
            if end <= from {
                break;
            }
            busy += overlap(start, end);
        }
        busy
    }

    /// Drop stretches that ended by `t`: no later question starts before it.
    pub fn forget_before(&mut self, t: Instant) {
        while self.closed.front().is_some_and(|&(_, end)| end <= t) {
            self.closed.pop_front();
        }
    }
}

/// A request due at `due` and sent at `sent`: (time it waited with every connection busy,
/// time the generator itself was late). The two add up to `sent - due`.
pub fn split_lateness(clock: &BusyClock, due: Instant, sent: Instant) -> (Duration, Duration) {
    let late = sent.saturating_duration_since(due);
    let wait = clock.busy_within(due, sent).min(late);
    (wait, late - wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn lateness_with_every_connection_busy_is_the_servers() {
        let t0 = Instant::now();
        let mut c = BusyClock::default();
        // Busy from 5 to 1505 ms (a stalled server); the request was due at 10 and sent at
        // 1505.2, the moment a connection came free, plus 0.2 ms of the generator's own.
        c.set(true, t0 + ms(5));
        c.set(false, t0 + ms(1505));
        let sent = t0 + ms(1505) + Duration::from_micros(200);
        let (wait, own) = split_lateness(&c, t0 + ms(10), sent);
        assert_eq!(wait, ms(1495));
        assert_eq!(own, Duration::from_micros(200));
    }

    #[test]
    fn lateness_with_a_connection_free_is_the_generators() {
        let t0 = Instant::now();
        let mut c = BusyClock::default();
        // Nothing busy at all: 7 ms late is all the generator's.
        assert_eq!(split_lateness(&c, t0, t0 + ms(7)), (Duration::ZERO, ms(7)));
        // Busy 2..4 and 6..(still busy): due at 1, sent at 9 → 2 + 3 ms waiting, 3 ms late.
        c.set(true, t0 + ms(2));
        c.set(false, t0 + ms(4));
        c.set(true, t0 + ms(6));
        let (wait, own) = split_lateness(&c, t0 + ms(1), t0 + ms(9));
        assert_eq!((wait, own), (ms(5), ms(3)));
        // Sent on time: nothing either way, whatever the clock says.
        assert_eq!(
            split_lateness(&c, t0 + ms(9), t0 + ms(9)),
            (Duration::ZERO, Duration::ZERO)
        );
        // Sent "before" it was due (clock rounding): zero, not a panic.
        assert_eq!(
            split_lateness(&c, t0 + ms(9), t0 + ms(8)),
            (Duration::ZERO, Duration::ZERO)
        );
    }

    #[test]
    fn forgetting_old_stretches_keeps_recent_answers() {
        let t0 = Instant::now();
        let mut c = BusyClock::default();
        for i in 0..10u64 {
            c.set(true, t0 + ms(10 * i));
            c.set(false, t0 + ms(10 * i + 5));
        }
        let before = c.busy_within(t0 + ms(50), t0 + ms(100));
        c.forget_before(t0 + ms(50));
        assert_eq!(c.closed.len(), 5);
        assert_eq!(c.busy_within(t0 + ms(50), t0 + ms(100)), before);
        assert_eq!(before, ms(25));
    }

    #[test]
    fn a_backlog_that_never_clears_keeps_a_bounded_clock() {
        let t0 = Instant::now();
        let mut c = BusyClock::default();
        // Busy for 9 µs of every 10 µs, ten times the cap, and nothing forgotten.
        let us = Duration::from_micros;
        let n = MAX_STRETCHES as u64 * 10;
        for i in 0..n {
            c.set(true, t0 + us(10 * i));
            c.set(false, t0 + us(10 * i + 9));
        }
        assert_eq!(c.closed.len(), MAX_STRETCHES);
        // Recent answers are exact; the merged oldest stretches count their gaps busy.
        let recent = t0 + us(10 * (n - 100));
        assert_eq!(c.busy_within(recent, t0 + us(10 * n)), us(900));
        let all = c.busy_within(t0, t0 + us(10 * n));
        assert!(all >= us(9 * n) && all <= us(10 * n), "{all:?}");
    }

    #[test]
    fn out_of_order_times_are_clamped() {
        let t0 = Instant::now();
        let mut c = BusyClock::default();
        c.set(true, t0 + ms(10));
        c.set(false, t0 + ms(20));
        // A slightly stale "now" starts the next stretch no earlier than the last one ended.
        c.set(true, t0 + ms(15));
        c.set(false, t0 + ms(30));
        assert_eq!(c.busy_within(t0, t0 + ms(40)), ms(20));
        // Ending a stretch before it began records nothing.
        c.set(true, t0 + ms(50));
        c.set(false, t0 + ms(40));
        assert_eq!(c.busy_within(t0 + ms(30), t0 + ms(60)), Duration::ZERO);
    }
}
