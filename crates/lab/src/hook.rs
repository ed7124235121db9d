//! Commands the user hands webtune to change their own server (`tune external --apply CMD`,
//! `--restore CMD`): `{name}` placeholders filled with shell-quoted values, run with
//! `sh -c`, bounded in time and stopped by the stop token. Exit 0 means "the target is
//! ready"; anything else is a one-line error with the end of what the command wrote. Only
//! the last `TAIL_BYTES` of each stream are kept (a command may write gigabytes), and a
//! line cut by that says so. A time-out kills the command's whole process group. A
//! background process the command leaves holding its output open (a server it started)
//! does not hold the call: the output is read for a moment after the command exits.

use crate::LabError;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
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
    // Read the output on threads so a chatty command cannot block on a full pipe; each
    // keeps only the last TAIL_BYTES.
    let tails: Vec<Arc<Mutex<Tail>>> = [
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
    .map(|stream| {
        let tail = Arc::new(Mutex::new(Tail::default()));
        let t = Arc::clone(&tail);
        std::thread::spawn(move || Tail::drain(stream, &t));
        tail
    })
    .collect();
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
    // The rest of the output, for a moment: a process the command left running may keep
    // the pipes open for as long as it lives.
    let grace = Instant::now() + Duration::from_millis(500);
    while Instant::now() < grace && !tails.iter().all(|t| t.lock().map_or(true, |t| t.done)) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let tail = last_line(&tails);
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => Err(LabError::Hook(format!(
            "{what} `{command}` exited with {}{tail}",
            s.code()
                .map_or("a signal".to_string(), |c| format!("status {c}"))
        ))),
        None if stop.stop_requested() => Err(LabError::Interrupted),
        None => Err(LabError::Hook(format!(
            "{what} `{command}` did not finish within {limit:?}: killed with its process group{tail}"
        ))),
    }
}

/// The most of each output stream kept: its last bytes.
pub const TAIL_BYTES: usize = 4096;

/// The end of one output stream and how much was written in all.
#[derive(Default)]
struct Tail {
    kept: std::collections::VecDeque<u8>,
    total: u64,
    done: bool,
}

impl Tail {
    fn drain(mut stream: Box<dyn Read + Send>, tail: &Mutex<Tail>) {
        let mut buf = [0u8; 8192];
        loop {
            let n = match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let Ok(mut t) = tail.lock() else { return };
            t.total += n as u64;
            t.kept.extend(&buf[..n]);
            let excess = t.kept.len().saturating_sub(TAIL_BYTES);
            t.kept.drain(..excess);
        }
        if let Ok(mut t) = tail.lock() {
            t.done = true;
        }
    }
}

/// `: LINE`, the last non-empty line written (standard error's before standard output's),
/// marked when only its end was kept; empty when nothing was written.
fn last_line(tails: &[Arc<Mutex<Tail>>]) -> String {
    for t in tails.iter().rev() {
        let Ok(t) = t.lock() else { continue };
        let bytes: Vec<u8> = t.kept.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let text: &str = &text;
        let Some(line) = text.lines().rev().find(|l| !l.trim().is_empty()) else {
            continue;
        };
        // Cut when no line break precedes it in the kept bytes and more was written before.
        let offset = line.as_ptr() as usize - text.as_ptr() as usize;
        let starts_kept = !text[..offset].contains('\n');
        let cut = t.total > bytes.len() as u64 && starts_kept;
        return if cut {
            format!(
                ": …{} (cut: the command wrote {} bytes, the last {TAIL_BYTES} kept)",
                line.trim(),
                t.total
            )
        } else {
            format!(": {}", line.trim())
        };
    }
    String::new()
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

    #[test]
    fn a_flood_of_output_keeps_only_its_end_and_says_it_was_cut() {
        let stop = StopToken::new();
        // 20 MB on one line, then the real reason.
        let e = run(
            "--apply",
            "head -c 20000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo the pool is gone >&2; exit 1",
            Duration::from_secs(30),
            &stop,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.ends_with(": the pool is gone"),
            "{}",
            &e[..e.len().min(300)]
        );
        assert!(e.len() < 500, "{} bytes", e.len());
        // One endless line: its end, marked as cut.
        let e = run(
            "--apply",
            "head -c 20000000 /dev/zero | tr '\\0' x >&2; exit 1",
            Duration::from_secs(30),
            &stop,
        )
        .unwrap_err()
        .to_string();
        assert!(e.len() < TAIL_BYTES + 300, "{} bytes", e.len());
        assert!(
            e.contains("cut: the command wrote 20000000 bytes"),
            "{}",
            &e[..200]
        );
    }

    #[test]
    fn a_time_out_kills_the_process_group_and_a_daemon_does_not_hold_the_call() {
        let stop = StopToken::new();
        let pids = std::env::temp_dir().join(format!("webtune-hook-{}.pids", std::process::id()));
        let started = Instant::now();
        let e = run(
            "--apply",
            &format!("sleep 1000 & echo $! > {}; sleep 1000", pids.display()),
            Duration::from_millis(500),
            &stop,
        )
        .unwrap_err()
        .to_string();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(
            e.contains("did not finish within") && e.contains("process group"),
            "{e}"
        );
        let pid: i32 = std::fs::read_to_string(&pids)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(!alive, "the background sleep survived");
        // A command that starts a server and exits 0 returns, though the server keeps the
        // output pipes open.
        let started = Instant::now();
        run(
            "--apply",
            &format!("sleep 30 & echo $! > {}; exit 0", pids.display()),
            Duration::from_secs(20),
            &stop,
        )
        .unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pids)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SAFETY: ending the process this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let _ = std::fs::remove_file(&pids);
    }
}
