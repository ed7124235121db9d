//! `advise --verify -- BENCH FLAGS`: the bench flags checked and mapped onto a
//! `webtune_tuner::advise_verify::VerifyRequest` (the A/B on private copies is the tuner's),
//! and the verdict box put above the pairs behind it.

use crate::flags::bench::BenchArgsExt;
use crate::flags::bench::RequestArgsExt;
use anyhow::bail;
use webtune_advise::Advice;
use webtune_cli::flags::bench::{parse_bench, BenchArgs};
use webtune_cli::flags::forum::DataChoice;
use webtune_search::proof::Proof;
use webtune_tuner::advise_verify::{self, Interleave, Verified, VerifyRequest};

/// Check the bench flags before anything runs.
pub(super) fn check(words: &[String]) -> anyhow::Result<BenchArgs> {
    let bench = parse_bench(words)?;
    bench.to_spec("")?;
    if bench.gate.threshold_abort
        || bench.metrics_listen.is_some()
        || !bench.gate.threshold.is_empty()
    {
        bail!("--verify measures; --threshold, --threshold-abort and --metrics-listen are bench's");
    }
    Ok(bench)
}

/// Verify `advice` with the load of `bench`: the A/B is the tuner's; the answer goes
/// before the pairs behind it (issue 39).
pub(super) fn run(
    advice: &Advice,
    bench: &BenchArgs,
    pairs: usize,
    data: &DataChoice,
    interleave: Interleave,
) -> anyhow::Result<Verified> {
    let request = VerifyRequest {
        advice,
        load: bench.to_spec("")?,
        path: bench.url.clone(),
        workload: bench.request.workload()?,
        pairs,
        posts: data.posts,
        seed: data.seed,
        interleave,
        quiet: bench.output.quiet,
    };
    let stop = crate::signals::stop_token();
    let mut verified = advise_verify::run(&request, &stop, &mut |line| eprintln!("{line}"))?;
    if let Some(verdict) = verdict(&verified.proofs) {
        let header_end = verified.text.find(")\n").map_or(0, |i| i + 2);
        verified.text.insert_str(header_end, &verdict.text());
    }
    Ok(verified)
}

/// The verification's verdict: per verified server, whether the advised copy served more,
/// with its interval, and what to do with each.
fn verdict(proofs: &[(String, Proof)]) -> Option<webtune_report::verdict_box::VerdictBox> {
    use webtune_report::verdict_box::{Tone, VerdictBox};
    if proofs.is_empty() {
        return None;
    }
    let better = |p: &Proof| p.outcome == "better";
    let answer = proofs
        .iter()
        .map(|(server, p)| {
            if better(p) {
                format!("{server}: the advice helped")
            } else if p.outcome == "worse" {
                format!("{server}: the advice made it worse")
            } else {
                format!("{server}: no measured difference")
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let interval = proofs
        .iter()
        .map(|(server, p)| {
            format!(
                "{server} throughput, advised against current: {}",
                p.headline()
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let action = proofs
        .iter()
        .map(|(server, p)| {
            if better(p) {
                format!("apply the advised changes to {server}")
            } else {
                format!("keep {server}'s current config")
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let tone = if proofs.iter().all(|(_, p)| better(p)) {
        Tone::Good
    } else if proofs.iter().any(|(_, p)| p.outcome == "worse") {
        Tone::Bad
    } else {
        Tone::Neutral
    };
    Some(VerdictBox {
        answer,
        interval: Some(interval),
        action,
        tone,
    })
}
