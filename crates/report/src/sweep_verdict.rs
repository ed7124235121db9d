//! The verdict a sweep's report opens with (`verdict_box`, issue 39): where the knee is with
//! the figures at it and at the last level, or why there is none, and what to do. Apart
//! from `sweep`, whose tables and plots it sums up.

use crate::knee::{find_knee, level_label, level_rows};
use crate::units::ms;
use crate::verdict_box::{Tone, VerdictBox};
use webtune_model::sweep::{SweepResult, SweepVariable};

/// The sweep's verdict (`verdict_box`): where the knee is with the figures on both sides of
/// it, or why there is none, and what to do.
pub fn sweep_verdict(sweep: &SweepResult) -> VerdictBox {
    let rows = level_rows(sweep);
    let unit = match sweep.variable {
        SweepVariable::Connections => "connections",
        SweepVariable::Rate => "req/s offered",
    };
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.ok == 0)
        .map(|r| level_label(r.level))
        .collect();
    let failed_note = if failed.is_empty() {
        String::new()
    } else {
        format!(
            "; level(s) {} got no successful response",
            failed.join(", ")
        )
    };
    match find_knee(&rows) {
        Some(i) => {
            let knee = &rows[i];
            let last = rows.last().unwrap_or(knee);
            VerdictBox {
                answer: format!(
                    "The knee is at {} {unit}: {:.0} requests/s with p99 {} ms{failed_note}",
                    level_label(knee.level),
                    knee.requests_per_s,
                    ms(knee.p99_us)
                ),
                interval: Some(format!(
                    "beyond it throughput grows by less than 5% while p99 rises: at {} {unit}, \
                     {:.0} requests/s with p99 {} ms",
                    level_label(last.level),
                    last.requests_per_s,
                    ms(last.p99_us)
                )),
                action: format!(
                    "keep the load at or under {} {unit}, or tune the stack (webtune tune) to \
                     move the knee",
                    level_label(knee.level)
                ),
                tone: if failed.is_empty() {
                    Tone::Neutral
                } else {
                    Tone::Bad
                },
            }
        }
        None => VerdictBox {
            answer: {
                let counted = rows.iter().filter(|r| r.trusted()).count();
                let left_out = rows.iter().filter(|r| r.left_out()).count();
                if counted < 2 {
                    format!(
                        "No knee: {counted} of {} levels count ({left_out} left out: stalled, \
                         cut short or limited by the generator, as the table marks){failed_note}",
                        rows.len()
                    )
                } else {
                    format!(
                        "No knee: throughput kept growing, or p99 did not rise, up to {} \
                         {unit}{failed_note}",
                        rows.last().map_or(String::new(), |r| level_label(r.level))
                    )
                }
            },
            interval: None,
            action: if rows.iter().any(|r| r.client_limited) {
                "give the generator room (--client-cpus / --server-cpus apart, or a heavier \
                 path), then sweep again: levels the generator limited say nothing of the \
                 server"
                    .to_string()
            } else {
                "sweep further levels (higher, or more of them) to find the limit".to_string()
            },
            tone: if failed.is_empty() {
                Tone::Neutral
            } else {
                Tone::Bad
            },
        },
    }
}
