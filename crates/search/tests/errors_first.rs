//! The errors-first rule (`interleave::judge::errors_guard`) on the blocks of a real run:
//! `webtune lab compare nginx-php-fpm --app forum --a worker_connections=768 --b
//! worker_connections=8192 --budget 2m -- -c 1024` (release build, 2 starts, the 2-core
//! machine under other builds). nginx with 768 connections turned away 116,079 requests
//! and served about as many pages a second as with 8,192, which turned away none; the
//! build before the rule called it "undecided" on throughput.

use webtune_search::interleave::judge::{error_shares, judge};
use webtune_search::interleave::render::Report;
use webtune_search::interleave::Verdict;

#[test]
fn nginx_turning_a_forums_clients_away_loses_on_its_errors() {
    let text = include_str!("fixtures/forum-1024-worker-connections.json");
    let report: Report = serde_json::from_str(text).expect("a webtune.compare-live/1 file");
    assert_eq!(report.settings.starts, 2);
    let (a, b) = error_shares(&report.blocks);
    assert!(a > 0.5 && b == 0.0, "shares A {a} B {b}");
    let j = judge(&report.blocks, &report.settings);
    assert_eq!(j.metric, "errors");
    assert_eq!(j.verdict, Verdict::BBetter);
    // Throughput alone could not tell them apart in this budget.
    let t = j.metrics["throughput"];
    assert!(t.ci_low.unwrap() < 1.0 && t.ci_high.unwrap() > 1.0, "{t:?}");
}
