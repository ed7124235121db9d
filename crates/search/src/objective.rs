//! What the tuner optimises and what it must respect: the objective (`--maximize
//! throughput`, `--minimize p99`, …), the SLO constraints (`--slo 'p99<=100ms'`), the
//! per-level summary of a trial's runs, and its evaluation: feasible or not, the objective
//! (the worst level counts) and how far it is from feasible.

use serde::{Deserialize, Serialize};
use std::fmt;
use webtune_model::RunResult;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ObjectiveError {
    #[error(
        "--maximize {0:?}: only throughput, capacity or delivered (a mail stack) can be maximized"
    )]
    Maximize(String),
    #[error("--minimize {0:?}: use p50, p90, p99, p999 or mean")]
    Minimize(String),
    #[error(
        "--slo {0:?}: expected METRIC OP LIMIT, e.g. 'p99<=100ms', 'errors<=0.1%', 'throughput>=500'"
    )]
    Slo(String),
    #[error("--slo {text:?}: {why}")]
    SloLimit { text: String, why: String },
}

/// A latency statistic of the total-latency histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    P50,
    P90,
    P99,
    P999,
    Mean,
}

impl Stat {
    pub fn parse(word: &str) -> Option<Stat> {
        Some(match word.trim() {
            "p50" => Stat::P50,
            "p90" => Stat::P90,
            "p99" => Stat::P99,
            "p999" | "p99.9" => Stat::P999,
            "mean" => Stat::Mean,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Stat::P50 => "p50",
            Stat::P90 => "p90",
            Stat::P99 => "p99",
            Stat::P999 => "p999",
            Stat::Mean => "mean",
        }
    }
}

/// The figure the search optimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Successful responses per second.
    MaximizeThroughput,
    /// The highest arrival rate (req/s) that holds the SLOs, found by a capacity search in
    /// every trial (its one level's throughput carries the figure).
    MaximizeCapacity,
    /// A latency statistic, in milliseconds.
    Minimize(Stat),
    /// A mail stack's deliveries into its mailboxes per second while the load ran (not its
    /// acceptance: a server that accepts fast but delivers slowly only grows its queue).
    MaximizeDelivered,
}

impl Objective {
    /// `--maximize WORD`.
    pub fn maximize(word: &str) -> Result<Objective, ObjectiveError> {
        match word.trim() {
            "throughput" => Ok(Objective::MaximizeThroughput),
            "capacity" => Ok(Objective::MaximizeCapacity),
            "delivered" => Ok(Objective::MaximizeDelivered),
            other => Err(ObjectiveError::Maximize(other.to_string())),
        }
    }

    /// `--minimize WORD`.
    pub fn minimize(word: &str) -> Result<Objective, ObjectiveError> {
        Stat::parse(word)
            .map(Objective::Minimize)
            .ok_or_else(|| ObjectiveError::Minimize(word.to_string()))
    }

    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Objective::MaximizeThroughput
                | Objective::MaximizeCapacity
                | Objective::MaximizeDelivered
        )
    }

    /// The objective's figure at one level.
    pub fn value(self, level: &LevelSummary) -> f64 {
        match self {
            Objective::MaximizeThroughput | Objective::MaximizeCapacity => level.throughput,
            Objective::Minimize(s) => level.latency_ms(s),
            Objective::MaximizeDelivered => level.mail.as_ref().map_or(0.0, |m| m.delivered_per_s),
        }
    }

    /// The figure over several levels: the worst one counts.
    pub fn worst(self, levels: &[LevelSummary]) -> Option<f64> {
        let values = levels.iter().map(|l| self.value(l));
        if self.higher_is_better() {
            values.reduce(f64::min)
        } else {
            values.reduce(f64::max)
        }
    }

    /// A figure on the optimizer's scale: larger is better, and a ratio is a difference
    /// (natural log), so relative noise is the same everywhere.
    pub fn score(self, value: f64) -> f64 {
        let v = value.max(1e-9).ln();
        if self.higher_is_better() {
            v
        } else {
            -v
        }
    }

    /// The figure back from a score.
    pub fn unscore(self, score: f64) -> f64 {
        if self.higher_is_better() {
            score.exp()
        } else {
            (-score).exp()
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Objective::MaximizeThroughput => "ok/s",
            Objective::MaximizeCapacity => "req/s",
            Objective::Minimize(_) => "ms",
            Objective::MaximizeDelivered => "msg/s",
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Objective::MaximizeThroughput => f.write_str("maximize throughput"),
            Objective::MaximizeCapacity => f.write_str("maximize capacity"),
            Objective::Minimize(s) => write!(f, "minimize {}", s.name()),
            Objective::MaximizeDelivered => f.write_str("maximize delivered"),
        }
    }
}

/// What an SLO limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Latency(Stat),
    /// Fraction of attempted requests that failed.
    Errors,
    Throughput,
    /// A mail stack's deferred messages: 4xx replies plus its deferred queue at the end.
    Deferred,
}

/// The SLO on errors a tune holds when its `--slo`s name none (`Slo::with_default_errors`).
pub const DEFAULT_ERRORS_SLO: &str = "errors<=1%";

/// What the default SLO's text ends with, so a report says whose limit it is.
const DEFAULT_MARK: &str = " (default)";

/// One constraint. Limits are in ms (latency), a fraction (errors) or ok/s (throughput).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub text: String,
    pub metric: Metric,
    /// True for `<=`/`<` (an upper limit), false for `>=`/`>`.
    pub upper: bool,
    pub limit: f64,
}

impl Slo {
    /// Parse `p99<=100ms`, `p50<2s`, `errors<=0.1%`, `throughput>=500` — the grammar of
    /// bench's `--threshold` (`webtune_model::Threshold`, one parser for both), limited to
    /// the figures a trial summary holds and to absolute limits.
    pub fn parse(text: &str) -> Result<Slo, ObjectiveError> {
        use webtune_model::threshold::{Comparison, LatencyStat, Limit, Metric as M};
        let limit_err = |why: &str| ObjectiveError::SloLimit {
            text: text.to_string(),
            why: why.to_string(),
        };
        if let Some(slo) = Self::parse_deferred(text) {
            return slo;
        }
        let t: webtune_model::Threshold = text
            .parse()
            .map_err(|e: webtune_model::ThresholdError| limit_err(&e.to_string()))?;
        let upper = matches!(t.comparison, Comparison::Le | Comparison::Lt);
        let (metric, limit) = match (t.metric, t.limit) {
            (_, Limit::Change(_)) => {
                return Err(limit_err(
                    "an SLO is absolute (e.g. p99<=100ms); a change like +10% is for compare",
                ))
            }
            (M::Errors, Limit::Ratio(r)) => (Metric::Errors, r),
            (M::Errors, _) => return Err(limit_err("the error limit is a percentage, e.g. 0.1%")),
            (M::Rps, Limit::Number(n)) => (Metric::Throughput, n),
            (M::Rps, _) => return Err(limit_err("the throughput limit is responses/s, e.g. 500")),
            (M::Latency(stat), Limit::Micros(us)) => {
                let stat = match stat {
                    LatencyStat::Mean => Stat::Mean,
                    LatencyStat::Percentile(50.0) => Stat::P50,
                    LatencyStat::Percentile(90.0) => Stat::P90,
                    LatencyStat::Percentile(99.0) => Stat::P99,
                    LatencyStat::Percentile(99.9) => Stat::P999,
                    _ => {
                        return Err(limit_err(
                            "the tuner's SLOs take p50, p90, p99, p999 or mean",
                        ))
                    }
                };
                (Metric::Latency(stat), us / 1e3)
            }
            (M::Latency(_), _) => {
                return Err(limit_err("give the latency limit a unit, e.g. 100ms or 2s"))
            }
        };
        Ok(Slo {
            text: text.trim().to_string(),
            metric,
            upper,
            limit,
        })
    }

    /// The SLOs with webtune's default one on errors added when none bounds them: a tune
    /// that counts only served responses cannot see a configuration that turns most
    /// requests away at the door (seed 003's forum: nginx's 768 `worker_connections` for
    /// 1,024 clients failed 80% and served as many pages a second as one that failed none),
    /// and a performance engineer would not call a server that fails more than one request
    /// in a hundred tuned. The limit is the judge's `ERRORS_MATERIAL`, the difference in
    /// errors a comparison treats as real; `--slo 'errors<=N%'` replaces it (100% turns it
    /// off). Its text says it is the default.
    pub fn with_default_errors(mut slos: Vec<Slo>) -> Vec<Slo> {
        if slos.iter().all(|s| s.metric != Metric::Errors) {
            slos.push(Slo {
                text: format!("{DEFAULT_ERRORS_SLO}{DEFAULT_MARK}"),
                metric: Metric::Errors,
                upper: true,
                limit: crate::interleave::judge::ERRORS_MATERIAL,
            });
        }
        slos
    }

    /// Whether an SLO's text (a report keeps the texts) is webtune's default on errors
    /// (`with_default_errors`), not the user's.
    pub fn is_default_text(text: &str) -> bool {
        text.ends_with(DEFAULT_MARK)
    }

    /// `deferred<=N` (or `deferred=0`): a mail stack's deferred messages, a count.
    fn parse_deferred(text: &str) -> Option<Result<Slo, ObjectiveError>> {
        let rest = text.trim().strip_prefix("deferred")?.trim_start();
        let number = rest
            .strip_prefix("<=")
            .or_else(|| rest.strip_prefix("=="))
            .or_else(|| rest.strip_prefix('='))?;
        Some(match number.trim().parse::<f64>() {
            Ok(limit) if limit >= 0.0 => Ok(Slo {
                text: text.trim().to_string(),
                metric: Metric::Deferred,
                upper: true,
                limit,
            }),
            _ => Err(ObjectiveError::SloLimit {
                text: text.to_string(),
                why: "the deferred limit is a count of messages, e.g. deferred<=0".into(),
            }),
        })
    }

    /// Signed distance from the limit at one level, relative to it: <= 0 when met.
    pub fn margin(&self, level: &LevelSummary) -> f64 {
        let actual = match self.metric {
            Metric::Latency(s) => level.latency_ms(s),
            Metric::Errors => level.error_ratio,
            Metric::Throughput => level.throughput,
            Metric::Deferred => level.mail.as_ref().map_or(0.0, |m| m.deferred),
        };
        let scale = if self.limit > 0.0 { self.limit } else { 1e-3 };
        let m = if self.upper {
            (actual - self.limit) / scale
        } else {
            (self.limit - actual) / scale
        };
        // A met limit counts as met even at equality; clamp so one wild run cannot
        // dominate the constraint model.
        m.clamp(-1.0, 3.0)
    }
}

/// The figures of one run at one level (connection count or rate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    /// The level as the caller names it ("c=256", "rate=1000").
    pub level: String,
    /// Successful responses per second.
    pub throughput: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub mean_ms: f64,
    /// Failed / attempted requests, 0..=1.
    pub error_ratio: f64,
    /// A mail stack's delivery figures (absent for other targets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mail: Option<MailFigures>,
}

/// What a mail stack delivered at one level (see `webtune_model::server::MailSection`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MailFigures {
    /// Deliveries into the mailboxes per second while the load ran.
    pub delivered_per_s: f64,
    /// Messages deferred: 4xx replies to the load, plus the deferred queue at the end.
    pub deferred: f64,
}

impl LevelSummary {
    pub fn from_run(level: &str, run: &RunResult) -> LevelSummary {
        let t = &run.latency.total;
        let ms = |us: u64| us as f64 / 1e3;
        LevelSummary {
            level: level.to_string(),
            throughput: if run.duration_s > 0.0 {
                run.ok as f64 / run.duration_s
            } else {
                0.0
            },
            p50_ms: ms(t.p50_us),
            p90_ms: ms(t.p90_us),
            p99_ms: ms(t.p99_us),
            p999_ms: ms(t.p999_us),
            mean_ms: t.mean_us / 1e3,
            error_ratio: run.error_ratio(),
            mail: run
                .server
                .as_ref()
                .and_then(|s| s.mail.as_ref())
                .map(|m| MailFigures {
                    delivered_per_s: m.delivered_per_s,
                    deferred: (m.left_deferred + run.smtp.as_ref().map_or(0, |s| s.deferred))
                        as f64,
                }),
        }
    }

    pub fn latency_ms(&self, s: Stat) -> f64 {
        match s {
            Stat::P50 => self.p50_ms,
            Stat::P90 => self.p90_ms,
            Stat::P99 => self.p99_ms,
            Stat::P999 => self.p999_ms,
            Stat::Mean => self.mean_ms,
        }
    }
}

/// What one measured trial came to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Every SLO met at every level.
    pub feasible: bool,
    /// The objective's figure, worst level.
    pub objective: f64,
    /// The largest relative SLO margin over SLOs and levels (<= 0: feasible).
    pub margin: f64,
}

/// Evaluate a trial's levels. None when there are no levels.
pub fn evaluate(objective: Objective, slos: &[Slo], levels: &[LevelSummary]) -> Option<Evaluation> {
    let value = objective.worst(levels)?;
    let margin = slos
        .iter()
        .flat_map(|s| levels.iter().map(move |l| s.margin(l)))
        .fold(-1.0f64, f64::max);
    let feasible = slos
        .iter()
        .all(|s| levels.iter().all(|l| s.margin(l) <= 0.0));
    Some(Evaluation {
        feasible,
        objective: value,
        margin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn level(throughput: f64, p99_ms: f64, errors: f64) -> LevelSummary {
        LevelSummary {
            level: "c=64".into(),
            throughput,
            p50_ms: p99_ms / 4.0,
            p90_ms: p99_ms / 2.0,
            p99_ms,
            p999_ms: p99_ms * 2.0,
            mean_ms: p99_ms / 3.0,
            error_ratio: errors,
            mail: None,
        }
    }

    #[test]
    fn a_tune_holds_errors_to_one_percent_unless_told_otherwise() {
        let p99 = Slo::parse("p99<=100ms").unwrap();
        let slos = Slo::with_default_errors(vec![p99.clone()]);
        assert_eq!(slos.len(), 2);
        let default = &slos[1];
        assert!(Slo::is_default_text(&default.text) && !Slo::is_default_text(&p99.text));
        assert_eq!(default.text, "errors<=1% (default)");
        let parsed = Slo::parse(DEFAULT_ERRORS_SLO).unwrap();
        assert_eq!(
            (default.metric, default.upper, default.limit),
            (parsed.metric, parsed.upper, parsed.limit)
        );
        // Four requests in five turned away: infeasible, however many pages a second.
        assert!(default.margin(&level(1000.0, 10.0, 0.8)) > 0.0);
        assert!(default.margin(&level(1000.0, 10.0, 0.005)) <= 0.0);
        // The user's own limit on errors replaces it, looser or tighter.
        for mine in ["errors<=100%", "errors<=0.1%"] {
            let slos = Slo::with_default_errors(vec![Slo::parse(mine).unwrap()]);
            assert_eq!(slos.len(), 1);
            assert_eq!(slos[0].text, mine);
        }
    }

    #[test]
    fn parses_objectives_and_refuses_others() {
        assert_eq!(
            Objective::maximize("throughput"),
            Ok(Objective::MaximizeThroughput)
        );
        assert_eq!(
            Objective::minimize("p999"),
            Ok(Objective::Minimize(Stat::P999))
        );
        assert!(Objective::maximize("p99").is_err());
        // Capacity is an objective of its own, not throughput relabelled afterwards.
        let capacity = Objective::maximize("capacity").unwrap();
        assert_eq!(capacity.to_string(), "maximize capacity");
        assert_eq!(capacity.unit(), "req/s");
        assert!(capacity.higher_is_better());
        assert!(Objective::minimize("p42")
            .unwrap_err()
            .to_string()
            .contains("p50, p90"));
    }

    #[test]
    fn parses_slos() {
        let s = Slo::parse("p99<=100ms").unwrap();
        assert_eq!(
            (s.metric, s.upper, s.limit),
            (Metric::Latency(Stat::P99), true, 100.0)
        );
        let s = Slo::parse("p50 < 2s").unwrap();
        assert_eq!(s.limit, 2000.0);
        let s = Slo::parse("errors<=0.1%").unwrap();
        assert!((s.limit - 0.001).abs() < 1e-12);
        let s = Slo::parse("throughput>=500").unwrap();
        assert_eq!(
            (s.metric, s.upper, s.limit),
            (Metric::Throughput, false, 500.0)
        );
        for bad in [
            "p99",
            "p99=100ms",
            "latency<=1s",
            "errors<=lots",
            "errors<=200%",
        ] {
            assert!(Slo::parse(bad).is_err(), "{bad}");
        }
        assert!(Slo::parse("p99<=100")
            .unwrap_err()
            .to_string()
            .contains("duration"));
        // One grammar with bench's --threshold: its other spellings are refused plainly.
        assert!(Slo::parse("p99<=+10%")
            .unwrap_err()
            .to_string()
            .contains("absolute"));
        assert!(Slo::parse("p75<=1s")
            .unwrap_err()
            .to_string()
            .contains("p999"));
    }

    #[test]
    fn worst_level_counts_and_every_slo_at_every_level() {
        let slos = vec![
            Slo::parse("p99<=100ms").unwrap(),
            Slo::parse("errors<=0.1%").unwrap(),
        ];
        let good = level(1000.0, 50.0, 0.0);
        let slow = level(1500.0, 150.0, 0.0);
        let e = evaluate(Objective::MaximizeThroughput, &slos, &[good.clone(), slow]).unwrap();
        assert!(!e.feasible);
        assert_eq!(e.objective, 1000.0);
        assert!((e.margin - 0.5).abs() < 1e-9);
        let e = evaluate(
            Objective::Minimize(Stat::P99),
            &slos,
            std::slice::from_ref(&good),
        )
        .unwrap();
        assert!(e.feasible && e.margin < 0.0);
        assert_eq!(e.objective, 50.0);
        let errors = level(1000.0, 50.0, 0.01);
        assert!(
            !evaluate(Objective::MaximizeThroughput, &slos, &[errors])
                .unwrap()
                .feasible
        );
        assert!(evaluate(Objective::MaximizeThroughput, &slos, &[]).is_none());
        // Scores: larger is better either way.
        let lat = Objective::Minimize(Stat::P99);
        assert!(lat.score(10.0) > lat.score(20.0));
        assert!((lat.unscore(lat.score(20.0)) - 20.0).abs() < 1e-9);
    }

    #[test]
    fn a_mail_stack_maximizes_deliveries_under_a_deferred_limit() {
        let o = Objective::maximize("delivered").unwrap();
        assert_eq!(o, Objective::MaximizeDelivered);
        assert!(o.higher_is_better());
        assert_eq!(o.unit(), "msg/s");
        let mut l = level(900.0, 20.0, 0.0);
        // No mail figures (a web stack): nothing delivered.
        assert_eq!(o.value(&l), 0.0);
        l.mail = Some(MailFigures {
            delivered_per_s: 350.0,
            deferred: 0.0,
        });
        assert_eq!(o.value(&l), 350.0);
        let slo = Slo::parse("deferred<=0").unwrap();
        assert_eq!(slo.metric, Metric::Deferred);
        assert!(slo.margin(&l) <= 0.0);
        l.mail.as_mut().unwrap().deferred = 12.0;
        assert!(slo.margin(&l) > 0.0);
        assert!(Slo::parse("deferred=0").is_ok());
        assert!(Slo::parse("deferred<=-1").is_err());
        let e = evaluate(o, &[slo, Slo::parse("p99<=100ms").unwrap()], &[l]).unwrap();
        assert!(!e.feasible);
        assert_eq!(e.objective, 350.0);
    }
}
