//! The paired-proof runner `tune`'s proof and `advise --verify` share: A (the default, or
//! the config as it is) and B (the winner, or the advised config) measured alternately
//! A B B A … (`proof::order`), each run by the caller's `measure`, picking up after runs
//! already done (a resumed tune), and stopped between runs by the stop token. What the
//! arms are and how a run is measured is the caller's; what the runs say is `proof`'s
//! (`pairs` turns them into the (A, B) figures `proof::analyze` judges).

use crate::proof::{self, Arm};
use webtune_model::StopToken;

/// What one run of an arm gave.
pub enum Ran<R> {
    /// Measured; go on.
    Measured(R),
    /// Measured, but a stop cut it short: keep it and run no more.
    Last(R),
    /// Nothing usable: a stop came first.
    Interrupted,
}

/// The runs in order, with their arm, and whether a stop cut the proof short.
pub struct PairedRuns<R> {
    pub runs: Vec<(Arm, R)>,
    pub interrupted: bool,
}

/// Run `pairs` pairs: `measure(arm, number, of)` for each run after the `done` ones
/// (number counts from 1 over all `2 × pairs` runs).
pub fn run<R, E>(
    pairs: usize,
    done: Vec<(Arm, R)>,
    stop: &StopToken,
    mut measure: impl FnMut(Arm, usize, usize) -> Result<Ran<R>, E>,
) -> Result<PairedRuns<R>, E> {
    let order = proof::order(pairs);
    let mut runs = done;
    let mut interrupted = false;
    for (i, arm) in order.iter().enumerate().skip(runs.len()) {
        if stop.stop_requested() {
            interrupted = true;
            break;
        }
        match measure(*arm, i + 1, order.len())? {
            Ran::Measured(r) => runs.push((*arm, r)),
            Ran::Last(r) => {
                runs.push((*arm, r));
                interrupted = true;
                break;
            }
            Ran::Interrupted => {
                interrupted = true;
                break;
            }
        }
    }
    Ok(PairedRuns { runs, interrupted })
}

/// The (A, B) pairs of one figure: the i-th A run that has it with the i-th B run that
/// has it (a failed run, `figure` None, drops out of its arm).
pub fn pairs<R>(runs: &[(Arm, R)], figure: impl Fn(&R) -> Option<f64>) -> Vec<(f64, f64)> {
    let of = |arm: Arm| -> Vec<f64> {
        runs.iter()
            .filter(|(a, _)| *a == arm)
            .filter_map(|(_, r)| figure(r))
            .collect()
    };
    of(Arm::Default).into_iter().zip(of(Arm::Winner)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_abba_resumes_after_the_done_ones_and_stops_on_a_stop() {
        let stop = StopToken::new();
        let mut seen = Vec::new();
        let done = vec![(Arm::Default, 100.0)];
        let out = run::<f64, ()>(2, done, &stop, |arm, n, of| {
            seen.push((arm, n, of));
            Ok(Ran::Measured(if arm == Arm::Winner {
                110.0
            } else {
                100.0
            }))
        })
        .unwrap();
        assert_eq!(
            seen,
            vec![
                (Arm::Winner, 2, 4),
                (Arm::Winner, 3, 4),
                (Arm::Default, 4, 4)
            ]
        );
        assert!(!out.interrupted);
        assert_eq!(pairs(&out.runs, |x| Some(*x)), vec![(100.0, 110.0); 2]);
        // A run cut short is kept, and nothing runs after it.
        let out = run::<f64, ()>(3, Vec::new(), &stop, |_, n, _| {
            Ok(if n == 2 {
                Ran::Last(1.0)
            } else {
                Ran::Measured(2.0)
            })
        })
        .unwrap();
        assert!(out.interrupted);
        assert_eq!(out.runs.len(), 2);
        stop.request_stop();
        let out = run::<f64, ()>(3, Vec::new(), &stop, |_, _, _| {
            panic!("no run after a stop")
        })
        .unwrap();
        assert!(out.interrupted && out.runs.is_empty());
    }

    #[test]
    fn a_failed_run_drops_out_of_its_arm() {
        let runs = vec![
            (Arm::Default, Some(100.0)),
            (Arm::Winner, None),
            (Arm::Winner, Some(120.0)),
            (Arm::Default, Some(101.0)),
        ];
        assert_eq!(pairs(&runs, |r| *r), vec![(100.0, 120.0)]);
    }
}
