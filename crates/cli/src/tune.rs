//! `webtune tune`'s flags, and the same flags as a journal written before the request was
//! stored holds them (`StoredCommand`, the words after `webtune tune`).

use crate::output_flags::{OutputFlags, OutputHelp};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use webtune_model::defaults;
use webtune_model::parse_duration;

/// The help of tune's output flags.
#[derive(Debug, Clone)]
pub struct TuneOutput;

impl OutputHelp for TuneOutput {
    const JSON: &'static str = "Write the report (webtune.tune/1) as JSON to FILE (- for stdout)";
    const HTML: &'static str = "Write the HTML report to FILE";
    const QUIET: &'static str = "No progress lines";
}

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:\n  \
    webtune tune apache-prefork -- -c 20 -d 10s /cpu/20000\n  \
    webtune tune nginx-apache --param backend.MaxRequestWorkers=2..64 --param backend.KeepAlive=on,off \\\n      \
    --param frontend.worker_processes=1..4 --minimize p99 --slo 'errors<=0.1%' \\\n      \
    --trials 15 --journal seed000.db --html seed000.html -- -c 20 -d 10s /cpu/20000\n  \
    webtune tune nginx-php-fpm --app forum --levels 8,128,1024 --maximize throughput --slo 'p99<=500ms'\n  \
    webtune tune external --apply './apply.sh {workers} {keepalive}' --param workers=1..64 \\\n      \
    --param keepalive=on,off --maximize throughput -- -c 64 -d 5s http://127.0.0.1:8080/\n  \
    webtune tune --resume --journal seed000.db\n  \
    webtune tune --show --journal seed000.db\n\
Without --param a lab stack's default space is searched (`webtune lab params STACK` marks it).\n\
The default is measured twice first (the noise floor), then rules of thumb, a space-filling\n\
start and a Gaussian-process search. On a lab web stack each candidate runs at once with the\n\
incumbent (the best so far, the default at first) as two stacks, the load alternating in\n\
blocks for -d, and the search compares their ratio (--search-protocol interleaved; sequential\n\
measures each alone). After the search the proof: on a lab stack the default and the\n\
winner run at once as two stacks, the load alternating between them in 1 s blocks until an\n\
always-valid interval decides or --proof-budget ends (--protocol interleaved); with\n\
--protocol sequential (and for external) they run in turn, A B B A …, --confirm times each.\n\
The verdict says whether the gain is real. See docs/tuning.md.")]
pub struct TuneArgs {
    /// A lab stack (`webtune lab stacks`), or `external` for a server you run (then
    /// --apply and the URL after --).
    #[arg(hide_possible_values = true)]
    pub stack: Option<String>,
    /// A parameter to search (repeatable): NAME=LO..HI, NAME=LO..HI:log or NAME=a,b,c.
    #[arg(long = "param", value_name = "SPEC")]
    pub params: Vec<String>,
    /// A parameter every trial keeps (repeatable), e.g. --set KeepAlive=off.
    #[arg(long = "set", value_name = "NAME=VALUE", hide_possible_values = true)]
    pub set: Vec<String>,
    /// What the stack serves: the built-in site or seed 003's forum on a private MariaDB.
    #[arg(long = "app", value_enum, default_value = "site")]
    pub app: crate::flags::forum::App,
    #[command(flatten)]
    pub data: crate::flags::forum::DataChoice,
    /// Maximize successful responses per second (the default objective), or `delivered`:
    /// a mail stack's deliveries into its mailboxes per second (tune postfix).
    #[arg(
        long = "maximize",
        value_name = "throughput",
        conflicts_with = "minimize"
    )]
    pub maximize: Option<String>,
    /// Minimize a latency figure: p50, p90, p99, p999 or mean.
    #[arg(long = "minimize", value_name = "STAT")]
    pub minimize: Option<String>,
    /// A constraint every level must meet (repeatable): 'p99<=100ms', 'errors<=0.1%'.
    /// Without one on errors the tune holds them to 'errors<=1%' ('errors<=100%': no limit).
    #[arg(long = "slo", value_name = "EXPR")]
    pub slos: Vec<String>,
    /// Load levels: connection counts (or rates with --rate in the bench flags); the worst
    /// level counts.
    #[arg(long = "levels", value_delimiter = ',', value_name = "L1,L2,…")]
    pub levels: Vec<f64>,
    /// Measured runs in the search, re-measurements included (default 15; with --budget,
    /// at most 200, so the time decides).
    #[arg(long = "trials", value_name = "N")]
    pub trials: Option<usize>,
    /// Wall time for the search, e.g. 10m: no trial starts once the search's trials have
    /// taken this long (over every run of the tune; the journal keeps each trial's
    /// duration). The search ends at --budget or --trials, whichever comes first. New
    /// candidates are screened with runs of a third of -d (at least 2s) and only the
    /// promising ones run again at the full -d (successive halving).
    #[arg(long = "budget", value_parser = parse_duration, value_name = "DURATION")]
    pub budget: Option<Duration>,
    /// Seed the search with `webtune advise`'s configuration for the stack's config (its
    /// rules named in the journal and the report, which says whether they were right
    /// here). On by default for lab stacks.
    #[arg(long = "from-advice", overrides_with = "no_from_advice")]
    pub from_advice: bool,
    /// Do not seed the search from the advisor.
    #[arg(long = "no-from-advice", overrides_with = "from_advice")]
    pub no_from_advice: bool,
    /// Proof pairs (default and winner interleaved) after the search; 0 skips the proof.
    /// With --protocol sequential; giving --confirm without --protocol asks for the sequential
    /// proof [default: 5].
    #[arg(long = "confirm", value_name = "K")]
    pub confirm: Option<usize>,
    /// How the proof measures: interleaved (both stacks at once, alternating blocks until
    /// decided; the default for lab stacks) or sequential (--confirm pairs of whole runs;
    /// the default, and the only way, for external).
    #[arg(long = "protocol", value_name = "PROTOCOL",
          value_parser = ["interleaved", "sequential"])]
    pub protocol: Option<String>,
    /// How the search measures each candidate: interleaved (at once with the incumbent, the
    /// best so far, as two stacks, the load alternating in blocks for -d; the study is told
    /// the incumbent's figure times the pairs' ratio; the default for a lab web stack with
    /// one level and -d) or sequential (alone, one lab trial after another; always for
    /// external, fs and postfix).
    // A free word checked by the request (one line, exit 2), not clap's possible values.
    #[arg(long = "search-protocol", value_name = "interleaved|sequential")]
    pub search_protocol: Option<String>,
    /// The interleaved proof's time budget: it ends undecided when this runs out.
    #[arg(long = "proof-budget", default_value = defaults::DEFAULT_PROOF_BUDGET, value_parser = parse_duration,
          value_name = "DURATION")]
    pub proof_budget: Duration,
    /// SQLite journal of every trial (the tune resumes from it with --resume).
    #[arg(long = "journal", value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// Continue the tune in --journal (everything else comes from the journal; a larger
    /// --trials or another --apply-timeout is recorded there, other changes are refused).
    #[arg(long = "resume", requires = "journal")]
    pub resume: bool,
    /// Print the trials in --journal so far and the best; run nothing.
    #[arg(long = "show", requires = "journal", conflicts_with = "resume")]
    pub show: bool,
    /// external: the command that applies a configuration ({name} placeholders), exiting 0
    /// when the target is ready.
    #[arg(long = "apply", value_name = "CMD")]
    pub apply: Option<String>,
    /// external: the command run at the end (and on Ctrl-C) to put the server back.
    #[arg(long = "restore", value_name = "CMD")]
    pub restore: Option<String>,
    /// external: how long --apply (and --restore) may run before it is killed with its
    /// process group (the trial then fails).
    #[arg(long = "apply-timeout", default_value = defaults::DEFAULT_APPLY_TIMEOUT, value_parser = parse_duration,
          value_name = "DURATION")]
    pub apply_timeout: Duration,
    /// external: the server's current configuration, e.g. 'workers=8,keepalive=on' (the
    /// proof's default).
    #[arg(long = "baseline", value_name = "NAME=VALUE,…")]
    pub baseline: Option<String>,
    /// external: the server's command name (repeatable): the process with that name that
    /// listens on the URL's port is sampled with all its children, found again at every
    /// trial (--apply may restart it); several candidates are an error, never merged.
    #[arg(long = "process", value_name = "NAME")]
    pub processes: Vec<String>,
    /// Seed of the search (the same seed asks for the same configurations).
    #[arg(long = "search-seed", default_value_t = 0)]
    pub search_seed: u64,
    /// Server-side sampling period.
    #[arg(long = "sample-interval", default_value = defaults::DEFAULT_SAMPLE_INTERVAL, value_parser = parse_duration,
          value_name = "DURATION")]
    pub sample_interval: Duration,
    /// `fs` only: trials may change host-wide sysctls (vm.dirty_*), put back after each.
    #[arg(long = "host-sysctl")]
    pub host_sysctl: bool,
    #[command(flatten)]
    pub output: OutputFlags<TuneOutput>,
    /// bench flags and the path to load (a URL for external), e.g. -- -c 20 -d 10s /cpu/2000.
    #[arg(last = true, value_name = "BENCH FLAGS")]
    pub bench: Vec<String>,
}

/// `webtune tune …` as words: what journals written before the request was stored hold.
#[derive(Parser)]
#[command(name = "webtune tune", disable_version_flag = true)]
pub struct StoredCommand {
    #[command(flatten)]
    pub args: TuneArgs,
}
