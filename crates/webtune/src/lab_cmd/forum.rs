//! `webtune lab … --app forum`: seed 003's workload. `lab data` generates and caches the
//! forum's data; `lab run STACK --app forum` and `lab sweep STACK --app forum -c …` start
//! the private MariaDB and a PHP-capable stack serving the forum, load it with the 20/20/60
//! scenario, sample the servers (the database included) and stop everything. The sweep
//! reports seed 003's figures per level — requests served, mean response time, error % —
//! with warm-up and cool-down left out, and the sampler's summary.

use crate::exit;
use crate::flags::forum::DataChoiceExt;
use crate::narrate::Narrator;
use crate::output::{self, Outputs};
use webtune_cli::flags::forum::{App, DataChoice};
use webtune_cli::lab::forum::{DataArgs, SweepArgs};
use webtune_lab::forum::{app, data};
use webtune_lab::trial::{self, SweepRequest, Swept, Target};
use webtune_model::sweep::{SweepResult, SweepVariable};
use webtune_report::forum::seed_003_table;
use webtune_report::server_summary::summarise;
use webtune_report::sweep::{render_sweep_csv, render_sweep_html};

/// `webtune lab data`.
pub fn run_data(args: DataArgs) -> anyhow::Result<i32> {
    let DataChoice { posts, seed } = args.data;
    if args.checksum_only {
        let sum = data::checksum(posts, seed)?;
        return Ok(output::print_only(&format!("{sum:016x}\n")));
    }
    if let Some(path) = &args.users_csv {
        let shape = data::Shape::for_posts(posts)?;
        std::fs::write(path, app::users_csv(&shape, seed))
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        return Ok(output::print_only(&format!(
            "wrote {} accounts of the forum ({posts} posts, seed {seed}) to {}\n",
            shape.users,
            path.display()
        )));
    }
    let dataset = args.data.forum().dataset(&mut say_data_step)?;
    Ok(output::print_only(&webtune_lab::listing::dataset_text(
        &dataset,
    )))
}

/// A step of the forum's data build, on stderr.
pub fn say_data_step(step: &str) {
    eprintln!("lab data: {step}");
}

/// `webtune lab sweep STACK -c 8,32,…`: one trial over the connection levels.
pub fn run_sweep(args: SweepArgs) -> anyhow::Result<i32> {
    let request = SweepRequest {
        stack: args.stack.clone(),
        app: args.app.map(crate::flags::forum::lab_app),
        set: args.set.clone(),
        data: args.data.forum(),
        scenario: args.scenario.clone(),
        path: args.path.clone(),
        connections: args.connections.clone(),
        duration: args.duration,
        warmup: args.warmup,
        cooldown: args.cooldown,
        pause: args.pause,
        threads: args.threads,
        timeout: args.timeout,
        sample_interval: args.sample_interval,
        keep: args.keep,
    };
    // Everything the user typed is checked before anything starts.
    request.check_levels()?;
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
        ("--csv", args.output.csv.as_deref()),
    ])?;
    let Swept { trial, app, path } = request.trial(&mut say_data_step)?;
    let stop = crate::signals::stop_token();
    let outcome = trial::run(&trial, &stop, &mut Narrator::new(args.output.quiet, true))?;
    let sweep = crate::sweeps::sweep_of(outcome, SweepVariable::Connections, "lab sweep");
    report_sweep(
        &args,
        crate::flags::forum::flag_app(app),
        &trial.target,
        &path,
        &sweep,
    )
}

fn report_sweep(
    args: &SweepArgs,
    app: App,
    target: &Target,
    path: &str,
    sweep: &SweepResult,
) -> anyhow::Result<i32> {
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.output.html {
        outputs.file("--html", dest, &render_sweep_html(sweep));
    }
    if let Some(dest) = &args.output.csv {
        outputs.file("--csv", dest, &render_sweep_csv(sweep));
    }
    // Last: "--json -" goes to stdout.
    if let Some(dest) = &args.output.json {
        outputs.file("--json", dest, &(sweep.to_json_pretty() + "\n"));
    }
    let json_to_stdout = args.output.json.as_deref() == Some("-");
    if !json_to_stdout && !args.output.quiet {
        let what = match app {
            App::Forum => format!(
                "the forum ({} posts, seed {})",
                args.data.posts, args.data.seed
            ),
            App::Site if path.is_empty() => "its scenario".to_string(),
            App::Site => path.to_string(),
        };
        let mut text = format!(
            "\nLab sweep: {} ({}) serving {what}; each level {:?}{}\n\n",
            target.name(),
            target.describe_settings(),
            args.duration,
            left_out(args.warmup, args.cooldown)
        );
        // The answer first, then the table behind it (issue 39).
        text.push_str(&webtune_report::sweep::sweep_verdict(sweep).text());
        text.push('\n');
        text.push_str(&seed_003_table(sweep));
        for level in &sweep.levels {
            if let Some(server) = &level.result.server {
                text.push_str(&format!(
                    "\n--- {} connections: server side ---\n",
                    level.level
                ));
                text.push_str(&summarise(server, level.result.responses));
            }
        }
        outputs.stdout(&text);
    }
    let unanswered = crate::sweeps::warn_unanswered(sweep, "lab sweep");
    let died = sweep
        .levels
        .iter()
        .any(|l| l.result.server.as_ref().is_some_and(|s| s.server_died()));
    Ok(outputs.exit_code(if sweep.interrupted {
        exit::INTERRUPTED
    } else if died {
        exit::TARGET_DOWN
    } else if unanswered {
        exit::NO_SUCCESS
    } else {
        exit::SUCCESS
    }))
}

/// ", of which the first 2s and the last 1s are left out", naming only the parts that are
/// not zero (nothing when neither is: "the last 0ns" said nothing).
fn left_out(warmup: std::time::Duration, cooldown: std::time::Duration) -> String {
    match (warmup.is_zero(), cooldown.is_zero()) {
        (true, true) => String::new(),
        (false, true) => format!(", of which the first {warmup:?} is left out"),
        (true, false) => format!(", of which the last {cooldown:?} is left out"),
        (false, false) => {
            format!(", of which the first {warmup:?} and the last {cooldown:?} are left out")
        }
    }
}
