//! The verdict the tune's report opens with (issue 39: "keep the default" came after the
//! curve and a 30-row table), and the words the report's header needs for the budget: apart
//! from `report`, which builds and renders the rest.

use crate::report::{minutes, TuneReport};
use webtune_model::verdict::{Tone, VerdictBox};

impl TuneReport {
    /// The verdict the report opens with (`webtune_model::verdict`, drawn by `webtune_report::verdict_box`): the proof's
    /// answer with its interval, or — without a proof — what the search found and why it is
    /// no recommendation yet; and what to do.
    pub fn verdict(&self) -> VerdictBox {
        let noise = format!(
            "run-to-run noise ±{:.1}% (A/A difference {})",
            100.0 * self.noise.relative_sd,
            self.noise
                .aa_difference
                .map_or("not measured".to_string(), |d| format!("{:.1}%", 100.0 * d))
        );
        if let Some(p) = &self.proof {
            let better = p.overall.outcome == "better";
            return VerdictBox {
                answer: if better {
                    format!("The winner is {}", p.verdict())
                } else {
                    format!("Keep the default: the winner is {}", p.verdict())
                },
                interval: Some(format!(
                    "winner against default: {} over {} pairs",
                    p.overall.headline(),
                    p.overall.pairs
                )),
                action: if better {
                    "apply the winner's directives (listed under Best)".to_string()
                } else {
                    "keep the default configuration; the search's best is not a \
                     recommendation"
                        .to_string()
                },
                tone: if better { Tone::Good } else { Tone::Neutral },
            };
        }
        let failed = self.trials.iter().filter(|t| t.objective.is_none()).count();
        match &self.best {
            None if failed > 0 && failed == self.trials.len() => VerdictBox {
                answer: format!("No trial succeeded ({failed} of {failed} failed)"),
                interval: None,
                action: "fix what made them fail (the reasons are listed below), then tune \
                         again"
                    .to_string(),
                tone: Tone::Bad,
            },
            None => VerdictBox {
                answer: "No configuration met every SLO".to_string(),
                interval: Some(noise),
                action: "relax the SLOs, widen the --param ranges, or load less".to_string(),
                tone: Tone::Bad,
            },
            Some(_) if self.best_is_default() => VerdictBox {
                answer: "The default was best in the search".to_string(),
                interval: Some(noise),
                action: "keep the default configuration".to_string(),
                tone: Tone::Neutral,
            },
            Some(b) => {
                let gain = b.search_gain.map_or(String::new(), |g| {
                    let within = if g.abs() <= self.noise.relative_sd {
                        ", within the noise"
                    } else {
                        ""
                    };
                    format!(" ({:+.1}% against the default{within})", 100.0 * g)
                });
                VerdictBox {
                    answer: format!("Unproven: no proof ran; the search's best{gain}"),
                    interval: Some(noise),
                    action: "run the tune with --confirm N (paired runs of default and \
                             winner) before applying it"
                        .to_string(),
                    tone: Tone::Neutral,
                }
            }
        }
    }

    /// Is the search's best the default configuration (the baseline trial's)?
    pub fn best_is_default(&self) -> bool {
        let Some(best) = &self.best else {
            return false;
        };
        self.trials
            .iter()
            .any(|t| t.why == "baseline" && t.params == best.params)
    }

    /// How the search was bounded: `--budget` (time) when given, else the trial cap.
    pub fn budget_words(&self) -> String {
        match self
            .time
            .as_ref()
            .and_then(|t| t.budget_s.map(|b| (b, t.search_s)))
        {
            Some((budget, search)) => format!(
                "a --budget of {} (the search took {})",
                minutes(budget),
                minutes(search)
            ),
            None => format!("at most {} (--trials)", self.budget),
        }
    }
}
