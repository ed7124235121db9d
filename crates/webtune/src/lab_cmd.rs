//! `webtune lab`: list the stacks and their parameters, print rendered configs, start a
//! real stack, load it with the engine while the /proc sampler watches the server, stop it
//! leaving no process behind, and reap what a killed run left (`lab clean`); compare two
//! configurations of one stack side by side (`lab compare`).

mod compare;
pub mod forum;
pub(crate) mod fs;
pub(crate) mod mail;

use crate::exit;
use crate::flags::bench::check_outputs;
use crate::flags::bench::BenchArgsExt;
use crate::flags::bench::RequestArgsExt;
use crate::flags::forum::DataChoiceExt;
use crate::gate::ThresholdArgsExt;
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use crate::running;
use anyhow::bail;
use std::path::PathBuf;
use webtune_cli::flags::bench::{parse_bench, BenchArgs};
use webtune_cli::lab::{LabArgs, LabCommand, RunArgs};
use webtune_lab::filesystem::FsRequest;
use webtune_lab::host::{CpuSet, HostSettings};
use webtune_lab::trial::{self, RunRequest, Trial};
use webtune_lab::{listing, StackKind};
use webtune_report::server_summary::summarise;

pub fn run(args: LabArgs) -> anyhow::Result<i32> {
    match args.command {
        LabCommand::Stacks => Ok(output::print_only(&listing::stacks_text())),
        LabCommand::Params { stack } => Ok(output::print_only(&listing::params_of(&stack)?)),
        LabCommand::Config { stack, set } => Ok(output::print_only(&listing::config_text(
            StackKind::from_name(&stack)?,
            &set,
        )?)),
        LabCommand::Run(cmd) => run_stack(cmd.into_run()?),
        LabCommand::Sweep(sweep) if trial::is_mail(Some(&sweep.stack)) => mail::sweep(&sweep),
        LabCommand::Capacity(c) if trial::is_mail(c.run.stack.as_deref()) => {
            bail!("lab capacity searches HTTP rates; for postfix use lab sweep postfix -c A,B,… or tune postfix")
        }
        LabCommand::Capacity(c) => {
            let (trial, bench) = stack_trial(&c.run)?;
            crate::capacity_search::run_lab(trial, &bench, &c.search)
        }
        LabCommand::Data(data) => forum::run_data(data),
        // fs's output flags may come before -- too (the sweep's own are fs's there).
        LabCommand::Sweep(s) if s.stack == webtune_lab::filesystem::NAME => fs::sweep(
            &FsRequest {
                set: s.set.clone(),
                host_sysctl: s.host_sysctl,
                keep: s.keep,
                interval: s.sample_interval,
            },
            &s.connections,
            &webtune_cli::output_flags::join_words(s.output.to_words(), &s.fs_flags)
                .map_err(|e| anyhow::anyhow!("{e}"))?,
        ),
        LabCommand::Sweep(sweep) => forum::run_sweep(sweep),
        LabCommand::Compare(c) => compare::run(&c),
        LabCommand::Clean => clean(),
        LabCommand::ShardWorker { spec, out } => {
            trial::shards::worker(&spec, &out, &crate::signals::stop_token())?;
            Ok(exit::SUCCESS)
        }
    }
}

/// `lab run`: the mail stack, the fs stack, or an HTTP stack loaded by bench's engine.
fn run_stack(run: RunArgs) -> anyhow::Result<i32> {
    // The mail stack takes `webtune smtp`'s flags after --.
    if trial::is_mail(run.stack.as_deref()) {
        return mail::run(&run, &run_request(&run)?);
    }
    if run.stack.as_deref() == Some(webtune_lab::filesystem::NAME) {
        let request = FsRequest {
            set: run.set.clone(),
            host_sysctl: run.host_sysctl,
            keep: run.keep,
            interval: run.sample_interval,
        };
        return fs::run(&request, &run.bench);
    }
    let (mut trial, bench) = stack_trial(&run)?;
    if let Some(notice) = trial::shards::shard_if_needed(&mut trial)? {
        eprintln!("{notice}");
    }
    run_one(&trial, &bench)
}

/// The user's own config of `--nginx-config`, `--apache-config` or `--php-fpm-config` (clap
/// lets at most one through), with its server.
fn own_config(
    nginx: &Option<PathBuf>,
    apache: &Option<PathBuf>,
    php_fpm: &Option<PathBuf>,
) -> Option<(webtune_lab::import::Server, PathBuf)> {
    use webtune_lab::import::Server;
    [
        (Server::Nginx, nginx),
        (Server::Apache, apache),
        (Server::PhpFpm, php_fpm),
    ]
    .into_iter()
    .find_map(|(server, file)| file.clone().map(|f| (server, f)))
}

/// The lab's request for `lab run` (and `lab capacity`), the flags as given.
/// `--server-cpus`/`--client-cpus` as the lab takes them (the grammar checked them).
fn cpus(list: &Option<String>) -> anyhow::Result<Option<CpuSet>> {
    list.as_deref()
        .map(crate::grammar::cpu_set)
        .transpose()
        .map_err(|e| anyhow::anyhow!("{e}"))
}

fn run_request(args: &RunArgs) -> anyhow::Result<RunRequest> {
    let config = own_config(
        &args.nginx_config,
        &args.apache_config,
        &args.php_fpm_config,
    );
    Ok(RunRequest {
        stack: args.stack.clone(),
        config,
        mysql_config: args.mysql_config.clone(),
        url: args.url.clone(),
        set: args.set.clone(),
        processes: args.processes.clone(),
        pids: args.pids.clone(),
        app: crate::flags::forum::lab_app(args.app),
        data: args.data.forum(),
        host: HostSettings {
            server_cpus: cpus(&args.server_cpus)?,
            client_cpus: cpus(&args.client_cpus)?,
            addresses: args.addresses,
        },
        sample_interval: args.sample_interval,
        keep: args.keep,
    })
}

/// The trial `lab run` (and `lab capacity`) loads, and the bench flags given after --.
fn stack_trial(args: &RunArgs) -> anyhow::Result<(Trial, BenchArgs)> {
    // Everything the user typed is checked before anything starts.
    let bench = parse_bench(&args.bench)?;
    bench.to_spec("")?; // a run that would measure nothing is refused before the start
    bench.gate.parse(false)?;
    if bench.gate.threshold_abort || bench.metrics_listen.is_some() {
        bail!("--threshold-abort and --metrics-listen are bench's; lab run checks --threshold after the run");
    }
    check_outputs(&bench)?;
    let workload = bench.request.workload()?;
    let request = run_request(args)?;
    let (target, path) =
        request.target(bench.url.as_deref(), &workload, &mut forum::say_data_step)?;
    let load = bench.to_spec(&path)?;
    let trial = request.trial(target, load, workload, bench.output.repeat);
    Ok((trial, bench))
}

/// Run a one-level trial and report it as `bench` does, with the server-side summary.
fn run_one(trial: &Trial, bench: &BenchArgs) -> anyhow::Result<i32> {
    let stop = crate::signals::stop_token();
    let mut narrator = Narrator::new(bench.output.quiet, false);
    let outcome = trial::run(trial, &stop, &mut narrator)?;
    let Some(level) = outcome.levels.into_iter().next() else {
        eprintln!("lab: interrupted before the load began; nothing of the stack is left");
        return Ok(exit::INTERRUPTED);
    };
    let mut result = level.result;
    crate::gate::judge(&mut result, &bench.gate.parse(false)?, None);
    let header = trial.target.headline(&outcome.base_url);
    let footer = match &result.server {
        Some(server) => format!("\n{}", summarise(server, result.responses)),
        None => String::new(),
    };
    let outputs = running::emit(&result, bench, &header, &footer);
    running::verdicts_to_stderr(&result, bench);
    let died = result.server.as_ref().is_some_and(|s| s.server_died());
    Ok(
        outputs.exit_code(if outcome.interrupted || result.interrupted {
            exit::INTERRUPTED
        } else if died {
            exit::TARGET_DOWN
        } else {
            crate::gate::status(&result.thresholds, exit::SUCCESS)
        }),
    )
}

fn clean() -> anyhow::Result<i32> {
    let root = webtune_lab::registry::lab_root()?;
    let report = webtune_lab::registry::clean_stale(&root);
    let live = webtune_lab::registry::entries(&root)
        .into_iter()
        .filter(|e| e.owner_alive())
        .count();
    let mut outputs = Outputs::new();
    outputs.stdout(&listing::clean_text(&report, &root, live));
    if !report.survivors.is_empty() {
        eprintln!(
            "webtune: process(es) {:?} survived SIGKILL (zombies or another user's?)",
            report.survivors
        );
        return Ok(outputs.exit_code(exit::NO_SUCCESS));
    }
    Ok(outputs.exit_code(exit::SUCCESS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_flags_after_the_separator_parse() {
        let words: Vec<String> = ["-c", "20", "-d", "10s", "/cpu/2000"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let bench = parse_bench(&words).unwrap();
        assert_eq!(bench.connections, Some(20));
        assert_eq!(bench.url.as_deref(), Some("/cpu/2000"));
        assert!(parse_bench(&["--no-such-flag".to_string()]).is_err());
    }
}
