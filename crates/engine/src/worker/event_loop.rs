//! The event loop the HTTP/1.1 and HTTP/2 workers run (`run_loop`); its timer and the event
//! tokens that tell sockets apart are `wakeup`'s.
//! One turn: stop sending at the run's end (or Ctrl-C) and drain for `DRAIN_GRACE`; start
//! what may start; end when nothing is in flight or waiting and nothing more will be sent —
//! but a timed run (`-d`, `--stages`) lasts until its end even when its schedule ran out
//! earlier (an open loop at a low rate), so it measures the run's duration, not the time
//! to its last arrival;
//! send the interval report; check deadlines every `TICK`; wait for I/O (`poller`: epoll or
//! io_uring, the time counted busy while requests were in flight) and hand each event to its
//! connection. An open loop whose answers carry the kernel's arrival stamps (`rx_stamp`)
//! does not wake for each answer: when its next wake-up is at most `pacer::ANSWER_WAIT`
//! away it sleeps until then and takes all that came in one turn.
//! What starts, and what an event does, is the protocol's: the `Driver` trait.

use super::base::Base;
use super::poller::{Completions, Readiness, Received};
use super::wakeup::{token_of, INDEX_MASK, TIMER};
use crate::pacer::ANSWER_WAIT;
use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long in-flight requests may finish after sending stops (duration end or Ctrl-C).
pub const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How often deadlines (connect and request timeouts) and ramps are checked.
pub(crate) const TICK: Duration = Duration::from_millis(20);
/// What a protocol's worker does in the shared loop.
pub(crate) trait Driver {
    fn base(&mut self) -> &mut Base;
    /// Closed loop, before the first turn: the first requests.
    fn start_closed(&mut self);
    /// Start what may start at `now`: users back from thinking, requests fallen due,
    /// requests waiting for a connection.
    fn release(&mut self, now: Instant);
    /// Are requests waiting for a connection (not sent yet)?
    fn waiting(&self) -> bool;
    /// Sending has stopped: drop what waits to be sent.
    fn on_stop(&mut self);
    /// Every `TICK`: fail what is past its deadline (and follow a ramp).
    fn tick(&mut self, now: Instant);
    /// The run is over: what is still in flight is abandoned.
    fn abandon_all(&mut self);
    /// When the first user thinking (or backing off) wants to start again.
    fn resume_at(&self) -> Option<Instant>;
    /// Is a request ready to start that must not wait for an event?
    fn ready_now(&self) -> bool {
        false
    }
    /// Open loop: may the loop sleep to its next wake-up with answers outstanding and
    /// collect them then (their arrival times are the kernel's, `rx_stamp`)?
    fn batches_answers(&self) -> bool {
        false
    }
    /// The socket generation of connection `i`, if there is such a connection.
    fn generation(&self, i: usize) -> Option<usize>;
    /// A readiness event for connection `i`'s current socket.
    fn on_event(&mut self, i: usize, event: Readiness);
    /// io_uring: a send queued for connection `i`'s current socket completed (`res`: bytes
    /// sent, or -errno). Only a driver that queues sends gets these.
    fn on_sent(&mut self, _i: usize, _res: i32) {}
    /// io_uring: a receive on connection `i`'s current socket brought bytes or ended. Only
    /// a driver that arms receives (`Poller::recv`) gets these.
    fn on_received(&mut self, _i: usize, _r: Received) {}
}

/// Run the loop until the worker is done; the last interval's report is sent on the way out.
pub(crate) fn run_loop<D: Driver>(d: &mut D) -> io::Result<()> {
    let mut io_done = Completions::default();
    let b = d.base();
    let interval = b.cfg.interval;
    let mut interval_index: u64 = 0;
    let mut next_interval = b.cfg.start + interval;
    let mut next_tick = Instant::now();
    let mut drain_until: Option<Instant> = None;
    let end_at = b
        .cfg
        .end_s
        .map(|s| b.cfg.start + Duration::from_secs_f64(s));
    if !b.start_schedule()? {
        d.start_closed();
    }
    loop {
        let now = Instant::now();
        let b = d.base();
        // The end (or a stop) comes once, whether or not the schedule ran out before it.
        if drain_until.is_none() {
            let over = end_at.is_some_and(|t| now >= t);
            if over || b.cfg.stop.load(Ordering::Relaxed) {
                if b.is_open_loop() {
                    // Requests that fell due before the end go if a connection is free
                    // (the loop may wake a little after their time); the rest are not sent.
                    d.release(now);
                }
                let b = d.base();
                b.stop_sending(now);
                d.on_stop();
                drain_until = Some(now + DRAIN_GRACE);
            }
        }
        d.release(now);
        let b = d.base();
        // Walks under way (journeys counting walks) finish after the budget is spent.
        let done = b.active == 0 && (!b.sending || (b.remaining == Some(0) && b.walking == 0));
        // A timed run whose schedule ran out before its end waits for the end (or a stop).
        let ends_later = drain_until.is_none() && end_at.is_some_and(|t| now < t);
        if done && !d.waiting() && !ends_later {
            break;
        }
        if drain_until.is_some_and(|t| now >= t) {
            d.abandon_all();
            break;
        }
        let b = d.base();
        if now >= next_interval {
            let report = b.rec.take_interval(interval_index, b.open);
            let _ = b.cfg.reports.send(report);
            interval_index += 1;
            next_interval += interval;
        }
        if now >= next_tick {
            d.tick(now);
            next_tick = now + TICK;
        }
        let mut wake = next_tick.min(next_interval);
        if let Some(t) = drain_until {
            wake = wake.min(t);
        }
        if let (None, Some(t)) = (drain_until, end_at) {
            wake = wake.min(t);
        }
        if let Some(at) = d.resume_at() {
            wake = wake.min(at);
        }
        if let Some(t) = d.base().arm_timer_before(wake, now) {
            wake = wake.min(t);
        }
        let timeout = if d.ready_now() {
            Duration::ZERO
        } else {
            wake.saturating_duration_since(now)
        };
        // Answers batched (`pacer::ANSWER_WAIT`): sleep to the wake-up, then take every
        // event that came meanwhile without waiting. Else wait for the first event.
        let batch = !timeout.is_zero() && timeout <= ANSWER_WAIT && d.batches_answers();
        let b = d.base();
        let busy_from = (b.active > 0).then(|| b.slot_of(now));
        let polled = if batch {
            // Until the wake-up itself: the turn's work since `now` is not added to it.
            std::thread::sleep((now + timeout).saturating_duration_since(Instant::now()));
            b.poll.wait(&mut io_done, Duration::ZERO)
        } else {
            b.poll.wait(&mut io_done, timeout)
        };
        if let Some(from) = busy_from {
            let to = b.slot_of(Instant::now());
            b.rec.mark_busy(from, to);
        }
        match polled {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        // Sends first: a send's completion comes before the answer it asked for.
        for &(token, res) in &io_done.sent {
            let i = token.0 & INDEX_MASK;
            if d.generation(i).is_some_and(|g| token_of(i, g) == token) {
                d.on_sent(i, res);
            }
        }
        for &(token, r) in &io_done.received {
            let i = token.0 & INDEX_MASK;
            if d.generation(i).is_some_and(|g| token_of(i, g) == token) {
                d.on_received(i, r);
            }
        }
        for &(token, event) in &io_done.ready {
            if token == TIMER {
                // Edge-triggered epoll (and a multishot poll) reports every expiry, and
                // arming again resets the expiry count: no read is needed to drain it.
                d.base().pacer.timer_fired();
                continue;
            }
            let i = token.0 & INDEX_MASK;
            if d.generation(i).is_some_and(|g| token_of(i, g) == token) {
                d.on_event(i, event);
            }
        }
    }
    let b = d.base();
    let report = b.rec.take_interval(interval_index, b.open);
    let _ = b.cfg.reports.send(report);
    Ok(())
}
