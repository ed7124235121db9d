//! `webtune lab compare STACK --a NAME=VALUE… --b NAME=VALUE… [-- BENCH FLAGS]`: two private
//! stacks from the same template, both running at once, measured by the decisive protocol
//! (`webtune_tuner::pair_request`, the arms checked and compared by `lab_pair`), restarted between `--starts`, the memory of two stacks
//! checked from the first one's before the second starts; reported as `compare --live`.
//! With `--nginx-config FILE` (or Apache's, php-fpm's) instead of a stack: two private copies
//! of the user's own config, `--a`/`--b` setting directives in each (none: as it is). With
//! `--app forum`: two forums (each a PHP stack with its own private database, `db.*`
//! settings going to the database), loaded with the forum's page mix or a `--scenario`.

use crate::decisive::report;
use crate::flags::bench::bench_args_with_path;
use crate::flags::compare::ProtocolArgs;
use crate::flags::forum::App;
use webtune_lab::trial::ForumData;
use webtune_tuner::pair_request::PairRequest;

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
    /// them, and the spread between starts goes into the interval [default: one per 15 pairs
    /// the budget holds, at least 2 — 6 in 3 minutes of 1 s blocks]
    #[arg(long = "starts", value_name = "N")]
    pub starts: Option<usize>,
    /// Also write the comparison as a self-contained HTML page: each block's figure of both
    /// arms over time, and the interval narrowing pair by pair.
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<String>,
    #[command(flatten)]
    pub protocol: ProtocolArgs,
}

pub fn run(args: &CompareArgs) -> anyhow::Result<i32> {
    let config = super::own_config(
        &args.nginx_config,
        &args.apache_config,
        &args.php_fpm_config,
    );
    let request = PairRequest {
        stack: args.stack.clone(),
        config,
        app: args.app.into(),
        data: ForumData {
            posts: args.posts,
            seed: args.forum_seed,
        },
        a: args.a.clone(),
        b: args.b.clone(),
    };
    // Everything typed is checked before anything starts.
    let arms = request.arms()?;
    let bench = bench_args_with_path(&args.protocol.bench)?;
    let workload = bench.request.workload()?;
    let path = arms.path(bench.url.as_deref(), &workload)?;
    let mut template = bench.to_spec(&format!("http://127.0.0.1:1{path}"))?;
    template.url = path;
    let settings = args.protocol.settings(&template, args.starts)?;
    crate::output::check_all([
        ("--json", args.protocol.json.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    let control = crate::signals::stop_token();
    let (pair, notes) = arms.compare(
        &template,
        &workload,
        settings,
        &control,
        &mut |line| eprintln!("webtune: lab compare: {line}"),
        &mut super::forum::say_data_step,
    )?;
    report(
        (&arms.names[0], &arms.names[1]),
        &pair.outcome,
        (args.protocol.json.as_deref(), args.html.as_deref()),
        notes,
    )
}
