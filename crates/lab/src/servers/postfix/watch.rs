//! Watching the private Postfix during a level: its queues (files under incoming, active
//! and deferred) and its deliveries (`status=sent` lines of its log) as a time series, the
//! bounded wait for the queue to drain after the load, the deliveries counted as files in
//! the Maildirs, and the log lines that matter (warnings, fatal errors, "too many
//! connections", deferrals), counted.

use super::files::PostfixFiles;
use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use webtune_model::server::{LogMessage, MailSample, MailSection};
use webtune_model::StopToken;

/// Files under a directory, its subdirectories included (the hashed queues).
fn count_files(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => count_files(&e.path()),
            Ok(_) => 1,
            Err(_) => 0,
        })
        .sum()
}

/// Messages in the Maildirs' `new/` (every mailbox of the lab's domain).
pub fn count_delivered(files: &PostfixFiles) -> u64 {
    let Ok(boxes) = std::fs::read_dir(files.mail_dir.join(super::files::DOMAIN)) else {
        return 0;
    };
    boxes
        .flatten()
        .map(|b| {
            std::fs::read_dir(b.path().join("new"))
                .map(|d| d.count() as u64)
                .unwrap_or(0)
        })
        .sum()
}

/// The queues now: incoming, active, deferred.
pub fn queue_lengths(files: &PostfixFiles) -> (u64, u64, u64) {
    let q = &files.queue_dir;
    (
        count_files(&q.join("incoming")),
        count_files(&q.join("active")),
        count_files(&q.join("deferred")),
    )
}

/// Reads what the log gained since the last call and counts `status=sent`.
struct LogTail {
    offset: u64,
    sent: u64,
}

impl LogTail {
    fn at_end(path: &Path) -> LogTail {
        let offset = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        LogTail { offset, sent: 0 }
    }

    fn read(&mut self, path: &Path) {
        let Ok(mut f) = std::fs::File::open(path) else {
            return;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut text = Vec::new();
        if f.read_to_end(&mut text).is_err() {
            return;
        }
        // Only whole lines: a line being written is read next time.
        let end = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let text = String::from_utf8_lossy(&text[..end]);
        self.sent += text.matches(" status=sent ").count() as u64;
        self.offset += end as u64;
    }
}

/// A level's watch of the server's queues and deliveries.
pub struct MailWatch {
    files: PostfixFiles,
    start: Instant,
    baseline: u64,
    samples: Arc<Mutex<Vec<MailSample>>>,
    tail: Arc<Mutex<LogTail>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    load_end: Option<(f64, u64)>,
}

impl MailWatch {
    /// Start watching: a sample every `interval` (at least 100 ms).
    pub fn start(files: PostfixFiles, interval: Duration) -> MailWatch {
        let interval = interval.max(Duration::from_millis(100));
        let baseline = count_delivered(&files);
        let tail = Arc::new(Mutex::new(LogTail::at_end(&files.maillog)));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let thread = {
            let (files, tail, samples, stop) =
                (files.clone(), tail.clone(), samples.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let next = Instant::now() + interval;
                    let sample = take(&files, &tail, start);
                    if let Ok(mut s) = samples.lock() {
                        s.push(sample);
                    }
                    while !stop.load(Ordering::Relaxed) && Instant::now() < next {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            })
        };
        MailWatch {
            files,
            start,
            baseline,
            samples,
            tail,
            stop,
            thread: Some(thread),
            load_end: None,
        }
    }

    fn now(&self) -> MailSample {
        take(&self.files, &self.tail, self.start)
    }

    /// The load has ended: what was delivered so far counts for the delivery rate.
    pub fn load_ended(&mut self) {
        let now = self.now();
        self.load_end = Some((now.t_s, now.delivered));
    }

    /// Wait until the incoming and active queues are empty (deferred mail waits for its
    /// retry, so it is reported, not waited for), at most `timeout`; the wait's length.
    pub fn drain(&mut self, timeout: Duration, stop: &StopToken) -> Duration {
        let began = Instant::now();
        while began.elapsed() < timeout && !stop.stop_requested() {
            let (incoming, active, _) = queue_lengths(&self.files);
            if incoming + active == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        began.elapsed()
    }

    /// Stop watching; the level's mail section (`accepted`: the run's 250s).
    pub fn finish(mut self, accepted: u64, drain: Duration) -> MailSection {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let last = self.now();
        let mut samples = self.samples.lock().map(|s| s.clone()).unwrap_or_default();
        samples.push(last.clone());
        let (load_s, in_load) = self.load_end.unwrap_or((last.t_s, last.delivered));
        MailSection {
            accepted,
            delivered_in_load: in_load,
            load_s,
            delivered_per_s: if load_s > 0.0 {
                in_load as f64 / load_s
            } else {
                0.0
            },
            delivered: count_delivered(&self.files).saturating_sub(self.baseline),
            drain_s: drain.as_secs_f64(),
            left_incoming: last.incoming,
            left_active: last.active,
            left_deferred: last.deferred,
            samples,
        }
    }
}

impl Drop for MailWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn take(files: &PostfixFiles, tail: &Mutex<LogTail>, start: Instant) -> MailSample {
    let (incoming, active, deferred) = queue_lengths(files);
    let delivered = match tail.lock() {
        Ok(mut t) => {
            t.read(&files.maillog);
            t.sent
        }
        Err(_) => 0,
    };
    MailSample {
        t_s: start.elapsed().as_secs_f64(),
        incoming,
        active,
        deferred,
        delivered,
    }
}

/// Most distinct messages kept.
const MAX_DISTINCT: usize = 20;

/// The lines of Postfix's log that matter, without timestamps, process ids and queue ids:
/// warnings, fatal errors and panics, "too many connections", and deferred deliveries
/// (level `deferred`, with their reason).
pub fn log_messages(server: &str, log: &Path) -> Vec<LogMessage> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut counts: HashMap<(String, String), u64> = HashMap::new();
    let mut order = Vec::new();
    for line in text.lines() {
        let Some((level, message)) = classify(line) else {
            continue;
        };
        let key = (level.to_string(), message);
        if !counts.contains_key(&key) {
            if order.len() >= MAX_DISTINCT {
                continue;
            }
            order.push(key.clone());
        }
        *counts.entry(key).or_default() += 1;
    }
    order
        .into_iter()
        .map(|key| LogMessage {
            server: server.to_string(),
            count: counts[&key],
            level: key.0,
            message: key.1,
        })
        .collect()
}

/// A queue id (short form: upper-case hex; long form: letters and digits with both) or
/// NOQUEUE, never a word like "warning".
fn is_queue_id(id: &str) -> bool {
    let alnum = id.len() >= 6 && id.chars().all(|c| c.is_ascii_alphanumeric());
    let hex = id
        .chars()
        .all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c));
    let mixed =
        id.chars().any(|c| c.is_ascii_digit()) && id.chars().any(|c| c.is_ascii_uppercase());
    alnum && (id == "NOQUEUE" || hex || mixed)
}

/// A line's level and its message, if it matters.
pub fn classify(line: &str) -> Option<(&'static str, String)> {
    // "Nov 24 21:53:05 mail postfix/smtpd[6561]: warning: …"
    let body = line.split_once("]: ").map_or(line, |(_, b)| b);
    // Queue ids: "EB0079881B1: …"
    let body = match body.split_once(": ") {
        Some((id, rest)) if is_queue_id(id) => rest,
        _ => body,
    };
    let level = if body.starts_with("warning:") {
        "warn"
    } else if body.starts_with("fatal:") || body.starts_with("panic:") || body.starts_with("error:")
    {
        "error"
    } else if body.contains("too many connections") {
        "warn"
    } else if body.contains("status=deferred") {
        "deferred"
    } else {
        return None;
    };
    let message = if level == "deferred" {
        let reason = body
            .split_once("status=deferred")
            .map_or("", |(_, r)| r)
            .trim();
        format!("status=deferred {reason}")
    } else {
        body.to_string()
    };
    Some((level, without_numbers(&crate::logs::normalise(&message))))
}

/// Every run of digits as `N` ("limit exceeded: 51 from …" and ": 54 from …" are one message).
fn without_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postfix_lines_are_classified_without_ids() {
        let w = classify("Nov 24 21:53:05 mail postfix/anvil[6554]: warning: Connection concurrency limit exceeded: 51 from localhost[127.0.0.1] for service smtp").unwrap();
        assert_eq!(w.0, "warn");
        assert!(
            w.1.starts_with("warning: Connection concurrency limit exceeded"),
            "{}",
            w.1
        );
        let d = classify("Nov 24 21:53:05 mail postfix/virtual[6565]: EB0079881B1: to=<user1@lab.test>, relay=virtual, delay=12, status=deferred (temporary failure)").unwrap();
        assert_eq!(
            d,
            (
                "deferred",
                "status=deferred (temporary failure)".to_string()
            )
        );
        assert!(
            classify("Nov 24 21:53:05 mail postfix/qmgr[6522]: EB0079881B1: removed").is_none()
        );
        assert_eq!(
            classify("Nov 24 mail postfix/smtpd[1]: NOQUEUE: reject: CONNECT from x: 421 too many connections").unwrap().0,
            "warn"
        );
    }

    #[test]
    fn a_log_file_is_counted_by_message() {
        let dir = std::env::temp_dir().join(format!("webtune-maillog-{}", std::process::id()));
        let line = "Nov 24 22:41:43 mail postfix/smtpd[19179]: warning: Connection concurrency limit exceeded: 3 from localhost[127.0.0.1] for service 127.0.0.1:43589\n";
        let other = line.replace("exceeded: 3", "exceeded: 54");
        std::fs::write(&dir, line.repeat(2) + &other).unwrap();
        let got = log_messages("postfix", &dir);
        let _ = std::fs::remove_file(&dir);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].count, 3);
        assert_eq!(got[0].level, "warn");
        assert!(got[0].message.contains("exceeded: N from"), "{got:?}");
    }
}
