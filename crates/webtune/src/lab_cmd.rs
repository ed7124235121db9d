//! `webtune lab`: list the stacks and their parameters, print rendered configs, start a
//! real stack, load it with the engine while the /proc sampler watches the server, stop it
//! leaving no process behind, and reap what a killed run left (`lab clean`).

mod forum;

use crate::bench_cmd::{self, BenchArgs, EXIT_INTERRUPTED};
use anyhow::{bail, Context};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;
use webtune_lab::{
    settings_for, summarise, Layout, ProcessSelector, Programs, RunningStack, Sampler, Settings,
    StackKind, StartOptions,
};
use webtune_model::{parse_duration, StopToken};

#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    webtune lab stacks\n  \
    webtune lab params apache-prefork\n  \
    webtune lab run apache-prefork --set MaxRequestWorkers=4 --set KeepAlive=off -- -c 20 -d 10s /cpu/2000\n  \
    webtune lab config nginx-apache --set backend.MaxRequestWorkers=4\n  \
    webtune lab run external http://127.0.0.1:8080 --process nginx -- -c 50 -d 10s /\n  \
    webtune lab data --posts 150000 --seed 3\n  \
    webtune lab sweep apache-prefork --app forum -c 8,32,128,256,512,1024 -d 10s --html forum.html\n  \
    webtune lab params mariadb\n  \
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
        stack: String,
    },
    /// Print the rendered configs of a stack (paths and ports are examples: each start
    /// picks its own directory and free ports).
    Config {
        /// A stack from `webtune lab stacks`.
        stack: String,
        /// Set a parameter (repeatable), e.g. --set MaxRequestWorkers=4.
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
    },
    /// Start a stack, load it (bench flags after --, paths relative to the stack), sample
    /// the server, stop it.
    Run(RunArgs),
    /// Generate seed 003's forum data (deterministic for a seed) and cache it loaded into
    /// a MariaDB data directory, so lab runs with --app forum start at once.
    Data(forum::DataArgs),
    /// Start a stack (with --app forum: and its database), run one load level after the
    /// other (seed 003: -c 8,32,128,256,512,1024), sample the servers, stop everything.
    Sweep(forum::SweepArgs),
    /// Stop anything a killed webtune run left behind (and remove its files).
    Clean,
}

#[derive(clap::Args)]
struct RunArgs {
    /// A stack from `webtune lab stacks`.
    stack: String,
    /// For the `external` stack only: its base URL, e.g. http://127.0.0.1:8080.
    url: Option<String>,
    /// Set a parameter (repeatable), e.g. --set MaxRequestWorkers=4.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// For `external`: sample the processes with this command name (repeatable).
    #[arg(long = "process", value_name = "NAME")]
    processes: Vec<String>,
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
    app: forum::App,
    #[command(flatten)]
    data: forum::DataChoice,
    /// bench flags and the path to load, e.g. -- -c 20 -d 10s /cpu/2000.
    #[arg(last = true, value_name = "BENCH FLAGS")]
    bench: Vec<String>,
}

/// The bench flags given after `--`, parsed by bench's own definition.
#[derive(Parser)]
#[command(name = "webtune lab run STACK --", disable_version_flag = true)]
struct BenchLine {
    #[command(flatten)]
    bench: BenchArgs,
}

pub fn run(args: LabArgs) -> anyhow::Result<i32> {
    match args.command {
        LabCommand::Stacks => {
            print!("{}", stacks_text());
            Ok(0)
        }
        LabCommand::Params { stack } if forum::is_database(&stack) => {
            print!(
                "{}",
                params_table(&webtune_lab::forum::dbparams::parameters())
            );
            Ok(0)
        }
        LabCommand::Params { stack } => {
            print!("{}", params_text(StackKind::from_name(&stack)?));
            Ok(0)
        }
        LabCommand::Config { stack, set } => {
            print!("{}", config_text(StackKind::from_name(&stack)?, &set)?);
            Ok(0)
        }
        LabCommand::Run(run) => run_stack(run),
        LabCommand::Data(data) => forum::run_data(data),
        LabCommand::Sweep(sweep) => forum::run_sweep(sweep),
        LabCommand::Clean => clean(),
    }
}

fn stacks_text() -> String {
    let programs = Programs::discover();
    let mut out = String::new();
    for stack in StackKind::all() {
        out.push_str(&format!("{:<20} {}\n", stack.name(), stack.summary()));
        let needs: Vec<String> = stack
            .requirements()
            .iter()
            .map(|r| {
                let found = match r.program {
                    "nginx" => programs.nginx.clone(),
                    "apache2" => programs.apache2.clone(),
                    "php-fpm" => programs.php_fpm.clone(),
                    "openssl" => ["/usr/bin/openssl", "/usr/local/bin/openssl"]
                        .into_iter()
                        .map(std::path::PathBuf::from)
                        .find(|p| p.exists()),
                    _ => programs.mod_php.clone(),
                };
                match found {
                    Some(path) => format!("{} ({})", path.display(), r.package),
                    None => format!("{} MISSING: apt-get install {}", r.program, r.package),
                }
            })
            .collect();
        if needs.is_empty() {
            out.push_str(&format!("{:<20} needs: nothing (a server you run)\n", ""));
        } else {
            out.push_str(&format!("{:<20} needs: {}\n", "", needs.join(", ")));
        }
    }
    out.push_str(&forum::requirements_text());
    out
}

fn params_text(stack: StackKind) -> String {
    let params = stack.parameters();
    if params.is_empty() {
        return format!(
            "{} has no parameters: the lab does not configure it\n",
            stack.name()
        );
    }
    params_table(&params)
}

/// Parameters as a table: name, type, range, default, directive, meaning.
fn params_table(params: &[webtune_lab::ParamSpec]) -> String {
    let rows: Vec<[String; 6]> = params
        .iter()
        .map(|p| {
            [
                p.name.clone(),
                p.kind.type_name().to_string(),
                p.kind.allowed(),
                p.default.to_string(),
                p.directive.to_string(),
                p.meaning.to_string(),
            ]
        })
        .collect();
    let header = ["name", "type", "range", "default", "directive", "meaning"].map(String::from);
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(rows.iter()) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i == 5 {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn config_text(stack: StackKind, set: &[String]) -> anyhow::Result<String> {
    if stack == StackKind::External {
        bail!("the external stack has no config: the lab does not start it");
    }
    let settings = settings_for(stack, set)?;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let base = PathBuf::from(format!("/tmp/webtune-lab-{uid}"));
    let layout = Layout {
        dir: base.join(format!("{}-example", stack.name())),
        docroot: base.join(format!("{}-example.www", stack.name())),
        ports: (0..stack.components().len() as u16)
            .map(|i| 8080 + i)
            .collect(),
        privileged: uid == 0,
    };
    let rendered = webtune_lab::render(stack, &settings, &layout, &Programs::discover())?;
    let mut out = format!(
        "# {} with {} (directory and ports are examples; each start picks its own)\n",
        stack.name(),
        settings.describe_changes()
    );
    for (name, text) in &rendered.configs {
        out.push_str(&format!("\n# ===== {name} =====\n{text}"));
    }
    out.push_str("\n# ===== commands =====\n");
    for plan in &rendered.servers {
        let args: Vec<String> = plan
            .run_args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        out.push_str(&format!(
            "# {}: {} {}\n",
            plan.label,
            plan.program.display(),
            args.join(" ")
        ));
    }
    Ok(out)
}

fn parse_bench(words: &[String]) -> anyhow::Result<BenchArgs> {
    let argv = std::iter::once("webtune lab run STACK --".to_string()).chain(words.iter().cloned());
    match BenchLine::try_parse_from(argv) {
        Ok(line) => Ok(line.bench),
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            bail!(
                "bench flags after --: {} (see webtune bench --help)",
                first.trim_start_matches("error: ")
            )
        }
    }
}

/// The URL to load: the stack's base URL joined with the path given after --.
fn target_url(base: &str, given: Option<&str>, default_path: &str) -> anyhow::Result<String> {
    let path = given.unwrap_or(default_path);
    if path.is_empty() {
        return Ok(base.trim_end_matches('/').to_string());
    }
    if path.contains("://") {
        bail!("give a path after -- (e.g. /cpu/2000), not a URL: the lab picks the address");
    }
    if !path.starts_with('/') {
        bail!("the path after -- must start with '/', e.g. /empty.gif");
    }
    Ok(format!("{}{path}", base.trim_end_matches('/')))
}

fn run_stack(args: RunArgs) -> anyhow::Result<i32> {
    if args.app == forum::App::Forum {
        if args.url.is_some() || !args.processes.is_empty() {
            bail!("--app forum starts its own stack: no URL and no --process");
        }
        return forum::run_forum(
            &args.stack,
            &args.set,
            &args.data,
            &args.bench,
            args.sample_interval,
            args.keep,
        );
    }
    let stack = StackKind::from_name(&args.stack)?;
    // Everything the user typed is checked before anything starts.
    let settings = settings_for(stack, &args.set)?;
    let bench = parse_bench(&args.bench)?;
    bench.to_spec("")?; // a run that would measure nothing is refused before the start
    if stack == StackKind::External {
        if !args.set.is_empty() {
            bail!("--set does not apply to the external stack: the lab does not configure it");
        }
        let base = args.url.as_deref().context(
            "the external stack needs its URL: webtune lab run external http://HOST:PORT -- ...",
        )?;
        let url = if bench.url.is_some() {
            target_url(base, bench.url.as_deref(), "/")?
        } else {
            base.to_string()
        };
        let selector = if args.processes.is_empty() {
            ProcessSelector::Nothing
        } else {
            ProcessSelector::Names(args.processes.clone())
        };
        return load_and_report(Load {
            stack,
            settings: &settings,
            bench: &bench,
            url,
            selector,
            sample_interval: args.sample_interval,
            running: None,
            interrupt: None,
        });
    }
    if args.url.is_some() {
        bail!(
            "a URL only goes with the external stack; for {} give the path after --, e.g. -- /cpu/2000",
            stack.name()
        );
    }
    if !args.processes.is_empty() {
        bail!("--process is for the external stack; lab stacks sample their own processes");
    }

    // A stop signal while the stack starts abandons the start; during the load it stops the
    // run; either way the stack is stopped below.
    let interrupt = crate::signals::stop_token();
    eprintln!(
        "lab: starting {} ({})",
        stack.name(),
        settings.describe_changes()
    );
    let options = StartOptions {
        keep_dir: args.keep,
        interrupt: Some(interrupt.clone()),
        ..StartOptions::default()
    };
    let running = match RunningStack::start(stack, &settings, options) {
        Ok(r) => r,
        Err(webtune_lab::LabError::Interrupted) => {
            eprintln!("lab: interrupted; stack stopped");
            return Ok(EXIT_INTERRUPTED);
        }
        Err(e) => return Err(e.into()),
    };
    for line in &running.reaped().reaped {
        eprintln!("lab: reaped a stack a killed webtune left: {line}");
    }
    eprintln!(
        "lab: {} ready at {} (sessions {:?}, dir {})",
        stack.name(),
        running.base_url(),
        running.sessions(),
        running.private_dir().display()
    );
    if interrupt.stop_requested() {
        running.stop()?;
        return Ok(EXIT_INTERRUPTED);
    }
    // With a scenario, the URL is its base: the scenario's requests carry the paths.
    let default_path = if bench.request.scenario.is_some() {
        ""
    } else if stack.has_php() {
        "/cpu/2000"
    } else {
        "/empty.gif"
    };
    let url = target_url(&running.base_url(), bench.url.as_deref(), default_path)?;
    let selector = ProcessSelector::Sessions(running.sessions());
    let outcome = load_and_report(Load {
        stack,
        settings: &settings,
        bench: &bench,
        url,
        selector,
        sample_interval: args.sample_interval,
        running: Some(&running),
        interrupt: Some(&interrupt),
    });
    let dir = running.private_dir().to_path_buf();
    let stopped = running.stop();
    match (&outcome, stopped) {
        (_, Err(e)) => {
            return Err(anyhow::Error::new(e).context(format!(
                "stopping {} (files kept in {})",
                stack.name(),
                dir.display()
            )))
        }
        (_, Ok(())) => eprintln!("lab: {} stopped; no process of it is left", stack.name()),
    }
    if interrupt.stop_requested() {
        return outcome.map(|_| EXIT_INTERRUPTED);
    }
    outcome
}

/// Exit status of a lab run (or sweep) during which a server's main process died: the
/// results were printed, but they describe a broken stack (docs/lab.md).
pub const EXIT_SERVER_DIED: i32 = 3;

/// One load of a stack: what to load and how to watch it.
struct Load<'a> {
    stack: StackKind,
    settings: &'a Settings,
    bench: &'a BenchArgs,
    url: String,
    selector: ProcessSelector,
    sample_interval: Duration,
    running: Option<&'a RunningStack>,
    /// The process's stop token, when a stack was started for this load.
    interrupt: Option<&'a StopToken>,
}

/// Load the URL with the bench flags while the sampler watches the server, then print the
/// bench report and the server-side summary and write the JSON when asked.
fn load_and_report(load: Load) -> anyhow::Result<i32> {
    let Load {
        stack,
        settings,
        bench,
        url,
        selector,
        sample_interval,
        running,
        interrupt,
    } = load;
    // A probe path is relative to the stack, like the load's path.
    let mut bench = bench.clone();
    if let Some(probe) = bench.request.probe.clone() {
        if probe.starts_with('/') {
            let base = url_base(&url);
            bench.request.probe = Some(format!("{base}{probe}"));
        }
    }
    let mut spec = bench.to_spec(&url)?;
    // A TLS stack's load trusts the lab's own certificate unless told otherwise.
    if let Some(cert) = running.and_then(|r| r.certificate()) {
        if !spec.tls.insecure && spec.tls.cacert.is_none() {
            spec.tls.cacert = Some(cert.display().to_string());
        }
    }
    let sampler = Sampler::start(stack.name(), selector, sample_interval);
    // A stop asked for while the stack started: no load at all.
    if interrupt.is_some_and(|stop| stop.stop_requested()) {
        drop(sampler);
        eprintln!("lab: interrupted before the load began");
        return Ok(EXIT_INTERRUPTED);
    }
    // Repeats load the same running stack, one after the other, as `bench --repeat` does.
    let outcome = bench_cmd::run_repeats(&spec, &bench, &format!("{} ", stack.name()));
    let mut samples = sampler.finish();
    let (mut result, interrupted) = outcome?;
    samples.parameters = settings
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    samples.parameters_set = settings.explicitly_set().to_vec();
    if let Some(r) = running {
        samples.log_messages = r.log_messages();
    }
    result.server = Some(samples);
    let header = match running {
        Some(r) => format!(
            "Lab stack: {} ({}) at {}\n",
            stack.name(),
            settings.describe_changes(),
            r.base_url()
        ),
        None => String::new(),
    };
    let footer = match &result.server {
        Some(server) => format!("\n{}", summarise(server, result.responses)),
        None => String::new(),
    };
    bench_cmd::emit(&result, &bench, &header, &footer)?;
    let died = result.server.as_ref().is_some_and(|s| s.server_died());
    Ok(if interrupted {
        EXIT_INTERRUPTED
    } else if died {
        EXIT_SERVER_DIED
    } else {
        0
    })
}

/// `http://host:port` of a URL (everything before the path).
fn url_base(url: &str) -> &str {
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    match url[after_scheme..].find('/') {
        Some(i) => &url[..after_scheme + i],
        None => url,
    }
}

fn clean() -> anyhow::Result<i32> {
    let root = webtune_lab::lab_root()?;
    let report = webtune_lab::clean_stale(&root);
    for line in &report.reaped {
        println!("reaped {line}");
    }
    let live = webtune_lab::registry::entries(&root)
        .into_iter()
        .filter(|e| e.owner_alive())
        .count();
    if report.is_empty() {
        println!("nothing to clean in {}", root.display());
    }
    if live > 0 {
        println!("{live} stack(s) of running webtune processes left alone");
    }
    if !report.survivors.is_empty() {
        eprintln!(
            "webtune: process(es) {:?} survived SIGKILL (zombies or another user's?)",
            report.survivors
        );
        return Ok(1);
    }
    Ok(0)
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

    #[test]
    fn paths_join_the_stack_address() {
        assert_eq!(
            target_url("http://127.0.0.1:8080", Some("/cpu/2000"), "/").unwrap(),
            "http://127.0.0.1:8080/cpu/2000"
        );
        assert_eq!(
            target_url("http://127.0.0.1:8080/", None, "/empty.gif").unwrap(),
            "http://127.0.0.1:8080/empty.gif"
        );
        assert!(target_url("http://127.0.0.1:8080", Some("http://x/"), "/").is_err());
        assert!(target_url("http://127.0.0.1:8080", Some("cpu"), "/").is_err());
        assert_eq!(
            target_url("http://127.0.0.1:8080/", None, "").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            url_base("http://127.0.0.1:8080/cpu/1"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(url_base("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }

    #[test]
    fn params_and_stacks_list_everything() {
        let text = params_text(StackKind::from_name("apache-prefork").unwrap());
        assert!(text.contains("MaxRequestWorkers"));
        assert!(text.contains("1..=20000"));
        assert!(stacks_text().contains("nginx-apache"));
        let conf = config_text(
            StackKind::from_name("nginx-apache").unwrap(),
            &["backend.MaxRequestWorkers=4".to_string()],
        )
        .unwrap();
        assert!(conf.contains("MaxRequestWorkers 4"));
        assert!(conf.contains("proxy_pass http://backend;"));
    }
}
