//! `webtune tune`: flags mapped onto a `webtune_tuner::job::Job`, the journal opened or
//! resumed, progress narrated, the report printed and written. The loop, the search, the
//! proof and the journal are the tune crate's; the trials are the lab's. A resume runs the
//! stored command as it was (`resume`: in its directory, refusing flags that would change
//! it, recording a larger `--trials`).

use crate::bench_cmd::available_cores;
use crate::exit;
use crate::lab_cmd::{load_path, parse_bench};
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use crate::output_flags::{OutputFlags, OutputHelp};
use anyhow::{bail, Context};
use std::path::PathBuf;
use std::time::Duration;
use webtune_engine::Progress;
use webtune_lab::trial::{Level, LevelResult, Target, TrialEvents};
use webtune_lab::StackKind;
use webtune_model::parse_duration;
use webtune_tune::journal::Journal;
use webtune_tune::space::{Config, Space};
use webtune_tune::study::StudySettings;
use webtune_tuner::driver::{self, Subject};
use webtune_tuner::job::{Job, Listener, ProofProtocol};
use webtune_tuner::rules;

mod fs;
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
start and a Gaussian-process search; after it the proof: on a lab stack the default and the\n\
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
    pub app: crate::lab_cmd::forum::App,
    #[command(flatten)]
    pub data: crate::lab_cmd::forum::DataChoice,
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
    /// The interleaved proof's time budget: it ends undecided when this runs out.
    #[arg(long = "proof-budget", default_value = "3m", value_parser = parse_duration,
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
    #[arg(long = "apply-timeout", default_value = "10m", value_parser = parse_duration,
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
    #[arg(long = "sample-interval", default_value = "250ms", value_parser = parse_duration,
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

/// The trials a search may run without --trials: 15, or 200 under a --budget of time.
pub fn default_trials(budget: bool) -> usize {
    if budget {
        200
    } else {
        15
    }
}

impl TuneArgs {
    /// `--confirm`: the sequential proof's pairs (5 unless given; 0 skips any proof).
    pub fn confirm(&self) -> usize {
        self.confirm.unwrap_or(5)
    }

    /// --trials, or its default.
    pub fn trials(&self) -> usize {
        self.trials
            .unwrap_or_else(|| default_trials(self.budget.is_some()))
    }
}

pub fn run(mut args: TuneArgs) -> anyhow::Result<i32> {
    if args.resume || args.show {
        return resume::resume_or_show(&args);
    }
    fold_bench_outputs(&mut args)?;
    let argv: Vec<String> = std::env::args().skip(2).collect();
    let prepared = prepare(&args)?;
    if let Some(little) = rules::proof_power(args.confirm()) {
        // Before anything runs: a proof this small cannot show what it is run for.
        output::warn(&format!("warning: {little}"));
    }
    let journal_path = args.journal.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("webtune-tune-{}.db", std::process::id()))
    });
    if journal_path.exists() {
        if let Some(pid) = webtune_tune::lock::JournalLock::holder(&journal_path) {
            return Err(webtune_tune::JournalError::Locked {
                path: journal_path.display().to_string(),
                holder: Some(pid).filter(|p| *p != 0),
            }
            .into());
        }
        bail!(
            "journal {} exists: continue it with --resume, or name a new one",
            journal_path.display()
        );
    }
    let command = resume::command_json(&argv, std::env::current_dir().ok().as_deref());
    let mut journal = Journal::create(&journal_path, &command, args.search_seed)?;
    let outcome = execute(&args, prepared, &mut journal, None);
    if args.journal.is_none() {
        let _ = std::fs::remove_file(&journal_path);
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", journal_path.display()));
        }
    }
    outcome
}

/// The output flags given after `--` among the bench flags (`--json`, `--html`, `-q`) are
/// the tune's, as before it (issue 39: they were parsed there and silently dropped). The
/// fs and mail stacks read other tools' flags there, left as they are.
pub(crate) fn fold_bench_outputs(args: &mut TuneArgs) -> anyhow::Result<()> {
    let stack = args.stack.as_deref().unwrap_or_default();
    if stack == webtune_lab::fsys::NAME || stack == StackKind::Postfix.name() {
        return Ok(());
    }
    let bench = parse_bench(&args.bench)?;
    args.output
        .fold_in(&bench.output, "tune")
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Everything checked and built before anything starts.
pub(crate) struct Prepared {
    job: Job,
}

pub(crate) fn prepare(args: &TuneArgs) -> anyhow::Result<Prepared> {
    let stack_name = args
        .stack
        .as_deref()
        .context("name the stack to tune (webtune lab stacks), or external")?;
    let rules::Goal {
        objective,
        slos,
        capacity,
    } = rules::goal(
        args.maximize.as_deref(),
        args.minimize.as_deref(),
        &args.slos,
        !args.levels.is_empty(),
    )?;
    rules::check_trials(args.trials())?;
    if args.budget.is_some_and(|b| b.is_zero()) {
        bail!("--budget must be above zero, e.g. --budget 10m");
    }
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
    ])?;
    if stack_name == webtune_lab::fsys::NAME {
        return fs::prepare(args, objective, slos, capacity.is_some());
    }
    let stack = StackKind::from_name(stack_name)?;
    // The mail stack's load is `webtune smtp`'s flags (see lab_cmd::mail).
    if objective == webtune_tune::objective::Objective::MaximizeDelivered
        && stack != StackKind::Postfix
    {
        bail!("--maximize delivered is a mail stack's figure: tune postfix");
    }
    let mail_load = match stack {
        StackKind::Postfix => Some(crate::lab_cmd::mail::tune_load(&args.bench)?),
        _ => None,
    };
    let bench = parse_bench(if mail_load.is_some() {
        &[]
    } else {
        &args.bench
    })?;
    bench.to_spec("")?;
    let fixed: Vec<(String, String)> = args
        .set
        .iter()
        .map(|a| webtune_lab::parse_assignment(a))
        .collect::<Result<_, _>>()?;
    let workload = bench.request.workload()?;
    let (subject, path) = if stack == StackKind::External {
        rules::check_external(
            args.apply.as_deref(),
            !args.params.is_empty(),
            args.apply_timeout,
        )?;
        let url = bench.url.clone().context(
            "tune external needs the URL after --, e.g. -- -c 64 -d 5s http://127.0.0.1:8080/",
        )?;
        (
            Subject::External {
                base_url: url,
                processes: args.processes.clone(),
                apply: args.apply.clone().unwrap_or_default(),
                restore: args.restore.clone(),
                timeout: args.apply_timeout,
            },
            String::new(),
        )
    } else {
        rules::check_lab_stack(
            args.apply.is_some() || args.restore.is_some() || args.baseline.is_some(),
        )?;
        let default_path =
            crate::lab_cmd::default_path(crate::lab_cmd::Served::Stack(stack), &workload);
        match args.app {
            crate::lab_cmd::forum::App::Forum => {
                rules::check_forum(stack)?;
                let path = match (&bench.url, workload.scenario()) {
                    (None, None) => String::new(),
                    (given, _) => load_path(given.as_deref(), "")?,
                };
                let dataset =
                    crate::lab_cmd::forum::ensure_dataset(args.data.posts, args.data.seed)?;
                (
                    Subject::Forum {
                        kind: stack,
                        fixed: fixed.clone(),
                        dataset: Box::new(dataset),
                    },
                    path,
                )
            }
            crate::lab_cmd::forum::App::Site => (
                Subject::Stack {
                    kind: stack,
                    fixed: fixed.clone(),
                },
                load_path(bench.url.as_deref(), default_path)?,
            ),
        }
    };
    let baseline: Vec<(String, String)> = match &args.baseline {
        Some(text) => text
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                webtune_lab::parse_assignment(p.trim())
                    .map_err(|e| anyhow::anyhow!("--baseline: {e}"))
            })
            .collect::<anyhow::Result<_>>()?,
        None => Vec::new(),
    };
    let cores = available_cores();
    let texts = if args.params.is_empty() {
        subject.default_params(cores)
    } else {
        args.params.clone()
    };
    let catalogue = match &subject {
        Subject::External { .. } => driver::external_catalogue(&texts, &baseline),
        _ => subject.catalogue(),
    };
    let mut space = Space::parse(&texts, &catalogue)?;
    space.inert = subject.inert_rules(&space);
    if texts.is_empty() || space.params.is_empty() {
        bail!("nothing to tune: give --param NAME=LO..HI");
    }
    rules::check_fixed(&fixed, &space)?;
    let mut seeds = subject.rules_of_thumb(&space, cores);
    let advice = match (&subject, args.no_from_advice || mail_load.is_some()) {
        (Subject::External { .. }, _) => {
            if args.from_advice {
                bail!("--from-advice reads a lab stack's config: tune external has none (drop it)");
            }
            None
        }
        (_, true) => None,
        (_, false) => Some(
            webtune_tuner::advice::advice_seeds(&subject, &space).unwrap_or_else(|why| {
                webtune_tune::advised::Advice {
                    seeds: Vec::new(),
                    notes: vec![format!("the advisor did not run: {why}")],
                }
            }),
        ),
    };
    if let Some(a) = &advice {
        seeds = webtune_tuner::advice::with_advice(a, seeds);
    }
    let mut load = match mail_load {
        Some(spec) if capacity.is_none() => spec,
        Some(_) => bail!("tune postfix searches --maximize delivered or throughput, not capacity"),
        None => bench.to_spec(&path)?,
    };
    if let Some(c) = &capacity {
        // Every step of every trial: open loop at the search's rate, -c as the cap.
        load.connections = bench
            .connections
            .unwrap_or(webtune_model::spec::OPEN_LOOP_CONNECTIONS);
        load.load = webtune_model::LoadMode::Open {
            rate: c.search.start_rps,
            arrival: webtune_model::Arrival::Uniform,
        };
        load.validate()?;
    }
    let levels = levels_of(&args.levels, load.is_open_loop())?;
    let settings = StudySettings {
        budget: args.trials(),
        seed: args.search_seed,
        screen: driver::screening(&load, args.budget.is_some(), capacity.is_some()),
        ..StudySettings::default()
    };
    Ok(Prepared {
        job: Job {
            subject,
            load,
            workload,
            levels,
            sample_interval: args.sample_interval,
            space,
            objective,
            slos,
            seeds,
            advice,
            settings,
            confirm: args.confirm(),
            protocol: proof_protocol(args, stack == StackKind::External)?,
            capacity,
            time_budget: args.budget,
        },
    })
}

/// `--protocol` (interleaved by default for a lab stack, sequential otherwise) with the
/// interleaved proof's settings.
fn proof_protocol(args: &TuneArgs, external: bool) -> anyhow::Result<ProofProtocol> {
    let interleaved = match args.protocol.as_deref() {
        Some("interleaved") if external => {
            bail!("--protocol interleaved needs two servers at once; tune external has one (use sequential)")
        }
        Some(p) => p == "interleaved",
        // `--confirm K` is the sequential proof's own flag: asking for K pairs asks for it.
        None => !external && args.confirm.is_none(),
    };
    if !interleaved {
        return Ok(ProofProtocol::Sequential);
    }
    let mut s = webtune_tune::interleave::Settings::new(
        webtune_tune::interleave::block::Metric::Throughput,
    );
    s.budget_s = args.proof_budget.as_secs_f64();
    s.starts = 1;
    s.validate()
        .map_err(|e| anyhow::anyhow!("--proof-budget: {e}"))?;
    Ok(ProofProtocol::Interleaved(s))
}

fn levels_of(levels: &[f64], open_loop: bool) -> anyhow::Result<Vec<Level>> {
    if levels.is_empty() {
        return Ok(vec![Level::AsSpecified]);
    }
    levels
        .iter()
        .map(|&l| {
            if !(l.is_finite() && l > 0.0) {
                bail!("--levels must be positive numbers, e.g. --levels 8,128,1024");
            }
            Ok(if open_loop {
                Level::Rate(l)
            } else {
                if l.fract() != 0.0 || l > f64::from(u32::MAX) {
                    bail!("--levels are connection counts (whole numbers) without --rate");
                }
                Level::Connections(l as u32)
            })
        })
        .collect()
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
            eprintln!("{phase} {count}: {}", webtune_tune::space::render(config));
        }
    }
    fn trial_done(&mut self, line: &str) {
        if !self.quiet {
            eprintln!("  {line}");
        }
    }
}

pub(crate) fn execute(
    args: &TuneArgs,
    prepared: Prepared,
    journal: &mut Journal,
    resumed: Option<&webtune_tune::journal::Resumed>,
) -> anyhow::Result<i32> {
    let stop = crate::signals::stop_token();
    let mut narrator = TuneNarrator {
        inner: Narrator::new(args.output.quiet, false),
        quiet: args.output.quiet,
    };
    let finished = driver::run(&prepared.job, journal, resumed, &stop, &mut narrator)?;
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.output.html {
        outputs.file(
            "--html",
            dest,
            &webtune_tune::html::render_html(&finished.report),
        );
    }
    if let Some(dest) = &args.output.json {
        outputs.file("--json", dest, &(finished.report.to_json_pretty() + "\n"));
    }
    if args.output.json.as_deref() != Some("-") {
        let mut text = finished.report.render_text();
        if finished.interrupted {
            text.push_str(&match &args.journal {
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
    args: &TuneArgs,
    prepared: Prepared,
    resumed: &webtune_tune::journal::Resumed,
    holder: Option<u32>,
) -> anyhow::Result<i32> {
    let report = driver::report_so_far(&prepared.job, resumed);
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
    if let Some(dest) = &args.output.json {
        outputs.file("--json", dest, &(report.to_json_pretty() + "\n"));
    }
    if args.output.json.as_deref() != Some("-") {
        outputs.stdout(&text);
    }
    Ok(outputs.exit_code(exit::SUCCESS))
}
