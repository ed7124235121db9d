//! The tuner's result: the `webtune.tune/1` JSON document (every trial with its parameters,
//! feasibility, objective and summary; the best configuration; the proof's verdict; the
//! per-parameter effects) built from a study, and its plain-text rendering.

use crate::effects::{effects, Effect};
use crate::objective::LevelSummary;
use crate::proof::{disagreement, Proof};
use crate::space::{render, Config};
use crate::study::{Outcome, Study};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

pub const SCHEMA: &str = "webtune.tune/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneReport {
    pub schema: String,
    /// "maximize throughput", "minimize p99", …
    pub objective: String,
    /// "ok/s" or "ms".
    pub unit: String,
    pub slos: Vec<String>,
    /// The load levels each trial ran at.
    pub levels: Vec<String>,
    /// "gp" or "random".
    pub sampler: String,
    /// Measured runs allowed in the search.
    pub budget: usize,
    pub noise: Noise,
    pub trials: Vec<TrialReport>,
    /// None when no trial met every SLO.
    pub best: Option<BestReport>,
    /// None when the proof was not run.
    pub proof: Option<ProofReport>,
    pub effects: Vec<Effect>,
    /// What the servers showed differently under the default and the winner in the proof's
    /// runs (log messages, listen overflows, context switches, memory).
    #[serde(default)]
    pub evidence: Vec<String>,
    /// The winner's directives that differ from the default, as the server writes them.
    #[serde(default)]
    pub snippet: Vec<String>,
    /// What the tune took: its wall time, the search's part, and `--budget` when given.
    #[serde(default)]
    pub time: Option<TimeReport>,
    /// `--from-advice`: how each advised seed did against the default and the winner, and
    /// what of the advice could not be seeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<crate::advised::AdviceReport>,
}

/// The tune's wall time (over every run of it, when resumed: the journal keeps each trial's
/// duration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeReport {
    /// Seconds of the whole tune: the search's and the proof's trials.
    pub wall_s: f64,
    /// Seconds of the search's trials (what `--budget` limits).
    pub search_s: f64,
    /// `--budget` in seconds, when given.
    pub budget_s: Option<f64>,
    /// The search stopped because the budget was spent (rather than at --trials).
    pub budget_spent: bool,
    /// Successive halving under `--budget`: the screening runs' and the full runs' load
    /// duration (seconds) and how many of each the search ran. None without screening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halving: Option<HalvingReport>,
}

/// How a `--budget` search split its runs between screening and full durations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HalvingReport {
    pub screen_s: f64,
    pub full_s: f64,
    pub screened: usize,
    pub full: usize,
    /// Screened configurations measured again in full.
    pub promoted: usize,
}

/// `252 s` as `4m12s`.
pub fn minutes(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// |A − A'| / mean of the default's two runs.
    pub aa_difference: Option<f64>,
    /// Run-to-run standard deviation (relative) the racing used.
    pub relative_sd: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialReport {
    pub number: usize,
    /// baseline, seed, space-filling, race or model.
    pub why: String,
    pub params: Config,
    pub feasible: bool,
    /// The objective's figure (worst level); null for a failed trial.
    pub objective: Option<f64>,
    /// One summary per level; empty for a failed trial.
    pub summary: Vec<LevelSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The rules behind a seed (the advisor's findings, `--from-advice`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
    /// A screening run's share of the full duration (successive halving under `--budget`);
    /// absent for a full run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<f64>,
    /// `--search-protocol interleaved`: the pair this trial ran against the incumbent (its
    /// figures are the reference's times the pairs' ratios); absent for a trial measured
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<crate::interleave::search::PairedTrial>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestReport {
    pub params: Config,
    /// Mean of its measurements (geometric).
    pub objective: f64,
    pub measurements: usize,
    pub trials: Vec<usize>,
    /// The default's objective over the A/A runs, when measured.
    pub default_objective: Option<f64>,
    /// Relative improvement over the default seen in the search (positive = better).
    pub search_gain: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelProof {
    pub level: String,
    #[serde(flatten)]
    pub proof: Proof,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProofReport {
    /// The judgement on the objective (worst level of each run); its `verdict` is the
    /// proof's `verdict`.
    #[serde(flatten)]
    pub overall: Proof,
    /// The same judgement at each level.
    pub levels: Vec<LevelProof>,
    /// Set when the proof disagrees with the search.
    pub disagreement: Option<String>,
    /// `--protocol interleaved`: the whole comparison (`webtune.compare-live/1`, every block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved: Option<Box<crate::interleave::render::Report>>,
}

impl ProofReport {
    pub fn new(
        overall: Proof,
        levels: Vec<LevelProof>,
        search_gain: Option<f64>,
        higher_is_better: bool,
    ) -> ProofReport {
        let disagreement = search_gain.and_then(|g| disagreement(g, &overall, higher_is_better));
        ProofReport {
            overall,
            levels,
            disagreement,
            interleaved: None,
        }
    }

    pub fn verdict(&self) -> &str {
        &self.overall.verdict
    }
}

impl TuneReport {
    /// Build from a finished (or interrupted) study.
    pub fn from_study(study: &Study, levels: Vec<String>, proof: Option<ProofReport>) -> Self {
        let objective = study.objective;
        let trials = study
            .trials()
            .iter()
            .map(|t| TrialReport {
                number: t.number,
                why: t.why.as_str().to_string(),
                params: t.config.clone(),
                feasible: t.evaluation.is_some_and(|e| e.feasible),
                objective: t.evaluation.map(|e| e.objective),
                summary: match &t.outcome {
                    Outcome::Measured(l) => l.clone(),
                    Outcome::Failed(_) => Vec::new(),
                },
                error: match &t.outcome {
                    Outcome::Failed(e) => Some(e.clone()),
                    Outcome::Measured(_) => None,
                },
                rules: Vec::new(),
                fidelity: (!crate::halving::is_full(t.fidelity)).then_some(t.fidelity),
                paired: None,
            })
            .collect();
        let default_objective = study
            .stats()
            .into_iter()
            .find(|s| &s.config == study.default_config() && s.n > 0)
            .map(|s| objective.unscore(s.mean_score));
        let best = study.best().map(|b| BestReport {
            search_gain: default_objective
                .map(|d| (objective.score(b.objective) - objective.score(d)).exp() - 1.0),
            params: b.config,
            objective: b.objective,
            measurements: b.measurements,
            trials: b.trials,
            default_objective,
        });
        TuneReport {
            schema: SCHEMA.to_string(),
            objective: objective.to_string(),
            unit: objective.unit().to_string(),
            slos: study.slos.iter().map(|s| s.text.clone()).collect(),
            levels,
            sampler: study.sampler_name().to_string(),
            budget: study.settings.trials,
            noise: Noise {
                aa_difference: study.aa_difference(),
                relative_sd: study.noise(),
            },
            trials,
            best,
            proof,
            effects: effects(&study.space, objective, study.trials()),
            evidence: Vec::new(),
            snippet: Vec::new(),
            time: None,
            advice: None,
        }
    }

    /// Where the objective was measured: "at the load of the bench flags" for one level as
    /// given, "(the worst of c=8, c=128 counts)" for several.
    pub fn load_words(&self) -> String {
        match self.levels.as_slice() {
            [] => "at the load of the bench flags".to_string(),
            [one] if one == "as given" => "at the load of the bench flags".to_string(),
            [one] => format!("at {one}"),
            many => format!("(the worst of {} counts)", many.join(", ")),
        }
    }

    /// What the snippet's directives are: the proven winner's, or — without a proof, or
    /// after one that says keep the default — the search's best, which is no
    /// recommendation.
    pub fn snippet_heading(&self) -> String {
        let gain = self.best.as_ref().and_then(|b| b.search_gain);
        match &self.proof {
            Some(p) if p.overall.outcome == "better" => "the winner's directives:".to_string(),
            Some(_) => "the search's best differs from the default in these (not a \
                        recommendation: the proof says keep the default):"
                .to_string(),
            None => {
                let noise = self.noise.relative_sd;
                let why = match gain {
                    Some(g) if g.abs() <= noise => format!(
                        "its {:+.1}% in the search is within the run-to-run noise ±{:.1}%",
                        100.0 * g,
                        100.0 * noise
                    ),
                    _ => "--confirm pairs would test it".to_string(),
                };
                format!(
                    "the search's best differs from the default in these (unproven: no proof \
                     ran; {why}):"
                )
            }
        }
    }

    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_string())
    }

    /// The plain-text summary.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let slos = if self.slos.is_empty() {
            "none".to_string()
        } else {
            self.slos.join(", ")
        };
        // Under --budget the trial cap is no budget: say the time (issue 39: "30 of 200").
        let runs = match self.time.as_ref().and_then(|t| t.budget_s) {
            Some(b) => format!("{} runs within --budget {}", self.trials.len(), minutes(b)),
            None => format!("{} of {} runs", self.trials.len(), self.budget),
        };
        let _ = writeln!(
            o,
            "tune: {} {}; SLOs: {slos}; sampler {}; {runs}",
            self.objective,
            self.load_words(),
            self.sampler,
        );
        // The answer right after the heading, before the figures behind it.
        o.push_str(&self.verdict().text());
        let aa = self
            .noise
            .aa_difference
            .map_or("not measured".to_string(), |d| format!("{:.1}%", 100.0 * d));
        let _ = writeln!(
            o,
            "noise floor: A/A differed by {aa}; run-to-run noise ±{:.1}%",
            100.0 * self.noise.relative_sd
        );
        if let Some(t) = &self.time {
            let budget = match (t.budget_s, t.budget_spent) {
                (Some(b), true) => format!("; --budget {} spent", minutes(b)),
                (Some(b), false) => format!("; --budget {}", minutes(b)),
                (None, _) => String::new(),
            };
            let halving = t.halving.as_ref().map_or(String::new(), |h| {
                format!(
                    "; {} screening runs of {:.0}s, {} full runs of {:.0}s ({} promoted)",
                    h.screened, h.screen_s, h.full, h.full_s, h.promoted
                )
            });
            let _ = writeln!(
                o,
                "wall time: {} (search {}){budget}{halving}",
                minutes(t.wall_s),
                minutes(t.search_s)
            );
        }
        if self.trials.iter().any(|t| t.paired.is_some()) {
            o.push_str(
                "search: each candidate interleaved with the incumbent; its figure is the \
                 incumbent's times the pairs' ratio B/A, all pairs fitted on one scale\n",
            );
        }
        let _ = writeln!(
            o,
            "{:>3}  {:<13} {:<8} {:>12}  params",
            "#", "why", "feasible", self.unit
        );
        for t in &self.trials {
            let value = match (&t.objective, &t.error) {
                (Some(v), _) => format!("{v:.1}"),
                (None, Some(_)) => "failed".to_string(),
                _ => "-".to_string(),
            };
            // A screening run, marked before its parameters (the why column keeps its width).
            let screen = t
                .fidelity
                .map_or(String::new(), |f| format!("[screen {:.0}%] ", 100.0 * f));
            let rules = if t.rules.is_empty() {
                String::new()
            } else {
                format!("  [advice: {}]", t.rules.join(", "))
            };
            let pair = t.paired.as_ref().map_or(String::new(), |p| {
                format!(
                    "  [{} {} vs {}{}{}]",
                    p.metric,
                    crate::interleave::render::times(p.ratio),
                    if p.stand_in { "the scale" } else { "incumbent" },
                    p.interval_words()
                        .map_or(String::new(), |w| format!(", {w}")),
                    if p.became_incumbent {
                        "; now the incumbent"
                    } else {
                        ""
                    }
                )
            });
            let _ = writeln!(
                o,
                "{:>3}  {:<13} {:<8} {:>12}  {screen}{}{rules}{pair}",
                t.number,
                t.why,
                if t.feasible { "yes" } else { "no" },
                value,
                render(&t.params)
            );
        }
        let failed = self.trials.iter().filter(|t| t.objective.is_none()).count();
        match &self.best {
            None if failed > 0 && failed == self.trials.len() => {
                // Nothing was measured: say so, and why, rather than "no configuration met
                // every SLO".
                let _ = writeln!(
                    o,
                    "best: none — no trial succeeded ({failed} of {failed} failed); why:"
                );
                let mut reasons: Vec<(&str, usize)> = Vec::new();
                for t in &self.trials {
                    let why = t.error.as_deref().unwrap_or("no figure");
                    match reasons.iter_mut().find(|(r, _)| *r == why) {
                        Some((_, n)) => *n += 1,
                        None => reasons.push((why, 1)),
                    }
                }
                for (why, n) in reasons {
                    let _ = writeln!(o, "  {n}× {why}");
                }
            }
            Some(b) => {
                let default_breaks_slos = self
                    .trials
                    .iter()
                    .filter(|t| t.why == "baseline")
                    .any(|t| !t.feasible);
                // A gain is read against the noise it may be (issue 39: "+7.3% vs the
                // default" said nothing of a ±9.7% noise).
                let noise = self.noise.relative_sd;
                let gain = b.search_gain.map_or(String::new(), |g| {
                    let slos = if default_breaks_slos {
                        " (the default breaks an SLO)"
                    } else {
                        ""
                    };
                    let within = if g.abs() <= noise { ": within it" } else { "" };
                    format!(
                        "; {:+.1}% vs the default in the search{slos} (run-to-run noise \
                         ±{:.1}%{within})",
                        100.0 * g,
                        100.0 * noise
                    )
                });
                if self.best_is_default() {
                    let _ = writeln!(
                        o,
                        "best: the default was best — {:.1} {} over {} run(s)",
                        b.objective, self.unit, b.measurements
                    );
                } else {
                    let _ = writeln!(
                        o,
                        "best: {} — {:.1} {} over {} run(s){gain}",
                        render(&b.params),
                        b.objective,
                        self.unit,
                        b.measurements
                    );
                }
            }
            None => {
                let _ = writeln!(o, "best: no configuration met every SLO");
            }
        }
        if let Some(p) = &self.proof {
            let _ = writeln!(o, "proof: {}", p.verdict());
            for line in p.overall.detail(&self.unit, ("default", "winner")) {
                let _ = writeln!(o, "  {line}");
            }
            if p.levels.len() > 1 {
                for l in &p.levels {
                    let _ = writeln!(o, "  {}: {}", l.level, l.proof.verdict);
                }
            }
            if let Some(d) = &p.disagreement {
                let _ = writeln!(o, "note: {d}");
            }
        }
        if let Some(a) = &self.advice {
            let _ = writeln!(
                o,
                "advice (webtune advise on the stack's config) against the default and the winner:"
            );
            for line in a.lines(&self.unit) {
                let _ = writeln!(o, "  {line}");
            }
        }
        // An effect is named with its best group only when it is clear; the others say
        // why not. One computed from no measured trial is left out.
        let (clear, unclear): (Vec<&Effect>, Vec<&Effect>) = self
            .effects
            .iter()
            .filter(|e| e.measured())
            .partition(|e| e.clear);
        if !clear.is_empty() {
            let parts: Vec<String> = clear
                .iter()
                .map(|e| {
                    format!(
                        "{} {:.0}% (90%: {}; best {}, {} runs)",
                        e.param,
                        100.0 * e.spread,
                        interval(e),
                        e.best,
                        e.measured_times
                    )
                })
                .collect();
            let _ = writeln!(o, "effects: {}", parts.join(", "));
        }
        if !unclear.is_empty() {
            let parts: Vec<String> = unclear
                .iter()
                .map(|e| {
                    format!(
                        "{} {:.0}% (90%: {}; {})",
                        e.param,
                        100.0 * e.spread,
                        interval(e),
                        e.unclear_because().unwrap_or_default()
                    )
                })
                .collect();
            let _ = writeln!(o, "unclear: {}", parts.join(", "));
        }
        if !self.evidence.is_empty() {
            let _ = writeln!(o, "the servers, default vs winner:");
            for line in &self.evidence {
                let _ = writeln!(o, "  {line}");
            }
        }
        if !self.snippet.is_empty() {
            let _ = writeln!(o, "{}", self.snippet_heading());
            for line in &self.snippet {
                let _ = writeln!(o, "  {line}");
            }
        }
        o
    }
}

/// An effect's 90% interval as `−4..+51%`.
fn interval(e: &Effect) -> String {
    format!(
        "{:+.0}..{:+.0}%",
        100.0 * e.spread_low,
        100.0 * e.spread_high
    )
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
