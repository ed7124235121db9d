//! The sequential proof's judgement (`tune --protocol sequential`): its runs read back from
//! the journal, the pairs judged overall and per level (the SLOs first, `slo_verdict`), and
//! what the servers showed differently under the default and the winner. Split out of
//! `driver`, which runs the pairs.

use crate::job::{level_label, Job};
use crate::slo_verdict::slo_verdict;
use std::collections::BTreeMap;
use webtune_model::RunResult;
use webtune_search::journal::{Phase, Resumed};
use webtune_search::objective::LevelSummary;
use webtune_search::paired;
use webtune_search::proof::{self, Arm};
use webtune_search::report::{LevelProof, ProofReport, TuneReport};
use webtune_search::study::{Outcome, Study};

/// The proof's runs in a journal, in order.
pub(crate) fn proof_runs(resumed: &Resumed) -> Vec<(Arm, Outcome)> {
    resumed
        .trials
        .iter()
        .filter(|t| t.phase == Phase::Proof)
        .map(|t| {
            let arm = if t.why == "B" {
                Arm::Winner
            } else {
                Arm::Default
            };
            (arm, t.outcome.clone())
        })
        .collect()
}

/// Pair the proof's runs (the i-th measured A with the i-th measured B), judge the
/// objective overall and at each level.
pub(crate) fn analyze_proof(job: &Job, study: &Study, runs: &[(Arm, Outcome)]) -> ProofReport {
    let higher = job.objective.higher_is_better();
    let complete = |o: &Outcome| -> Option<Vec<LevelSummary>> {
        match o {
            Outcome::Measured(l) if l.len() == job.levels.len() => Some(l.clone()),
            _ => None,
        }
    };
    let pairs = |f: &dyn Fn(&Vec<LevelSummary>) -> f64| -> Vec<(f64, f64)> {
        paired::pairs(runs, |o| complete(o).map(|l| f(&l)))
    };
    let mut overall = proof::analyze(
        &pairs(&|l| job.objective.worst(l).unwrap_or(f64::NAN)),
        higher,
    );
    // The SLOs come first: a default that breaks them loses to a winner that meets them,
    // whatever the objective says (an error that answers fast is not throughput).
    let arm = |which: Arm| -> Vec<Vec<LevelSummary>> {
        runs.iter()
            .filter(|(a, _)| *a == which)
            .filter_map(|(_, o)| complete(o))
            .collect()
    };
    let (a, b) = (arm(Arm::Default), arm(Arm::Winner));
    let feasible = |l: &&Vec<LevelSummary>| {
        job.slos
            .iter()
            .all(|s| l.iter().all(|level| s.margin(level) <= 0.0))
    };
    let (fa, fb) = (
        a.iter().filter(feasible).count(),
        b.iter().filter(feasible).count(),
    );
    if let Some((outcome, verdict)) = slo_verdict(
        !job.slos.is_empty(),
        (fa, a.len()),
        (fb, b.len()),
        (&overall.outcome, &overall.verdict),
    ) {
        overall.outcome = outcome;
        overall.verdict = verdict;
    }
    let levels = (0..job.levels.len())
        .map(|i| LevelProof {
            level: level_label(job.levels[i]),
            proof: proof::analyze(&pairs(&|l| job.objective.value(&l[i])), higher),
        })
        .collect();
    let search_gain = TuneReport::from_study(study, Vec::new(), None)
        .best
        .and_then(|b| b.search_gain);
    ProofReport::new(overall, levels, search_gain, higher)
}

/// What the servers showed differently under the default (A) and the winner (B): their log
/// messages, listen-queue overflows, context switches per response (over the measured
/// windows, as the responses: `ServerSamples::measured`) and memory.
pub(crate) fn server_evidence(runs: &[(Arm, (Outcome, Vec<RunResult>))]) -> Vec<String> {
    #[derive(Default)]
    struct Side {
        logs: BTreeMap<String, u64>,
        overflows: u64,
        /// Over the measured windows only, as the responses are counted.
        switches: f64,
        responses: u64,
        pss_kib: u64,
        runs: usize,
    }
    let mut sides = [Side::default(), Side::default()];
    for (arm, (_, results)) in runs {
        let side = &mut sides[usize::from(*arm == Arm::Winner)];
        side.runs += 1;
        for r in results {
            side.responses += r.responses;
            let Some(server) = &r.server else { continue };
            for m in &server.log_messages {
                *side
                    .logs
                    .entry(format!("{} {}: {}", m.server, m.level, m.message))
                    .or_insert(0) += m.count;
            }
            side.switches += server.measured().switches();
            for s in &server.samples {
                side.overflows += s.listen_overflows;
                side.pss_kib = side.pss_kib.max(s.pss_kib);
            }
        }
    }
    let [a, b] = sides;
    if a.runs == 0 || b.runs == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let keys: std::collections::BTreeSet<&String> = a.logs.keys().chain(b.logs.keys()).collect();
    for key in keys {
        let (na, nb) = (
            a.logs.get(key).copied().unwrap_or(0),
            b.logs.get(key).copied().unwrap_or(0),
        );
        if na != nb {
            out.push(format!("logged {key}: default {na}×, winner {nb}×"));
        }
    }
    if a.overflows != b.overflows {
        out.push(format!(
            "listen-queue overflows: default {}, winner {}",
            a.overflows, b.overflows
        ));
    }
    let per = |s: &Side| s.switches / s.responses.max(1) as f64;
    if a.switches + b.switches > 0.0 {
        out.push(format!(
            "context switches per response: default {:.2}, winner {:.2}",
            per(&a),
            per(&b)
        ));
    }
    if a.pss_kib + b.pss_kib > 0 {
        out.push(format!(
            "peak server PSS: default {:.1} MiB, winner {:.1} MiB",
            a.pss_kib as f64 / 1024.0,
            b.pss_kib as f64 / 1024.0
        ));
    }
    out
}
