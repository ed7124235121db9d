//! A tune continued from its journal alone: the journal stores the `TuneRequest` (as
//! `{"request": …}`), `open` reads it back, compares what the caller asks now with it
//! (`TuneRequest::amend`: a larger `--trials` and another `--apply-timeout` are honoured
//! and recorded; any other change is refused in one line, since the study replayed from
//! the journal would not be the one asked for) and enters the directory the tune ran in.
//! No command line is parsed here: journals written before the request was stored hold
//! the command-line words (`{"argv": […], "cwd": …}`), and the caller turns those into a
//! request (`Stored::Argv`, the compatibility path).

use crate::request::{default_trials, TuneRequest};
use anyhow::{bail, Context};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;
use webtune_search::journal::{Journal, Resumed};

/// What a journal says the tune was asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    Request(Box<TuneRequest>),
    /// A journal written before the request was stored: the words after `webtune tune` and
    /// the directory they ran in (None in journals older still).
    Argv {
        argv: Vec<String>,
        cwd: Option<PathBuf>,
    },
}

/// The journal's record of a request.
pub fn command_json(request: &TuneRequest) -> String {
    serde_json::json!({ "request": request }).to_string()
}

/// The journal's record read back (None: it does not read).
pub fn stored(json: &str) -> Option<Stored> {
    let value: Value = serde_json::from_str(json).ok()?;
    if let Some(request) = value.get("request") {
        let request: TuneRequest = serde_json::from_value(request.clone()).ok()?;
        return Some(Stored::Request(Box::new(request)));
    }
    let argv = value["argv"]
        .as_array()?
        .iter()
        .map(|w| w.as_str().map(str::to_string))
        .collect::<Option<Vec<String>>>()?;
    let cwd = value["cwd"].as_str().map(PathBuf::from);
    Some(Stored::Argv { argv, cwd })
}

/// Arguments of an invocation that are never compared with the journal's: which journal,
/// what to do with it, and where the report goes.
const OWN: &[&str] = &[
    "journal", "resume", "show", "json", "html", "quiet", "help", "report", "cwd", "load",
];

/// How a message names a field of the request (its flag).
fn flag_of(field: &str) -> String {
    match field {
        "stack" => "the stack".into(),
        "bench" => "the bench flags after --".into(),
        "params" => "--param".into(),
        "slos" => "--slo".into(),
        "processes" => "--process".into(),
        other => format!("--{}", other.replace('_', "-")),
    }
}

/// A duration as the command line writes one: 5m, 10s, 250ms.
pub fn duration_text(d: Duration) -> String {
    let (s, n) = (d.as_secs(), d.subsec_nanos());
    match (s, n) {
        (0, 0) => "0s".into(),
        (s, 0) if s.is_multiple_of(3600) => format!("{}h", s / 3600),
        (s, 0) if s.is_multiple_of(60) => format!("{}m", s / 60),
        (s, 0) => format!("{s}s"),
        _ if d.as_nanos().is_multiple_of(1_000_000) => format!("{}ms", d.as_millis()),
        _ => format!("{}us", d.as_micros()),
    }
}

/// A field's value as a message shows it: 'p99<=5ms', or none.
fn shown(value: &Value) -> String {
    fn words(value: &Value) -> String {
        match value {
            Value::String(s) => s.clone(),
            Value::Array(items) => items.iter().map(words).collect::<Vec<_>>().join(" "),
            Value::Object(o) if o.contains_key("secs") && o.contains_key("nanos") => {
                let secs = o["secs"].as_u64().unwrap_or(0);
                let nanos = o["nanos"].as_u64().unwrap_or(0) as u32;
                duration_text(Duration::new(secs, nanos))
            }
            other => other.to_string(),
        }
    }
    match value {
        Value::Null => "none".into(),
        Value::Array(a) if a.is_empty() => "none".into(),
        v => format!("'{}'", words(v)),
    }
}

impl TuneRequest {
    /// This request with what an invocation asks now (`now`, of which the arguments named
    /// in `given` were given on its command line): Ok(the request with the safe changes
    /// made, and a line saying each), or the one-line refusal of the first change that
    /// would make it another tune.
    pub fn amend(
        &self,
        now: &TuneRequest,
        given: &[&str],
    ) -> anyhow::Result<(TuneRequest, Vec<String>)> {
        let (then_v, now_v) = (serde_json::to_value(self)?, serde_json::to_value(now)?);
        let mut amended = self.clone();
        let mut notes = Vec::new();
        for &field in given {
            if OWN.contains(&field) {
                continue;
            }
            let (new, old) = (&now_v[field], &then_v[field]);
            if new == old {
                continue;
            }
            match field {
                "trials" => {
                    let was = self.trials();
                    let n = now
                        .trials
                        .unwrap_or_else(|| default_trials(now.budget.is_some()));
                    if n < was {
                        bail!(
                            "--resume: --trials {n} is fewer than the journal's {was}: a resumed \
                             tune can be given more trials, not fewer"
                        );
                    }
                    amended.trials = Some(n);
                    notes.push(format!("the search's budget is now {n} trials (was {was})"));
                }
                "apply_timeout" => {
                    amended.apply_timeout = now.apply_timeout;
                    notes.push(format!(
                        "--apply-timeout is now {} (was {})",
                        duration_text(now.apply_timeout),
                        duration_text(self.apply_timeout)
                    ));
                }
                _ => bail!(
                    "--resume continues the tune in the journal as it was: {} {} differs from \
                     the journal's {}; only a larger --trials, --apply-timeout and the outputs \
                     can change (start a new journal to tune differently)",
                    flag_of(field),
                    shown(new),
                    shown(old)
                ),
            }
        }
        Ok((amended, notes))
    }
}

/// A journal opened to continue (or, read-only, to show) its tune.
pub struct Opened {
    /// The journal, absolute.
    pub path: PathBuf,
    /// Open for writing (None for `--show`, which reads without the lock).
    pub journal: Option<Journal>,
    pub resumed: Resumed,
    /// `--show` while a tune runs on the journal: its pid (0: unknown).
    pub holder: Option<u32>,
    /// The request as the journal has it, amended and with its journal set; the report's
    /// destinations are the journal's (the caller puts its own over them).
    pub request: TuneRequest,
    /// The changes made (recorded in the journal when it is open for writing).
    pub notes: Vec<String>,
}

/// Open the journal at `path` to continue its tune (`show`: only to read it), with the
/// changes `now` asks (`given`: the arguments given; see `TuneRequest::amend`).
/// `from_words` turns a journal's stored command-line words into a request (journals
/// written before the request was stored); it runs in the tune's directory.
pub fn open(
    path: &Path,
    show: bool,
    now: &TuneRequest,
    given: &[&str],
    from_words: &mut dyn FnMut(&[String]) -> anyhow::Result<TuneRequest>,
) -> anyhow::Result<Opened> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // --show reads without the lock (also while a tune runs); a resume takes it.
    let (mut journal, resumed, holder) = if show {
        let (resumed, holder) = Journal::peek(&path)?;
        (None, resumed, holder)
    } else {
        let (journal, resumed) = Journal::open(&path)?;
        (Some(journal), resumed, None)
    };
    let stored = stored(&resumed.command)
        .with_context(|| format!("journal {}: its command does not read", path.display()))?;
    let request = match stored {
        Stored::Request(request) => *request,
        Stored::Argv { argv, cwd } => {
            enter(&path, cwd.as_deref(), show)?;
            let mut request = from_words(&argv)
                .map_err(|e| anyhow::anyhow!("journal {}: its command: {e:#}", path.display()))?;
            request.cwd = cwd;
            request
        }
    };
    let (mut request, mut notes) = request.amend(now, given)?;
    if resumed.before_advice && !request.no_from_advice {
        // The tune began before --from-advice existed: its study had no advised seed.
        request.no_from_advice = true;
        notes.push("the tune began without --from-advice: --no-from-advice".to_string());
    }
    request.journal = Some(path.clone());
    if let (Some(journal), false) = (journal.as_mut(), notes.is_empty()) {
        journal.set_command(&command_json(&request))?;
    }
    enter(&path, request.cwd.as_deref(), show)?;
    Ok(Opened {
        path,
        journal,
        resumed,
        holder,
        request,
        notes,
    })
}

/// Run where the tune ran, so its relative paths (--apply's script, --json, a body file)
/// mean what they meant. `--show` reads on where it cannot.
fn enter(journal: &Path, cwd: Option<&Path>, show: bool) -> anyhow::Result<()> {
    let Some(cwd) = cwd else {
        return Ok(());
    };
    if std::env::current_dir().ok().as_deref() == Some(cwd) {
        return Ok(());
    }
    match std::env::set_current_dir(cwd) {
        Ok(()) => Ok(()),
        Err(_) if show => Ok(()),
        Err(e) => bail!(
            "journal {}: the tune ran in {}, which cannot be entered now ({e}); its relative \
             paths would mean other files",
            journal.display(),
            cwd.display()
        ),
    }
}

/// A new journal for a request: at its `journal` path (refused when one is there: a
/// running tune's names its holder), or a temporary one that `finish` removes.
pub struct NewJournal {
    pub journal: Journal,
    pub path: PathBuf,
    temporary: bool,
}

impl NewJournal {
    pub fn create(request: &TuneRequest) -> anyhow::Result<NewJournal> {
        let path = request.journal.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("webtune-search-{}.db", std::process::id()))
        });
        if path.exists() {
            if let Some(pid) = webtune_search::lock::JournalLock::holder(&path) {
                return Err(webtune_search::JournalError::Locked {
                    path: path.display().to_string(),
                    holder: Some(pid).filter(|p| *p != 0),
                }
                .into());
            }
            bail!(
                "journal {} exists: continue it with --resume, or name a new one",
                path.display()
            );
        }
        let journal = Journal::create(&path, &command_json(request), request.search_seed)?;
        Ok(NewJournal {
            journal,
            path,
            temporary: request.journal.is_none(),
        })
    }

    /// Close it; a temporary journal is removed with its SQLite side files.
    pub fn finish(self) {
        let NewJournal {
            journal,
            path,
            temporary,
        } = self;
        drop(journal);
        if temporary {
            let _ = std::fs::remove_file(&path);
            for suffix in ["-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored_request() -> TuneRequest {
        TuneRequest {
            stack: Some("nginx".into()),
            params: vec!["worker_processes=1..2".into()],
            trials: Some(8),
            slos: vec!["p99<=100ms".into()],
            bench: vec!["-c".into(), "4".into(), "-d".into(), "1s".into()],
            ..TuneRequest::default()
        }
    }

    #[test]
    fn a_change_that_makes_another_tune_is_refused_a_larger_budget_recorded() {
        let stored = stored_request();
        // Restating the journal's values, or giving only outputs: nothing changes.
        let same = TuneRequest {
            journal: Some("t.db".into()),
            ..stored.clone()
        };
        let (amended, notes) = stored
            .amend(&same, &["trials", "stack", "journal", "json", "quiet"])
            .unwrap();
        assert_eq!((amended, notes.len()), (stored.clone(), 0));
        let now = |f: fn(&mut TuneRequest)| {
            let mut r = TuneRequest::default();
            f(&mut r);
            r
        };
        for (given, field, needle) in [
            (
                now(|r| r.slos = vec!["p99<=5ms".into()]),
                "slos",
                "--slo 'p99<=5ms'",
            ),
            (
                now(|r| r.minimize = Some("p99".into())),
                "minimize",
                "--minimize",
            ),
            (
                now(|r| r.stack = Some("apache".into())),
                "stack",
                "the stack 'apache'",
            ),
            (
                now(|r| r.bench = vec!["-c".into(), "8".into()]),
                "bench",
                "the bench flags",
            ),
            (now(|r| r.trials = Some(4)), "trials", "fewer"),
            (
                now(|r| r.proof_budget = Duration::from_secs(60)),
                "proof_budget",
                "--proof-budget '1m' differs from the journal's '3m'",
            ),
        ] {
            let e = stored.amend(&given, &[field]).unwrap_err().to_string();
            assert!(e.contains(needle), "{field}: {e}");
            assert_eq!(e.lines().count(), 1);
        }
        let (amended, notes) = stored
            .amend(&now(|r| r.trials = Some(12)), &["trials"])
            .unwrap();
        assert_eq!(amended.trials, Some(12));
        assert!(notes[0].contains("12 trials (was 8)"), "{notes:?}");
        let (amended, notes) = stored
            .amend(
                &now(|r| r.apply_timeout = Duration::from_secs(90)),
                &["apply_timeout"],
            )
            .unwrap();
        assert_eq!(amended.apply_timeout, Duration::from_secs(90));
        assert_eq!(notes, ["--apply-timeout is now 90s (was 10m)"]);
    }

    #[test]
    fn a_request_that_left_trials_to_its_default_compares_with_that_default() {
        // Without --trials the default was 15; under a --budget, 200.
        for (budget, fewer, more, was) in [
            (None, 10, 20, "was 15"),
            (Some(Duration::from_secs(300)), 100, 300, "was 200"),
        ] {
            let stored = TuneRequest {
                budget,
                ..TuneRequest::default()
            };
            let given = |n| TuneRequest {
                trials: Some(n),
                ..TuneRequest::default()
            };
            let e = stored.amend(&given(fewer), &["trials"]).unwrap_err();
            assert!(e.to_string().contains("fewer"), "{e}");
            let (_, notes) = stored.amend(&given(more), &["trials"]).unwrap();
            assert!(notes[0].contains(was), "{notes:?}");
        }
    }

    #[test]
    fn the_journal_keeps_the_request_and_old_journals_still_read() {
        let request = TuneRequest {
            cwd: Some("/srv/tunes".into()),
            ..stored_request()
        };
        assert_eq!(
            stored(&command_json(&request)),
            Some(Stored::Request(Box::new(request)))
        );
        // Written before the request was stored: the words, with or without a directory.
        assert_eq!(
            stored(r#"{"argv":["nginx","--","-d","1s"],"cwd":"/srv/tunes"}"#),
            Some(Stored::Argv {
                argv: vec!["nginx".into(), "--".into(), "-d".into(), "1s".into()],
                cwd: Some("/srv/tunes".into())
            })
        );
        assert_eq!(
            stored(r#"{"argv":["nginx"]}"#),
            Some(Stored::Argv {
                argv: vec!["nginx".into()],
                cwd: None
            })
        );
        assert_eq!(stored("not json"), None);
    }

    #[test]
    fn durations_read_as_the_command_line_writes_them() {
        for (d, text) in [
            (Duration::from_secs(180), "3m"),
            (Duration::from_secs(7200), "2h"),
            (Duration::from_secs(90), "90s"),
            (Duration::from_millis(250), "250ms"),
            (Duration::ZERO, "0s"),
        ] {
            assert_eq!(duration_text(d), text);
        }
    }
}
