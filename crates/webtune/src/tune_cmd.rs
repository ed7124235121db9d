//! `webtune tune`: flags mapped onto a `webtune_tuner::request::TuneRequest` (the load
//! after `--` resolved here, where its flags are parsed), progress narrated, the report
//! printed and written. What the request becomes (`TuneRequest::job`), the journal
//! (`resume::NewJournal`, `resume::open`), the loop, the search and the proof are the
//! libraries'; `resume` maps `--resume`/`--show` onto `webtune_tuner::resume`.

use crate::exit;
use crate::flags::bench::BenchArgsExt;
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use webtune_cli::flags::bench::parse_bench;
use webtune_cli::tune::TuneArgs;
use webtune_engine::Progress;
use webtune_lab::trial::{Level, LevelResult, Target, TrialEvents};
use webtune_lab::StackKind;
use webtune_search::journal::Journal;
use webtune_search::space::Config;
use webtune_tuner::driver;
use webtune_tuner::job::{Job, Listener};
use webtune_tuner::request::checks;
use webtune_tuner::request::{Load, ReportTo, TuneRequest};
use webtune_tuner::resume::NewJournal;

mod resume;

/// What the binary makes of `TuneArgs` (the grammar is `webtune_cli`'s; the mapping onto the
/// libraries is the binary's, hence a trait: a type of another crate takes no inherent `impl`).
pub trait TuneArgsExt {
    /// The request these flags make, with the load left to `load_of` (a resume compares
    /// the flags given with the journal's request before any load is read).
    fn request(&self) -> TuneRequest;
    /// The whole request: the flags with the load after `--` parsed (the fs stack reads
    /// `webtune fs`'s flags there, postfix `webtune smtp`'s, the others bench's).
    fn full_request(&self) -> anyhow::Result<TuneRequest>;
}

impl TuneArgsExt for TuneArgs {
    fn request(&self) -> TuneRequest {
        TuneRequest {
            stack: self.stack.clone(),
            params: self.params.clone(),
            set: self.set.clone(),
            app: crate::flags::forum::lab_app(self.app),
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

    fn full_request(&self) -> anyhow::Result<TuneRequest> {
        Ok(TuneRequest {
            load: load_of(self)?,
            ..self.request()
        })
    }
}

fn load_of(args: &TuneArgs) -> anyhow::Result<Load> {
    let stack = args.stack.as_deref().unwrap_or_default();
    if stack == webtune_lab::filesystem::NAME {
        let fs_args = webtune_cli::flags::fs::parse_fs(&args.bench)?;
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
