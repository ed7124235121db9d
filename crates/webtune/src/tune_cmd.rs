//! `webtune tune`: flags mapped onto a `webtune_tuner::request::TuneRequest` (the load
//! after `--` resolved here, where its flags are parsed), progress narrated, the report
//! printed and written. What the request becomes (`TuneRequest::job`), the journal
//! (`resume::NewJournal`, `resume::open`), the loop, the search and the proof are the
//! libraries'; `resume` maps `--resume`/`--show` onto `webtune_tuner::resume`.

use crate::exit;
use crate::flags::bench::parse_bench;
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use crate::output_flags::{OutputFlags, OutputHelp};
use std::path::PathBuf;
use std::time::Duration;
use webtune_engine::Progress;
use webtune_lab::trial::{Level, LevelResult, Target, TrialEvents};
use webtune_lab::StackKind;
use webtune_model::parse_duration;
use webtune_search::journal::Journal;
use webtune_search::space::Config;
use webtune_tuner::driver;
use webtune_tuner::job::{Job, Listener};
use webtune_tuner::request::checks;
use webtune_tuner::request::{self, Load, ReportTo, TuneRequest};
use webtune_tuner::resume::NewJournal;

mod resume;

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
    #[arg(value_parser = crate::candidates::stacks(), hide_possible_values = true)]
    pub stack: Option<String>,
    /// A parameter to search (repeatable): NAME=LO..HI, NAME=LO..HI:log or NAME=a,b,c.
    #[arg(long = "param", value_name = "SPEC")]
    pub params: Vec<String>,
    /// A parameter every trial keeps (repeatable), e.g. --set KeepAlive=off.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = crate::candidates::parameters(), hide_possible_values = true)]
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
    #[arg(long = "proof-budget", default_value = request::DEFAULT_PROOF_BUDGET, value_parser = parse_duration,
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
    #[arg(long = "apply-timeout", default_value = request::DEFAULT_APPLY_TIMEOUT, value_parser = parse_duration,
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
    #[arg(long = "sample-interval", default_value = request::DEFAULT_SAMPLE_INTERVAL, value_parser = parse_duration,
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

impl TuneArgs {
    /// The request these flags make, with the load left to `load_of` (a resume compares
    /// the flags given with the journal's request before any load is read).
    pub(crate) fn request(&self) -> TuneRequest {
        TuneRequest {
            stack: self.stack.clone(),
            params: self.params.clone(),
            set: self.set.clone(),
            app: self.app.into(),
            posts: self.data.posts,
            seed: self.data.seed,
            maximize: self.maximize.clone(),
            minimize: self.minimize.clone(),
            slos: self.slos.clone(),
            levels: self.levels.clone(),
            trials: self.trials,
            budget: self.budget,
            from_advice: self.from_advice,
            no_from_advice: self.no_from_advice,
            confirm: self.confirm,
            protocol: self.protocol.clone(),
            proof_budget: self.proof_budget,
            search_protocol: self.search_protocol.clone(),
            apply: self.apply.clone(),
            restore: self.restore.clone(),
            apply_timeout: self.apply_timeout,
            baseline: self.baseline.clone(),
            processes: self.processes.clone(),
            search_seed: self.search_seed,
            sample_interval: self.sample_interval,
            host_sysctl: self.host_sysctl,
            bench: self.bench.clone(),
            load: Load::default(),
            report: ReportTo {
                json: self.output.json.clone(),
                html: self.output.html.clone(),
                quiet: self.output.quiet,
            },
            journal: self.journal.clone(),
            cwd: std::env::current_dir().ok(),
        }
    }

    /// The whole request: the flags with the load after `--` parsed (the fs stack reads
    /// `webtune fs`'s flags there, postfix `webtune smtp`'s, the others bench's).
    pub(crate) fn full_request(&self) -> anyhow::Result<TuneRequest> {
        Ok(TuneRequest {
            load: load_of(self)?,
            ..self.request()
        })
    }
}

fn load_of(args: &TuneArgs) -> anyhow::Result<Load> {
    let stack = args.stack.as_deref().unwrap_or_default();
    if stack == webtune_lab::filesystem::NAME {
        let fs_args = crate::flags::fs::parse_fs(&args.bench)?;
        let spec = crate::flags::fs::spec_of(&fs_args)?;
        webtune_fs::check::check(&spec).map_err(|e| anyhow::anyhow!("{e}"))?;
        return Ok(Load::Fs { spec });
    }
    if stack == StackKind::Postfix.name() {
        return Ok(Load::Mail {
            spec: crate::flags::smtp::tune_load(&args.bench)?,
        });
    }
    let bench = parse_bench(&args.bench)?;
    let spec = bench.to_spec("")?;
    Ok(Load::Http {
        spec,
        url: bench.url.clone(),
        scenario: bench.request.scenario.clone(),
        connections: bench.connections,
        body: bench.request.body.clone(),
        body_file: bench.request.body_file.clone(),
    })
}

pub fn run(mut args: TuneArgs) -> anyhow::Result<i32> {
    if args.resume || args.show {
        return resume::resume_or_show(&args);
    }
    fold_bench_outputs(&mut args)?;
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
    ])?;
    let request = args.full_request()?;
    let job = request.job(&mut |step| eprintln!("lab data: {step}"))?;
    if let Some(little) = checks::proof_power(request.confirm()) {
        // Before anything runs: a proof this small cannot show what it is run for.
        output::warn(&format!("warning: {little}"));
    }
    let mut journal = NewJournal::create(&request)?;
    let outcome = execute(&request, &job, &mut journal.journal, None);
    journal.finish();
    outcome
}

/// The output flags given after `--` among the bench flags (`--json`, `--html`, `-q`) are
/// the tune's, as before it (issue 39: they were parsed there and silently dropped). The
/// fs and mail stacks read other tools' flags there, left as they are.
pub(crate) fn fold_bench_outputs(args: &mut TuneArgs) -> anyhow::Result<()> {
    let stack = args.stack.as_deref().unwrap_or_default();
    if stack == webtune_lab::filesystem::NAME || stack == StackKind::Postfix.name() {
        return Ok(());
    }
    let bench = parse_bench(&args.bench)?;
    args.output
        .fold_in(&bench.output, "tune")
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Narrates a tune: one line per trial; the engine's live line while it runs.
struct TuneNarrator {
    inner: Narrator,
    quiet: bool,
}

impl TrialEvents for TuneNarrator {
    fn run_starting(&mut self, index: usize, count: usize, level: Level, run: u32, runs: u32) {
        self.inner.run_starting(index, count, level, run, runs);
    }
    fn progress(&mut self, progress: &Progress) {
        self.inner.progress(progress);
    }
    fn level_done(&mut self, index: usize, level: &LevelResult) {
        self.inner.level_done(index, level);
    }
    fn reaped(&mut self, lines: &[String]) {
        self.inner.reaped(lines);
    }
    fn starting(&mut self, _target: &Target) {}
    fn stopped(&mut self, _target: &Target) {}
}

impl Listener for TuneNarrator {
    fn trial_starting(&mut self, phase: &str, number: usize, of: usize, config: &Config) {
        if !self.quiet {
            // `of` 0: an open-ended search under --budget (no "trial 1/200").
            let count = if of == 0 {
                format!("{number}")
            } else {
                format!("{number}/{of}")
            };
            eprintln!("{phase} {count}: {}", webtune_search::space::render(config));
        }
    }
    fn trial_done(&mut self, line: &str) {
        if !self.quiet {
            eprintln!("  {line}");
        }
    }
}

pub(crate) fn execute(
    request: &TuneRequest,
    job: &Job,
    journal: &mut Journal,
    resumed: Option<&webtune_search::journal::Resumed>,
) -> anyhow::Result<i32> {
    let stop = crate::signals::stop_token();
    let to = &request.report;
    let mut narrator = TuneNarrator {
        inner: Narrator::new(to.quiet, false),
        quiet: to.quiet,
    };
    let finished = driver::run(job, journal, resumed, &stop, &mut narrator)?;
    let mut outputs = Outputs::new();
    if let Some(dest) = &to.html {
        outputs.file(
            "--html",
            dest,
            &webtune_report::tune_html::render_html(&finished.report),
        );
    }
    if let Some(dest) = &to.json {
        outputs.file("--json", dest, &(finished.report.to_json_pretty() + "\n"));
    }
    if to.json.as_deref() != Some("-") {
        let mut text = finished.report.render_text();
        if finished.interrupted {
            text.push_str(&match &request.journal {
                Some(path) => format!(
                    "\nInterrupted: continue with `webtune tune --resume --journal {}`\n",
                    path.display()
                ),
                None => "\nInterrupted (no --journal: give one to be able to resume)\n".into(),
            });
        }
        outputs.stdout(&text);
    }
    Ok(outputs.exit_code(if finished.interrupted {
        exit::INTERRUPTED
    } else if finished.report.best.is_none() {
        exit::NOTHING_FEASIBLE
    } else {
        exit::SUCCESS
    }))
}

pub(crate) fn show(
    request: &TuneRequest,
    job: &Job,
    resumed: &webtune_search::journal::Resumed,
    holder: Option<u32>,
) -> anyhow::Result<i32> {
    let report = driver::report_so_far(job, resumed);
    let mut text = report.render_text();
    match holder {
        Some(pid) => text.push_str(&format!(
            "a tune is running on this journal now ({}): {} trial(s) in flight\n",
            if pid == 0 {
                "pid unknown".to_string()
            } else {
                format!("pid {pid}")
            },
            resumed.lost.len()
        )),
        None if !resumed.lost.is_empty() => text.push_str(&format!(
            "{} trial(s) were in flight when the tune stopped (they run again on --resume)\n",
            resumed.lost.len()
        )),
        None => {}
    }
    let mut outputs = Outputs::new();
    if let Some(dest) = &request.report.json {
        outputs.file("--json", dest, &(report.to_json_pretty() + "\n"));
    }
    if request.report.json.as_deref() != Some("-") {
        outputs.stdout(&text);
    }
    Ok(outputs.exit_code(exit::SUCCESS))
}
