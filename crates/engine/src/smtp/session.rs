//! One connection's SMTP session: what it is waiting for (a queue of the replies its
//! commands will get, longer than one when pipelined, and which of those commands have gone
//! out: a reply can answer only a command the server has been sent), what the session agreed (EHLO's
//! PIPELINING, STARTTLS done), and the message in flight (recipients sent and accepted, the
//! first refusal). The bytes to send wait in `out`. The worker (`worker::smtp_io`) does the
//! I/O and the recording; this is the state it keeps per connection, reused for every
//! message (no allocation per message once the buffers have grown).

use super::reply::ReplyParser;
use std::collections::VecDeque;
use std::time::Instant;

/// The reply a command sent is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Banner,
    Ehlo,
    Helo,
    StartTls,
    Mail,
    Rcpt,
    Data,
    /// The reply to the message's final dot.
    Dot,
    Rset,
}

/// A connection's session and the message in flight.
#[derive(Debug)]
pub struct SmtpConn {
    pub reply: ReplyParser,
    pub expect: VecDeque<Expect>,
    /// Where each command not yet wholly written ends in `out`, oldest first: the last
    /// `unsent.len()` entries of `expect` wait for these bytes to go out.
    unsent: VecDeque<usize>,
    /// Commands (or the message) to send, and how much of it went out.
    pub out: Vec<u8>,
    pub written: usize,
    /// Banner and EHLO (and STARTTLS) done on the current socket.
    pub established: bool,
    /// STARTTLS agreed: after the handshake, EHLO again.
    pub tls_upgraded: bool,
    pub pipelining: bool,
    /// Messages this connection sends before QUIT (left).
    pub messages_left: u64,
    /// Where the next reply's latency counts from.
    pub since: Instant,
    /// When the DATA command went (the `data` phase's start).
    pub data_from: Instant,
    /// This message: its recipients (mailbox indexes), how many RCPTs went and were
    /// accepted, and the first refusal (MAIL, RCPT or DATA).
    pub recipients: Vec<u32>,
    pub rcpt_sent: usize,
    pub accepted: u32,
    pub refusal: Option<u16>,
    /// The first RCPT refusal (the message's outcome when no recipient was accepted).
    pub rcpt_refusal: Option<u16>,
    /// A 421 (or another reply that ends the session): close after this message.
    pub closing: bool,
}

impl SmtpConn {
    pub fn new(now: Instant) -> SmtpConn {
        SmtpConn {
            reply: ReplyParser::new(),
            expect: VecDeque::with_capacity(8),
            unsent: VecDeque::with_capacity(8),
            out: Vec::new(),
            written: 0,
            established: false,
            tls_upgraded: false,
            pipelining: false,
            messages_left: 0,
            since: now,
            data_from: now,
            recipients: Vec::new(),
            rcpt_sent: 0,
            accepted: 0,
            refusal: None,
            rcpt_refusal: None,
            closing: false,
        }
    }

    /// The socket is gone: the next message starts a new session.
    pub fn reset_session(&mut self) {
        self.reply.reset();
        self.expect.clear();
        self.unsent.clear();
        self.out.clear();
        self.written = 0;
        self.established = false;
        self.tls_upgraded = false;
        self.pipelining = false;
        self.closing = false;
    }

    /// A new message: nothing sent or refused yet.
    pub fn reset_message(&mut self) {
        self.recipients.clear();
        self.rcpt_sent = 0;
        self.accepted = 0;
        self.refusal = None;
        self.rcpt_refusal = None;
    }

    /// Queue `command` and the reply it waits for.
    pub fn send(&mut self, command: &[u8], expect: Expect) {
        self.out.extend_from_slice(command);
        self.queued(expect);
    }

    /// What was just appended to `out` (a command, or the message and its dot) waits for
    /// `expect` once it has gone out.
    pub fn queued(&mut self, expect: Expect) {
        self.expect.push_back(expect);
        self.unsent.push_back(self.out.len());
    }

    /// Wait for the server's greeting (a reply no command asked for).
    pub fn await_banner(&mut self) {
        self.expect.clear();
        self.unsent.clear();
        self.expect.push_back(Expect::Banner);
    }

    /// `written` bytes of `out` went out (the rest waits for the socket): the commands they
    /// complete are with the server.
    pub fn wrote_part(&mut self) {
        while self.unsent.front().is_some_and(|&end| end <= self.written) {
            self.unsent.pop_front();
        }
    }

    /// All of `out` went out (and TLS flushed it): every command is with the server.
    pub fn wrote_all(&mut self) {
        self.out.clear();
        self.written = 0;
        self.unsent.clear();
    }

    /// How many of the replies waited for answer commands the server has been sent: the
    /// most replies that bytes read now can hold. One more is a reply nothing asked for.
    pub fn answerable(&self) -> usize {
        self.expect.len() - self.unsent.len()
    }

    /// Is there output not yet written (or, under TLS, not yet flushed)?
    pub fn has_output(&self) -> bool {
        // Not `written < out.len()`: with TLS, all of `out` can be written into the session
        // while its records still wait for the socket; `out` is cleared only once they went.
        !self.out.is_empty()
    }

    /// A reply that ended a `expect` command: is its code one RFC 5321 (§4.2, §4.3.2)
    /// allows there? A 3xx answers only DATA (354, "start mail input"), DATA gets 354 or a
    /// refusal (4xx, 5xx) and never a 2xx, and the greeting and STARTTLS succeed with 220.
    /// Anything else means the server is out of step with the session (or answering a
    /// command other than the one we think): the session cannot be trusted.
    pub fn in_step(expect: Expect, code: u16) -> bool {
        match (expect, code / 100) {
            (Expect::Data, 3) => code == 354,
            (Expect::Data, 2) => false,
            (_, 3) => false,
            (Expect::Banner | Expect::StartTls, 2) => code == 220,
            _ => true,
        }
    }

    /// Note a refusal (the first one decides the message's outcome).
    pub fn refuse(&mut self, code: u16) {
        self.refusal.get_or_insert(code);
        if code == 421 {
            self.closing = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_answers_only_a_command_that_went_out() {
        let mut s = SmtpConn::new(Instant::now());
        s.await_banner();
        assert_eq!(s.answerable(), 1);
        s.expect.pop_front();
        s.send(b"MAIL FROM:<a@b>\r\n", Expect::Mail);
        s.send(b"RCPT TO:<c@d>\r\n", Expect::Rcpt);
        assert_eq!(s.answerable(), 0);
        // MAIL went out whole, RCPT in part.
        s.written = 20;
        s.wrote_part();
        assert_eq!(s.answerable(), 1);
        // All written, TLS still to flush: the bytes stay until it has.
        s.written = s.out.len();
        s.wrote_part();
        assert_eq!((s.answerable(), s.has_output()), (2, true));
        s.wrote_all();
        assert_eq!((s.answerable(), s.out.len(), s.written), (2, 0, 0));
    }

    #[test]
    fn codes_out_of_step_with_the_command() {
        assert!(SmtpConn::in_step(Expect::Data, 354));
        assert!(SmtpConn::in_step(Expect::Data, 451));
        assert!(SmtpConn::in_step(Expect::Data, 554));
        assert!(!SmtpConn::in_step(Expect::Data, 250));
        assert!(!SmtpConn::in_step(Expect::Data, 334));
        assert!(!SmtpConn::in_step(Expect::Mail, 354));
        assert!(!SmtpConn::in_step(Expect::Dot, 354));
        assert!(SmtpConn::in_step(Expect::Dot, 250));
        assert!(SmtpConn::in_step(Expect::Rcpt, 251));
        assert!(!SmtpConn::in_step(Expect::Banner, 250));
        assert!(SmtpConn::in_step(Expect::Banner, 554));
        assert!(!SmtpConn::in_step(Expect::StartTls, 250));
    }
}
