//! `webtune lab`: list the stacks and their parameters, print rendered configs, start a
//! real stack, load it with the engine while the /proc sampler watches the server, stop it
//! leaving no process behind, and reap what a killed run left (`lab clean`); compare two
//! configurations of one stack side by side (`lab compare`).

mod compare;
pub mod forum;
pub(crate) mod fs;
pub(crate) mod mail;
mod run_cmd;

use crate::exit;
use crate::flags::bench::{check_outputs, parse_bench, BenchArgs};
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use crate::running;
use anyhow::bail;
use std::path::PathBuf;
use std::time::Duration;
use webtune_lab::filesystem::FsRequest;
use webtune_lab::host::{CpuSet, HostSettings};
use webtune_lab::trial::{self, RunRequest, Trial};
use webtune_lab::{listing, StackKind};
use webtune_model::parse_duration;
use webtune_report::server_summary::summarise;

#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    webtune lab stacks\n  \
    webtune lab params apache-prefork\n  \
    webtune lab run apache-prefork --set MaxRequestWorkers=4 --set KeepAlive=off -- -c 20 -d 10s /cpu/2000\n  \
    webtune lab config nginx-apache --set backend.MaxRequestWorkers=4\n  \
    webtune lab compare nginx-apache --a backend.MaxRequestWorkers=12 --b backend.MaxRequestWorkers=4 -- -c 20 /cpu/20000\n  \
    webtune lab run external http://127.0.0.1:8080 --process nginx -- -c 50 -d 10s /\n  \
    webtune lab run --nginx-config /etc/nginx/nginx.conf --set worker_connections=2048 -- -c 50 -d 10s /\n  \
    webtune lab data --posts 150000 --seed 3\n  \
    webtune lab sweep apache-prefork --app forum -c 8,32,128,256,512,1024 -d 10s --html forum.html\n  \
    webtune lab params mariadb\n  \
    webtune lab run postfix --set mailboxes=15000 -- -c 20 -d 30s --per-connection 5\n  \
    webtune lab clean")]
pub struct LabArgs {
    #[command(subcommand)]
    command: LabCommand,
}

#[derive(clap::Subcommand)]
enum LabCommand {
    /// The stacks and what each needs installed.
    Stacks,
    /// Every tunable parameter of a stack: name, type, range, default, directive, meaning.
    Params {
        /// A stack from `webtune lab stacks`, or `mariadb` for the forum's database (db.*).
        #[arg(value_parser = crate::candidates::stacks(), hide_possible_values = true)]
        stack: String,
    },
    /// Print the rendered configs of a stack (paths and ports are examples: each start
    /// picks its own directory and free ports).
    Config {
        /// A stack from `webtune lab stacks`.
        #[arg(value_parser = crate::candidates::stacks(), hide_possible_values = true)]
        stack: String,
        /// Set a parameter (repeatable), e.g. --set MaxRequestWorkers=4.
        #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::candidates::parameters(), hide_possible_values = true)]
        set: Vec<String>,
    },
    /// Start a stack, load it (bench flags after --, paths relative to the stack), sample
    /// the server, stop it.
    Run(run_cmd::RunCmd),
    /// Generate seed 003's forum data (deterministic for a seed) and cache it loaded into
    /// a MariaDB data directory, so lab runs with --app forum start at once.
    Data(forum::DataArgs),
    /// Start a stack (with --app forum: and its database), run one load level after the
    /// other (seed 003: -c 8,32,128,256,512,1024), sample the servers, stop everything.
    Sweep(forum::SweepArgs),
    /// Find a stack's capacity: the highest rate at which every --slo holds (an open-loop
    /// search; bench flags and the path after --, e.g. -- /cpu/20000).
    Capacity(CapacityArgs),
    /// Two stacks from one template, both running, compared in alternating blocks until the
    /// answer is known (`--a NAME=VALUE… --b NAME=VALUE…`; bench flags and path after --).
    Compare(compare::CompareArgs),
    /// Stop anything a killed webtune run left behind (and remove its files).
    Clean,
    /// One shard of a `lab run` whose generator runs as several processes (internal).
    #[command(hide = true)]
    ShardWorker { spec: PathBuf, out: PathBuf },
}

#[derive(clap::Args)]
struct RunArgs {
    /// A stack from `webtune lab stacks` (none with --nginx-config / --apache-config /
    /// --php-fpm-config).
    #[arg(
        required_unless_present_any = ["nginx_config", "apache_config", "php_fpm_config"],
        value_parser = crate::candidates::stacks(), hide_possible_values = true
    )]
    stack: Option<String>,
    /// Run YOUR nginx config on a private copy: listen, pid, logs and temp paths are
    /// rewritten to private ones, the rest is kept; --set NAME=VALUE changes a directive.
    #[arg(
        long = "nginx-config",
        value_name = "FILE",
        conflicts_with_all = ["apache_config", "php_fpm_config"]
    )]
    nginx_config: Option<PathBuf>,
    /// Run YOUR Apache config (e.g. /etc/apache2/apache2.conf) on a private copy.
    #[arg(
        long = "apache-config",
        value_name = "FILE",
        conflicts_with = "php_fpm_config"
    )]
    apache_config: Option<PathBuf>,
    /// Run YOUR php-fpm config (php-fpm.conf with its pools, or one pool file) on a private
    /// copy behind the lab's nginx, which serves /cpu/US through its first pool; --set
    /// NAME=VALUE sets a key in that pool (e.g. pm.max_children=20).
    #[arg(long = "php-fpm-config", value_name = "FILE")]
    php_fpm_config: Option<PathBuf>,
    /// With --app forum: run the forum's database with a private copy of YOUR my.cnf
    /// (e.g. /etc/mysql/my.cnf; data directory, socket, port, logs made private) instead
    /// of the lab's; --set db.NAME=VALUE sets a server option in the copy.
    #[arg(long = "mysql-config", value_name = "FILE")]
    mysql_config: Option<PathBuf>,
    /// For the `external` stack only: its base URL, e.g. http://127.0.0.1:8080.
    url: Option<String>,
    /// Set a parameter (repeatable), e.g. --set MaxRequestWorkers=4.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::candidates::parameters(), hide_possible_values = true)]
    set: Vec<String>,
    /// For `external`: the server's command name (repeatable, e.g. nginx, or nginx and
    /// php-fpm8.2). The process with that name that listens on the URL's port is sampled with
    /// all its children; another server of the same name (another user's nginx) is not.
    /// Several candidates are named in an error asking for --pid.
    #[arg(long = "process", value_name = "NAME")]
    processes: Vec<String>,
    /// For `external`: sample this process and all its children (repeatable), e.g. the
    /// master of the nginx you mean when several run.
    #[arg(long = "pid", value_name = "PID")]
    pids: Vec<i32>,
    /// Server-side sampling period.
    #[arg(long = "sample-interval", default_value = "250ms", value_parser = parse_duration,
          value_name = "DURATION")]
    sample_interval: Duration,
    /// Keep the stack's private directory (configs, logs) after it stops.
    #[arg(long = "keep")]
    keep: bool,
    /// What the stack serves: its built-in site, or seed 003's forum on a private MariaDB
    /// (then `--set db.NAME=VALUE` tunes the database, and without a path after -- the
    /// forum's 20/20/60 scenario is loaded).
    #[arg(long = "app", value_enum, default_value = "site")]
    app: crate::flags::forum::App,
    #[command(flatten)]
    data: crate::flags::forum::DataChoice,
    /// Pin the stack's processes to these CPUs, e.g. 1 or 0-1 (docs/lab.md, "Host knobs").
    #[arg(long = "server-cpus", value_name = "LIST", value_parser = parse_cpus)]
    server_cpus: Option<CpuSet>,
    /// Pin the generator's threads to these CPUs, e.g. 0.
    #[arg(long = "client-cpus", value_name = "LIST", value_parser = parse_cpus)]
    client_cpus: Option<CpuSet>,
    /// The front server listens on 127.0.0.1 … 127.0.0.N and the generator spreads its
    /// connections over them (seed 004 served on ten).
    #[arg(long = "addresses", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=254))]
    addresses: u32,
    /// For `fs` only: let the run change host-wide sysctls (vm.dirty_*); they are put
    /// back at the end, and by `webtune lab clean` after a crash.
    #[arg(long = "host-sysctl")]
    host_sysctl: bool,
    /// bench flags and the path to load, e.g. -- -c 20 -d 10s /cpu/2000 (for `fs`: `webtune
    /// fs`'s flags, e.g. -- --files 1000 --transactions 50000 --fsync transaction).
    #[arg(last = true, value_name = "BENCH FLAGS")]
    bench: Vec<String>,
}

#[derive(clap::Args)]
struct CapacityArgs {
    #[command(flatten)]
    search: crate::flags::capacity::SearchArgs,
    #[command(flatten)]
    run: RunArgs,
}

fn parse_cpus(text: &str) -> Result<CpuSet, String> {
    CpuSet::parse(text, webtune_lab::host::online_cpus()).map_err(|e| e.to_string())
}

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
            &crate::output_flags::join_words(s.output.to_words(), &s.fs_flags)
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
        return mail::run(&run, &run_request(&run));
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
fn run_request(args: &RunArgs) -> RunRequest {
    let config = own_config(
        &args.nginx_config,
        &args.apache_config,
        &args.php_fpm_config,
    );
    RunRequest {
        stack: args.stack.clone(),
        config,
        mysql_config: args.mysql_config.clone(),
        url: args.url.clone(),
        set: args.set.clone(),
        processes: args.processes.clone(),
        pids: args.pids.clone(),
        app: args.app.into(),
        data: args.data.forum(),
        host: HostSettings {
            server_cpus: args.server_cpus.clone(),
            client_cpus: args.client_cpus.clone(),
            addresses: args.addresses,
        },
        sample_interval: args.sample_interval,
        keep: args.keep,
    }
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
    let request = run_request(args);
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
