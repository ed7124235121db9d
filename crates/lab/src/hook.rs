//! Commands the user hands webtune to change their own server (`tune external --apply CMD`,
//! `--restore CMD`): `{name}` placeholders filled with shell-quoted values, run with
//! `sh -c`, bounded in time and stopped by the stop token. Exit 0 means "the target is
//! ready"; anything else is a one-line error with the end of what the command wrote.

use crate::LabError;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webtune_model::StopToken;

/// Quote `value` for a POSIX shell: as it is when it is plainly safe, else in single quotes.
pub fn shell_quote(value: &str) -> String {
    let safe = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/=+@%".contains(&b));
    if safe {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', "'\\''"))
    }
}

/// Replace every `{name}` in `template` with the shell-quoted value of `name`. A
/// placeholder with no value is refused (a typo would otherwise reach the user's server).
pub fn fill(template: &str, values: &[(String, String)]) -> Result<String, LabError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(LabError::Hook(format!(
                "{template:?}: a '{{' without its '}}'"
            )));
        };
        let name = &after[..close];
        match values.iter().find(|(n, _)| n == name) {
            Some((_, v)) => out.push_str(&shell_quote(v)),
            None => {
                let known: Vec<&str> = values.iter().map(|(n, _)| n.as_str()).collect();
                return Err(LabError::Hook(format!(
                    "{template:?} names {{{name}}}, which is no --param (they are: {})",
                    known.join(", ")
                )));
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Run `command` with `sh -c`; Ok when it exits 0 within `limit`. `what` names it in errors
/// ("--apply"). The stop token kills it (the error then says so).
pub fn run(what: &str, command: &str, limit: Duration, stop: &StopToken) -> Result<(), LabError> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        // Its own process group, so a stop or a time-out ends what it started too.
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LabError::Hook(format!("{what}: cannot run sh: {e}")))?;
    // Read the output on threads so a chatty command cannot block on a full pipe.
    let mut readers = Vec::new();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        readers.push(std::thread::spawn(move || {
            let mut text = String::new();
            let mut stream = stream;
            let _ = stream.read_to_string(&mut text);
            text
        }));
    }
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if stop.stop_requested() || Instant::now() >= deadline => {
                // SAFETY: signalling the process group this function created.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(LabError::Hook(format!("{what}: {e}"))),
        }
    };
    let output: String = readers
        .into_iter()
        .filter_map(|r| r.join().ok())
        .collect::<Vec<_>>()
        .join("");
    let tail = output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", l.trim()))
        .unwrap_or_default();
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => Err(LabError::Hook(format!(
            "{what} `{command}` exited with {}{tail}",
            s.code()
                .map_or("a signal".to_string(), |c| format!("status {c}"))
        ))),
        None if stop.stop_requested() => Err(LabError::Interrupted),
        None => Err(LabError::Hook(format!(
            "{what} `{command}` did not finish within {limit:?}{tail}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn placeholders_are_filled_with_quoted_values() {
        let v = pairs(&[("workers", "8"), ("note", "it's on")]);
        assert_eq!(
            fill("./apply.sh {workers} {note}", &v).unwrap(),
            "./apply.sh 8 'it'\\''s on'"
        );
        let e = fill("x {wrokers}", &v).unwrap_err().to_string();
        assert!(e.contains("{wrokers}") && e.contains("workers"), "{e}");
        assert!(fill("x {workers", &v).is_err());
    }

    #[test]
    fn a_command_that_fails_says_how_and_what_it_wrote() {
        let stop = StopToken::new();
        run("--apply", "true", Duration::from_secs(5), &stop).unwrap();
        let e = run(
            "--apply",
            "echo no such pool >&2; exit 3",
            Duration::from_secs(5),
            &stop,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("status 3") && e.contains("no such pool"), "{e}");
        let e = run("--apply", "sleep 5", Duration::from_millis(200), &stop)
            .unwrap_err()
            .to_string();
        assert!(e.contains("did not finish"), "{e}");
    }
}
