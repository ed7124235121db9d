//! The one definition of a stall (DESIGN.md): a stretch of time with work outstanding and
//! none finished, `STALL_MS` or longer. Every measurer and reader finds stalls here, from
//! what it recorded:
//! - pieces of time with a count of finishes (`runs`): the engine's 100 ms slots (work
//!   outstanding: requests in flight), and a saved result's timeline when it carries no
//!   stall list (the report: open connections are what the timeline says of outstanding
//!   work);
//! - each participant's gaps between finishes (`across`): the small-file engine's workers,
//!   which always have an operation outstanding, so a stall is where every worker's gap of
//!   `STALL_MS` or more meets the others'.
//!
//! Kept apart from `result` (which only holds `Stall`) so the rule has one home below the
//! engine, `fs` and `report`.

use crate::result::Stall;

/// The shortest stretch that counts as a stall, and the engine's slot: a stall is reported
/// in steps of this, and a gap between finishes shorter than it is none.
pub const STALL_MS: u64 = 100;

/// Is a stretch with work `outstanding` and `finished` completions in it a stall?
pub fn is_stalled(outstanding: bool, finished: u64) -> bool {
    outstanding && finished == 0
}

/// Consecutive pieces of time, each as (work outstanding, finishes in it): the stretches of
/// stalled pieces, joined where they follow one another, as (first piece, pieces).
pub fn runs(pieces: impl IntoIterator<Item = (bool, u64)>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut run: Option<usize> = None;
    let mut len = 0;
    for (i, (outstanding, finished)) in pieces.into_iter().enumerate() {
        len = i + 1;
        match (is_stalled(outstanding, finished), run) {
            (true, None) => run = Some(i),
            (false, Some(start)) => {
                out.push((start, i - start));
                run = None;
            }
            _ => {}
        }
    }
    if let Some(start) = run {
        out.push((start, len - start));
    }
    out
}

/// Each participant's gaps between finishes, as (start_s, length_s) in time order: the
/// stalls are where every participant is in a gap at once, `STALL_MS` or longer.
pub fn across(gaps: &[Vec<(f64, f64)>]) -> Vec<Stall> {
    let mut common: Option<Vec<(f64, f64)>> = None;
    for participant in gaps {
        let spans: Vec<(f64, f64)> = participant.iter().map(|&(s, l)| (s, s + l)).collect();
        common = Some(match common {
            None => spans,
            Some(prev) => {
                let mut out = Vec::new();
                for &(a0, a1) in &prev {
                    for &(b0, b1) in &spans {
                        let (s, e) = (a0.max(b0), a1.min(b1));
                        if e > s {
                            out.push((s, e));
                        }
                    }
                }
                out
            }
        });
    }
    let min = STALL_MS as f64 / 1000.0;
    common
        .unwrap_or_default()
        .into_iter()
        .filter(|(s, e)| e - s >= min)
        .map(|(s, e)| Stall {
            start_s: s,
            length_s: e - s,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_outstanding_work_with_nothing_finished_and_stretches_join() {
        assert!(is_stalled(true, 0));
        assert!(!is_stalled(true, 1) && !is_stalled(false, 0));
        let pieces = [
            (true, 3),
            (true, 0),
            (true, 0),
            (true, 1),
            (false, 0),
            (true, 0),
        ];
        assert_eq!(runs(pieces), vec![(1, 2), (5, 1)]);
        assert!(runs([]).is_empty());
    }

    #[test]
    fn across_participants_a_stall_is_where_every_gap_meets() {
        // One is stuck 1.0..3.0 s; the other 1.5..2.2 s and 2.95..3.55 s (an overlap of
        // 50 ms: too short to count).
        let found = across(&[vec![(1.0, 2.0)], vec![(1.5, 0.7), (2.95, 0.6)]]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!((found[0].start_s - 1.5).abs() < 1e-9);
        assert!((found[0].length_s - 0.7).abs() < 1e-9);
        // One participant: its own gaps; one that never paused: none.
        assert_eq!(across(&[vec![(0.5, 0.25)]]).len(), 1);
        assert!(across(&[vec![(0.5, 0.25)], vec![]]).is_empty());
        assert!(across(&[]).is_empty());
    }
}
