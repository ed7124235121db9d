//! Repeated runs (`bench --repeat N`): one result that holds every repeat merged (exact
//! histogram merge, summed counts, timelines one after another) and a small summary per
//! repeat, which `compare` uses for its confidence intervals.

use crate::compare::repeat_summary;
use webtune_model::RunResult;

/// Merge repeated runs of one spec into one result with `repeats` filled. None when
/// `runs` is empty. The timeline of each repeat follows the previous one's end.
pub fn with_repeats(runs: Vec<RunResult>) -> Option<RunResult> {
    let mut iter = runs.into_iter();
    let mut merged = iter.next()?;
    let mut repeats = vec![repeat_summary(&merged)];
    for run in iter {
        repeats.push(repeat_summary(&run));
        let offset = merged.duration_s;
        merged.duration_s += run.duration_s;
        merged.interrupted |= run.interrupted;
        merged.responses += run.responses;
        merged.ok += run.ok;
        merged.errors.merge(&run.errors);
        merged.length_varies += run.length_varies;
        if merged.first_body_bytes.is_none() {
            merged.first_body_bytes = run.first_body_bytes;
        }
        for (code, n) in &run.status {
            *merged.status.entry(*code).or_insert(0) += n;
        }
        merged.bytes_received += run.bytes_received;
        merged.body_bytes += run.body_bytes;
        merged.bytes_sent += run.bytes_sent;
        merged.connections_opened += run.connections_opened;
        merged.connect_attempts += run.connect_attempts;
        merged.stale_reconnects += run.stale_reconnects;
        merged.abandoned += run.abandoned;
        merged.histograms.connect.merge(&run.histograms.connect);
        merged
            .histograms
            .first_byte
            .merge(&run.histograms.first_byte);
        merged.histograms.total.merge(&run.histograms.total);
        merged
            .timeline
            .extend(run.timeline.into_iter().map(|mut s| {
                s.start_s += offset;
                s
            }));
        let g = &mut merged.generator;
        g.user_cpu_s += run.generator.user_cpu_s;
        g.system_cpu_s += run.generator.system_cpu_s;
        g.max_rss_kib = g.max_rss_kib.max(run.generator.max_rss_kib);
        if merged.server_software.is_none() {
            merged.server_software = run.server_software;
        }
    }
    merged.finish_summaries();
    merged.repeats = if repeats.len() > 1 {
        repeats
    } else {
        Vec::new()
    };
    Some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::synthetic_result;

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
}
