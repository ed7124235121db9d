//! The verdict the tune's report opens with (issue 39: "keep the default" came after the
//! curve and a 30-row table), and the words the report's header needs for the budget: apart
//! from `report`, which builds and renders the rest.

use crate::report::{minutes, TuneReport};
use webtune_model::verdict::{Tone, VerdictBox};

impl TuneReport {
    /// The verdict the report opens with (`webtune_model::verdict`, drawn by `webtune_report::verdict_box`): the proof's
    /// answer with its interval, or — without a proof — what the search found and why it is
    /// no recommendation yet; and what to do. When the default or the best turned clients
    /// away and no SLO judged it (`unserved`), the answer says so and what to do is the SLO.
    pub fn verdict(&self) -> VerdictBox {
        let plain = self.verdict_on_the_objective();
        match self.unserved() {
            // The objective counted only what succeeded: whatever the proof or the search
            // says, the configurations tried turn clients away.
            Some(unserved) if plain.tone != Tone::Bad => VerdictBox {
                answer: format!("{}; but {unserved}", plain.answer),
                interval: plain.interval,
                action: "with no SLO on errors the objective counts only the responses that \
                         succeeded: tune again with --slo 'errors<=1%' to search for a \
                         configuration that serves every client (the servers' logs, under What \
                         the servers showed, say what turned them away)"
                    .to_string(),
                tone: Tone::Bad,
            },
            _ => plain,
        }
    }

    /// The verdict on the objective alone.
    fn verdict_on_the_objective(&self) -> VerdictBox {
        let noise = format!(
            "run-to-run noise ±{:.1}% (A/A difference {})",
            100.0 * self.noise.relative_sd,
            self.noise
                .aa_difference
                .map_or("not measured".to_string(), |d| format!("{:.1}%", 100.0 * d))
        );
        if let Some(p) = &self.proof {
            let better = p.overall.outcome == "better";
            let answer = if better {
                format!("The winner is {}", p.verdict())
            } else {
                format!("Keep the default: the winner is {}", p.verdict())
            };
            let interval = Some(format!(
                "winner against default: {} over {} pairs",
                p.overall.headline(),
                p.overall.pairs
            ));
            return VerdictBox {
                answer,
                interval,
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
                action: match self.slos.iter().find(|s| crate::Slo::is_default_text(s)) {
                    Some(default) => format!(
                        "find what fails the requests (the servers' logs, under What the \
                         servers showed), relax the SLOs ({default} is webtune's own: \
                         --slo 'errors<=N%' sets another), widen the --param ranges, or load \
                         less"
                    ),
                    None => "relax the SLOs, widen the --param ranges, or load less".to_string(),
                },
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

    /// "the default failed 67% of its requests (the search's best 57%)" when the tune has no
    /// SLO on errors and the default's runs, or the best's, failed at least
    /// `ERRORS_MATERIAL` of their requests at their worst level; None otherwise. A tune
    /// holds an SLO on errors by default (`Slo::with_default_errors`), so this speaks for a
    /// `--maximize capacity` tune (its SLOs are its capacity search's, which need not bound
    /// errors) and for a study built without one. (The forum
    /// at 1,024 connections with nginx's 768 `worker_connections`: "keep the default" while
    /// two requests in three were turned away, docs/experiments.md.)
    pub fn unserved(&self) -> Option<String> {
        use crate::interleave::judge::ERRORS_MATERIAL;
        if self
            .slos
            .iter()
            .any(|s| s.trim_start().starts_with("errors"))
        {
            return None;
        }
        let share = |params: &crate::space::Config| {
            let runs: Vec<f64> = self
                .trials
                .iter()
                .filter(|t| &t.params == params && !t.summary.is_empty())
                .map(|t| t.summary.iter().map(|l| l.error_ratio).fold(0.0, f64::max))
                .collect();
            (!runs.is_empty()).then(|| runs.iter().sum::<f64>() / runs.len() as f64)
        };
        let default = self
            .trials
            .iter()
            .find(|t| t.why == "baseline")
            .and_then(|t| share(&t.params));
        let best = self.best.as_ref().and_then(|b| share(&b.params));
        let pct = |x: f64| format!("{:.0}%", 100.0 * x);
        match (default, best) {
            (Some(d), Some(b)) if d.max(b) >= ERRORS_MATERIAL && !self.best_is_default() => {
                Some(format!(
                    "the default failed {} of its requests (the search's best {})",
                    pct(d),
                    pct(b)
                ))
            }
            (Some(d), _) if d >= ERRORS_MATERIAL => {
                Some(format!("the default failed {} of its requests", pct(d)))
            }
            _ => None,
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
