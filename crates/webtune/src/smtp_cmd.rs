//! `webtune smtp HOST[:PORT]`: a mail load test. Maps the flags onto a `RunSpec` with an
//! `SmtpSpec` and a mailbox workload, runs it on the engine (the same loop, schedule and
//! recorder as `bench`), and writes the result as text, JSON (`webtune.smtp/1`), CSV or
//! HTML. `compare` and `--threshold` read it like any result. Several `-c` levels make it
//! a sweep (the trial API `webtune sweep` uses; `webtune.sweep/1`, each level an SMTP run).

use crate::exit;
use crate::flags::smtp::mailboxes;
use crate::flags::smtp::SmtpArgsExt;
use crate::gate::ThresholdArgsExt;
use crate::output::{self, Outputs};
use crate::running::run_spec_repeated;
use webtune_cli::flags::smtp::SmtpArgs;
use webtune_engine::Workload;
use webtune_model::RunSpec;

pub fn run(args: SmtpArgs) -> anyhow::Result<i32> {
    output::check_all([
        ("--json", args.output.json.as_deref()),
        ("--html", args.output.html.as_deref()),
        ("--csv", args.output.csv.as_deref()),
    ])?;
    let thresholds = args.gate.parse(false)?;
    let at_once = crate::signals::exit_at_once();
    let spec = args.to_spec()?;
    let workload = mailboxes(args.users.as_ref(), "--users")?;
    drop(at_once);
    if args.connections.len() > 1 {
        return sweep(&args, spec, workload);
    }
    let mut abort = crate::gate::abort_check(&thresholds, args.gate.threshold_abort, spec.warmup_s);
    let (mut result, interrupted) = run_spec_repeated(
        &spec,
        &workload,
        args.output.repeat,
        "",
        args.output.quiet,
        &mut |p| abort.check(p),
    )?;
    crate::gate::judge(&mut result, &thresholds, abort.failed);
    let outputs = emit(&result, &args);
    let own = if interrupted {
        exit::INTERRUPTED
    } else if result.responses == 0 {
        // Even under -q: a failed run must not end in silence (as bench's).
        eprintln!(
            "webtune: smtp: {}",
            crate::running::no_response_line(&result, "no message got a reply")
        );
        exit::NO_SUCCESS
    } else {
        exit::SUCCESS
    };
    Ok(outputs.exit_code(crate::gate::status(&result.thresholds, own)))
}

/// `-c A,B,…`: the same mail test at each session count, through the trial API (as `webtune
/// sweep` runs its levels), written as a sweep.
fn sweep(args: &SmtpArgs, spec: RunSpec, workload: Workload) -> anyhow::Result<i32> {
    use webtune_lab::trial::{self, Level, Target, Trial};
    use webtune_model::sweep::SweepVariable;
    use webtune_report::sweep::{render_sweep_csv, render_sweep_html, render_sweep_text};
    if args.connections.contains(&0) {
        anyhow::bail!("-c levels must be at least 1");
    }
    if !args.gate.threshold.is_empty() {
        anyhow::bail!("--threshold judges one run: give one -c level (or compare the levels)");
    }
    let mut trial = Trial::new(
        Target::External {
            base_url: spec.url.clone(),
            processes: Vec::new(),
            pids: Vec::new(),
        },
        RunSpec {
            url: String::new(),
            ..spec
        },
    );
    trial.workload = workload;
    trial.levels = args
        .connections
        .iter()
        .map(|&c| Level::Connections(c))
        .collect();
    trial.repeat = args.output.repeat;
    let quiet = args.output.quiet;
    let stop = crate::signals::stop_token();
    let outcome = trial::run(
        &trial,
        &stop,
        &mut crate::narrate::Narrator::new(quiet, !quiet),
    )?;
    let sweep = crate::sweeps::sweep_of(outcome, SweepVariable::Connections, "webtune smtp");
    let mut outputs = Outputs::new();
    if let Some(dest) = &args.output.html {
        outputs.file("--html", dest, &render_sweep_html(&sweep));
    }
    if let Some(dest) = &args.output.csv {
        outputs.file("--csv", dest, &render_sweep_csv(&sweep));
    }
    if let Some(dest) = &args.output.json {
        outputs.file("--json", dest, &(sweep.to_json_pretty() + "\n"));
    }
    if args.output.json.as_deref() != Some("-") && !quiet {
        outputs.stdout(&format!("\n{}", render_sweep_text(&sweep)));
    }
    let unanswered = crate::sweeps::warn_unanswered(&sweep, "smtp");
    Ok(outputs.exit_code(if sweep.interrupted {
        exit::INTERRUPTED
    } else if unanswered {
        exit::NO_SUCCESS
    } else {
        exit::SUCCESS
    }))
}

/// Write the files, then the summary in `--format`.
fn emit(result: &webtune_model::RunResult, args: &SmtpArgs) -> Outputs {
    use webtune_report::Format;
    let to = webtune_report::output::RunOutputs {
        json: args.output.json.as_deref(),
        html: args.output.html.as_deref(),
        csv: args.output.csv.as_deref(),
        quiet: args.output.quiet,
        format: args.format,
        timeline: false,
    };
    let mut outputs = Outputs::new();
    to.write(&mut outputs, result, "", "");
    let printed = !(to.quiet && to.format == Format::Text) && to.json != Some("-");
    if !printed && !result.thresholds.is_empty() && args.format != Format::Text {
        eprint!(
            "webtune: thresholds:\n{}",
            webtune_report::verdicts::render_verdicts(&result.thresholds)
        );
    }
    outputs
}
