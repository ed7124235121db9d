//! Repeated runs (`bench --repeat N`): one result that holds every repeat merged (exact
//! histogram merge, summed counts, timelines one after another) and a small summary per
//! repeat, which `compare` uses for its confidence intervals.

use webtune_model::RunResult;

/// Merge repeated runs of one spec into one result with `repeats` filled (see
/// `RunResult::merge_repeats`). None when `runs` is empty.
pub fn with_repeats(runs: Vec<RunResult>) -> Option<RunResult> {
    RunResult::merge_repeats(runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use webtune_testkit::results::synthetic_result;

    #[test]
    fn merges_counts_histograms_and_keeps_each_repeat() {
        let a = synthetic_result(100, &[1_000]);
        let b = synthetic_result(300, &[3_000]);
        let merged = with_repeats(vec![a.clone(), b.clone()]).unwrap();
        assert_eq!(merged.responses, 400);
        assert_eq!(merged.histograms.total.count(), 400);
        assert_eq!(merged.duration_s, 20.0);
        assert_eq!(merged.requests_per_s, 20.0);
        assert_eq!(merged.repeats.len(), 2);
        assert_eq!(merged.repeats[1].responses, 300);
        assert_eq!(merged.repeats[0].requests_per_s, a.requests_per_s);
        assert_eq!(merged.timeline.len(), 20);
        assert_eq!(merged.timeline[10].start_s, 10.0);
        assert_eq!(merged.status[&200], a.status[&200] + b.status[&200]);
        assert!(with_repeats(Vec::new()).is_none());
        assert!(with_repeats(vec![a]).unwrap().repeats.is_empty());
    }

    /// An open-loop scenario run with a probe, stalls and a verdict: every part survives
    /// the merge (the first repeat's verdict beside summed totals was the old fault).
    fn open_loop_run(responses: u64, lag_us: u64, client_limited: bool) -> RunResult {
        let mut run = synthetic_result(responses, &[1_000, 2_000]);
        for _ in 0..responses {
            run.histograms.service.record(800);
        }
        let mut lag = webtune_model::LatencyHistogram::new();
        for _ in 0..responses {
            lag.record(lag_us);
        }
        run.schedule = Some(webtune_model::Schedule {
            requested_rate: 100.0,
            achieved_rate: responses as f64 / run.duration_s,
            lag: lag.percentiles(),
            lag_histogram: lag.clone(),
            generator_lag_histogram: lag,
            not_sent: 2,
            ..Default::default()
        });
        let mut named = webtune_model::NamedResult {
            responses,
            ok: responses,
            ..Default::default()
        };
        named.histogram.record(1_500);
        run.by_name.insert("home".into(), named.clone());
        run.probe = Some(named);
        run.stalls = vec![webtune_model::Stall {
            start_s: 6.0,
            length_s: 1.0,
        }];
        run.validity = webtune_model::Validity {
            client_limited,
            reasons: if client_limited {
                vec!["schedule lag p99 5 ms".into()]
            } else {
                Vec::new()
            },
            cpu_busy: if client_limited { 0.95 } else { 0.2 },
            ..Default::default()
        };
        run.finish_summaries();
        run
    }

    #[test]
    fn merge_keeps_service_schedule_names_probe_stalls_and_the_verdict() {
        let a = open_loop_run(100, 50, false);
        let b = open_loop_run(300, 5_000, true);
        let merged = with_repeats(vec![a, b]).unwrap();
        assert_eq!(merged.histograms.service.count(), 400);
        assert_eq!(merged.latency.service.count, 400);
        let schedule = merged.schedule.as_ref().unwrap();
        assert_eq!(schedule.lag_histogram.count(), 400);
        assert!(schedule.lag.p99_us >= 4_900, "{:?}", schedule.lag);
        assert_eq!(schedule.not_sent, 4);
        assert_eq!(schedule.generator_lag.count, 400);
        assert!((schedule.achieved_rate - 20.0).abs() < 1e-9);
        assert_eq!(merged.by_name["home"].responses, 400);
        assert_eq!(merged.by_name["home"].latency.count, 2);
        assert_eq!(merged.probe.as_ref().unwrap().histogram.count(), 2);
        let starts: Vec<f64> = merged.stalls.iter().map(|s| s.start_s).collect();
        assert_eq!(starts, vec![6.0, 16.0]);
        assert!(
            merged.validity.client_limited,
            "a limited repeat limits the merge"
        );
        assert_eq!(merged.validity.reasons.len(), 1);
        assert_eq!(merged.validity.cpu_busy, 0.95);
    }
}
