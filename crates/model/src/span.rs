//! A stretch of time on some clock's axis (`Window`) and how much of a span falls inside a
//! set of them (`overlap_with`): the leaf under the measured window (`window`) and the server
//! samples that are mapped onto it (`server`), so neither reaches the other through the
//! result (issue 36 item 5: result → server → window → result was an import circle).

use serde::{Deserialize, Serialize};

/// A stretch of time, in seconds on some clock's axis (a run's, or a sampler's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub from_s: f64,
    pub to_s: f64,
}

impl Window {
    pub fn new(from_s: f64, to_s: f64) -> Window {
        Window { from_s, to_s }
    }

    pub fn length_s(&self) -> f64 {
        (self.to_s - self.from_s).max(0.0)
    }

    /// Seconds of [`from_s`, `to_s`] inside this window.
    pub fn overlap(&self, from_s: f64, to_s: f64) -> f64 {
        (self.to_s.min(to_s) - self.from_s.max(from_s)).max(0.0)
    }
}

/// Seconds of [`from_s`, `to_s`] inside any of `windows` (overlapping windows count once).
pub fn overlap_with(windows: &[Window], from_s: f64, to_s: f64) -> f64 {
    let mut sorted: Vec<Window> = windows.to_vec();
    sorted.sort_by(|a, b| a.from_s.total_cmp(&b.from_s));
    let mut union: Vec<Window> = Vec::new();
    for w in sorted {
        match union.last_mut() {
            Some(last) if w.from_s <= last.to_s => last.to_s = last.to_s.max(w.to_s),
            _ => union.push(w),
        }
    }
    union
        .iter()
        .fold(0.0, |sum, w| sum + w.overlap(from_s, to_s))
}
