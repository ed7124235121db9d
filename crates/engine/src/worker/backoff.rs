//! The pause after a failed connect, one rule for both workers (HTTP/1.1 and HTTP/2). A
//! connect can fail at once or within microseconds (no local port free, refused on
//! loopback); without a pause a closed loop would spin on socket/connect/close. So a
//! connection that failed to connect waits before its next try: 1 ms after the first
//! failure, doubling with each further failure in a row up to 100 ms, less up to half at
//! random so connections do not retry in step. A connect that succeeds starts it over.

use crate::rng::Rng;
use std::time::Duration;

/// The pause after the first failed connect in a row.
const FIRST: Duration = Duration::from_millis(1);
/// The longest pause, however many connects failed in a row.
const MAX: Duration = Duration::from_millis(100);

/// One connection's failed connects in a row.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ConnectBackoff {
    failures: u32,
}

impl ConnectBackoff {
    /// A connect succeeded: the next failure waits the first pause again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// One more connect failed: how long to wait before the next try.
    pub fn next_pause(&mut self, rng: &mut Rng) -> Duration {
        let doublings = self.failures.min(16);
        self.failures = self.failures.saturating_add(1);
        let full = FIRST.saturating_mul(1 << doublings).min(MAX);
        full.mul_f64(1.0 - 0.5 * rng.unit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_from_a_millisecond_to_a_cap_jittered_down_to_half() {
        let mut rng = Rng::seeded(7);
        let mut b = ConnectBackoff::default();
        let mut full = FIRST;
        for _ in 0..40 {
            let pause = b.next_pause(&mut rng);
            assert!(pause <= full && pause >= full / 2, "{pause:?} for {full:?}");
            full = (full * 2).min(MAX);
        }
        assert_eq!(full, MAX);
    }

    #[test]
    fn a_successful_connect_starts_the_pauses_over() {
        let mut rng = Rng::seeded(7);
        let mut b = ConnectBackoff::default();
        for _ in 0..10 {
            b.next_pause(&mut rng);
        }
        b.reset();
        assert!(b.next_pause(&mut rng) <= FIRST);
    }
}
