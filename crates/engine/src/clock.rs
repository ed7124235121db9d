//! The wall clock a run starts by: waiting for `--start-at` (so that shards on several
//! machines start together), and what the kernel says about the clock (adjtimex: whether it
//! is synchronised to a time source, and its error bounds), recorded in the result so a
//! merge can tell how far apart the shards' starts may really be.
//!
//! A leaf below the coordinator: it reads the clock and hears a stop through the model's
//! `StopToken` (what `RunControl` names), so the coordinator calls it and nothing here
//! climbs back up.

use std::time::{Duration, SystemTime, UNIX_EPOCH};
use webtune_model::{StartRecord, StopToken};

/// Milliseconds since the Unix epoch, with the clock's sub-millisecond part.
pub fn now_unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// Sleep until the wall clock reads `unix_ms` (at once when it already has), or until a stop
/// is asked for. Short sleeps, so that a clock stepped meanwhile is followed and Ctrl-C
/// is heard.
pub fn wait_until(unix_ms: u64, control: &StopToken) {
    loop {
        let left_ms = unix_ms as f64 - now_unix_ms();
        if left_ms <= 0.0 || control.stop_requested() {
            return;
        }
        std::thread::sleep(Duration::from_secs_f64((left_ms / 1000.0).min(0.05)));
    }
}

/// The record of a start at `actual_ms`, planned for `planned` (None: started at once).
pub fn start_record(planned: Option<u64>, actual_ms: f64) -> StartRecord {
    let (synchronised, estimated_error_us, max_error_us) = kernel_clock_state();
    StartRecord {
        planned_unix_ms: planned,
        late_ms: planned.map(|p| actual_ms - p as f64),
        clock: "CLOCK_REALTIME".into(),
        synchronised,
        estimated_error_us,
        max_error_us,
        // The binary names the run (`--run-id`); the coordinator adds the window.
        run_id: None,
        window: None,
    }
}

/// adjtimex(2) in read-only mode (modes = 0 needs no privilege).
fn kernel_clock_state() -> (Option<bool>, Option<u64>, Option<u64>) {
    // SAFETY: adjtimex with modes 0 only fills the zeroed struct it is given.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    let state = unsafe { libc::adjtimex(&mut tx) };
    if state < 0 {
        return (None, None, None);
    }
    let synced = state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0;
    (
        Some(synced),
        u64::try_from(tx.esterror).ok(),
        u64::try_from(tx.maxerror).ok(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_for_a_past_time_returns_at_once_and_a_future_one_waits() {
        let control = StopToken::new();
        let now = now_unix_ms();
        wait_until(now as u64 - 10_000, &control);
        assert!(now_unix_ms() - now < 1000.0);
        let target = now as u64 + 150;
        wait_until(target, &control);
        assert!(now_unix_ms() >= target as f64);
        let r = start_record(Some(target), now_unix_ms());
        assert!(r.late_ms.is_some_and(|l| l >= 0.0));
        assert_eq!(r.clock, "CLOCK_REALTIME");
    }

    #[test]
    fn a_stop_ends_the_wait() {
        let control = StopToken::new();
        control.request_stop();
        let now = now_unix_ms();
        wait_until(now as u64 + 60_000, &control);
        assert!(now_unix_ms() - now < 1000.0);
    }
}
