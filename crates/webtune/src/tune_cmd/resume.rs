//! `webtune tune --resume` and `--show`: the command stored in the journal, run again as it
//! was. The journal keeps the words after `webtune tune` and the directory they ran in
//! (`{"argv": […], "cwd": "/…"}`; journals written before `cwd` was kept run in the
//! current directory, as then). A flag given again must say what the journal says: a
//! different `--slo`, stack, bench flag, … is refused in one line, since the study replayed
//! from the journal would not be the one asked for. Two changes are safe and are honoured
//! and recorded in the journal: a larger `--trials` and another `--apply-timeout`. The
//! outputs (`--json`, `--html`, `-q`) are this invocation's when given.

use super::{execute, prepare, show, TuneArgs};
use anyhow::{bail, Context};
use clap::parser::ValueSource;
use clap::{CommandFactory, Parser};
use std::path::{Path, PathBuf};
use webtune_tune::journal::Journal;

/// `webtune tune …` as words, to store in the journal and parse again on --resume.
#[derive(Parser)]
#[command(name = "webtune tune", disable_version_flag = true)]
struct StoredCommand {
    #[command(flatten)]
    args: TuneArgs,
}

/// Flags of this invocation that are never compared with the journal's: which journal,
/// what to do with it, and where the report goes.
const OWN: &[&str] = &["journal", "resume", "show", "json", "html", "quiet", "help"];

/// The journal's record of the command: the words after "webtune tune" and the directory
/// they ran in.
pub(super) fn command_json(argv: &[String], cwd: Option<&Path>) -> String {
    let mut value = serde_json::json!({ "argv": argv });
    if let Some(cwd) = cwd {
        value["cwd"] = serde_json::Value::String(cwd.to_string_lossy().into_owned());
    }
    value.to_string()
}

/// The stored words and directory (None in journals written before it was kept).
fn stored_command(json: &str) -> Option<(Vec<String>, Option<PathBuf>)> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let argv = value["argv"]
        .as_array()?
        .iter()
        .map(|w| w.as_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()?;
    let cwd = value["cwd"].as_str().map(PathBuf::from);
    Some((argv, cwd))
}

fn matches(argv: &[String]) -> Result<clap::ArgMatches, clap::Error> {
    StoredCommand::command()
        .try_get_matches_from(std::iter::once("webtune tune".to_string()).chain(argv.to_vec()))
}

fn raw(m: &clap::ArgMatches, id: &str) -> Vec<String> {
    m.get_raw(id)
        .map(|v| v.map(|s| s.to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// `argv` with `flag`'s value replaced by `value` (before the bench flags' `--`).
fn with_flag(argv: &[String], flag: &str, value: &str) -> Vec<String> {
    let mut out = vec![flag.to_string(), value.to_string()];
    let mut words = argv.iter();
    while let Some(w) = words.next() {
        if w == "--" {
            out.push(w.clone());
            out.extend(words.by_ref().cloned());
            break;
        }
        if w == flag {
            words.next();
        } else if !w.starts_with(&format!("{flag}=")) {
            out.push(w.clone());
        }
    }
    out
}

/// Compare the flags given now with the stored command: Ok(the stored words with the
/// safe changes made, and a line saying each), or the one-line refusal of the first
/// conflicting flag.
fn reconcile(given: &[String], stored: &[String]) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let now = matches(given).map_err(|e| anyhow::anyhow!("{}", e.kind()))?;
    let then = matches(stored).map_err(|e| anyhow::anyhow!("the journal's command: {e}"))?;
    let mut argv = stored.to_vec();
    let mut notes = Vec::new();
    let cmd = StoredCommand::command();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if OWN.contains(&id) || now.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        let (new, old) = (raw(&now, id), raw(&then, id));
        if new == old {
            continue;
        }
        let name = match (arg.get_long(), id) {
            (Some(long), _) => format!("--{long}"),
            (None, "stack") => "the stack".to_string(),
            (None, _) => "the bench flags after --".to_string(),
        };
        let shown = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                format!("'{}'", v.join(" "))
            }
        };
        match id {
            "trials" => {
                let parse = |v: &[String]| v.first().and_then(|n| n.parse::<usize>().ok());
                // The journal's command may have left --trials to its default.
                let was = match old.is_empty() {
                    true => Some(super::default_trials(!raw(&then, "budget").is_empty())),
                    false => parse(&old),
                };
                let (Some(n), Some(was)) = (parse(&new), was) else {
                    bail!("--trials: not a number");
                };
                if n < was {
                    bail!(
                        "--resume: --trials {n} is fewer than the journal's {was}: a resumed tune \
                         can be given more trials, not fewer"
                    );
                }
                argv = with_flag(&argv, "--trials", &n.to_string());
                notes.push(format!("the search's budget is now {n} trials (was {was})"));
            }
            "apply_timeout" => {
                argv = with_flag(&argv, "--apply-timeout", &new.join(""));
                notes.push(format!(
                    "--apply-timeout is now {} (was {})",
                    new.join(""),
                    old.join("")
                ));
            }
            _ => bail!(
                "--resume continues the tune in the journal as it was: {name} {} differs from \
                 the journal's {}; only a larger --trials, --apply-timeout and the outputs can \
                 change (start a new journal to tune differently)",
                shown(&new),
                shown(&old)
            ),
        }
    }
    Ok((argv, notes))
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
    let path = std::path::absolute(&path).unwrap_or(path);
    // --show reads without the lock (also while a tune runs); --resume takes it.
    let (mut journal, resumed, holder) = if args.show {
        let (resumed, holder) = Journal::peek(&path)?;
        (None, resumed, holder)
    } else {
        let (journal, resumed) = Journal::open(&path)?;
        (Some(journal), resumed, None)
    };
    let (stored_argv, cwd) = stored_command(&resumed.command)
        .with_context(|| format!("journal {}: its command does not read", path.display()))?;
    let given: Vec<String> = std::env::args().skip(2).collect();
    let (mut argv, mut notes) = reconcile(&given, &stored_argv)?;
    if resumed.before_advice && !argv.iter().any(|w| w == "--no-from-advice") {
        // The tune began before --from-advice existed: its study had no advised seed.
        argv.insert(0, "--no-from-advice".to_string());
        notes.push("the tune began without --from-advice: --no-from-advice".to_string());
    }
    let mut stored = StoredCommand::try_parse_from(
        std::iter::once("webtune tune".to_string()).chain(argv.clone()),
    )
    .map_err(|e| anyhow::anyhow!("journal {}: its command: {e}", path.display()))?
    .args;
    super::fold_bench_outputs(&mut stored)?;
    // Outputs and quiet come from this invocation when given (its paths are relative to
    // where it runs).
    stored.output.json = args.output.json.as_deref().map(here).or(stored.output.json);
    stored.output.html = args.output.html.as_deref().map(here).or(stored.output.html);
    stored.output.quiet |= args.output.quiet;
    stored.journal = Some(path.clone());
    if let (Some(journal), false) = (journal.as_mut(), notes.is_empty()) {
        journal.set_command(&command_json(&argv, cwd.as_deref()))?;
        for note in &notes {
            eprintln!("webtune tune: {note} (recorded in the journal)");
        }
    }
    // Run where the tune ran, so its relative paths (--apply's script, --json, a body
    // file) mean what they meant.
    if let Some(cwd) = &cwd {
        if std::env::current_dir().ok().as_deref() != Some(cwd.as_path()) {
            match std::env::set_current_dir(cwd) {
                Ok(()) => {}
                Err(_) if args.show => {}
                Err(e) => bail!(
                    "journal {}: the tune ran in {}, which cannot be entered now ({e}); \
                     its relative paths would mean other files",
                    path.display(),
                    cwd.display()
                ),
            }
        }
    }
    if !resumed.lost.is_empty() && !args.show {
        eprintln!(
            "webtune tune: {} trial(s) were in flight when the tune stopped; they run again",
            resumed.lost.len()
        );
    }
    let prepared = prepare(&stored)?;
    let Some(mut journal) = journal else {
        return show(&stored, prepared, &resumed, holder);
    };
    eprintln!(
        "webtune tune: resuming {} with {} finished trial(s)",
        path.display(),
        resumed.trials.len()
    );
    execute(&stored, prepared, &mut journal, Some(&resumed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn a_flag_that_changes_the_tune_is_refused_a_larger_budget_recorded() {
        let stored =
            words("nginx --param worker_processes=1..2 --trials 8 --slo p99<=100ms -- -c 4 -d 1s");
        // Restating the journal's values, or giving only outputs: nothing changes.
        let (argv, notes) = reconcile(
            &words("--resume --journal t.db --json x.json -q --trials 8 nginx"),
            &stored,
        )
        .unwrap();
        assert_eq!((argv, notes.len()), (stored.clone(), 0));
        for (given, needle) in [
            ("--resume --journal t.db --slo p99<=5ms", "--slo 'p99<=5ms'"),
            ("--resume --journal t.db --minimize p99", "--minimize"),
            ("apache --resume --journal t.db", "the stack 'apache'"),
            ("--resume --journal t.db -- -c 8 -d 1s", "the bench flags"),
            ("--resume --journal t.db --trials 4", "fewer"),
        ] {
            let e = reconcile(&words(given), &stored).unwrap_err().to_string();
            assert!(e.contains(needle), "{given}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
        let (argv, notes) =
            reconcile(&words("--resume --journal t.db --trials=12"), &stored).unwrap();
        assert_eq!(
            argv,
            words("--trials 12 nginx --param worker_processes=1..2 --slo p99<=100ms -- -c 4 -d 1s")
        );
        assert!(notes[0].contains("12 trials (was 8)"), "{notes:?}");
    }

    #[test]
    fn a_journal_that_left_trials_to_its_default_compares_with_that_default() {
        // Without --trials the default was 15; under a --budget, 200.
        for (stored, fewer, more, was) in [
            ("nginx -- -c 4 -d 1s", "10", "20", "was 15"),
            ("nginx --budget 5m -- -c 4 -d 1s", "100", "300", "was 200"),
        ] {
            let stored = words(stored);
            let given = |n: &str| words(&format!("--resume --journal t.db --trials {n}"));
            let e = reconcile(&given(fewer), &stored).unwrap_err().to_string();
            assert!(e.contains("fewer"), "{e}");
            let (_, notes) = reconcile(&given(more), &stored).unwrap();
            assert!(notes[0].contains(was), "{notes:?}");
        }
    }

    #[test]
    fn the_command_keeps_its_directory_and_old_journals_still_read() {
        let json = command_json(&words("nginx -- -d 1s"), Some(Path::new("/srv/tunes")));
        let (argv, cwd) = stored_command(&json).unwrap();
        assert_eq!(argv, words("nginx -- -d 1s"));
        assert_eq!(cwd.as_deref(), Some(Path::new("/srv/tunes")));
        let (argv, cwd) = stored_command(r#"{"argv":["nginx"]}"#).unwrap();
        assert_eq!((argv, cwd), (words("nginx"), None));
    }
}
