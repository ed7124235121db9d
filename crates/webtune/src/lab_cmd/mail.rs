//! `webtune lab run postfix -- SMTP FLAGS` and `webtune lab sweep postfix -c A,B,…`: the
//! lab's private Postfix loaded by the SMTP engine (`webtune smtp`'s flags after --, sent
//! to the stack's generated mailboxes unless --users names others), one level or several
//! on one start (the queue is kept between levels), and the report: acceptance (the SMTP
//! 250s) and delivery (files in the Maildirs) apart, with what was left in the queue.

use crate::exit;
use crate::flags::smtp::SmtpArgsExt;
use crate::narrate::Narrator;
use crate::output::Outputs;
use anyhow::bail;
use std::time::Duration;
use webtune_cli::flags::smtp::{parse_line, SmtpArgs};
use webtune_cli::lab::{forum::SweepArgs, RunArgs};
use webtune_lab::trial::{self, MailRequest, RunRequest, Trial};
use webtune_model::sweep::SweepVariable;
use webtune_report::mail::mail_text;
use webtune_report::server_summary::summarise;

type Flags = webtune_cli::output_flags::OutputFlags<webtune_cli::flags::smtp::SmtpOutput>;

/// `lab run postfix`: the trial and the report.
pub(super) fn run(args: &RunArgs, request: &RunRequest) -> anyhow::Result<i32> {
    request.check_mail()?;
    let line = parse_line(&args.bench)?;
    let mail = MailRequest {
        set: args.set.clone(),
        drain: line.drain.unwrap_or(Duration::from_secs(30)),
        sample_interval: args.sample_interval,
        keep: args.keep,
        host: request.host.clone(),
        ..MailRequest::default()
    };
    report(&trial_for(&line.smtp, mail)?, &line.smtp.output)
}

/// `lab sweep postfix -c A,B,…`: one start, every level on it, the queue kept between them.
/// Each level counts whole (no --warmup/--cooldown: the deliveries of a level are counted
/// over all of it, so its acceptance is too).
pub fn sweep(args: &SweepArgs) -> anyhow::Result<i32> {
    if args.connections.contains(&0) {
        bail!("-c levels must be at least 1, e.g. -c 1,10,50");
    }
    if args.scenario.is_some() || args.path.is_some() {
        bail!("--scenario and --path are for web stacks; postfix is loaded with SMTP (lab run postfix -- SMTP FLAGS)");
    }
    let mut words: Vec<String> = vec![
        "-c".into(),
        args.connections
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
        "-d".into(),
        format!("{}ms", args.duration.as_millis()),
        "--timeout".into(),
        format!("{}ms", args.timeout.as_millis()),
    ];
    if let Some(t) = args.threads {
        words.extend(["-t".into(), t.to_string()]);
    }
    if args.output.quiet {
        words.push("-q".into());
    }
    for (flag, file) in [
        ("--json", &args.output.json),
        ("--csv", &args.output.csv),
        ("--html", &args.output.html),
    ] {
        if let Some(f) = file {
            words.extend([flag.to_string(), f.clone()]);
        }
    }
    let line = parse_line(&words)?;
    let mail = MailRequest {
        set: args.set.clone(),
        drain: Duration::ZERO,
        pause: args.pause,
        sample_interval: args.sample_interval,
        keep: args.keep,
        ..MailRequest::default()
    };
    report(&trial_for(&line.smtp, mail)?, &line.smtp.output)
}

/// The trial of `smtp` flags on the postfix stack as `request` says: the flags that make
/// no sense for the lab's own Postfix refused first.
fn trial_for(smtp: &SmtpArgs, request: MailRequest) -> anyhow::Result<Trial> {
    crate::output::check_all([
        ("--json", smtp.output.json.as_deref()),
        ("--html", smtp.output.html.as_deref()),
        ("--csv", smtp.output.csv.as_deref()),
    ])?;
    if smtp.warmup.is_some() {
        bail!("--warmup: the postfix stack counts a level's deliveries over all of it, so its acceptance is too");
    }
    if !smtp.gate.threshold.is_empty() {
        bail!("--threshold is webtune smtp's; compare the lab run's JSON instead");
    }
    let mut request = request;
    request.connections = smtp.connections.clone();
    request.repeat = smtp.output.repeat;
    // --users: those mailboxes; none: the stack's own (the trial reads its users.txt).
    if let Some(users) = &smtp.users {
        request.mailboxes = Some(crate::flags::smtp::mailboxes(Some(users), "--users")?);
    }
    Ok(request.trial(smtp.to_spec()?)?)
}

/// Run the trial; one level reads as `webtune smtp`'s report, several as a sweep; each
/// with the mail section.
fn report(trial: &Trial, flags: &Flags) -> anyhow::Result<i32> {
    let quiet = flags.quiet;
    let stop = crate::signals::stop_token();
    let outcome = trial::run(
        trial,
        &stop,
        &mut Narrator::new(quiet, trial.levels.len() > 1),
    )?;
    if outcome.levels.is_empty() {
        eprintln!("lab: interrupted before the load began; nothing of the stack is left");
        return Ok(exit::INTERRUPTED);
    }
    let mut text = trial.target.headline(&outcome.base_url);
    let mut outputs = Outputs::new();
    let interrupted = outcome.interrupted;
    let mut delivered_any = false;
    if outcome.levels.len() == 1 {
        let result = &outcome.levels[0].result;
        text.push_str(&webtune_report::render(
            result,
            webtune_report::Format::Text,
        ));
        if let Some(server) = &result.server {
            text.push_str(&format!("\n{}", summarise(server, result.responses)));
            if let Some(mail) = &server.mail {
                text.push_str(&mail_text(mail));
                delivered_any = mail.delivered > 0;
            }
        }
        write_files(&mut outputs, flags, &result.to_json_pretty(), None);
    } else {
        let per_level: Vec<String> = outcome
            .levels
            .iter()
            .map(|l| {
                let mail = l.result.server.as_ref().and_then(|s| s.mail.as_ref());
                delivered_any |= mail.is_some_and(|m| m.delivered > 0);
                format!(
                    "\n--- {} sessions ---{}",
                    l.level.value(),
                    mail.map(mail_text).unwrap_or_default()
                )
            })
            .collect();
        let sweep = crate::sweeps::sweep_of(outcome, SweepVariable::Connections, "lab run postfix");
        text.push_str(&webtune_report::sweep::render_sweep_text(&sweep));
        text.extend(per_level);
        write_files(&mut outputs, flags, &sweep.to_json_pretty(), Some(&sweep));
    }
    if !quiet && flags.json.as_deref() != Some("-") {
        outputs.stdout(&text);
    }
    Ok(outputs.exit_code(if interrupted {
        exit::INTERRUPTED
    } else if !delivered_any {
        exit::NO_SUCCESS
    } else {
        exit::SUCCESS
    }))
}

/// The files the output flags ask for: the result (one level) or the sweep as JSON, a
/// sweep's CSV and HTML too.
fn write_files(
    outputs: &mut Outputs,
    flags: &Flags,
    json: &str,
    sweep: Option<&webtune_model::sweep::SweepResult>,
) {
    use webtune_report::sweep::{render_sweep_csv, render_sweep_html};
    if let Some(sweep) = sweep {
        if let Some(dest) = &flags.html {
            outputs.file("--html", dest, &render_sweep_html(sweep));
        }
        if let Some(dest) = &flags.csv {
            outputs.file("--csv", dest, &render_sweep_csv(sweep));
        }
    }
    if let Some(dest) = &flags.json {
        outputs.file("--json", dest, &(json.to_string() + "\n"));
    }
}
