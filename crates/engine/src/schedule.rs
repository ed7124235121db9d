//! Schedules: when each open-loop request is due, and how many connections a ramping closed
//! loop may use. Both are piecewise-linear functions of time given by `--stages` (or a
//! constant). Intended start times are found by integrating the rate exactly over each
//! linear piece, so they carry no step error: the k-th request is due when the integral of
//! the rate reaches k (uniform arrival) or a sum of exponential draws (Poisson). Arrivals
//! are made one at a time, when a worker takes the next (`pacer`, which owns a worker's
//! ramp and walks it): a schedule is a
//! few numbers whatever its rate × length, and the arrivals due but never sent are counted
//! from the integral (`Ramp::integral`), not listed.

use webtune_model::Stage;

/// A piecewise-linear function of seconds since the run began.
#[derive(Debug, Clone)]
pub struct Ramp {
    /// (start_s, end_s, value at start, value at end), contiguous from 0.
    pieces: Vec<(f64, f64, f64, f64)>,
}

impl Ramp {
    /// A constant value for `seconds` (or forever when infinite).
    pub fn constant(value: f64, seconds: f64) -> Ramp {
        Ramp {
            pieces: vec![(0.0, seconds, value, value)],
        }
    }

    /// Ramp through the stages, starting from 0.
    pub fn from_stages(stages: &[Stage]) -> Ramp {
        let mut pieces = Vec::with_capacity(stages.len());
        let (mut t, mut v) = (0.0, 0.0);
        for s in stages {
            let end = t + s.seconds.max(0.0);
            pieces.push((t, end, v, s.target.max(0.0)));
            t = end;
            v = s.target.max(0.0);
        }
        Ramp { pieces }
    }

    /// Multiply every value (a worker's share of the total).
    pub fn scaled(&self, factor: f64) -> Ramp {
        Ramp {
            pieces: self
                .pieces
                .iter()
                .map(|&(a, b, v0, v1)| (a, b, v0 * factor, v1 * factor))
                .collect(),
        }
    }

    #[cfg(test)]
    pub fn end_s(&self) -> f64 {
        self.pieces.last().map(|p| p.1).unwrap_or(0.0)
    }

    pub fn peak(&self) -> f64 {
        self.pieces.iter().map(|p| p.2.max(p.3)).fold(0.0, f64::max)
    }

    /// The value at `t` (0 after the end).
    pub fn at(&self, t: f64) -> f64 {
        for &(a, b, v0, v1) in &self.pieces {
            if t >= a && t < b {
                return if b > a {
                    v0 + (v1 - v0) * (t - a) / (b - a)
                } else {
                    v1
                };
            }
        }
        0.0
    }

    /// The integral of the value over [`from`, `to`] (0 where `to` ≤ `from`).
    pub fn integral(&self, from: f64, to: f64) -> f64 {
        let mut sum = 0.0;
        for &(a, b, v0, v1) in &self.pieces {
            let (lo, hi) = (from.max(a), to.min(b));
            if hi <= lo {
                continue;
            }
            let slope = if b > a { (v1 - v0) / (b - a) } else { 0.0 };
            let (at_lo, at_hi) = (v0 + slope * (lo - a), v0 + slope * (hi - a));
            sum += 0.5 * (at_lo + at_hi) * (hi - lo);
        }
        sum
    }

    /// The time after `t` at which the integral from `t` reaches `work`, or None if it does
    /// not before the end.
    pub fn advance(&self, mut t: f64, mut work: f64) -> Option<f64> {
        for &(a, b, v0, v1) in &self.pieces {
            if t >= b {
                continue;
            }
            if t < a {
                t = a;
            }
            let slope = if b > a { (v1 - v0) / (b - a) } else { 0.0 };
            let r = v0 + slope * (t - a);
            let available = r * (b - t) + 0.5 * slope * (b - t) * (b - t);
            if available < work {
                work -= available;
                t = b;
                continue;
            }
            // Solve r·x + slope/2·x² = work for the smallest x ≥ 0.
            let x = if slope.abs() < 1e-12 {
                if r <= 0.0 {
                    return None;
                }
                work / r
            } else {
                let disc = (r * r + 2.0 * slope * work).max(0.0);
                (disc.sqrt() - r) / slope
            };
            return Some(t + x.max(0.0));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_spaces_evenly() {
        let r = Ramp::constant(100.0, 10.0);
        let t1 = r.advance(0.0, 1.0).unwrap();
        assert!((t1 - 0.01).abs() < 1e-12);
        assert!(r.advance(9.995, 1.0).is_none());
    }

    #[test]
    fn linear_ramp_integrates_exactly() {
        // 0 → 100/s over 10 s: 500 requests in all; the 125th is due at 5 s.
        let r = Ramp::from_stages(&[Stage {
            seconds: 10.0,
            target: 100.0,
        }]);
        let t = r.advance(0.0, 125.0).unwrap();
        assert!((t - 5.0).abs() < 1e-9, "{t}");
        assert!(r.advance(0.0, 500.5).is_none());
        assert!((r.at(2.5) - 25.0).abs() < 1e-9);
        assert!((r.integral(0.0, 5.0) - 125.0).abs() < 1e-9);
        assert!((r.integral(0.0, 99.0) - 500.0).abs() < 1e-9);
        assert_eq!(r.integral(3.0, 2.0), 0.0);
    }

    #[test]
    fn a_huge_schedule_is_a_few_numbers() {
        // 10^9 requests/s for a day: the ramp is one piece, its arrivals are made on demand.
        let r = Ramp::constant(1e9, 86_400.0);
        assert_eq!(std::mem::size_of_val(&r.pieces[..]), 32);
        let mut t = 0.0;
        for _ in 0..1000 {
            t = r.advance(t, 1.0).unwrap();
        }
        assert!((t - 1e-6).abs() < 1e-12, "{t}");
        assert!((r.integral(0.0, 86_400.0) - 8.64e13).abs() < 1.0);
    }

    #[test]
    fn zero_stretches_are_skipped() {
        let r = Ramp::from_stages(&[
            Stage {
                seconds: 1.0,
                target: 0.0,
            },
            Stage {
                seconds: 0.0,
                target: 10.0,
            },
            Stage {
                seconds: 2.0,
                target: 10.0,
            },
        ]);
        let t = r.advance(0.0, 1.0).unwrap();
        assert!((t - 1.1).abs() < 1e-9, "{t}");
        assert_eq!(r.peak(), 10.0);
        assert_eq!(r.end_s(), 3.0);
    }
}
