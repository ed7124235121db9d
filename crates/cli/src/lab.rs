//! `webtune lab`'s subcommands and flags (`lab run`'s in `run`, `lab compare`'s in `compare`,
//! the forum's `lab data` and `lab sweep` in `forum`).

pub mod compare;
pub mod forum;
pub mod run;

use std::path::PathBuf;
use std::time::Duration;
use webtune_model::parse_duration;

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
    pub command: LabCommand,
}

#[derive(clap::Subcommand)]
pub enum LabCommand {
    /// The stacks and what each needs installed.
    Stacks,
    /// Every tunable parameter of a stack: name, type, range, default, directive, meaning.
    Params {
        /// A stack from `webtune lab stacks`, or `mariadb` for the forum's database (db.*).
        #[arg(hide_possible_values = true)]
        stack: String,
    },
    /// Print the rendered configs of a stack (paths and ports are examples: each start
    /// picks its own directory and free ports).
    Config {
        /// A stack from `webtune lab stacks`.
        #[arg(hide_possible_values = true)]
        stack: String,
        /// Set a parameter (repeatable), e.g. --set MaxRequestWorkers=4.
        #[arg(long = "set", value_name = "NAME=VALUE", hide_possible_values = true)]
        set: Vec<String>,
    },
    /// Start a stack, load it (bench flags after --, paths relative to the stack), sample
    /// the server, stop it.
    Run(run::RunCmd),
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
pub struct RunArgs {
    /// A stack from `webtune lab stacks` (none with --nginx-config / --apache-config /
    /// --php-fpm-config).
    #[arg(
        required_unless_present_any = ["nginx_config", "apache_config", "php_fpm_config"],
        hide_possible_values = true
    )]
    pub stack: Option<String>,
    /// Run YOUR nginx config on a private copy: listen, pid, logs and temp paths are
    /// rewritten to private ones, the rest is kept; --set NAME=VALUE changes a directive.
    #[arg(
        long = "nginx-config",
        value_name = "FILE",
        conflicts_with_all = ["apache_config", "php_fpm_config"]
    )]
    pub nginx_config: Option<PathBuf>,
    /// Run YOUR Apache config (e.g. /etc/apache2/apache2.conf) on a private copy.
    #[arg(
        long = "apache-config",
        value_name = "FILE",
        conflicts_with = "php_fpm_config"
    )]
    pub apache_config: Option<PathBuf>,
    /// Run YOUR php-fpm config (php-fpm.conf with its pools, or one pool file) on a private
    /// copy behind the lab's nginx, which serves /cpu/US through its first pool; --set
    /// NAME=VALUE sets a key in that pool (e.g. pm.max_children=20).
    #[arg(long = "php-fpm-config", value_name = "FILE")]
    pub php_fpm_config: Option<PathBuf>,
    /// With --app forum: run the forum's database with a private copy of YOUR my.cnf
    /// (e.g. /etc/mysql/my.cnf; data directory, socket, port, logs made private) instead
    /// of the lab's; --set db.NAME=VALUE sets a server option in the copy.
    #[arg(long = "mysql-config", value_name = "FILE")]
    pub mysql_config: Option<PathBuf>,
    /// For the `external` stack only: its base URL, e.g. http://127.0.0.1:8080.
    pub url: Option<String>,
    /// Set a parameter (repeatable), e.g. --set MaxRequestWorkers=4.
    #[arg(long = "set", value_name = "NAME=VALUE", hide_possible_values = true)]
    pub set: Vec<String>,
    /// For `external`: the server's command name (repeatable, e.g. nginx, or nginx and
    /// php-fpm8.2). The process with that name that listens on the URL's port is sampled with
    /// all its children; another server of the same name (another user's nginx) is not.
    /// Several candidates are named in an error asking for --pid.
    #[arg(long = "process", value_name = "NAME")]
    pub processes: Vec<String>,
    /// For `external`: sample this process and all its children (repeatable), e.g. the
    /// master of the nginx you mean when several run.
    #[arg(long = "pid", value_name = "PID")]
    pub pids: Vec<i32>,
    /// Server-side sampling period.
    #[arg(long = "sample-interval", default_value = "250ms", value_parser = parse_duration,
          value_name = "DURATION")]
    pub sample_interval: Duration,
    /// Keep the stack's private directory (configs, logs) after it stops.
    #[arg(long = "keep")]
    pub keep: bool,
    /// What the stack serves: its built-in site, or seed 003's forum on a private MariaDB
    /// (then `--set db.NAME=VALUE` tunes the database, and without a path after -- the
    /// forum's 20/20/60 scenario is loaded).
    #[arg(long = "app", value_enum, default_value = "site")]
    pub app: crate::flags::forum::App,
    #[command(flatten)]
    pub data: crate::flags::forum::DataChoice,
    /// Pin the stack's processes to these CPUs, e.g. 1 or 0-1 (docs/lab.md, "Host knobs").
    #[arg(long = "server-cpus", value_name = "LIST")]
    pub server_cpus: Option<String>,
    /// Pin the generator's threads to these CPUs, e.g. 0.
    #[arg(long = "client-cpus", value_name = "LIST")]
    pub client_cpus: Option<String>,
    /// The front server listens on 127.0.0.1 … 127.0.0.N and the generator spreads its
    /// connections over them (seed 004 served on ten).
    #[arg(long = "addresses", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=254))]
    pub addresses: u32,
    /// For `fs` only: let the run change host-wide sysctls (vm.dirty_*); they are put
    /// back at the end, and by `webtune lab clean` after a crash.
    #[arg(long = "host-sysctl")]
    pub host_sysctl: bool,
    /// bench flags and the path to load, e.g. -- -c 20 -d 10s /cpu/2000 (for `fs`: `webtune
    /// fs`'s flags, e.g. -- --files 1000 --transactions 50000 --fsync transaction).
    #[arg(last = true, value_name = "BENCH FLAGS")]
    pub bench: Vec<String>,
}

#[derive(clap::Args)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub search: crate::flags::capacity::SearchArgs,
    #[command(flatten)]
    pub run: RunArgs,
}
