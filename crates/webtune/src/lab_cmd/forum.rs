//! `webtune lab … --app forum`: seed 003's workload. `lab data` generates and caches the
//! forum's data; `lab run STACK --app forum` and `lab sweep STACK --app forum -c …` start
//! the private MariaDB and a PHP-capable stack serving the forum, load it with the 20/20/60
//! scenario, sample the servers (the database included) and stop everything. The sweep
//! reports seed 003's figures per level — requests served, mean response time, error % —
//! with warm-up and cool-down left out, and the sampler's summary.

use super::{load_and_report, parse_bench, target_url, Load};
use crate::bench_cmd::{run_spec_quiet, write_output, BenchArgs, EXIT_INTERRUPTED};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::time::Duration;
use webtune_lab::forum::{self, data, dataset, dbparams, Dataset, DbOptions, ForumStack};
use webtune_lab::{settings_for, summarise, ProcessSelector, Sampler, StackKind, StartOptions};
use webtune_model::server::LogMessage;
use webtune_model::sweep::{SweepLevel, SweepResult, SweepVariable};
use webtune_model::{parse_duration, RunResult, StopToken};
use webtune_report::sweep::{find_knee, level_rows, render_sweep_csv, render_sweep_html};

/// The application a lab stack serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum App {
    /// The built-in site: /empty.gif, /index.html, /cpu/N.
    Site,
    /// Seed 003's PHP forum on a private MariaDB.
    Forum,
}

/// Which forum: its size and seed.
#[derive(clap::Args, Debug, Clone)]
pub struct DataChoice {
    /// Posts in the forum (seed 003: 150,000 posts; 40 forums, 15,000 topics, 5,000 users).
    #[arg(long = "posts", default_value_t = data::SEED_003_POSTS)]
    pub posts: u64,
    /// The generator's seed: the same seed gives the same forum.
    #[arg(long = "seed", default_value_t = data::DEFAULT_SEED)]
    pub seed: u64,
}

#[derive(clap::Args, Debug)]
pub struct DataArgs {
    #[command(flatten)]
    pub data: DataChoice,
    /// Only print the checksum of the generated data (nothing is written or loaded).
    #[arg(long = "checksum")]
    pub checksum_only: bool,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    webtune lab sweep apache-prefork --app forum -c 8,32,128,256,512,1024 -d 10s --html forum.html\n  \
    webtune lab sweep nginx-php-fpm --set pm=static --set pm.max_children=8 --set db.thread_cache_size=64 -c 8,32,128\n\
    Each level runs the 20/20/60 scenario (forum list, topic list page, thread) for -d, of\n\
    which --warmup and --cooldown are left out of the figures.\n\
    The defaults (--app forum, --warmup 2s, --cooldown 1s, --pause 1s) are seed 003's sweep of\n\
    freshly started servers; `webtune sweep URL` and `lab run` default to no warm-up and the\n\
    built-in site, as bench does. Give --app site to sweep the built-in site here.")]
pub struct SweepArgs {
    /// A PHP-capable stack: apache-prefork, apache-worker, apache-event, nginx-apache, nginx-php-fpm, …
    pub stack: String,
    /// What the stack serves: seed 003's forum (the default here: this command exists for
    /// its sweep) or the built-in site (`lab run`'s default) at --path.
    #[arg(long = "app", value_enum, default_value = "forum")]
    pub app: App,
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
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    #[command(flatten)]
    pub data: DataChoice,
    /// Another scenario file instead of the forum's own (rendered for --posts).
    #[arg(long = "scenario", value_name = "FILE")]
    pub scenario: Option<PathBuf>,
    /// For --app site: the path to load.
    #[arg(long = "path", default_value = "/cpu/2000")]
    pub path: String,
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
    /// Write the sweep (every level's full result, server samples included) as JSON.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// Write the HTML report (table, plots, every level) to FILE.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<String>,
    /// Write the per-level figures as CSV to FILE.
    #[arg(long = "csv", value_name = "FILE")]
    pub csv: Option<String>,
    /// Keep the stack's and the database's directories (configs, logs) after the stop.
    #[arg(long = "keep")]
    pub keep: bool,
    /// No progress line and no per-level server summaries.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// The `lab stacks` lines for `--app forum`: what it needs besides a PHP stack.
pub fn requirements_text() -> String {
    let needs: Vec<String> = forum::requirements()
        .into_iter()
        .map(|(what, found, package)| match found {
            Some(path) => format!("{} ({package})", path.display()),
            None => format!("{what} MISSING: apt-get install {package}"),
        })
        .collect();
    format!(
        "{:<20} seed 003's PHP forum on a private MariaDB, on any stack with PHP\n{:<20} needs: {}\n",
        "--app forum",
        "",
        needs.join(", ")
    )
}

/// Is this name the database's, for `lab params`?
pub fn is_database(name: &str) -> bool {
    matches!(name, "mariadb" | "db" | "database")
}

/// `webtune lab data`.
pub fn run_data(args: DataArgs) -> anyhow::Result<i32> {
    let DataChoice { posts, seed } = args.data;
    if args.checksum_only {
        let sum = data::checksum(posts, seed)?;
        println!("{sum:016x}");
        return Ok(0);
    }
    let dataset = ensure_dataset(posts, seed)?;
    print!("{}", describe_dataset(&dataset));
    Ok(0)
}

fn ensure_dataset(posts: u64, seed: u64) -> anyhow::Result<Dataset> {
    let dataset = dataset::ensure(posts, seed, &DbOptions::database(), &mut |step| {
        eprintln!("lab data: {step}")
    })?;
    Ok(dataset)
}

fn describe_dataset(d: &Dataset) -> String {
    let s = &d.summary;
    format!(
        "forum data: {} posts, {} topics (longest {} posts), {} forums in {} categories, {} users; seed {}\n\
         checksum {:016x} over {:.1} MB of generated rows (schema v{})\n\
         MariaDB {} data directory: {} ({:.0} MB), {}\n",
        s.shape.posts,
        s.shape.topics,
        s.longest_topic_posts,
        s.shape.forums,
        s.shape.categories,
        s.shape.users,
        s.seed,
        s.checksum,
        s.bytes as f64 / 1e6,
        s.schema_version,
        d.server_version,
        d.dir.display(),
        d.data_bytes as f64 / 1e6,
        if d.built_now {
            format!("built now in {:.1} s", d.build_seconds)
        } else {
            format!("from the cache (built in {:.1} s)", d.build_seconds)
        }
    )
}

/// The stack, its settings and the database's, all checked before anything starts.
struct Plan {
    stack: StackKind,
    web: webtune_lab::Settings,
    db: webtune_lab::Settings,
    /// Both together, as the result records them (`server.parameters`).
    all: webtune_lab::Settings,
}

fn plan(stack: &str, set: &[String]) -> anyhow::Result<Plan> {
    let stack = StackKind::from_name(stack)?;
    if !stack.has_php() {
        bail!(
            "--app forum needs a stack with PHP; {} has none (use apache-prefork, apache-worker, apache-event, nginx-apache or nginx-php-fpm)",
            stack.name()
        );
    }
    let (web, db) = dbparams::split_assignments(set);
    let web = settings_for(stack, &web)?;
    let db = dbparams::settings_for(&db)?;
    let pairs: Vec<(String, String)> = set
        .iter()
        .map(|a| webtune_lab::parse_assignment(a))
        .collect::<Result<_, _>>()?;
    let specs = [stack.parameters(), dbparams::parameters()].concat();
    let all = webtune_lab::Settings::from_assignments(stack.name(), &specs, &pairs)?;
    Ok(Plan {
        stack,
        web,
        db,
        all,
    })
}

fn describe_settings(plan: &Plan) -> String {
    let web = plan.web.describe_changes();
    let db = plan.db.describe_changes();
    match (web.as_str(), db.as_str()) {
        ("defaults", "defaults") => "defaults".into(),
        (_, "defaults") => web,
        ("defaults", _) => db,
        _ => format!("{web} {db}"),
    }
}

/// Start the database and the stack with the forum; None when interrupted.
fn start_forum(
    plan: &Plan,
    dataset: &Dataset,
    keep: bool,
    interrupt: &StopToken,
) -> anyhow::Result<Option<ForumStack>> {
    eprintln!(
        "lab: starting {} with the forum ({}) on MariaDB {}",
        plan.stack.name(),
        describe_settings(plan),
        dataset.server_version
    );
    let start = StartOptions {
        keep_dir: keep,
        interrupt: Some(interrupt.clone()),
        ..StartOptions::default()
    };
    let db_options = DbOptions {
        keep_dir: keep,
        interrupt: Some(interrupt.clone()),
        ..DbOptions::database()
    };
    match ForumStack::start(plan.stack, &plan.web, &plan.db, dataset, start, db_options) {
        Ok(forum) => {
            eprintln!(
                "lab: {} ready at {} (sessions {:?}; database socket {})",
                plan.stack.name(),
                forum.base_url(),
                forum.sessions(),
                forum
                    .database()
                    .map(|d| d.database().socket().display().to_string())
                    .unwrap_or_default()
            );
            Ok(Some(forum))
        }
        Err(webtune_lab::LabError::Interrupted) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn stop_forum(forum: ForumStack, stack: StackKind) -> anyhow::Result<()> {
    forum
        .stop()
        .with_context(|| format!("stopping {} and its database", stack.name()))?;
    eprintln!(
        "lab: {} and its database stopped; no process of them is left",
        stack.name()
    );
    Ok(())
}

/// Write the forum's scenario for this dataset into `dir` and return its path.
fn write_scenario(dir: &Path, dataset: &Dataset, base_url: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join("forum-scenario.toml");
    std::fs::write(
        &path,
        forum::app::scenario(&dataset.summary.shape, base_url),
    )
    .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// `webtune lab run STACK --app forum -- BENCH FLAGS`: without a path or --scenario in
/// the bench flags, the forum's own scenario is loaded.
pub fn run_forum(
    stack: &str,
    set: &[String],
    data_choice: &DataChoice,
    bench_words: &[String],
    sample_interval: Duration,
    keep: bool,
) -> anyhow::Result<i32> {
    let plan = plan(stack, set)?;
    let mut bench = parse_bench(bench_words)?;
    bench.to_spec("")?; // a run that would measure nothing is refused before the start
    let dataset = ensure_dataset(data_choice.posts, data_choice.seed)?;
    let interrupt = crate::signals::stop_token();
    let Some(forum) = start_forum(&plan, &dataset, keep, &interrupt)? else {
        eprintln!("lab: interrupted; stack and database stopped");
        return Ok(EXIT_INTERRUPTED);
    };
    let outcome = (|| {
        let base = forum.base_url();
        let url = if bench.request.scenario.is_none() && bench.url.is_none() {
            let dir = forum
                .stack()
                .map(|s| s.private_dir().to_path_buf())
                .context("internal: the stack is gone")?;
            bench.request.scenario = Some(write_scenario(&dir, &dataset, &base)?);
            base
        } else {
            target_url(&base, bench.url.as_deref(), "/")?
        };
        load_and_report(Load {
            stack: plan.stack,
            settings: &plan.all,
            bench: &bench,
            url,
            selector: ProcessSelector::Sessions(forum.sessions()),
            sample_interval,
            running: forum.stack(),
            interrupt: Some(&interrupt),
            host: &webtune_lab::HostSettings::default(),
        })
    })();
    stop_forum(forum, plan.stack)?;
    if interrupt.stop_requested() {
        return outcome.map(|_| EXIT_INTERRUPTED);
    }
    outcome
}

/// The bench flags of one level.
fn level_bench(
    args: &SweepArgs,
    connections: u32,
    scenario: Option<&Path>,
) -> anyhow::Result<BenchArgs> {
    let mut words: Vec<String> = vec![
        "-c".into(),
        connections.to_string(),
        "-d".into(),
        format!("{}ms", args.duration.as_millis()),
        "--warmup".into(),
        format!("{}ms", args.warmup.as_millis()),
        "--cooldown".into(),
        format!("{}ms", args.cooldown.as_millis()),
        "--timeout".into(),
        format!("{}ms", args.timeout.as_millis()),
    ];
    if let Some(t) = args.threads {
        words.extend(["-t".into(), t.to_string()]);
    }
    if let Some(path) = scenario {
        words.extend(["--scenario".into(), path.display().to_string()]);
    }
    parse_bench(&words)
}

/// `webtune lab sweep STACK --app forum -c 8,32,…`.
pub fn run_sweep(args: SweepArgs) -> anyhow::Result<i32> {
    // Everything the user typed is checked before anything starts.
    if args.connections.contains(&0) {
        bail!("-c levels must be at least 1, e.g. -c 8,32,128");
    }
    if let Some(path) = &args.scenario {
        webtune_engine::scenario::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    for &c in &args.connections {
        level_bench(&args, c, args.scenario.as_deref())?.to_spec("http://127.0.0.1:1/")?;
    }
    if args.app == App::Site {
        return run_site_sweep(args);
    }
    let plan = plan(&args.stack, &args.set)?;
    let dataset = ensure_dataset(args.data.posts, args.data.seed)?;
    let interrupt = crate::signals::stop_token();
    let Some(forum) = start_forum(&plan, &dataset, args.keep, &interrupt)? else {
        eprintln!("lab: interrupted; stack and database stopped");
        return Ok(EXIT_INTERRUPTED);
    };
    let base = forum.base_url();
    let measured = (|| {
        let scenario = match &args.scenario {
            Some(p) => p.clone(),
            None => {
                let dir = forum
                    .stack()
                    .map(|s| s.private_dir().to_path_buf())
                    .context("internal: the stack is gone")?;
                write_scenario(&dir, &dataset, &base)?
            }
        };
        sweep_levels(
            &args,
            &Watched {
                stack: plan.stack,
                settings: &plan.all,
                selector: ProcessSelector::Sessions(forum.sessions()),
                logs: &|| forum.log_messages(),
            },
            &base,
            Some(&scenario),
            &interrupt,
        )
    })();
    stop_forum(forum, plan.stack)?;
    let sweep = measured?;
    report_sweep(&args, plan.stack, &describe_settings(&plan), &sweep)
}

fn run_site_sweep(args: SweepArgs) -> anyhow::Result<i32> {
    let stack = StackKind::from_name(&args.stack)?;
    if stack == StackKind::External {
        bail!("lab sweep starts its stack; for a server you run use `webtune sweep URL`");
    }
    let settings = settings_for(stack, &args.set)?;
    let interrupt = crate::signals::stop_token();
    let options = StartOptions {
        keep_dir: args.keep,
        interrupt: Some(interrupt.clone()),
        ..StartOptions::default()
    };
    eprintln!(
        "lab: starting {} ({})",
        stack.name(),
        settings.describe_changes()
    );
    let running = match webtune_lab::RunningStack::start(stack, &settings, options) {
        Ok(r) => r,
        Err(webtune_lab::LabError::Interrupted) => return Ok(EXIT_INTERRUPTED),
        Err(e) => return Err(e.into()),
    };
    let url = target_url(&running.base_url(), Some(&args.path), "/")?;
    let measured = sweep_levels(
        &args,
        &Watched {
            stack,
            settings: &settings,
            selector: ProcessSelector::Sessions(running.sessions()),
            logs: &|| running.log_messages(),
        },
        &url,
        None,
        &interrupt,
    );
    running.stop()?;
    eprintln!("lab: {} stopped; no process of it is left", stack.name());
    report_sweep(&args, stack, &settings.describe_changes(), &measured?)
}

/// Run every level against `url` (with the scenario, if any), sampling `selector`.
/// The running servers a sweep watches: the stack, its configuration (recorded in every
/// level's result), the processes the sampler reads and the logs it collects.
struct Watched<'a> {
    stack: StackKind,
    settings: &'a webtune_lab::Settings,
    selector: ProcessSelector,
    logs: &'a dyn Fn() -> Vec<LogMessage>,
}

fn sweep_levels(
    args: &SweepArgs,
    watched: &Watched,
    url: &str,
    scenario: Option<&Path>,
    interrupt: &StopToken,
) -> anyhow::Result<SweepResult> {
    let Watched {
        stack,
        settings,
        selector,
        logs,
    } = watched;
    let mut logged_before: Vec<LogMessage> = Vec::new();
    let mut sweep = SweepResult::new(
        &format!("webtune {}", env!("CARGO_PKG_VERSION")),
        SweepVariable::Connections,
    );
    let count = args.connections.len();
    for (i, &connections) in args.connections.iter().enumerate() {
        if i > 0 && !args.pause.is_zero() {
            std::thread::sleep(args.pause);
        }
        let spec = level_bench(args, connections, scenario)?.to_spec(url)?;
        let label = format!("[{}/{count} c={connections}] ", i + 1);
        let sampler = Sampler::start(stack.name(), selector.clone(), args.sample_interval);
        let outcome = run_spec_quiet(&spec, &label, args.quiet);
        let mut samples = sampler.finish();
        samples.parameters = settings
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        samples.parameters_set = settings.explicitly_set().to_vec();
        // The servers' logs grow over the sweep: each level keeps what it added.
        let logged = logs();
        samples.log_messages = new_messages(&logged, &logged_before);
        logged_before = logged;
        let (mut result, interrupted) = outcome?;
        result.server = Some(samples);
        eprintln!("  {}", level_line(connections, &result));
        sweep.levels.push(SweepLevel {
            level: f64::from(connections),
            result,
        });
        if interrupted || interrupt.stop_requested() {
            sweep.interrupted = true;
            eprintln!(
                "lab sweep: interrupted: keeping the {} level(s) measured",
                sweep.levels.len()
            );
            break;
        }
    }
    let rows = level_rows(&sweep);
    sweep.knee = find_knee(&rows).map(|i| rows[i].level);
    Ok(sweep)
}

/// The messages of `now` minus what `before` already counted.
fn new_messages(now: &[LogMessage], before: &[LogMessage]) -> Vec<LogMessage> {
    now.iter()
        .filter_map(|m| {
            let seen = before
                .iter()
                .filter(|b| b.server == m.server && b.level == m.level && b.message == m.message)
                .map(|b| b.count)
                .sum::<u64>();
            (m.count > seen).then(|| LogMessage {
                count: m.count - seen,
                ..m.clone()
            })
        })
        .collect()
}

fn level_line(connections: u32, r: &RunResult) -> String {
    format!(
        "c={connections}: {} served, {:.1}/s, mean {:.1} ms, p99 {:.1} ms, errors {:.2}%{}",
        r.responses,
        r.requests_per_s,
        r.latency.total.mean_us / 1000.0,
        r.latency.total.p99_us as f64 / 1000.0,
        r.error_ratio() * 100.0,
        body_check_note(r)
    )
}

fn body_check_note(r: &RunResult) -> String {
    let failed = r.errors.get(webtune_model::ErrorKind::BodyCheck);
    if failed > 0 {
        format!(" ({failed} body checks failed)")
    } else {
        String::new()
    }
}

/// Seed 003's table: per level the requests served, mean response time and error %, with
/// warm-up and cool-down left out, plus throughput and p99.
pub fn seed_003_table(sweep: &SweepResult) -> String {
    let rows = level_rows(sweep);
    let knee = find_knee(&rows);
    let mut table = vec![[
        "connections".to_string(),
        "served".into(),
        "req/s".into(),
        "mean ms".into(),
        "p50 ms".into(),
        "p99 ms".into(),
        "errors %".into(),
        String::new(),
    ]];
    for (i, level) in sweep.levels.iter().enumerate() {
        let r = &level.result;
        table.push([
            format!("{}", level.level),
            r.responses.to_string(),
            format!("{:.1}", r.requests_per_s),
            format!("{:.1}", r.latency.total.mean_us / 1000.0),
            format!("{:.1}", r.latency.total.p50_us as f64 / 1000.0),
            format!("{:.1}", r.latency.total.p99_us as f64 / 1000.0),
            format!("{:.2}", r.error_ratio() * 100.0),
            if Some(i) == knee {
                "<- knee".into()
            } else {
                String::new()
            },
        ]);
    }
    let mut widths = [0usize; 8];
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 7 {
                line.push_str(&format!("  {cell}"));
            } else {
                line.push_str(&format!(
                    "{}{cell:>w$}",
                    if c == 0 { "" } else { "  " },
                    w = widths[c]
                ));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    match knee {
        Some(i) => out.push_str(&format!(
            "Knee: {} connections — beyond it throughput grows by less than 5% while p99 keeps growing.\n",
            rows[i].level
        )),
        None => out.push_str("No knee: throughput grew by 5% or more at every step (or p99 did not grow).\n"),
    }
    out
}

fn report_sweep(
    args: &SweepArgs,
    stack: StackKind,
    settings: &str,
    sweep: &SweepResult,
) -> anyhow::Result<i32> {
    let json_to_stdout = args.json.as_deref() == Some("-");
    if !json_to_stdout {
        let what = match args.app {
            App::Forum => format!(
                "the forum ({} posts, seed {})",
                args.data.posts, args.data.seed
            ),
            App::Site => args.path.clone(),
        };
        println!(
            "\nLab sweep: {} ({settings}) serving {what}; each level {:?}, of which the first {:?} and the last {:?} are left out\n",
            stack.name(),
            args.duration,
            args.warmup,
            args.cooldown
        );
        print!("{}", seed_003_table(sweep));
        if !args.quiet {
            for level in &sweep.levels {
                if let Some(server) = &level.result.server {
                    println!("\n--- {} connections: server side ---", level.level);
                    print!("{}", summarise(server, level.result.responses));
                }
            }
        }
    }
    if let Some(dest) = &args.json {
        write_output(dest, &(sweep.to_json_pretty() + "\n"))?;
    }
    if let Some(dest) = &args.html {
        write_output(dest, &render_sweep_html(sweep))?;
    }
    if let Some(dest) = &args.csv {
        write_output(dest, &render_sweep_csv(sweep))?;
    }
    let died = sweep
        .levels
        .iter()
        .any(|l| l.result.server.as_ref().is_some_and(|s| s.server_died()));
    Ok(if sweep.interrupted {
        EXIT_INTERRUPTED
    } else if died {
        super::EXIT_SERVER_DIED
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str, count: u64) -> LogMessage {
        LogMessage {
            server: "mariadbd".into(),
            level: "warn".into(),
            message: text.into(),
            count,
        }
    }

    #[test]
    fn each_level_keeps_only_the_log_lines_it_added() {
        let before = vec![message("a", 2), message("b", 1)];
        let now = vec![message("a", 5), message("b", 1), message("c", 1)];
        let added = new_messages(&now, &before);
        assert_eq!(added, vec![message("a", 3), message("c", 1)]);
        assert!(new_messages(&before, &before).is_empty());
    }

    #[test]
    fn bench_flags_of_a_level_parse() {
        let args = SweepArgs::try_parse_from_words(&["apache-prefork", "-c", "8,32"]);
        let bench = level_bench(&args, 32, Some(Path::new("/tmp/x.toml"))).unwrap();
        assert_eq!(bench.connections, Some(32));
        assert_eq!(bench.duration, Some(Duration::from_secs(10)));
        assert_eq!(bench.request.warmup, Some(Duration::from_secs(2)));
        assert_eq!(bench.request.cooldown, Some(Duration::from_secs(1)));
        assert_eq!(
            bench.request.scenario.as_deref(),
            Some(Path::new("/tmp/x.toml"))
        );
    }

    impl SweepArgs {
        fn try_parse_from_words(words: &[&str]) -> SweepArgs {
            #[derive(clap::Parser)]
            struct Wrapper {
                #[command(flatten)]
                args: SweepArgs,
            }
            use clap::Parser;
            let argv = std::iter::once("lab-sweep").chain(words.iter().copied());
            Wrapper::try_parse_from(argv).unwrap().args
        }
    }
}
