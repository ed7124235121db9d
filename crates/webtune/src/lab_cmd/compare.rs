//! `webtune lab compare STACK --a NAME=VALUE… --b NAME=VALUE… [-- BENCH FLAGS]`: two private
//! stacks from the same template, both running at once, measured by the decisive protocol
//! (`webtune_tuner::pair_request`, the arms checked and compared by `lab_pair`), restarted between `--starts`, the memory of two stacks
//! checked from the first one's before the second starts; reported as `compare --live`.
//! With `--nginx-config FILE` (or Apache's, php-fpm's) instead of a stack: two private copies
//! of the user's own config, `--a`/`--b` setting directives in each (none: as it is). With
//! `--app forum`: two forums (each a PHP stack with its own private database, `db.*`
//! settings going to the database), loaded with the forum's page mix or a `--scenario`.

use crate::decisive::report;
use crate::flags::bench::BenchArgsExt;
use crate::flags::bench::RequestArgsExt;
use crate::flags::compare::ProtocolArgsExt;
use webtune_cli::flags::bench::bench_args_with_path;
use webtune_cli::lab::compare::CompareArgs;
use webtune_lab::trial::ForumData;
use webtune_tuner::pair_request::PairRequest;

pub fn run(args: &CompareArgs) -> anyhow::Result<i32> {
    let config = super::own_config(
        &args.nginx_config,
        &args.apache_config,
        &args.php_fpm_config,
    );
    let request = PairRequest {
        stack: args.stack.clone(),
        config,
        app: crate::flags::forum::lab_app(args.app),
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
