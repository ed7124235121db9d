//! `webtune lab … --app forum`: seed 003's workload. `lab data` generates and caches the
//! forum's data; `lab run STACK --app forum` and `lab sweep STACK --app forum -c …` start
//! the private MariaDB and a PHP-capable stack serving the forum, load it with the 20/20/60
//! scenario, sample the servers (the database included) and stop everything. The sweep
//! reports seed 003's figures per level — requests served, mean response time, error % —
//! with warm-up and cool-down left out, and the sampler's summary.

use crate::exit;
use crate::flags::forum::{App, DataChoice};
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use crate::output_flags::{OutputFlags, OutputHelp};
use std::path::PathBuf;
use std::time::Duration;
use webtune_lab::forum::{app, data};
use webtune_lab::trial::{self, SweepRequest, Swept, Target};
use webtune_model::parse_duration;
use webtune_model::sweep::{SweepResult, SweepVariable};
use webtune_report::forum::seed_003_table;
use webtune_report::server_summary::summarise;
use webtune_report::sweep::{render_sweep_csv, render_sweep_html};

#[derive(clap::Args, Debug)]
pub struct DataArgs {
    #[command(flatten)]
    pub data: DataChoice,
    /// Only print the checksum of the generated data (nothing is written or loaded).
    #[arg(long = "checksum")]
    pub checksum_only: bool,
    /// Only write the generated users' accounts (name,password; one row per user) to FILE,
    /// the `users` file of a logged-in scenario (bench/scenarios/forum-users.toml).
    #[arg(
        long = "users-csv",
        value_name = "FILE",
        conflicts_with = "checksum_only"
    )]
    pub users_csv: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune lab sweep apache-prefork --app forum -c 8,32,128,256,512,1024 -d 10s --html forum.html\n  \
    webtune lab sweep nginx-php-fpm --set pm=static --set pm.max_children=8 --set db.thread_cache_size=64 -c 8,32,128\n\
    Each level runs the 20/20/60 scenario (forum list, topic list page, thread) for -d, of\n\
    which --warmup and --cooldown are left out of the figures.\n\
    The defaults (--app forum on a stack with PHP, --warmup 2s, --cooldown 1s, --pause 1s) are\n\
    seed 003's sweep of freshly started servers; a stack without PHP (nginx) sweeps its\n\
    built-in site. `webtune sweep URL` and `lab run` default to no warm-up and the built-in\n\
    site, as bench does. Give --app site to sweep a PHP stack's built-in site.")]
pub struct SweepArgs {
    /// A stack; with --app forum (the default on a stack with PHP) a PHP-capable one:
    /// apache-prefork, apache-worker, apache-event, nginx-apache, nginx-php-fpm, …
    #[arg(value_parser = crate::candidates::stacks(), hide_possible_values = true)]
    pub stack: String,
    /// What the stack serves: seed 003's forum (the default on a stack with PHP: this
    /// command exists for its sweep) or the built-in site (the default on a stack without
    /// PHP, and `lab run`'s) at --path.
    #[arg(long = "app", value_enum)]
    pub app: Option<App>,
    /// Connection levels, comma-separated (seed 003: 8,32,128,256,512,1024).
    #[arg(
        short = 'c',
        long = "connections",
        value_delimiter = ',',
        value_name = "N,N,…",
        required = true
    )]
    pub connections: Vec<u32>,
    /// Length of each level's run.
    #[arg(short = 'd', long = "duration", default_value = "10s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub duration: Duration,
    /// Left out of each level's figures at its start (kept in its time series).
    #[arg(long = "warmup", default_value = "2s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub warmup: Duration,
    /// Left out of each level's figures at its end.
    #[arg(long = "cooldown", default_value = "1s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub cooldown: Duration,
    /// Pause between levels.
    #[arg(long = "pause", default_value = "1s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub pause: Duration,
    /// Set a parameter (repeatable): the stack's (`lab params STACK`) or the database's
    /// (`db.*`, `lab params mariadb`).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::candidates::parameters(), hide_possible_values = true)]
    pub set: Vec<String>,
    #[command(flatten)]
    pub data: DataChoice,
    /// Another scenario file instead of the forum's own (rendered for --posts).
    #[arg(long = "scenario", value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// For --app site: the path to load [default: the stack's own, as `lab run`'s: /cpu/2000
    /// on a stack with PHP, /empty.gif on one without].
    #[arg(long = "path", value_name = "PATH")]
    pub path: Option<String>,
    /// Worker threads of the load generator (default: available cores).
    #[arg(short = 't', long = "threads")]
    pub threads: Option<u32>,
    /// Give up on a response this long after its request was sent.
    #[arg(long = "timeout", default_value = "30s", value_parser = parse_duration,
          value_name = "DURATION")]
    pub timeout: Duration,
    /// Server-side sampling period.
    #[arg(long = "sample-interval", default_value = "250ms", value_parser = parse_duration,
          value_name = "DURATION")]
    pub sample_interval: Duration,
    #[command(flatten)]
    pub output: OutputFlags<LabSweepOutput>,
    /// Keep the stack's and the database's directories (configs, logs) after the stop.
    #[arg(long = "keep")]
    pub keep: bool,
    /// For `fs`: may change host-wide sysctls (vm.dirty_*), put back at the end.
    #[arg(long = "host-sysctl")]
    pub host_sysctl: bool,
    /// For `fs`: `webtune fs`'s workload flags (-c gives the worker levels), e.g.
    /// -- --files 1000 --transactions 20000 --fsync transaction.
    #[arg(last = true, value_name = "FS FLAGS")]
    pub fs_flags: Vec<String>,
}

/// The help of `lab sweep`'s output flags.
#[derive(Debug, Clone)]
pub struct LabSweepOutput;

impl OutputHelp for LabSweepOutput {
    const JSON: &'static str =
        "Write the sweep (every level's full result, server samples included) as JSON";
    const HTML: &'static str = "Write the HTML report (table, plots, every level) to FILE";
    const CSV: Option<&'static str> = Some("Write the per-level figures as CSV to FILE");
    const QUIET: &'static str = "No progress line, no table and no per-level server summaries \
        (the files are still written; errors still go to stderr)";
}

/// `webtune lab data`.
pub fn run_data(args: DataArgs) -> anyhow::Result<i32> {
    let DataChoice { posts, seed } = args.data;
    if args.checksum_only {
        let sum = data::checksum(posts, seed)?;
        return Ok(output::print_only(&format!("{sum:016x}\n")));
    }
    if let Some(path) = &args.users_csv {
        let shape = data::Shape::for_posts(posts)?;
        std::fs::write(path, app::users_csv(&shape, seed))
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        return Ok(output::print_only(&format!(
            "wrote {} accounts of the forum ({posts} posts, seed {seed}) to {}\n",
            shape.users,
            path.display()
        )));
    }
    let dataset = args.data.forum().dataset(&mut say_data_step)?;
    Ok(output::print_only(&webtune_lab::listing::dataset_text(
        &dataset,
    )))
}

/// A step of the forum's data build, on stderr.
pub fn say_data_step(step: &str) {
    eprintln!("lab data: {step}");
}

/// `webtune lab sweep STACK -c 8,32,…`: one trial over the connection levels.
pub fn run_sweep(args: SweepArgs) -> anyhow::Result<i32> {
    let request = SweepRequest {
        stack: args.stack.clone(),
        app: args.app.map(Into::into),
        set: args.set.clone(),
        data: args.data.forum(),
        scenario: args.scenario.clone(),
        path: args.path.clone(),
        connections: args.connections.clone(),
        duration: args.duration,
        warmup: args.warmup,
        cooldown: args.cooldown,
        pause: args.pause,
        threads: args.threads,
        timeout: args.timeout,
        sample_interval: args.sample_interval,
        keep: args.keep,
    };
    // Everything the user typed is checked before anything starts.
    request.check_levels()?;
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
        ("--csv", args.output.csv.as_deref()),
    ])?;
    let Swept { trial, app, path } = request.trial(&mut say_data_step)?;
    let stop = crate::signals::stop_token();
    let outcome = trial::run(&trial, &stop, &mut Narrator::new(args.output.quiet, true))?;
    let sweep = crate::sweeps::sweep_of(outcome, SweepVariable::Connections, "lab sweep");
    report_sweep(&args, app.into(), &trial.target, &path, &sweep)
}

fn report_sweep(
    args: &SweepArgs,
    app: App,
    target: &Target,
    path: &str,
    sweep: &SweepResult,
) -> anyhow::Result<i32> {
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.output.html {
        outputs.file("--html", dest, &render_sweep_html(sweep));
    }
    if let Some(dest) = &args.output.csv {
        outputs.file("--csv", dest, &render_sweep_csv(sweep));
    }
    // Last: "--json -" goes to stdout.
    if let Some(dest) = &args.output.json {
        outputs.file("--json", dest, &(sweep.to_json_pretty() + "\n"));
    }
    let json_to_stdout = args.output.json.as_deref() == Some("-");
    if !json_to_stdout && !args.output.quiet {
        let what = match app {
            App::Forum => format!(
                "the forum ({} posts, seed {})",
                args.data.posts, args.data.seed
            ),
            App::Site if path.is_empty() => "its scenario".to_string(),
            App::Site => path.to_string(),
        };
        let mut text = format!(
            "\nLab sweep: {} ({}) serving {what}; each level {:?}{}\n\n",
            target.name(),
            target.describe_settings(),
            args.duration,
            left_out(args.warmup, args.cooldown)
        );
        // The answer first, then the table behind it (issue 39).
        text.push_str(&webtune_report::sweep::sweep_verdict(sweep).text());
        text.push('\n');
        text.push_str(&seed_003_table(sweep));
        for level in &sweep.levels {
            if let Some(server) = &level.result.server {
                text.push_str(&format!(
                    "\n--- {} connections: server side ---\n",
                    level.level
                ));
                text.push_str(&summarise(server, level.result.responses));
            }
        }
        outputs.stdout(&text);
    }
    let unanswered = crate::sweeps::warn_unanswered(sweep, "lab sweep");
    let died = sweep
        .levels
        .iter()
        .any(|l| l.result.server.as_ref().is_some_and(|s| s.server_died()));
    Ok(outputs.exit_code(if sweep.interrupted {
        exit::INTERRUPTED
    } else if died {
        exit::TARGET_DOWN
    } else if unanswered {
        exit::NO_SUCCESS
    } else {
        exit::SUCCESS
    }))
}

/// ", of which the first 2s and the last 1s are left out", naming only the parts that are
/// not zero (nothing when neither is: "the last 0ns" said nothing).
fn left_out(warmup: std::time::Duration, cooldown: std::time::Duration) -> String {
    match (warmup.is_zero(), cooldown.is_zero()) {
        (true, true) => String::new(),
        (false, true) => format!(", of which the first {warmup:?} is left out"),
        (true, false) => format!(", of which the last {cooldown:?} is left out"),
        (false, false) => {
            format!(", of which the first {warmup:?} and the last {cooldown:?} are left out")
        }
    }
}
