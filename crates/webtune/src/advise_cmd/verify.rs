//! `advise --verify -- BENCH FLAGS`: the current and the advised configuration of the web
//! server (nginx, Apache), of php-fpm (behind the lab's nginx) or of MariaDB (the forum's
//! database, under nginx-php-fpm) run on private copies (`lab::import`), interleaved
//! A B B A … by the tuner's own paired-proof runner (`webtune_tune::paired`) and judged
//! by its proof (`webtune_tune::proof`): the pairs, the interval and the verdict are
//! printed, and the measured difference beside each finding whose changes went into the
//! advised copy. The production server is
//! never touched: a copy listens on loopback ports of its own, with its own pid, logs and
//! temp paths, and a config that passes requests on to a backend is not verified (the
//! copy would load that backend).

use crate::bench_cmd::BenchArgs;
use crate::lab_cmd::forum::{ensure_dataset, DataChoice};
use crate::lab_cmd::{default_path, import, load_path, parse_bench, Served};
use anyhow::bail;
use serde_json::json;
use webtune_advise::{Advice, ConfigRead};
use webtune_lab::forum::DbConfig;
use webtune_lab::import::{Import, Server};
use webtune_lab::trial::{self, Silent, Target, Trial};
use webtune_lab::{settings_for, StackKind};
use webtune_model::StopToken;
use webtune_tune::paired::{self, Ran};
use webtune_tune::proof::{self, Arm, Proof};

/// What --verify measured: text for stdout, JSON for `--json`, and whether a stop cut it.
pub(super) struct Verified {
    pub text: String,
    pub json: serde_json::Value,
    pub interrupted: bool,
}

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

/// The web stack a copy of my.cnf is measured under: the forum needs PHP, and nginx-php-fpm
/// starts fastest.
const FORUM_STACK: StackKind = StackKind::NginxPhpFpm;

/// How --verify measures: `Some(settings)` interleaved (both copies at once, alternating
/// blocks, `webtune_tuner::lab_pair`), None sequential (`pairs` pairs of whole runs).
pub(super) type Interleave = Option<webtune_tune::interleave::Settings>;

pub(super) fn run(
    advice: &Advice,
    bench: &BenchArgs,
    pairs: usize,
    data: &DataChoice,
    interleave: Interleave,
) -> anyhow::Result<Verified> {
    let stop = crate::signals::stop_token();
    let mut text =
        String::from("\nMeasured (advise --verify: current A vs advised B on private copies)\n");
    let mut servers = Vec::new();
    let mut proofs = Vec::new();
    let mut interrupted = false;
    for (name, server) in [
        ("nginx", Server::Nginx),
        ("apache2", Server::Apache),
        ("php-fpm", Server::PhpFpm),
        ("mariadb", Server::MariaDb),
    ] {
        let Some(read) = advice.configs.iter().find(|c| c.server == name) else {
            continue;
        };
        let outcome = verify_one(
            advice,
            read,
            server,
            bench,
            (pairs, data, interleave.clone()),
            &stop,
        )?;
        text.push_str(&outcome.text);
        proofs.extend(outcome.proof);
        interrupted |= outcome.interrupted;
        servers.push(outcome.json);
        if interrupted {
            break;
        }
    }
    if servers.is_empty() {
        text.push_str(
            "  nothing to verify: no nginx, Apache, php-fpm or MariaDB config was read\n",
        );
    }
    // The answer before the pairs behind it (issue 39).
    if let Some(verdict) = verdict(&proofs) {
        let header_end = text.find(")\n").map_or(0, |i| i + 2);
        text.insert_str(header_end, &verdict.text());
    }
    Ok(Verified {
        text,
        json: json!({ "pairs": pairs, "servers": servers }),
        interrupted,
    })
}

/// The `--set` overrides a finding's changes make in `read`'s tree, or None when a change
/// lies outside it (php-fpm: outside the pool the load reaches, `front_pool`).
fn overrides(
    finding: &webtune_advise::Finding,
    read: &ConfigRead,
    server: Server,
    front_pool: Option<&str>,
) -> Option<Vec<(String, String)>> {
    finding
        .changes
        .iter()
        .map(|c| {
            if !read.files.contains(&c.file) {
                return None;
            }
            let text = c.text.trim().trim_end_matches(';').trim();
            let (name, value) = match server {
                Server::Nginx | Server::Apache => text.split_once(char::is_whitespace)?,
                Server::PhpFpm | Server::MariaDb => {
                    if front_pool.is_some() && c.section.as_deref() != front_pool {
                        return None;
                    }
                    text.split_once('=')?
                }
            };
            let name = name.trim();
            // The database's options are set as the forum's `db.*` parameters.
            let name = match server {
                Server::MariaDb => format!("{}{name}", webtune_lab::forum::dbparams::PREFIX),
                Server::Nginx | Server::Apache | Server::PhpFpm => name.to_string(),
            };
            Some((name, value.trim().to_string()))
        })
        .collect()
}

/// A directive that passes requests to another server: a copy would load it.
fn passes_on(import_tree: &webtune_lab::import::ConfigTree) -> Option<String> {
    import_tree
        .directives
        .iter()
        .find(|d| {
            let name = d.name.to_ascii_lowercase();
            name.ends_with("_pass")
                || name.starts_with("proxypass")
                || d.args.iter().any(|a| a.starts_with("proxy:"))
        })
        .map(|d| {
            format!(
                "{} {} at {}:{}",
                d.name,
                d.args.join(" "),
                d.file.display(),
                d.line
            )
        })
}

struct One {
    text: String,
    json: serde_json::Value,
    interrupted: bool,
    /// A verified server's name and its throughput proof (None: not verified).
    proof: Option<(String, Proof)>,
}

fn verify_one(
    advice: &Advice,
    read: &ConfigRead,
    server: Server,
    bench: &BenchArgs,
    (pairs, data, interleave): (usize, &DataChoice, Interleave),
    stop: &StopToken,
) -> anyhow::Result<One> {
    let label = read.server.as_str();
    let skipped = |why: String| One {
        text: format!("  {label} ({}): not verified: {why}\n", read.main.display()),
        json: json!({ "server": label, "config": read.main, "verified": false, "why": why }),
        interrupted: false,
        proof: None,
    };
    let tree = import::read_tree(server, &read.main)?;
    if let Some(at) = passes_on(&tree) {
        return Ok(skipped(format!(
            "it passes requests on ({at}); a copy would load that backend"
        )));
    }
    let front_pool = match server {
        Server::PhpFpm => webtune_lab::import::php_fpm_pools(&tree).into_iter().next(),
        Server::Nginx | Server::Apache | Server::MariaDb => None,
    };
    let current = Import::new(tree.clone(), &[])?;
    // The advised copy: every finding whose changes are directives of this tree and that
    // the import accepts as overrides.
    let mut set: Vec<(String, String)> = Vec::new();
    let mut changed: Vec<&webtune_advise::Finding> = Vec::new();
    let mut notes = Vec::new();
    for finding in &advice.findings {
        if finding.changes.is_empty() {
            continue;
        }
        let Some(mine) = overrides(finding, read, server, front_pool.as_deref()) else {
            continue;
        };
        let mut trial_set = set.clone();
        for (n, v) in &mine {
            trial_set.retain(|(m, _)| m != n);
            trial_set.push((n.clone(), v.clone()));
        }
        match Import::new(tree.clone(), &trial_set) {
            Ok(_) => {
                set = trial_set;
                changed.push(finding);
            }
            Err(e) => notes.push(format!("[{}] not verified: {e}", finding.id)),
        }
    }
    if changed.is_empty() {
        let mut one = skipped("no finding changes a directive webtune can set in a copy".into());
        for n in &notes {
            one.text.push_str(&format!("    {n}\n"));
        }
        return Ok(one);
    }
    let advised = Import::new(tree, &set)?;
    let workload = bench.request.workload()?;
    // A my.cnf is measured with the forum's page mix unless a path is given.
    let default_path = match server {
        Server::MariaDb => "",
        Server::Nginx | Server::Apache | Server::PhpFpm => {
            default_path(Served::Imported(&current), &workload)
        }
    };
    let mut path = load_path(bench.url.as_deref(), default_path)?;
    // A path the lab's nginx answers from a file never reaches the php-fpm copies.
    let mut path_note = None;
    if server == Server::PhpFpm && workload.scenario().is_none() && !webtune_lab::reaches_php(&path)
    {
        path_note = Some(format!(
            "loaded at {default_path}: {path} is a static file of the lab's nginx and never reaches the pool"
        ));
        path = default_path.to_string();
    }
    let forum = match server {
        Server::MariaDb => Some((
            settings_for(FORUM_STACK, &[])?,
            Box::new(ensure_dataset(data.posts, data.seed)?),
        )),
        Server::Nginx | Server::Apache | Server::PhpFpm => None,
    };
    let load = bench.to_spec(&path)?;
    let quiet = bench.output.quiet;
    let measured = match (interleave, &forum) {
        (Some(settings), None) => {
            interleaved(&current, &advised, &load, &workload, settings, stop, quiet)?
        }
        (interleave, _) => {
            if interleave.is_some() && !quiet {
                eprintln!(
                    "advise --verify: {label}: sequential pairs (the database copies run under the forum, one at a time)"
                );
            }
            let target_of = |import: Import| match &forum {
                Some((web, dataset)) => Target::Forum {
                    kind: FORUM_STACK,
                    web: web.clone(),
                    db: DbConfig::Imported(Box::new(import)),
                    dataset: dataset.clone(),
                },
                None => Target::Imported {
                    import: Box::new(import),
                },
            };
            sequential(
                (&current, &advised),
                &target_of,
                &load,
                &workload,
                (pairs, label, quiet),
                stop,
            )?
        }
    };
    let Measured {
        a,
        b,
        rps,
        p99,
        interrupted,
        comparison,
    } = measured;
    let overrides: Vec<String> = set.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let under = match &forum {
        Some((_, dataset)) => format!(
            " under the forum ({} posts) on {} with the lab's defaults",
            dataset.summary.shape.posts,
            FORUM_STACK.name()
        ),
        None => String::new(),
    };
    let mut text = format!(
        "  {label} ({}): advised = {}; {} pair(s){under}{}\n",
        read.main.display(),
        overrides.join(" "),
        rps.pairs,
        if interrupted { " (interrupted)" } else { "" }
    );
    if let Some(note) = &path_note {
        text.push_str(&format!("    {note}\n"));
    }
    for (what, unit, p) in [("throughput", "req/s", &rps), ("p99 latency", "ms", &p99)] {
        text.push_str(&format!("    {what}: {}\n", line(p)));
        for l in p.detail(unit, (ARMS[0], ARMS[1])) {
            text.push_str(&format!("      {l}\n"));
        }
    }
    for f in &changed {
        text.push_str(&format!(
            "    [{}] {} → {}: measured with the advised copy: throughput {}\n",
            f.id,
            f.current,
            f.recommended,
            rps.headline()
        ));
    }
    for n in &notes {
        text.push_str(&format!("    {n}\n"));
    }
    let json = json!({
        "server": label,
        "config": read.main,
        "verified": true,
        "path": path,
        "advised": set.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
        "findings": changed.iter().map(|f| f.id.clone()).collect::<Vec<_>>(),
        "runs": {
            "current": a.iter().map(|x| json!({"requests_per_s": x.0, "p99_us": x.1})).collect::<Vec<_>>(),
            "advised": b.iter().map(|x| json!({"requests_per_s": x.0, "p99_us": x.1})).collect::<Vec<_>>(),
        },
        "throughput": rps,
        "p99": p99,
        "protocol": if comparison.is_some() { "interleaved" } else { "sequential" },
        "interleaved": comparison,
        "not_verified": notes,
        "interrupted": interrupted,
    });
    Ok(One {
        text,
        json,
        interrupted,
        proof: Some((label.to_string(), rps)),
    })
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

/// What either protocol measured: each arm's (req/s, p99 µs) per run or block, the two
/// proofs, and the interleaved comparison itself.
struct Measured {
    a: Vec<(f64, u64)>,
    b: Vec<(f64, u64)>,
    rps: Proof,
    p99: Proof,
    interrupted: bool,
    comparison: Option<Box<webtune_tune::interleave::render::Report>>,
}

/// `--protocol sequential`: `pairs` pairs of whole runs, A B B A …
fn sequential(
    (current, advised): (&Import, &Import),
    target_of: &dyn Fn(Import) -> Target,
    load: &webtune_model::RunSpec,
    workload: &webtune_engine::Workload,
    (pairs, label, quiet): (usize, &str, bool),
    stop: &StopToken,
) -> anyhow::Result<Measured> {
    let proof = paired::run(pairs, Vec::new(), stop, |arm, number, of| {
        let import = match arm {
            Arm::Default => current.clone(),
            Arm::Winner => advised.clone(),
        };
        if !quiet {
            eprintln!(
                "advise --verify: {label} run {number}/{of} ({} {})",
                arm.letter(),
                ARMS[usize::from(arm == Arm::Winner)]
            );
        }
        let mut t = Trial::new(target_of(import), load.clone());
        t.workload = workload.clone();
        let outcome = trial::run(&t, stop, &mut Silent)?;
        let Some(level) = outcome.levels.into_iter().next() else {
            return Ok::<_, anyhow::Error>(Ran::Interrupted);
        };
        let r = &level.result;
        let figure = (r.requests_per_s, r.latency.total.p99_us);
        Ok(if outcome.interrupted || r.interrupted {
            Ran::Last(figure)
        } else {
            Ran::Measured(figure)
        })
    })?;
    let interrupted = proof.interrupted;
    let arm = |which: Arm| -> Vec<(f64, u64)> {
        proof
            .runs
            .iter()
            .filter(|(a, _)| *a == which)
            .map(|(_, f)| *f)
            .collect()
    };
    let (a, b) = (arm(Arm::Default), arm(Arm::Winner));
    let rps = proof::analyze_against(&paired::pairs(&proof.runs, |x| Some(x.0)), true, BASELINE);
    let p99 = proof::analyze_against(
        &paired::pairs(&proof.runs, |x| Some(x.1 as f64 / 1000.0)),
        false,
        BASELINE,
    );
    Ok(Measured {
        a,
        b,
        rps,
        p99,
        interrupted,
        comparison: None,
    })
}

/// `--protocol interleaved`: both copies running at once, the load alternating between them
/// in blocks until the always-valid interval decides (throughput in closed loop, p99 in open
/// loop) or the budget ends.
fn interleaved(
    current: &Import,
    advised: &Import,
    load: &webtune_model::RunSpec,
    workload: &webtune_engine::Workload,
    mut settings: webtune_tune::interleave::Settings,
    stop: &StopToken,
    quiet: bool,
) -> anyhow::Result<Measured> {
    use webtune_tune::interleave::as_proof::to_proof_of;
    use webtune_tune::interleave::block::Metric;
    if load.is_open_loop() {
        settings.decide_on = Metric::P99;
    }
    let imports = [current, advised];
    let mut start = |arm: usize| {
        let options = webtune_lab::StartOptions {
            interrupt: Some(stop.clone()),
            ..webtune_lab::StartOptions::default()
        };
        webtune_lab::RunningStack::start_imported(imports[arm], options).map_err(|e| e.to_string())
    };
    let pair = webtune_tuner::lab_pair::compare_with(
        &mut start,
        load,
        workload,
        settings,
        stop,
        &mut |line| {
            if !quiet {
                eprintln!("advise --verify: {line}");
            }
        },
    )
    .map_err(|e| anyhow::anyhow!("advise --verify: {e}"))?;
    let mut report = webtune_tune::interleave::render::Report::new(
        (ARMS[0], ARMS[1]),
        &pair.outcome.protocol,
        pair.outcome.elapsed_s,
        pair.outcome.interrupted,
    );
    report.notes.push(pair.memory);
    let of = |side| -> Vec<(f64, u64)> {
        report
            .blocks
            .iter()
            .filter(|b| b.arm == side)
            .map(|b| (b.throughput, (b.p99_ms * 1000.0) as u64))
            .collect()
    };
    use webtune_tune::interleave::Side;
    Ok(Measured {
        a: of(Side::A),
        b: of(Side::B),
        rps: to_proof_of(&report, Metric::Throughput, BASELINE),
        p99: to_proof_of(&report, Metric::P99, BASELINE),
        interrupted: pair.outcome.interrupted,
        comparison: Some(Box::new(report)),
    })
}

/// The arms' names in the lines: A is the config as it is, B the advised one.
const ARMS: [&str; 2] = ["current", "advised"];
/// What "keep …" names in a verdict.
const BASELINE: &str = "the current config";

fn line(p: &Proof) -> String {
    format!(
        "{} ({}/{} pairs better)",
        p.verdict, p.winner_better, p.pairs
    )
}
