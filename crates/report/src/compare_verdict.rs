//! The verdict `webtune compare` opens with (`verdict_box`, issue 39): for each result
//! against the first, whether throughput and p99 changed beyond their 95% intervals (the
//! repeats' Welch intervals of `compare::verdict`), or — without repeats on both sides —
//! that a single run each cannot say, and what to do. Kept apart from `compare`, whose
//! tables it reads, so the two change independently.

use crate::compare_figures::{metrics, verdict, Verdict};
use crate::verdict_box::{Tone, VerdictBox};
use webtune_model::RunResult;

/// The verdict on `inputs` (the first is the baseline); None with fewer than two.
pub fn compare_verdict(inputs: &[(String, &RunResult)]) -> Option<VerdictBox> {
    let (base_name, base) = inputs.first()?;
    if inputs.len() < 2 {
        return None;
    }
    let all = metrics();
    let pick = |name: &str| all.iter().find(|m| m.name == name).copied();
    let (throughput, p99) = (pick("requests/s")?, pick("p99 (ms)")?);
    let mut answers = Vec::new();
    let mut intervals = Vec::new();
    let (mut better, mut worse, mut unknown) = (false, false, false);
    for (name, r) in &inputs[1..] {
        let judged = |v: Option<Verdict>, what: &str| -> String {
            match v {
                Some(v) => format!(
                    "{what} {} ({}, 95% CI {} to {})",
                    v.describe(),
                    v.show(v.change),
                    v.show(v.low),
                    v.show(v.high)
                ),
                None => format!("{what}: no interval"),
            }
        };
        let t = verdict(&throughput, &base.repeats, &r.repeats);
        let p = verdict(&p99, &base.repeats, &r.repeats);
        match (t, p) {
            (None, _) | (_, None) => {
                unknown = true;
                answers.push(format!(
                    "{name}: not judged (one run each; --repeat N on both sides gives the \
                     intervals)"
                ));
            }
            (Some(t), Some(p)) => {
                let up = (t.significant && t.better) || (p.significant && p.better);
                let down = (t.significant && !t.better) || (p.significant && !p.better);
                better |= up && !down;
                worse |= down;
                answers.push(format!(
                    "{name}: {}",
                    match (up, down) {
                        (true, false) => "better than the baseline",
                        (false, true) => "worse than the baseline",
                        (true, true) => "mixed (one figure better, one worse)",
                        (false, false) => "no significant difference from the baseline",
                    }
                ));
                intervals.push(format!(
                    "{name} against {base_name}: {}; {}",
                    judged(Some(t), "throughput"),
                    judged(Some(p), "p99")
                ));
            }
        }
    }
    let action = if worse {
        "keep the baseline (or find what made the worse one worse) before changing anything"
    } else if better {
        "adopt the better configuration: its change is outside the run-to-run noise"
    } else if unknown {
        "measure again with --repeat N (5 or more) on both sides before deciding"
    } else {
        "keep the baseline: the difference is within the run-to-run noise"
    };
    Some(VerdictBox {
        answer: answers.join("; "),
        interval: (!intervals.is_empty()).then(|| intervals.join("; ")),
        action: action.to_string(),
        tone: if worse {
            Tone::Bad
        } else if better {
            Tone::Good
        } else {
            Tone::Neutral
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_testkit::results::synthetic_result;

    #[test]
    fn single_runs_are_not_judged_and_say_how_to_be() {
        let a = synthetic_result(100, &[1_000]);
        let b = synthetic_result(120, &[900]);
        let v = compare_verdict(&[("a".into(), &a), ("b".into(), &b)]).unwrap();
        assert!(v.answer.starts_with("b: not judged (one run each"), "{v:?}");
        assert!(v.action.contains("--repeat N"), "{v:?}");
        assert!(compare_verdict(&[("a".into(), &a)]).is_none());
    }
}
