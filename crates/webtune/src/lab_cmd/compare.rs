//! `webtune lab compare STACK --a NAME=VALUE… --b NAME=VALUE… [-- BENCH FLAGS]`: two private
//! stacks from the same template, both running at once, measured by the decisive protocol
//! (`webtune_tuner::lab_pair`), restarted between `--starts`, the memory of two stacks
//! checked from the first one's before the second starts; reported as `compare --live`.
//! With `--nginx-config FILE` (or Apache's, php-fpm's) instead of a stack: two private copies
//! of the user's own config, `--a`/`--b` setting directives in each (none: as it is). With
//! `--app forum`: two forums (each a PHP stack with its own private database, `db.*`
//! settings going to the database), loaded with the forum's page mix or a `--scenario`.

use crate::decisive::report;
use crate::flags::bench::bench_args_with_path;
use crate::flags::compare::ProtocolArgs;
use crate::flags::forum::App;
use anyhow::{anyhow, bail};
use webtune_lab::forum::dbparams;
use webtune_lab::trial::path::{default_path, load_path, Served};
use webtune_lab::trial::Target;
use webtune_lab::trial::{import_config, ForumData};
use webtune_lab::{settings_for, StackKind};

#[derive(clap::Args)]
pub struct CompareArgs {
    /// A stack from `webtune lab stacks` (its built-in site); none with --nginx-config,
    /// --apache-config or --php-fpm-config.
    #[arg(required_unless_present_any = ["nginx_config", "apache_config", "php_fpm_config"])]
    pub stack: Option<String>,
    /// Compare two private copies of YOUR nginx config (--a/--b set directives in each).
    #[arg(long = "nginx-config", value_name = "FILE",
          conflicts_with_all = ["stack", "apache_config", "php_fpm_config"])]
    pub nginx_config: Option<std::path::PathBuf>,
    /// Compare two private copies of YOUR Apache config.
    #[arg(long = "apache-config", value_name = "FILE",
          conflicts_with_all = ["stack", "php_fpm_config"])]
    pub apache_config: Option<std::path::PathBuf>,
    /// Compare two private copies of YOUR php-fpm config (behind the lab's nginx).
    #[arg(long = "php-fpm-config", value_name = "FILE", conflicts_with = "stack")]
    pub php_fpm_config: Option<std::path::PathBuf>,
    /// Arm A's settings, NAME=VALUE (several after one --a, or --a repeated); none: the
    /// stack's defaults.
    #[arg(long = "a", num_args = 0.., value_name = "NAME=VALUE")]
    pub a: Vec<String>,
    /// Arm B's settings, NAME=VALUE.
    #[arg(long = "b", num_args = 0.., value_name = "NAME=VALUE")]
    pub b: Vec<String>,
    /// What both stacks serve: their built-in site, or seed 003's forum, each arm on its own
    /// private database (`db.NAME=VALUE` in --a/--b sets the database's parameters).
    #[arg(long = "app", value_enum, default_value_t = App::Site,
          conflicts_with_all = ["nginx_config", "apache_config", "php_fpm_config"])]
    pub app: App,
    /// The forum's posts (--app forum; seed 003: 150,000).
    #[arg(long = "posts", default_value_t = webtune_lab::forum::data::SEED_003_POSTS, value_name = "N")]
    pub posts: u64,
    /// The forum generator's seed (--app forum; `--seed` is the blocks' order's).
    #[arg(long = "forum-seed", default_value_t = webtune_lab::forum::data::DEFAULT_SEED, value_name = "N")]
    pub forum_seed: u64,
    /// Starts of both stacks: the budget is split over them, both are restarted between
    /// them, and the spread between starts goes into the interval.
    #[arg(long = "starts", default_value_t = 2, value_name = "N")]
    pub starts: usize,
    /// Also write the comparison as a self-contained HTML page: each block's figure of both
    /// arms over time, and the interval narrowing pair by pair.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<String>,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
}

fn name(stack: &str, set: &[String]) -> String {
    if set.is_empty() {
        format!("{stack} (defaults)")
    } else {
        format!("{stack} {}", set.join(" "))
    }
}

pub fn run(args: &CompareArgs) -> anyhow::Result<i32> {
    if let Some((server, file, flag)) = own_config(args) {
        return run_own(args, server, file, flag);
    }
    // Everything typed is checked before anything starts.
    let stack = args.stack.clone().unwrap_or_default();
    let kind = StackKind::from_name(&stack)?;
    if kind == StackKind::External || kind == StackKind::Postfix {
        bail!(
            "lab compare starts two stacks of the lab's web templates; {} is not one",
            kind.name()
        );
    }
    if args.app == App::Forum {
        return run_forum(args, kind);
    }
    let bench = bench_args_with_path(&args.protocol.bench)?;
    let workload = bench.request.workload()?;
    let path = load_path(
        bench.url.as_deref(),
        default_path(Served::Stack(kind), &workload),
    )?;
    let mut template = bench.to_spec(&format!("http://127.0.0.1:1{path}"))?;
    template.url = path;
    let settings = args.protocol.settings(&template, args.starts)?;
    let sets = [
        settings_for(kind, &args.a).map_err(|e| anyhow!("--a: {e}"))?,
        settings_for(kind, &args.b).map_err(|e| anyhow!("--b: {e}"))?,
    ];
    for s in &sets {
        webtune_lab::host::check_privilege(s)?;
    }
    crate::output::check_all([
        ("--json", args.protocol.json.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    let names = [name(&stack, &args.a), name(&stack, &args.b)];
    let control = crate::signals::stop_token();
    let pair = webtune_tuner::lab_pair::compare(
        kind,
        &sets,
        &template,
        &workload,
        settings,
        &control,
        &mut |line| eprintln!("webtune: lab compare: {line}"),
    )
    .map_err(|e| anyhow!("lab compare: {e}"))?;
    let notes = vec![
        pair.memory.clone(),
        "each block is a short run of its own: connections to the arm open in its discarded \
         first part, and the idle arm holds none; each start begins with one uncounted block \
         to each arm"
            .to_string(),
    ];
    report(
        (&names[0], &names[1]),
        &pair.outcome,
        (args.protocol.json.as_deref(), args.html.as_deref()),
        notes,
    )
}

/// `lab compare STACK --app forum --a … --b …`: two forums, each on its own database.
fn run_forum(args: &CompareArgs, kind: StackKind) -> anyhow::Result<i32> {
    let stack = kind.name();
    if !kind.has_php() {
        bail!("--app forum needs a stack with PHP; {stack} serves its own site (use --app site, or apache-prefork, nginx-php-fpm …)");
    }
    let bench = bench_args_with_path(&args.protocol.bench)?;
    let workload = bench.request.workload()?;
    // No path and no scenario: the forum's own page mix (seed 003's).
    let path = load_path(bench.url.as_deref(), "")?;
    let mut template = bench.to_spec(&format!("http://127.0.0.1:1{path}"))?;
    template.url = path;
    let settings = args.protocol.settings(&template, args.starts)?;
    let arm = |flag: &str,
               set: &[String]|
     -> anyhow::Result<(webtune_lab::Settings, webtune_lab::forum::DbConfig)> {
        let (web, db) = dbparams::split_assignments(set);
        let web = settings_for(kind, &web).map_err(|e| anyhow!("{flag}: {e}"))?;
        let db = dbparams::settings_for(&db).map_err(|e| anyhow!("{flag}: {e}"))?;
        webtune_lab::host::check_privilege(&web)?;
        Ok((web, db.into()))
    };
    let sets = [arm("--a", &args.a)?, arm("--b", &args.b)?];
    crate::output::check_all([
        ("--json", args.protocol.json.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    let forum = ForumData {
        posts: args.posts,
        seed: args.forum_seed,
    };
    let dataset = forum.dataset(&mut super::forum::say_data_step)?;
    let names = [name(stack, &args.a), name(stack, &args.b)];
    let targets = sets.map(|(web, db)| Target::Forum {
        kind,
        web,
        db,
        dataset: Box::new(dataset.clone()),
    });
    let control = crate::signals::stop_token();
    let pair = webtune_tuner::lab_pair::compare_targets(
        &targets,
        &template,
        &workload,
        settings,
        &control,
        &mut |line| eprintln!("webtune: lab compare: {line}"),
    )
    .map_err(|e| anyhow!("lab compare: {e}"))?;
    let notes = vec![
        pair.memory.clone(),
        format!(
            "each arm is the forum ({} posts, seed {}) on its own private MariaDB, copied from \
             the cached data at every start",
            args.posts, args.forum_seed
        ),
    ];
    report(
        (&names[0], &names[1]),
        &pair.outcome,
        (args.protocol.json.as_deref(), args.html.as_deref()),
        notes,
    )
}

/// The user's own config given instead of a stack, if any: its server, file and flag.
fn own_config(
    args: &CompareArgs,
) -> Option<(webtune_lab::import::Server, &std::path::Path, &'static str)> {
    use webtune_lab::import::Server;
    match (
        &args.nginx_config,
        &args.apache_config,
        &args.php_fpm_config,
    ) {
        (Some(f), _, _) => Some((Server::Nginx, f, "--nginx-config")),
        (None, Some(f), _) => Some((Server::Apache, f, "--apache-config")),
        (None, None, Some(f)) => Some((Server::PhpFpm, f, "--php-fpm-config")),
        (None, None, None) => None,
    }
}

/// `lab compare --nginx-config FILE --a … --b …`: two private copies of the user's config.
fn run_own(
    args: &CompareArgs,
    server: webtune_lab::import::Server,
    file: &std::path::Path,
    flag: &str,
) -> anyhow::Result<i32> {
    let bench = bench_args_with_path(&args.protocol.bench)?;
    let workload = bench.request.workload()?;
    let imports = [
        import_config(server, file, &args.a).map_err(|e| anyhow!("--a: {e:#}"))?,
        import_config(server, file, &args.b).map_err(|e| anyhow!("--b: {e:#}"))?,
    ];
    let path = load_path(
        bench.url.as_deref(),
        default_path(Served::Imported(&imports[0]), &workload),
    )?;
    let mut template = bench.to_spec(&format!("http://127.0.0.1:1{path}"))?;
    template.url = path;
    let settings = args.protocol.settings(&template, args.starts)?;
    crate::output::check_all([
        ("--json", args.protocol.json.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    let label = format!("{flag} {}", file.display());
    let names = [
        if args.a.is_empty() {
            format!("{label} (as it is)")
        } else {
            format!("{label} {}", args.a.join(" "))
        },
        if args.b.is_empty() {
            format!("{label} (as it is)")
        } else {
            format!("{label} {}", args.b.join(" "))
        },
    ];
    let control = crate::signals::stop_token();
    let mut start = |arm: usize| {
        let options = webtune_lab::StartOptions {
            interrupt: Some(control.clone()),
            ..webtune_lab::StartOptions::default()
        };
        webtune_lab::RunningStack::start_imported(&imports[arm], options)
            .map(webtune_tuner::lab_pair::Arm::from_stack)
            .map_err(|e| e.to_string())
    };
    let pair = webtune_tuner::lab_pair::compare_with(
        &mut start,
        &template,
        &workload,
        settings,
        &control,
        &mut |line| eprintln!("webtune: lab compare: {line}"),
    )
    .map_err(|e| anyhow!("lab compare: {e}"))?;
    let notes = vec![
        pair.memory.clone(),
        format!(
            "both arms are private copies of {} (never the running server)",
            file.display()
        ),
    ];
    report(
        (&names[0], &names[1]),
        &pair.outcome,
        (args.protocol.json.as_deref(), args.html.as_deref()),
        notes,
    )
}
