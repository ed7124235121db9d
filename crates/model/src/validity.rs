//! The verdict on the generator: was it, and not the server, the limit of a run? One rule,
//! here, for every command that reports it (bench, sweep, capacity, the lab, merge, and
//! their text and HTML): the engine measures the figures (`GeneratorFigures`) and asks
//! `judge`; the capacity search and the sweep's knee read the verdict, they never judge
//! again.
//!
//! The generator was the limit only when it measurably was, in one of two ways:
//! - **Its CPU**: it had no idle time (its threads were on a CPU, or ready and waiting for
//!   one, for more than 90% of the run: `MAX_OCCUPIED`), or it was starved of CPU (its
//!   threads waited for a core longer than they ran, and for more than a quarter of the run:
//!   `STARVED_WAIT`; the wait is the kernel's run-queue delay, `schedstat`). In a closed loop
//!   that alone makes it the limit (the server waited for it); in an open loop only when the
//!   rate it sent also fell short of the rate asked (below 95%: `RATE_KEPT`).
//! - **Open loop, its own lag moved the latencies** (`LAG_SHARE`, `LAG_FLOOR_US`): with a
//!   connection free, the median request went out more than 1 ms late, and that lag is more
//!   than half the median latency (which, from the intended start, includes it): the
//!   typical figure is then the generator's timer or CPU, not the server.
//!
//! What the server does is never the generator's fault: a request that waited because every
//! connection was busy (a slow or stalled server, or the `-c` cap) waited on the server, and
//! a stall leaves the generator idle, so neither test above is met. An occasional late send
//! on a shared machine (a 2 ms p99 lag at a rate delivered in full) moves no median and
//! leaves the generator idle most of the time: it is shown beside the verdict (the lag's p50
//! and p99), not blamed.

use crate::histogram::{LatencyHistogram, Percentiles};
use serde::{Deserialize, Serialize};

/// Open loop: how well the generator kept to its schedule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Requests per second asked for (the peak, when stages ramp it).
    pub requested_rate: f64,
    /// Requests sent per second in the measured window.
    pub achieved_rate: f64,
    /// How late requests were sent after their intended start, µs (both parts below).
    pub lag: Percentiles,
    pub lag_histogram: LatencyHistogram,
    /// The part of each request's lag spent with every connection busy (a slow or stalled
    /// server, or the `-c` cap): server time, already inside the total latency.
    #[serde(default)]
    pub connection_wait: Percentiles,
    #[serde(default)]
    pub connection_wait_histogram: LatencyHistogram,
    /// The rest: a connection was free but the generator sent late (its timer or CPU). Only
    /// this part can count against the generator in the validity verdict (`validity`).
    #[serde(default)]
    pub generator_lag: Percentiles,
    #[serde(default)]
    pub generator_lag_histogram: LatencyHistogram,
    /// Requests that were due but could not start before the end (no free connection).
    pub not_sent: u64,
}

/// Did the generator, not the server, limit this run? Decided by `validity::judge`, the one
/// rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// True when the numbers describe the client rather than the server.
    pub client_limited: bool,
    /// Why, with the figure that decided it (empty when valid).
    pub reasons: Vec<String>,
    /// Generator CPU time / (wall time × worker threads): 1.0 means every worker thread was
    /// busy all the time.
    pub cpu_busy: f64,
    /// Time the generator's threads were ready to run but waited for a core (the kernel's
    /// run-queue delay) / (wall time × worker threads); None where the kernel does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait: Option<f64>,
    /// What decided a client-limited verdict; None when the generator was not the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<LimitedBy>,
}

/// Share of its threads' time a generator may spend on a CPU or waiting for one before it
/// counts as having had no idle time.
pub const MAX_OCCUPIED: f64 = 0.9;
/// A generator whose threads waited for a core longer than they ran, and for more than this
/// share of the run, was starved of CPU (by a neighbour on its cores).
pub const STARVED_WAIT: f64 = 0.25;
/// Share of the asked-for rate an open-loop generator must send.
pub const RATE_KEPT: f64 = 0.95;
/// The generator's own lag at the median must pass this (µs) to count at all: below it, a
/// timer's granularity and a wake-up's cost, not a limit.
pub const LAG_FLOOR_US: u64 = 1_000;
/// …and be more than this share of the median latency (from the intended start).
pub const LAG_SHARE: f64 = 0.5;

/// What decided a client-limited verdict (`validity.limited_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitedBy {
    /// Closed loop: the generator had no idle time (busy, or waiting for a core).
    NoIdleTime,
    /// Closed loop: the generator was starved of CPU.
    Starved,
    /// Open loop: the rate sent fell short while the generator had no idle time or was
    /// starved of CPU.
    RateShort,
    /// Open loop: its own send lag made up most of the median latency.
    Lag,
}

/// What the engine measured of the generator itself.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GeneratorFigures {
    /// Worker threads.
    pub threads: u32,
    /// Wall time of the run, seconds.
    pub elapsed_s: f64,
    /// CPU time its threads used, seconds.
    pub cpu_s: f64,
    /// Time its threads were ready to run but waited for a core, seconds (None where the
    /// kernel does not say: no `/proc/thread-self/schedstat`).
    pub cpu_wait_s: Option<f64>,
}

impl GeneratorFigures {
    fn share(&self, seconds: f64) -> f64 {
        let capacity = self.elapsed_s * f64::from(self.threads.max(1));
        if capacity > 0.0 {
            seconds / capacity
        } else {
            0.0
        }
    }
}

fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

fn ms(us: u64) -> String {
    format!("{:.2} ms", us as f64 / 1000.0)
}

/// How a generator spent its time, in words: "on a CPU 62% and waiting for one 33% of the
/// run (2 threads)".
fn time_spent(v: &Validity, threads: u32) -> String {
    let threads = match threads {
        1 => "1 thread".to_string(),
        n => format!("{n} threads"),
    };
    match v.cpu_wait {
        Some(wait) => format!(
            "on a CPU {} and waiting for one {} of the run ({threads})",
            pct(v.cpu_busy),
            pct(wait)
        ),
        None => format!("on a CPU {} of the run ({threads})", pct(v.cpu_busy)),
    }
}

/// The verdict on a run: `figures` as the engine measured them, the open-loop `schedule`
/// (its percentiles filled) and the run's total latency (from the intended start).
pub fn judge(
    figures: &GeneratorFigures,
    schedule: Option<&Schedule>,
    total: &Percentiles,
) -> Validity {
    let mut v = Validity {
        client_limited: false,
        reasons: Vec::new(),
        cpu_busy: figures.share(figures.cpu_s),
        cpu_wait: figures.cpu_wait_s.map(|s| figures.share(s)),
        limited_by: None,
    };
    let wait = v.cpu_wait.unwrap_or(0.0);
    let no_idle = v.cpu_busy + wait > MAX_OCCUPIED;
    let starved = wait > v.cpu_busy && wait > STARVED_WAIT;
    let limit = |v: &mut Validity, by: LimitedBy, reason: String| {
        v.client_limited = true;
        v.limited_by.get_or_insert(by);
        v.reasons.push(reason);
    };
    let spent = time_spent(&v, figures.threads);
    let state = if no_idle {
        "had no idle time"
    } else {
        "was starved of CPU"
    };
    match schedule {
        None => {
            if no_idle || starved {
                limit(
                    &mut v,
                    if no_idle {
                        LimitedBy::NoIdleTime
                    } else {
                        LimitedBy::Starved
                    },
                    format!(
                        "the generator {state}: its threads were {spent}, so it, not the \
                         server, set the pace"
                    ),
                );
            }
        }
        Some(s) => {
            let short = s.requested_rate > 0.0 && s.achieved_rate < s.requested_rate * RATE_KEPT;
            if short && (no_idle || starved) {
                limit(
                    &mut v,
                    LimitedBy::RateShort,
                    format!(
                        "the generator sent {:.1}/s of the {:.1}/s asked ({}) and {state}: its \
                         threads were {spent}",
                        s.achieved_rate,
                        s.requested_rate,
                        pct(s.achieved_rate / s.requested_rate)
                    ),
                );
            }
            let lag = s.generator_lag.p50_us;
            if lag > LAG_FLOOR_US && lag as f64 > total.p50_us as f64 * LAG_SHARE {
                limit(
                    &mut v,
                    LimitedBy::Lag,
                    format!(
                        "the generator's own lag moved the latencies: with a connection free, \
                         requests went out {} late at the median (p99 {}), {} of the median \
                         latency of {}",
                        ms(lag),
                        ms(s.generator_lag.p99_us),
                        pct(lag as f64 / (total.p50_us.max(1)) as f64),
                        ms(total.p50_us)
                    ),
                );
            }
        }
    }
    v
}

/// The rule in one sentence, for reports that print it.
pub const RULE: &str = "the generator counts as the limit only when it had no idle time (on a \
    CPU or waiting for one over 90% of the run) or was starved of CPU (waiting for one longer \
    than it ran, over 25% of the run) — in an open loop only if it also sent under 95% of the \
    rate — or, in an open loop, when its own send lag was over 1 ms and over half the latency \
    at the median; waiting for a busy connection or a stalled server is the server's time";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LatencyHistogram;

    fn figures(busy: f64, wait: Option<f64>) -> GeneratorFigures {
        GeneratorFigures {
            threads: 1,
            elapsed_s: 10.0,
            cpu_s: busy * 10.0,
            cpu_wait_s: wait.map(|w| w * 10.0),
        }
    }

    /// An open-loop schedule: `asked`/`sent` per second, every request's own lag `lag_us`
    /// except a tail of 2% at `tail_us`.
    fn schedule(asked: f64, sent: f64, lag_us: u64, tail_us: u64) -> Schedule {
        let mut s = Schedule {
            requested_rate: asked,
            achieved_rate: sent,
            ..Schedule::default()
        };
        let mut h = LatencyHistogram::new();
        for i in 0..1000 {
            h.record(if i < 980 { lag_us } else { tail_us });
        }
        s.generator_lag_histogram = h;
        s.generator_lag = s.generator_lag_histogram.percentiles();
        s
    }

    fn latency(p50_us: u64) -> Percentiles {
        Percentiles {
            p50_us,
            p99_us: p50_us * 4,
            ..Percentiles::default()
        }
    }

    #[test]
    fn a_server_stall_is_never_the_generators_fault() {
        // --rate 1000 -c 200, the server frozen for 2 s: requests waited for a busy
        // connection (server time), the backlog went out fast after it, the rate fell short
        // and the generator was idle 96% of the run. Its own lag p99 1.22 ms is no verdict.
        let s = schedule(1000.0, 640.0, 40, 1_220);
        let v = judge(&figures(0.036, Some(0.01)), Some(&s), &latency(900));
        assert!(!v.client_limited, "{v:?}");
        assert!(v.reasons.is_empty());
        assert_eq!(v.limited_by, None);
    }

    #[test]
    fn a_rate_delivered_with_a_late_tail_is_not_the_generators_limit() {
        // --rate 2000: 1997.9/s sent, a lag p99 of 2.1 ms on a shared machine (wrk2 at the
        // same rate is not warned either).
        let s = schedule(2000.0, 1997.9, 60, 2_100);
        let v = judge(&figures(0.25, Some(0.05)), Some(&s), &latency(400));
        assert!(!v.client_limited, "{v:?}");
    }

    #[test]
    fn an_open_loop_generator_short_of_the_rate_with_no_idle_time_is_the_limit() {
        // Busy, or starved of CPU by a neighbour: either way no idle time and the rate short.
        for (busy, wait) in [(0.97, Some(0.01)), (0.35, Some(0.6)), (0.95, None)] {
            let s = schedule(50_000.0, 31_000.0, 300, 900);
            let v = judge(&figures(busy, wait), Some(&s), &latency(5_000));
            assert!(v.client_limited, "{v:?}");
            assert_eq!(v.limited_by, Some(LimitedBy::RateShort));
            assert!(
                v.reasons[0].contains("sent 31000.0/s of the 50000.0/s asked (62%)"),
                "{v:?}"
            );
        }
        // The same shortfall with idle time: the server (or -c) held the rate back.
        let s = schedule(50_000.0, 31_000.0, 300, 900);
        assert!(!judge(&figures(0.4, Some(0.1)), Some(&s), &latency(5_000)).client_limited);
        // Starved: 0.3% on a CPU and 74% waiting for one (a nice -20 neighbour on its core),
        // 59.8/s of 2000/s sent. Its lag shows as connection wait (the responses sat unread),
        // so only the CPU figures tell.
        let s = schedule(2000.0, 59.8, 0, 0);
        let v = judge(&figures(0.003, Some(0.74)), Some(&s), &latency(1_600_000));
        assert!(v.client_limited, "{v:?}");
        assert!(
            v.reasons[0].contains(
                "and was starved of CPU: its threads were on a CPU 0% and \
                 waiting for one 74% of the run"
            ),
            "{v:?}"
        );
        // Waiting a little on a loaded machine while a stalled server held the rate back.
        let s = schedule(1000.0, 640.0, 40, 1_220);
        assert!(!judge(&figures(0.05, Some(0.04)), Some(&s), &latency(900)).client_limited);
        // No idle time but the whole rate sent on time: it kept up.
        let s = schedule(5_000.0, 4_990.0, 30, 300);
        assert!(!judge(&figures(0.95, Some(0.02)), Some(&s), &latency(500)).client_limited);
    }

    #[test]
    fn a_lag_that_makes_up_the_median_latency_is_the_generators() {
        // Requests 3 ms late at the median with a connection free, against 3.4 ms of latency.
        let s = schedule(1000.0, 999.0, 3_000, 9_000);
        let v = judge(&figures(0.1, Some(0.4)), Some(&s), &latency(3_400));
        assert!(v.client_limited);
        assert_eq!(v.limited_by, Some(LimitedBy::Lag));
        assert!(
            v.reasons[0].contains("3.00 ms late at the median (p99 9.01 ms), 88% of the median"),
            "{v:?}"
        );
        // The same lag under a slow server's 40 ms: a small share, not the limit.
        assert!(!judge(&figures(0.1, Some(0.4)), Some(&s), &latency(40_000)).client_limited);
        // Under the floor, whatever the share.
        let s = schedule(1000.0, 999.0, 900, 900);
        assert!(!judge(&figures(0.1, None), Some(&s), &latency(950)).client_limited);
    }

    #[test]
    fn a_closed_loop_generator_with_no_idle_time_set_the_pace() {
        let v = judge(&figures(0.62, Some(0.33)), None, &latency(1_000));
        assert!(v.client_limited);
        assert_eq!(v.limited_by, Some(LimitedBy::NoIdleTime));
        assert!(
            v.reasons[0].contains(
                "had no idle time: its threads were on a CPU 62% and waiting for one 33% of the \
                 run (1 thread)"
            ),
            "{v:?}"
        );
        assert!((v.cpu_busy - 0.62).abs() < 1e-9 && v.cpu_wait == Some(0.33));
        // Without the kernel's run-queue figure, CPU alone decides, as before.
        assert!(judge(&figures(0.95, None), None, &latency(1_000)).client_limited);
        assert!(!judge(&figures(0.6, None), None, &latency(1_000)).client_limited);
        assert!(!judge(&figures(0.5, Some(0.3)), None, &latency(1_000)).client_limited);
        // Starved: it waited for a core longer than it ran.
        let v = judge(&figures(0.1, Some(0.5)), None, &latency(1_000));
        assert_eq!(v.limited_by, Some(LimitedBy::Starved));
        assert!(v.reasons[0].contains("was starved of CPU"), "{v:?}");
    }
}
