//! The measured window: the stretch of a run whose finished requests make its summary
//! (`--warmup` and `--cooldown` left out). The engine sets it before a run
//! (`RunSpec::measurement_window`); readers of a result find it again
//! (`RunResult::measured_windows`): the sweep's knee counts only the stalls inside it, and
//! the lab maps it onto its /proc samples (`ServerSamples::measured`) so that per-response
//! server figures cover the same time as the responses they are divided by.

use crate::result::{RunResult, Stall};
use crate::spec::{RunSpec, StopCondition};

// The span type and its overlap are the leaf `span` (the lab's server samples read them too,
// and this module reads the result): re-exported so `window::Window` stays.
pub use crate::span::{overlap_with, Window};

impl RunSpec {
    /// How long the run sends, in seconds (None: until `-n` is done). Asked of a validated
    /// spec (`validate`).
    pub fn run_length_s(&self) -> Option<f64> {
        if !self.stages.is_empty() {
            return Some(self.stages_seconds());
        }
        match self.stop {
            StopCondition::Duration { seconds } => Some(seconds),
            StopCondition::Requests { .. } => None,
        }
    }

    /// The stretch of the run (seconds since it began) whose finished requests make the
    /// summary: from the end of the warm-up to the start of the cool-down. Without a
    /// cool-down it stays open through the drain of in-flight requests (to_s infinite).
    pub fn measurement_window(&self) -> Window {
        let warm = self.warmup_s.max(0.0);
        let cool = self.cooldown_s.max(0.0);
        let end = match self.run_length_s() {
            Some(e) if cool > 0.0 => e - cool,
            _ => f64::INFINITY,
        };
        Window::new(warm, end)
    }
}

impl RunResult {
    /// The measured window(s) on the result's own time axis (its timeline and stalls): one
    /// for a run, from the end of its warm-up for `duration_s`; for merged repeats one per
    /// run, each shifted as `merge` shifts that run's times (by the measured seconds of the
    /// runs before it).
    pub fn measured_windows(&self) -> Vec<Window> {
        let runs: Vec<f64> = if self.repeats.len() < 2 {
            vec![self.duration_s]
        } else {
            self.repeats.iter().map(|r| r.duration_s).collect()
        };
        windows_of(self.spec.warmup_s, &runs)
    }

    /// Seconds of `stalls` (this result's, or ones found in its timeline) that fall inside
    /// its measured window(s): a stall in the warm-up or the cool-down is not one of the
    /// summary's.
    pub fn stalled_s_measured(&self, stalls: &[Stall]) -> f64 {
        stalled_within(&self.measured_windows(), stalls)
    }
}

/// The windows of runs that measured `durations_s` each after a `warmup_s` warm-up, the
/// later ones shifted by the measured seconds before them.
fn windows_of(warmup_s: f64, durations_s: &[f64]) -> Vec<Window> {
    let warm = warmup_s.max(0.0);
    let mut offset = 0.0;
    durations_s
        .iter()
        .map(|d| {
            let w = Window::new(offset + warm, offset + warm + d);
            offset += d;
            w
        })
        .collect()
}

fn stalled_within(windows: &[Window], stalls: &[Stall]) -> f64 {
    // A fold from +0.0: f64's `sum` of nothing is -0.0, which prints as "-0.000".
    stalls.iter().fold(0.0, |sum, s| {
        sum + overlap_with(windows, s.start_s, s.start_s + s.length_s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(seconds: f64, warmup_s: f64, cooldown_s: f64) -> RunSpec {
        RunSpec {
            stop: StopCondition::Duration { seconds },
            warmup_s,
            cooldown_s,
            ..RunSpec::default()
        }
    }

    #[test]
    fn the_window_leaves_out_warm_up_and_cool_down() {
        assert_eq!(
            timed(10.0, 2.0, 1.0).measurement_window(),
            Window::new(2.0, 9.0)
        );
        // No cool-down: open through the drain.
        assert_eq!(
            timed(10.0, 2.0, 0.0).measurement_window().to_s,
            f64::INFINITY
        );
        let counted = RunSpec {
            stop: StopCondition::Requests { count: 10 },
            ..RunSpec::default()
        };
        assert_eq!(counted.run_length_s(), None);
        assert_eq!(
            counted.measurement_window(),
            Window::new(0.0, f64::INFINITY)
        );
    }

    #[test]
    fn stalls_count_only_inside_the_measured_window() {
        // A 5 s run with 2 s of warm-up and 1 s of cool-down measured 2 s.
        let one = windows_of(2.0, &[2.0]);
        assert_eq!(one, vec![Window::new(2.0, 4.0)]);
        let stall = |start_s, length_s| Stall { start_s, length_s };
        // In the warm-up, across its end, inside, in the cool-down.
        assert_eq!(stalled_within(&one, &[stall(0.5, 0.1)]), 0.0);
        assert!((stalled_within(&one, &[stall(1.8, 0.4)]) - 0.2).abs() < 1e-9);
        assert!((stalled_within(&one, &[stall(3.0, 0.5)]) - 0.5).abs() < 1e-9);
        assert_eq!(stalled_within(&one, &[stall(4.2, 0.3)]), 0.0);
        // Merged repeats: the second run's times follow the first's 2 measured seconds.
        let two = windows_of(2.0, &[2.0, 2.0]);
        assert_eq!(two, vec![Window::new(2.0, 4.0), Window::new(4.0, 6.0)]);
        assert_eq!(stalled_within(&two, &[stall(1.0, 0.5)]), 0.0);
        assert!((stalled_within(&two, &[stall(5.0, 0.3)]) - 0.3).abs() < 1e-9);
    }

    #[test]
    fn overlapping_windows_count_once() {
        let w = [Window::new(0.0, 2.0), Window::new(1.0, 3.0)];
        assert!((overlap_with(&w, 0.5, 2.5) - 2.0).abs() < 1e-9);
        assert_eq!(overlap_with(&[], 0.0, 1.0), 0.0);
    }
}
