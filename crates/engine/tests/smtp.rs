//! The SMTP client against scripted servers on loopback: a well-behaved one (with and
//! without PIPELINING, with EHLO refused), one that refuses recipients with 4xx and 5xx, and
//! ones that stall, drop the connection or send garbage. Every run ends within its
//! timeouts, messages and replies are counted by code, and failures by kind.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};
use support::run;
use support::{serve_connections, TestServer};
use webtune_engine::smtp::Mailboxes;
use webtune_engine::{RunControl, Workload};
use webtune_model::{Arrival, ErrorKind, LoadMode, RunResult, RunSpec, SmtpSpec, StopCondition};

#[derive(Clone, Default)]
struct Script {
    pipelining: bool,
    /// Refuse EHLO with 502 (an RFC 821 server).
    no_ehlo: bool,
    /// RCPT's reply for a mailbox.
    rcpt: Option<fn(&str) -> &'static str>,
    /// Answer DATA with this (no 354: the server reads no message).
    data_reply: Option<&'static str>,
    /// Send one reply more than asked for, in the same write as the real one, after every
    /// `extra_every`-th command `extra_after` names ("MAIL" or "." for the final dot),
    /// counted over all sessions.
    extra_every: u64,
    extra_after: &'static str,
    seen: Arc<std::sync::atomic::AtomicU64>,
}

impl Script {
    /// The reply to a command that `extra_after` names, with the extra one when due.
    fn maybe_twice(&self, what: &str, reply: &str) -> String {
        if self.extra_every == 0 || what != self.extra_after {
            return reply.to_string();
        }
        let n = self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if n.is_multiple_of(self.extra_every) {
            format!("{reply}250 2.0.0 one more\r\n")
        } else {
            reply.to_string()
        }
    }
}

/// A small SMTP server that logs every command line it reads.
fn smtp_server(script: Script) -> (TestServer, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let log2 = Arc::clone(&log);
    let server = serve_connections(move |s| session(s, &script, &log2));
    (server, log)
}

fn session(s: TcpStream, script: &Script, log: &Mutex<Vec<String>>) {
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let _ = w.write_all(b"220 test ESMTP\r\n");
    let mut line = String::new();
    let mut recipients = 0;
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let cmd = line.trim_end().to_string();
        log.lock().unwrap().push(cmd.clone());
        let upper = cmd.to_ascii_uppercase();
        let reply: String = if upper.starts_with("EHLO") {
            if script.no_ehlo {
                "502 command not implemented\r\n".into()
            } else if script.pipelining {
                "250-test\r\n250-PIPELINING\r\n250 8BITMIME\r\n".into()
            } else {
                "250-test\r\n250 8BITMIME\r\n".into()
            }
        } else if upper.starts_with("RCPT TO:") {
            let addr = &cmd[8..];
            let reply = script.rcpt.map_or("250 ok", |f| f(addr));
            recipients += usize::from(reply.starts_with('2'));
            reply.to_string() + "\r\n"
        } else if upper.starts_with("MAIL") || upper == "RSET" {
            recipients = 0;
            script.maybe_twice(&upper[..4], "250 ok\r\n")
        } else if upper == "DATA" && recipients == 0 {
            "554 5.5.1 no valid recipients\r\n".into()
        } else if let (true, Some(reply)) = (upper == "DATA", script.data_reply) {
            reply.to_string() + "\r\n"
        } else if upper == "DATA" {
            let _ = w.write_all(b"354 go ahead\r\n");
            let mut data = String::new();
            loop {
                data.clear();
                if r.read_line(&mut data).unwrap_or(0) == 0 {
                    return;
                }
                if data == ".\r\n" {
                    break;
                }
            }
            log.lock().unwrap().push(".".into());
            script.maybe_twice(".", "250 2.0.0 queued\r\n")
        } else if upper == "QUIT" {
            let _ = w.write_all(b"221 bye\r\n");
            return;
        } else {
            "250 ok\r\n".into()
        };
        let _ = w.write_all(reply.as_bytes());
    }
}

fn spec(server: &TestServer, smtp: SmtpSpec) -> RunSpec {
    RunSpec {
        url: format!("smtp://{}", server.addr),
        connections: 2,
        threads: 1,
        stop: StopCondition::Requests { count: 20 },
        timeout_ms: 2_000,
        connect_timeout_ms: 2_000,
        smtp: Some(smtp),
        ..RunSpec::default()
    }
}

fn run_it(spec: &RunSpec) -> RunResult {
    let boxes = Mailboxes::generated(50, "example.com");
    let workload = Workload::mailboxes(boxes, "generated");
    run(spec, &workload, &RunControl::new(), &mut |_| {}).expect("run")
}

fn count(log: &Mutex<Vec<String>>, prefix: &str) -> usize {
    log.lock()
        .unwrap()
        .iter()
        .filter(|l| l.starts_with(prefix))
        .count()
}

#[test]
fn messages_go_pipelined_with_every_phase_timed() {
    let (server, log) = smtp_server(Script {
        pipelining: true,
        ..Script::default()
    });
    let smtp = SmtpSpec {
        max_recipients: 3,
        per_connection: 4,
        ..SmtpSpec::default()
    };
    let r = run_it(&spec(&server, smtp));
    assert_eq!(r.schema, "webtune.smtp/1");
    assert_eq!((r.responses, r.ok, r.errors.total()), (20, 20, 0));
    let sum = r.smtp.as_ref().expect("smtp summary");
    assert_eq!(sum.accepted, 20);
    assert_eq!(sum.pipelined_sessions, sum.sessions);
    assert_eq!(count(&log, "MAIL FROM:<webtune@example.com>"), 20);
    assert_eq!(count(&log, "."), 20);
    let rcpts = count(&log, "RCPT TO:<user");
    assert!((20..=60).contains(&rcpts), "{rcpts} recipients");
    assert_eq!(sum.rcpt.histogram.count() as usize, rcpts);
    assert_eq!(sum.recipients_accepted as usize, rcpts);
    // Four messages a connection, then QUIT: five sessions (six when both connections
    // share the last four).
    let sessions = server.accepted.load(std::sync::atomic::Ordering::SeqCst) as u64;
    assert!((5..=6).contains(&sessions), "{sessions}");
    assert_eq!(sum.banner.histogram.count(), sessions);
    assert_eq!(sum.sessions, sessions);
    assert_eq!(count(&log, "QUIT") as u64, sessions);
    assert_eq!(sum.mail.histogram.count(), 20);
    assert_eq!(sum.data.histogram.count(), 20);
    assert_eq!(r.status.get(&250), Some(&20));
    assert!(sum.message_bytes >= 20 * 1024, "{}", sum.message_bytes);
    assert_eq!(r.histograms.connect.count(), sessions);
}

#[test]
fn without_pipelining_and_ehlo_commands_go_one_by_one_after_helo() {
    let (server, log) = smtp_server(Script {
        no_ehlo: true,
        ..Script::default()
    });
    let r = run_it(&spec(&server, SmtpSpec::default()));
    assert_eq!((r.responses, r.ok), (20, 20), "{:?}", r.errors);
    let sum = r.smtp.unwrap();
    assert_eq!(sum.pipelined_sessions, 0);
    assert_eq!(sum.helo_fallbacks, 20);
    assert_eq!(count(&log, "HELO webtune.example.com"), 20);
    assert_eq!(sum.replies.get(&502), Some(&20));
}

#[test]
fn refused_recipients_are_counted_as_deferred_or_rejected_and_reset() {
    fn by_mailbox(addr: &str) -> &'static str {
        // user1..user50: odd numbers deferred, multiples of 4 rejected, the rest accepted.
        let n: u32 = addr
            .trim_start_matches("<user")
            .split('@')
            .next()
            .and_then(|d| d.parse().ok())
            .unwrap_or(0);
        if n % 2 == 1 {
            "450 4.2.0 mailbox busy"
        } else if n.is_multiple_of(4) {
            "550 5.1.1 no such user"
        } else {
            "250 ok"
        }
    }
    for pipelining in [true, false] {
        let (server, log) = smtp_server(Script {
            pipelining,
            rcpt: Some(by_mailbox),
            ..Script::default()
        });
        let mut s = spec(&server, SmtpSpec::default());
        s.stop = StopCondition::Requests { count: 200 };
        let r = run_it(&s);
        let sum = r.smtp.unwrap();
        assert_eq!(r.responses, 200, "pipelining {pipelining}: {:?}", r.errors);
        assert_eq!(sum.accepted + sum.deferred + sum.rejected, 200);
        assert!(
            sum.deferred > 50 && sum.rejected > 20 && sum.accepted > 20,
            "{sum:?}"
        );
        assert_eq!(r.ok, sum.accepted);
        assert_eq!(
            r.errors.get(ErrorKind::UnexpectedStatus),
            200 - sum.accepted
        );
        assert_eq!(r.status.get(&450).copied().unwrap_or(0), sum.deferred);
        assert_eq!(count(&log, "RSET") as u64, sum.deferred + sum.rejected);
        assert_eq!(count(&log, ".") as u64, sum.accepted);
    }
}

/// Issue 33 item 4: a server that answers DATA with 250 (RFC 5321 allows only 354 or a
/// refusal) received no message, so none is accepted: each is `malformed`, its session
/// closed. The old client took the 250 for a refusal, sent RSET and counted the RSET's 250
/// as the message's: 20 accepted, none received.
#[test]
fn a_2xx_to_data_is_malformed_and_accepts_nothing() {
    for pipelining in [true, false] {
        let (server, log) = smtp_server(Script {
            pipelining,
            data_reply: Some("250 2.0.0 ok"),
            ..Script::default()
        });
        let r = run_it(&spec(&server, SmtpSpec::default()));
        let sum = r.smtp.as_ref().expect("smtp summary");
        assert_eq!(count(&log, "."), 0, "the server read no message");
        assert_eq!((sum.accepted, r.ok), (0, 0), "pipelining {pipelining}");
        assert!(r.errors.get(ErrorKind::Malformed) > 0, "{:?}", r.errors);
        assert_eq!(r.errors.total(), r.errors.get(ErrorKind::Malformed));
        // Each session ended at DATA's reply, no RSET after it.
        assert_eq!(count(&log, "RSET"), 0);
        let sessions = server.accepted.load(std::sync::atomic::Ordering::SeqCst) as u64;
        assert_eq!(count(&log, "DATA") as u64, sessions);
    }
}

/// Issue 33 item 4: one reply more than asked for (after some MAILs, or after some final
/// dots) would have every later reply taken for the next command's. A reply that comes
/// while no command sent waits for it, or out of step with its command, is `malformed`
/// and ends the session, so what is counted accepted is exactly what the server received:
/// the old client counted 14 accepted against the server's 8.
#[test]
fn an_extra_reply_is_malformed_and_accepted_matches_the_server() {
    for (after, pipelining) in [("MAIL", false), ("MAIL", true), (".", false), (".", true)] {
        let (server, log) = smtp_server(Script {
            pipelining,
            extra_every: 3,
            extra_after: after,
            ..Script::default()
        });
        let smtp = SmtpSpec {
            per_connection: 4,
            ..SmtpSpec::default()
        };
        let mut s = spec(&server, smtp);
        s.stop = StopCondition::Requests { count: 60 };
        let r = run_it(&s);
        let sum = r.smtp.as_ref().expect("smtp summary");
        let case = format!("extra after {after}, pipelining {pipelining}");
        assert_eq!(sum.accepted as usize, count(&log, "."), "{case}");
        assert_eq!(r.ok, sum.accepted, "{case}");
        assert!(sum.accepted > 0, "{case}: {sum:?}");
        let malformed = r.errors.get(ErrorKind::Malformed);
        assert!(malformed > 0, "{case}: {:?}", r.errors);
        assert_eq!(r.errors.total(), malformed, "{case}: {:?}", r.errors);
        assert_eq!(sum.accepted + malformed, 60, "{case}");
    }
    // Open loop: a connection may go idle after the dot, with the extra reply in hand and
    // no message in flight; its session is closed and the next message takes a new one.
    // Whatever is failed, what is accepted is what the server received.
    let (server, log) = smtp_server(Script {
        extra_every: 2,
        extra_after: ".",
        ..Script::default()
    });
    let smtp = SmtpSpec {
        per_connection: 4,
        ..SmtpSpec::default()
    };
    let mut s = spec(&server, smtp);
    s.stop = StopCondition::Duration { seconds: 1.0 };
    s.load = LoadMode::Open {
        rate: 50.0,
        arrival: Arrival::Uniform,
    };
    let r = run_it(&s);
    let sum = r.smtp.as_ref().expect("smtp summary");
    assert!(sum.accepted > 0, "{sum:?}");
    assert_eq!(sum.accepted as usize, count(&log, "."), "open loop");
    assert_eq!(
        r.errors.total(),
        r.errors.get(ErrorKind::Malformed),
        "{:?}",
        r.errors
    );
    // Each extra reply ended its session: about one new session per two messages.
    assert!(
        r.connections_opened * 3 >= sum.accepted,
        "{}",
        r.connections_opened
    );
}

#[test]
fn open_loop_sends_messages_on_schedule() {
    let (server, _log) = smtp_server(Script {
        pipelining: true,
        ..Script::default()
    });
    let mut s = spec(&server, SmtpSpec::default());
    s.stop = StopCondition::Duration { seconds: 1.0 };
    s.load = LoadMode::Open {
        rate: 200.0,
        arrival: Arrival::Uniform,
    };
    s.connections = 20;
    let r = run_it(&s);
    let schedule = r.schedule.as_ref().expect("open loop");
    // Never more than the schedule allows (200/s for 1 s); the lower bound only says the
    // schedule ran: with the scripted server's thread and other tests sharing 2 loaded cores,
    // 111 of 200 were answered in one run, so it is a quarter, not a timing.
    assert!((50..=210).contains(&r.responses), "{}", r.responses);
    assert_eq!(r.errors.total(), 0);
    assert_eq!(schedule.requested_rate, 200.0);
    assert!(
        (50.0..=210.0).contains(&schedule.achieved_rate),
        "{}",
        schedule.achieved_rate
    );
}

/// A server that does `bad` to every connection; the run must end within `limit` and count
/// every message as `kind`.
fn misbehaving<F>(bad: F, kind: ErrorKind, limit: Duration)
where
    F: Fn(TcpStream) + Send + Sync + 'static,
{
    misbehaving_within(bad, kind, limit, 300)
}

/// `misbehaving` with `--timeout` `timeout_ms`: a test whose server answers at once (with
/// garbage) gives it long enough that a loaded machine's late accept is never a timeout.
fn misbehaving_within<F>(bad: F, kind: ErrorKind, limit: Duration, timeout_ms: u64)
where
    F: Fn(TcpStream) + Send + Sync + 'static,
{
    let server = serve_connections(bad);
    let mut s = spec(&server, SmtpSpec::default());
    s.stop = StopCondition::Duration { seconds: 1.0 };
    s.timeout_ms = timeout_ms;
    let started = Instant::now();
    let r = run_it(&s);
    assert!(started.elapsed() < limit, "took {:?}", started.elapsed());
    assert_eq!(r.responses, 0);
    assert!(r.errors.get(kind) > 0, "{kind:?}: {:?}", r.errors);
    assert_eq!(r.errors.total(), r.errors.get(kind), "{:?}", r.errors);
}

#[test]
fn a_server_that_never_greets_times_out() {
    misbehaving(
        |s| {
            thread::sleep(Duration::from_secs(20));
            drop(s);
        },
        ErrorKind::RequestTimeout,
        Duration::from_secs(10),
    );
}

#[test]
fn a_server_that_stalls_after_mail_times_out() {
    misbehaving(
        |s| {
            let mut w = s.try_clone().unwrap();
            let mut r = BufReader::new(s);
            let _ = w.write_all(b"220 hi\r\n");
            let mut line = String::new();
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                if line.starts_with("MAIL") {
                    thread::sleep(Duration::from_secs(20));
                    return;
                }
                let _ = w.write_all(b"250 ok\r\n");
                line.clear();
            }
        },
        ErrorKind::RequestTimeout,
        Duration::from_secs(10),
    );
}

#[test]
fn a_server_that_drops_the_connection_ends_the_message_early() {
    misbehaving(
        |s| {
            let mut w = s.try_clone().unwrap();
            let mut r = BufReader::new(s);
            let _ = w.write_all(b"220 hi\r\n");
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let _ = w.write_all(b"250 hi\r\n");
            // Drop after the first command of the message.
            let _ = r.read_line(&mut line);
        },
        ErrorKind::ClosedEarly,
        Duration::from_secs(10),
    );
}

#[test]
fn garbage_or_an_endless_line_is_malformed() {
    misbehaving_within(
        |mut s| {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n");
            thread::sleep(Duration::from_millis(500));
        },
        ErrorKind::Malformed,
        Duration::from_secs(10),
        3_000,
    );
    misbehaving_within(
        |mut s| {
            let junk = vec![b'2'; 64 * 1024];
            let until = Instant::now() + Duration::from_secs(3);
            while Instant::now() < until && s.write_all(&junk).is_ok() {}
        },
        ErrorKind::Malformed,
        Duration::from_secs(10),
        3_000,
    );
}
