//! `lab compare`'s flags: two arms of one stack, the protocol's flags, the bench flags after `--`.

use crate::flags::compare::ProtocolArgs;
use crate::flags::forum::App;

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
    #[arg(long = "posts", default_value_t = webtune_model::defaults::SEED_003_POSTS, value_name = "N")]
    pub posts: u64,
    /// The forum generator's seed (--app forum; `--seed` is the blocks' order's).
    #[arg(long = "forum-seed", default_value_t = webtune_model::defaults::DEFAULT_FORUM_SEED, value_name = "N")]
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
