//! `advise --verify`: the advisor's findings measured on private copies of the servers it
//! read. Which findings go into the advised copy (`overrides`: a finding's changes as the
//! import's `--set` overrides; php-fpm only in the pool the load reaches), what each copy
//! serves (a config that passes requests on is not verified; php-fpm behind the lab's
//! nginx, loaded at a page that reaches PHP; a my.cnf under the forum on nginx-php-fpm),
//! and the A/B itself: interleaved on two copies at once (`lab_pair`) or sequential pairs
//! (`webtune_search::paired`), judged by the tuner's proof. `lab_checker` is the advisor's
//! patch check run by the lab on a private copy (`advise --write-patch`, and the advise
//! crate's tests). The production server is never touched: a copy listens on loopback
//! ports of its own, with its own pid, logs and temp paths. Moved from the binary (issue 36).

use serde_json::json;
use webtune_advise::{Advice, ConfigRead};
use webtune_engine::Workload;
use webtune_lab::forum::DbConfig;
use webtune_lab::import::{Import, Server};
use webtune_lab::trial::path::{default_path, load_path, Served};
use webtune_lab::trial::{self, Silent, Target, Trial};
use webtune_lab::{settings_for, StackKind};
use webtune_model::{RunSpec, StopToken};
use webtune_search::paired::{self, Ran};
use webtune_search::proof::{self, Arm, Proof};

/// Pairs of whole runs of `--verify --protocol sequential` without `--pairs`.
pub const DEFAULT_PAIRS: usize = 3;
/// The interleaved protocol's time budget (`--verify-budget`), as the command line writes it
/// (named in the model, where the grammar reads it too).
pub use webtune_model::defaults::DEFAULT_VERIFY_BUDGET as DEFAULT_BUDGET;

/// What --verify measured: text for stdout, JSON for `--json`, whether a stop cut it, and
/// each verified server's throughput proof (the caller's verdict reads them).
pub struct Verified {
    pub text: String,
    pub json: serde_json::Value,
    pub interrupted: bool,
    pub proofs: Vec<(String, Proof)>,
}

/// The web stack a copy of my.cnf is measured under: the forum needs PHP, and nginx-php-fpm
/// starts fastest.
const FORUM_STACK: StackKind = StackKind::NginxPhpFpm;

/// How --verify measures: `Some(settings)` interleaved (both copies at once, alternating
/// blocks, `webtune_tuner::lab_pair`), None sequential (`pairs` pairs of whole runs).
pub type Interleave = Option<webtune_search::interleave::Settings>;

/// What `advise --verify` is asked: the advice, the load of every run (its URL empty: the
/// path is `path`, or the default of what each copy serves), how many pairs or the
/// interleaved settings, the forum a my.cnf is measured under, and whether to narrate.
pub struct VerifyRequest<'a> {
    pub advice: &'a Advice,
    pub load: RunSpec,
    pub path: Option<String>,
    pub workload: Workload,
    pub pairs: usize,
    pub posts: u64,
    pub seed: u64,
    pub interleave: Interleave,
    pub quiet: bool,
}

/// Verify `request.advice` on private copies of each server it read; `say` hears the
/// progress lines (and the forum dataset's build steps).
pub fn run(
    request: &VerifyRequest,
    stop: &StopToken,
    say: &mut dyn FnMut(&str),
) -> anyhow::Result<Verified> {
    let advice = request.advice;
    let pairs = request.pairs;
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
        let outcome = verify_one(request, read, server, stop, say)?;
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
    Ok(Verified {
        text,
        json: json!({ "pairs": pairs, "servers": servers }),
        interrupted,
        proofs,
    })
}

/// The `--set` overrides a finding's `changes` make in a tree of `files`, or None when a
/// change lies outside it (php-fpm: outside the pool the load reaches, `front_pool`).
fn overrides(
    changes: &[webtune_advise::Change],
    files: &[std::path::PathBuf],
    server: Server,
    front_pool: Option<&str>,
) -> Option<Vec<(String, String)>> {
    changes
        .iter()
        .map(|c| {
            if !files.contains(&c.file) {
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
    request: &VerifyRequest,
    read: &ConfigRead,
    server: Server,
    stop: &StopToken,
    say: &mut dyn FnMut(&str),
) -> anyhow::Result<One> {
    let advice = request.advice;
    let pairs = request.pairs;
    let label = read.server.as_str();
    let skipped = |why: String| One {
        text: format!("  {label} ({}): not verified: {why}\n", read.main.display()),
        json: json!({ "server": label, "config": read.main, "verified": false, "why": why }),
        interrupted: false,
        proof: None,
    };
    let tree = webtune_lab::import::ConfigTree::read(server, &read.main)?;
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
        let Some(mine) = overrides(&finding.changes, &read.files, server, front_pool.as_deref())
        else {
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
    let workload = &request.workload;
    // A my.cnf is measured with the forum's page mix unless a path is given.
    let default_path = match server {
        Server::MariaDb => "",
        Server::Nginx | Server::Apache | Server::PhpFpm => {
            default_path(Served::Imported(&current), workload)
        }
    };
    let mut path = load_path(request.path.as_deref(), default_path)?;
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
            Box::new(webtune_lab::forum::dataset::ensure(
                request.posts,
                request.seed,
                &webtune_lab::forum::DbOptions::database(),
                &mut |step| say(&format!("lab data: {step}")),
            )?),
        )),
        Server::Nginx | Server::Apache | Server::PhpFpm => None,
    };
    let load = RunSpec {
        url: path.clone(),
        ..request.load.clone()
    };
    let quiet = request.quiet;
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
    let measured = match request.interleave.clone() {
        // Both copies at once: two private stacks, or for a my.cnf two forums, each on its
        // own database copy.
        Some(settings) => interleaved(
            [target_of(current.clone()), target_of(advised.clone())],
            &load,
            workload,
            settings,
            stop,
            quiet,
            say,
        )?,
        None => sequential(
            (&current, &advised),
            &target_of,
            &load,
            workload,
            (pairs, label, quiet),
            stop,
            say,
        )?,
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

/// What either protocol measured: each arm's (req/s, p99 µs) per run or block, the two
/// proofs, and the interleaved comparison itself.
struct Measured {
    a: Vec<(f64, u64)>,
    b: Vec<(f64, u64)>,
    rps: Proof,
    p99: Proof,
    interrupted: bool,
    comparison: Option<Box<webtune_search::interleave::render::Report>>,
}

/// `--protocol sequential`: `pairs` pairs of whole runs, A B B A …
fn sequential(
    (current, advised): (&Import, &Import),
    target_of: &dyn Fn(Import) -> Target,
    load: &webtune_model::RunSpec,
    workload: &webtune_engine::Workload,
    (pairs, label, quiet): (usize, &str, bool),
    stop: &StopToken,
    say: &mut dyn FnMut(&str),
) -> anyhow::Result<Measured> {
    let proof = paired::run(pairs, Vec::new(), stop, |arm, number, of| {
        let import = match arm {
            Arm::Default => current.clone(),
            Arm::Winner => advised.clone(),
        };
        if !quiet {
            say(&format!(
                "advise --verify: {label} run {number}/{of} ({} {})",
                arm.letter(),
                ARMS[usize::from(arm == Arm::Winner)]
            ));
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
    targets: [Target; 2],
    load: &webtune_model::RunSpec,
    workload: &webtune_engine::Workload,
    mut settings: webtune_search::interleave::Settings,
    stop: &StopToken,
    quiet: bool,
    say: &mut dyn FnMut(&str),
) -> anyhow::Result<Measured> {
    use webtune_search::interleave::as_proof::to_proof_of;
    use webtune_search::interleave::block::Metric;
    if load.is_open_loop() {
        settings.decide_on = Metric::P99;
    }
    let pair =
        crate::lab_pair::compare_targets(&targets, load, workload, settings, stop, &mut |line| {
            if !quiet {
                say(&format!("advise --verify: {line}"));
            }
        })
        .map_err(|e| anyhow::anyhow!("advise --verify: {e}"))?;
    let mut report = webtune_search::interleave::render::Report::new(
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
    use webtune_search::interleave::Side;
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

/// The advisor's patch check, run by the lab on a private copy (`import::check`): the one
/// `webtune advise --write-patch` uses, and the advise crate's tests.
pub fn lab_checker(
    server: &str,
    main: &std::path::Path,
    root: Option<&std::path::Path>,
    patch: &dyn Fn(&std::path::Path, &str) -> String,
) -> webtune_advise::check::Checked {
    use webtune_advise::check::Checked;
    use webtune_lab::import::check;
    let server = match server {
        "nginx" => Server::Nginx,
        "apache2" => Server::Apache,
        "php-fpm" => Server::PhpFpm,
        _ => Server::MariaDb,
    };
    match check::check_patched_copy_in(server, main, root, patch) {
        Ok(p) => Checked::Passed {
            command: p.command,
            warnings: p.warnings,
        },
        Err(check::CopyCheck::Rejected { command, message }) => {
            Checked::Rejected { command, message }
        }
        Err(check::CopyCheck::NotChecked(why)) => Checked::NotChecked(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use webtune_advise::Change;

    fn change(file: &str, section: Option<&str>, text: &str) -> Change {
        Change {
            file: PathBuf::from(file),
            line: None,
            section: section.map(str::to_string),
            text: text.to_string(),
        }
    }

    #[test]
    fn a_findings_changes_become_the_copys_overrides_only_inside_the_tree_it_loads() {
        let files = [PathBuf::from("/etc/nginx/nginx.conf")];
        let nginx = [change("/etc/nginx/nginx.conf", None, "worker_processes 4;")];
        assert_eq!(
            overrides(&nginx, &files, Server::Nginx, None),
            Some(vec![("worker_processes".into(), "4".into())])
        );
        // A change in a file the tree does not hold cannot be made in the copy.
        let outside = [change("/etc/other.conf", None, "worker_processes 4;")];
        assert_eq!(overrides(&outside, &files, Server::Nginx, None), None);
        // php-fpm: only the pool the load reaches.
        let pool = [PathBuf::from("/etc/php/fpm/pool.d/www.conf")];
        let www = [change(
            &pool[0].to_string_lossy(),
            Some("www"),
            "pm.max_children = 12",
        )];
        assert_eq!(
            overrides(&www, &pool, Server::PhpFpm, Some("www")),
            Some(vec![("pm.max_children".into(), "12".into())])
        );
        assert_eq!(overrides(&www, &pool, Server::PhpFpm, Some("other")), None);
        // A my.cnf option is the forum's `db.*` parameter.
        let cnf = [PathBuf::from("/etc/mysql/my.cnf")];
        let db = [change(
            "/etc/mysql/my.cnf",
            Some("mysqld"),
            "thread_cache_size = 64",
        )];
        let set = overrides(&db, &cnf, Server::MariaDb, None).unwrap();
        assert_eq!(
            set[0].0,
            format!("{}thread_cache_size", webtune_lab::forum::dbparams::PREFIX)
        );
        assert_eq!(set[0].1, "64");
    }
}
