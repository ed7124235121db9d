//! One connection's SMTP session: what it is waiting for (a queue of the replies its
//! commands will get, longer than one when pipelined), what the session agreed (EHLO's
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
        self.expect.push_back(expect);
    }

    /// Is there output not yet written?
    pub fn has_output(&self) -> bool {
        self.written < self.out.len()
    }

    /// Note a refusal (the first one decides the message's outcome).
    pub fn refuse(&mut self, code: u16) {
        self.refusal.get_or_insert(code);
        if code == 421 {
            self.closing = true;
        }
    }
}
