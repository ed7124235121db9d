//! The sweep's knee, the one home of its rule: every sweep (`sweep`, `lab sweep`, the forum,
//! mail and SMTP sweeps) sets `SweepResult::knee` from `knee_level`, and every table (the
//! sweep's text, CSV and HTML, seed 003's lab table) marks the knee and each level left out
//! of it with `note`.
//!
//! The knee is the level after which throughput grows by less than 5% while p99 keeps
//! growing: past it, more load only buys latency (seed 000: ~4.5 req/s at every
//! concurrency once the backend was saturated). A level whose figures do not describe the
//! load level is left out of the knee, and marked with the reason: it stalled (requests
//! outstanding and none finished) inside its measured window — a stall in the warm-up or
//! the cool-down is outside the figures and does not count —, it was cut short
//! (interrupted), or the generator was the limit (its validity verdict: the figures
//! describe the client).
//!
//! In a sweep over open-loop rates throughput follows the rate while the server keeps up, so
//! the flattening above never shows until it has stopped keeping up. A rate level whose
//! throughput fell below 95% of its rate is marked (`reached 987 of 1600/s`), and the knee is
//! the last level that reached its rate before the first one that did not.

use crate::html::stalls;
use webtune_model::sweep::{SweepResult, SweepVariable};

/// Throughput growth below which a step counts as flat.
pub const KNEE_GROWTH: f64 = 0.05;

/// Share of its requested rate a rate level's throughput must reach to count as kept.
pub const RATE_REACHED: f64 = 0.95;

/// The rule, as the "no knee" sentence states it.
pub const RULE: &str = "the knee is the first level after which throughput grows by less \
    than 5% while p99 keeps growing";

/// The figures of one level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelRow {
    pub level: f64,
    pub requests_per_s: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// Failed requests, percent of attempted.
    pub error_pct: f64,
    pub responses: u64,
    /// Seconds the level stalled (requests outstanding, none finished) inside its measured
    /// window: stalls in the warm-up or cool-down are not counted.
    pub stall_s: f64,
    /// The level's run was interrupted before its end.
    pub cut_short: bool,
    /// The generator, not the server, was the limit (the run's validity verdict).
    pub client_limited: bool,
    /// The open-loop rate the level asked for, requests/s (None in a sweep over connections).
    pub requested_rps: Option<f64>,
    /// Responses with an expected status: none means the level measured only errors.
    pub ok: u64,
    /// Length of the level's measurement, seconds.
    pub measured_s: f64,
}

impl LevelRow {
    /// Whether the level's figures can feed the knee: no stall in its measured window, not
    /// cut short, and the generator not the limit.
    pub fn trusted(&self) -> bool {
        !self.cut_short && self.stall_s <= 0.0 && !self.client_limited
    }

    /// Why the level is left out of the knee ("stalled 1.7 s", "cut short", "the generator
    /// was the limit"); empty when it is not.
    pub fn flaw(&self) -> String {
        let mut notes = Vec::new();
        if self.stall_s > 0.0 {
            notes.push(format!("stalled {:.1} s", self.stall_s));
        }
        if self.cut_short {
            notes.push("cut short".to_string());
        }
        if self.client_limited {
            notes.push("the generator was the limit".to_string());
        }
        notes.join(", ")
    }

    /// A rate level whose throughput fell below `RATE_REACHED` of the rate it asked for.
    pub fn short_of_rate(&self) -> bool {
        self.requested_rps
            .is_some_and(|rate| self.requests_per_s < rate * RATE_REACHED)
    }

    /// A rate level that fell short of its rate by more than its stalls explain: even with
    /// the stalled seconds taken out of its measurement its throughput stays below
    /// `RATE_REACHED` of the rate (400/s asked, 89/s answered, 0.1 s of 1 s stalled). Such a
    /// level feeds the knee although it stalled: the server did not keep up whatever the
    /// stall was. A cut-short level never does, nor one where the generator was the limit
    /// (its shortfall may be the generator's).
    pub fn short_beyond_its_stalls(&self) -> bool {
        let Some(rate) = self.requested_rps else {
            return false;
        };
        if self.cut_short || self.client_limited || !self.short_of_rate() {
            return false;
        }
        if self.stall_s <= 0.0 {
            return true;
        }
        let unstalled = self.measured_s - self.stall_s;
        unstalled > 0.0 && self.requests_per_s * self.measured_s / unstalled < rate * RATE_REACHED
    }

    /// Whether the level is the knee's evidence that the server no longer kept up.
    pub fn counts_as_short(&self) -> bool {
        (self.trusted() && self.short_of_rate()) || self.short_beyond_its_stalls()
    }

    /// Left out of the knee, and not as the evidence of a shortfall.
    pub fn left_out(&self) -> bool {
        !self.trusted() && !self.short_beyond_its_stalls()
    }

    /// "reached 987 of 1600/s" for a level short of its rate; empty otherwise.
    pub fn shortfall(&self) -> String {
        match self.requested_rps {
            Some(rate) if self.short_of_rate() => format!(
                "reached {} of {}/s",
                level_label(self.requests_per_s.round()),
                level_label(rate)
            ),
            _ => String::new(),
        }
    }
}

/// A level as tables print it: "32", "1600", "0.5".
pub fn level_label(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// One row per level, in the order run.
pub fn level_rows(sweep: &SweepResult) -> Vec<LevelRow> {
    sweep
        .levels
        .iter()
        .map(|l| LevelRow {
            level: l.level,
            requests_per_s: l.result.requests_per_s,
            p50_us: l.result.latency.total.p50_us,
            p99_us: l.result.latency.total.p99_us,
            error_pct: l.result.error_ratio() * 100.0,
            responses: l.result.responses,
            stall_s: l.result.stalled_s_measured(&stalls(&l.result)),
            cut_short: l.result.interrupted,
            client_limited: l.result.validity.client_limited,
            requested_rps: (sweep.variable == SweepVariable::Rate).then_some(l.level),
            ok: l.result.ok,
            measured_s: l.result.duration_s,
        })
        .collect()
}

/// The knee of a sweep, as `SweepResult::knee` records it (the level, None without one).
pub fn knee_level(sweep: &SweepResult) -> Option<f64> {
    let rows = level_rows(sweep);
    find_knee(&rows).map(|i| rows[i].level)
}

/// Index (into `rows`) of the knee: the first level after which throughput grows by less
/// than 5% — no later level beats it by 5% or more, so a noisy dip does not count — while p99
/// keeps growing (the next level's p99 is higher). Levels left out (`trusted`) are skipped
/// as if they had not run. None when throughput keeps growing or p99 does not.
///
/// A rate sweep whose levels fell short of their rate: the last level that reached its rate
/// before the first that did not (None when the first level already fell short). A stalled
/// level that fell short by more than its stall explains counts as short
/// (`short_beyond_its_stalls`).
pub fn find_knee(rows: &[LevelRow]) -> Option<usize> {
    if let Some(first_short) = rows.iter().position(|r| r.counts_as_short()) {
        return rows[..first_short].iter().rposition(|r| r.trusted());
    }
    let trusted: Vec<&LevelRow> = rows.iter().filter(|r| r.trusted()).collect();
    let k = (0..trusted.len().saturating_sub(1)).find(|&i| {
        let here = trusted[i];
        let best_later = trusted[i + 1..]
            .iter()
            .map(|r| r.requests_per_s)
            .fold(f64::NEG_INFINITY, f64::max);
        here.requests_per_s > 0.0
            && best_later < here.requests_per_s * (1.0 + KNEE_GROWTH)
            && trusted[i + 1].p99_us > here.p99_us
    })?;
    rows.iter().position(|r| std::ptr::eq(r, trusted[k]))
}

/// The last column of a level's row in every sweep table: that it is the knee, why it is
/// left out of it, or its shortfall.
pub fn note(row: &LevelRow, is_knee: bool) -> String {
    let mut notes = Vec::new();
    if is_knee {
        notes.push("<- knee".to_string());
    }
    if row.ok == 0 {
        notes.push("no successful response".into());
    }
    if row.short_beyond_its_stalls() && !row.trusted() {
        notes.push(row.flaw());
        notes.push(row.shortfall());
    } else if !row.trusted() {
        notes.push(format!("{} (not in the knee)", row.flaw()));
    } else if row.short_of_rate() {
        notes.push(row.shortfall());
    }
    notes.join("; ")
}

/// The sentence under a table when the levels have no knee, saying the rule and what the
/// levels did against it; `unit` names the levels ("connections").
pub fn no_knee_sentence(rows: &[LevelRow]) -> String {
    let counted = rows.iter().filter(|r| r.trusted()).count();
    let left_out = rows.iter().filter(|r| r.left_out()).count();
    let out_note = if left_out > 0 {
        format!(" ({left_out} left out of it, marked above)")
    } else {
        String::new()
    };
    if counted < 2 {
        return format!(
            "No knee: {RULE}, which takes two levels that count, and {} counted{out_note}.",
            match counted {
                0 => "none".to_string(),
                n => format!("only {n}"),
            }
        );
    }
    format!(
        "No knee: {RULE}; over the {counted} levels that count{out_note} throughput grew by 5% \
         or more at every step, or p99 did not grow."
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn row(level: f64, rps: f64, p99_ms: u64) -> LevelRow {
        LevelRow {
            level,
            requests_per_s: rps,
            p50_us: p99_ms * 500,
            p99_us: p99_ms * 1000,
            error_pct: 0.0,
            responses: 0,
            stall_s: 0.0,
            cut_short: false,
            client_limited: false,
            requested_rps: None,
            ok: 1,
            measured_s: 1.0,
        }
    }

    #[test]
    fn knee_is_where_throughput_flattens_and_p99_grows() {
        // seed 003's levels; saturation at 128
        let rows = [
            row(8.0, 100.0, 10),
            row(32.0, 380.0, 11),
            row(128.0, 900.0, 15),
            row(256.0, 930.0, 40),
            row(512.0, 935.0, 90),
            row(1024.0, 920.0, 200),
        ];
        assert_eq!(find_knee(&rows), Some(2));
    }

    #[test]
    fn a_noisy_dip_is_not_the_knee() {
        // measured on a shared 2-vCPU machine: level 4 dipped, level 8 was the real top
        let rows = [
            row(1.0, 1621.0, 7),
            row(2.0, 2374.0, 9),
            row(4.0, 1478.0, 15),
            row(8.0, 3443.0, 6),
            row(16.0, 3091.0, 26),
        ];
        assert_eq!(find_knee(&rows), Some(3));
    }

    #[test]
    fn no_knee_while_throughput_keeps_growing_or_p99_stays() {
        let growing = [
            row(1.0, 100.0, 10),
            row(2.0, 200.0, 11),
            row(4.0, 390.0, 12),
        ];
        assert_eq!(find_knee(&growing), None);
        let flat_but_p99_steady = [row(1.0, 100.0, 10), row(2.0, 101.0, 10)];
        assert_eq!(find_knee(&flat_but_p99_steady), None);
        assert_eq!(find_knee(&[]), None);
    }

    #[test]
    fn a_level_where_the_generator_was_the_limit_is_left_out_and_says_so() {
        let mut rows = vec![
            row(8.0, 100.0, 10),
            row(32.0, 380.0, 11),
            row(128.0, 900.0, 15),
            row(256.0, 930.0, 40),
        ];
        assert_eq!(find_knee(&rows), Some(2));
        // At 256 the generator had no idle time: its flat throughput is the client's.
        rows[3].client_limited = true;
        assert_eq!(find_knee(&rows), None);
        assert_eq!(
            note(&rows[3], false),
            "the generator was the limit (not in the knee)"
        );
        // A rate level short of its rate because the generator was: no evidence against
        // the server either.
        let mut short = row(1600.0, 900.0, 50);
        short.requested_rps = Some(1600.0);
        short.client_limited = true;
        assert!(!short.counts_as_short() && !short.short_beyond_its_stalls());
    }

    #[test]
    fn the_no_knee_sentence_states_the_rule_and_the_levels_left_out() {
        let growing = [row(1.0, 100.0, 10), row(2.0, 200.0, 11)];
        let text = no_knee_sentence(&growing);
        assert!(
            text.starts_with(&format!("No knee: {RULE}; over the 2 levels")),
            "{text}"
        );
        let mut one = growing;
        one[0].stall_s = 0.4;
        let text = no_knee_sentence(&one);
        assert_eq!(
            text,
            format!(
                "No knee: {RULE}, which takes two levels that count, and only 1 counted (1 \
                 left out of it, marked above)."
            )
        );
    }
}
