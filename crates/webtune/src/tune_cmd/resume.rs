//! `webtune tune --resume` and `--show`: the flags of this invocation mapped onto
//! `webtune_tuner::resume::open`, which reads the request the journal stores, refuses a
//! flag that would change the tune, records a larger `--trials` or another
//! `--apply-timeout`, and enters the directory the tune ran in. What stays here is the
//! command line's: which flags were given (clap knows), this invocation's outputs (`--json`,
//! `--html`, `-q`, relative to where it runs), and reading journals written before the
//! request was stored, which hold the command-line words (the compatibility path).

use super::{execute, show};
use crate::tune_cmd::TuneArgsExt;
use anyhow::Context;
use clap::parser::ValueSource;
use clap::{CommandFactory, Parser};
use webtune_cli::tune::{StoredCommand, TuneArgs};
use webtune_tuner::request::TuneRequest;

/// The arguments (clap ids, which are the request's field names) given in `argv` (the
/// words after `webtune tune`).
fn given_ids(argv: &[String]) -> anyhow::Result<Vec<String>> {
    let cmd = StoredCommand::command();
    let now = cmd
        .clone()
        .try_get_matches_from(std::iter::once("webtune tune".to_string()).chain(argv.to_vec()))
        .map_err(|e| anyhow::anyhow!("{}", e.kind()))?;
    Ok(cmd
        .get_arguments()
        .map(|a| a.get_id().as_str())
        .filter(|id| now.value_source(id) == Some(ValueSource::CommandLine))
        .map(str::to_string)
        .collect())
}

/// A journal's stored words as a request (journals written before the request was).
fn from_words(argv: &[String]) -> anyhow::Result<TuneRequest> {
    let mut args = StoredCommand::try_parse_from(
        std::iter::once("webtune tune".to_string()).chain(argv.iter().cloned()),
    )
    .map_err(|e| anyhow::anyhow!("{}", e.to_string().lines().next().unwrap_or_default()))?
    .args;
    super::fold_bench_outputs(&mut args)?;
    args.full_request()
}

/// `path` made absolute against the current directory (before the resume moves to the
/// tune's own); `-` stays standard output.
fn here(path: &str) -> String {
    if path == "-" {
        return path.to_string();
    }
    std::path::absolute(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_string())
}

pub(super) fn resume_or_show(args: &TuneArgs) -> anyhow::Result<i32> {
    let path = args
        .journal
        .clone()
        .context("--resume and --show need --journal")?;
    let words: Vec<String> = std::env::args().skip(2).collect();
    let given = given_ids(&words)?;
    let given: Vec<&str> = given.iter().map(String::as_str).collect();
    // This invocation's outputs, against the directory it runs in.
    let json = args.output.json.as_deref().map(here);
    let html = args.output.html.as_deref().map(here);
    let mut opened =
        webtune_tuner::resume::open(&path, args.show, &args.request(), &given, &mut from_words)?;
    if opened.journal.is_some() {
        for note in &opened.notes {
            eprintln!("webtune tune: {note} (recorded in the journal)");
        }
    }
    let request = &mut opened.request;
    request.report.json = json.or(request.report.json.take());
    request.report.html = html.or(request.report.html.take());
    request.report.quiet |= args.output.quiet;
    let resumed = &opened.resumed;
    if !resumed.lost.is_empty() && !args.show {
        eprintln!(
            "webtune tune: {} trial(s) were in flight when the tune stopped; they run again",
            resumed.lost.len()
        );
    }
    let job = request.job(&mut |step| eprintln!("lab data: {step}"))?;
    let Some(journal) = opened.journal.as_mut() else {
        return show(request, &job, resumed, opened.holder);
    };
    eprintln!(
        "webtune tune: resuming {} with {} finished trial(s)",
        opened.path.display(),
        resumed.trials.len()
    );
    execute(request, &job, journal, Some(resumed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn the_flags_given_are_named_by_the_requests_fields() {
        let given = given_ids(&words(
            "--resume --journal t.db --trials=12 --slo p99<=5ms nginx -- -c 4",
        ))
        .unwrap();
        for id in ["resume", "journal", "trials", "slos", "stack", "bench"] {
            assert!(given.iter().any(|g| g == id), "{id}: {given:?}");
        }
        // A default is not a flag given.
        assert!(!given.iter().any(|g| g == "proof_budget"), "{given:?}");
        // Every id is a field of the request, so the journal's can be compared by name.
        let fields = serde_json::to_value(TuneRequest::default()).unwrap();
        let cmd = StoredCommand::command();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            let own = ["resume", "show", "json", "html", "quiet", "help"];
            assert!(
                own.contains(&id) || fields.get(id).is_some(),
                "--{id} is no field of TuneRequest"
            );
        }
    }

    #[test]
    fn a_journal_of_words_reads_as_the_request_they_ask() {
        let request = from_words(&words(
            "external --apply true --param w=1..4 --trials 8 -- -c 4 http://127.0.0.1:1/",
        ))
        .unwrap();
        assert_eq!(request.stack.as_deref(), Some("external"));
        assert_eq!((request.trials, request.params.len()), (Some(8), 1));
        let webtune_tuner::request::Load::Http { spec, url, .. } = &request.load else {
            panic!("an HTTP load");
        };
        assert_eq!(spec.connections, 4);
        assert_eq!(url.as_deref(), Some("http://127.0.0.1:1/"));
        assert!(from_words(&words("--no-such-flag")).is_err());
    }
}
