//! The forum's lab commands' flags: `lab data` and `lab sweep`.

use crate::flags::forum::{App, DataChoice};
use crate::output_flags::{OutputFlags, OutputHelp};
use std::path::PathBuf;
use std::time::Duration;
use webtune_model::parse_duration;

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
    #[arg(hide_possible_values = true)]
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
    #[arg(long = "set", value_name = "NAME=VALUE", hide_possible_values = true)]
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
