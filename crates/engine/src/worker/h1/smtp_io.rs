//! The SMTP exchange on one connection of the worker (the HTTP/1 worker's pacing, loop,
//! schedule and recorder; `conn_io` hands its connection here once it is connected, and
//! socket events while a message is in flight). A new socket waits for the banner, says
//! EHLO (HELO when EHLO is refused with 5xx), optionally STARTTLS through the transport's
//! TLS and EHLO again; then per message MAIL, RCPT… and DATA — in one write when the server
//! offered PIPELINING — and the message after 354. The reply to the final dot completes the
//! message (its code is the message's status); a refusal on the way ends it with the
//! refusal's code after RSET. After `per_connection` messages, or a 421, QUIT and close.
//!
//! Each reply's latency is recorded in its phase's histogram (`SmtpSummary`). A message is
//! accepted only by a 2xx to its final dot, after a 354 to DATA. A reply that is no SMTP
//! reply, one out of step with its command (a 2xx to DATA, a 3xx to anything else) or one
//! that arrives while no command sent waits for it (an extra reply) is `malformed`, and the
//! session is closed (one that comes after a message's last reply while the connection goes
//! idle closes the session with no message to fail); silence past `--timeout` after a command is a
//! `request_timeout`; a close before the message's end is `closed_early` (or, before any
//! byte of a message on a reused connection, a stale connection, sent again on a new one).

use super::{Phase, Worker};
use crate::pacer;
use crate::recorder::Completion;
use crate::smtp::message;
use crate::smtp::session::{Expect, SmtpConn};
use crate::transport::Transport;
use crate::worker::base::{micros, write_out};
use std::io;
use std::time::Instant;
use webtune_model::ErrorKind;

/// What a reply leads to.
enum Next {
    /// Carry on: write what was queued, wait for the next reply.
    Go,
    /// The message is over with this code.
    Done(u16),
    /// A protocol failure.
    Fail(ErrorKind),
    /// STARTTLS was accepted: the handshake comes next.
    StartTls,
}

impl Worker {
    /// The connection is ready for its message: a new session waits for the banner (after
    /// STARTTLS's handshake, it says EHLO again); an established one starts the message.
    pub(super) fn smtp_begin(&mut self, i: usize, now: Instant) {
        let b = &mut self.base;
        let Some(setup) = b.cfg.smtp.as_deref() else {
            return;
        };
        let c = &mut self.conns[i];
        c.phase = Phase::Receiving;
        c.deadline = now + b.cfg.timeout;
        let s = c.smtp.get_or_insert_with(|| Box::new(SmtpConn::new(now)));
        if s.established {
            start_message(s, setup, &mut b.rng, now);
        } else if s.tls_upgraded {
            if b.in_window(now) {
                if let Some(sum) = b.rec.smtp.as_mut() {
                    sum.starttls.record(micros(s.since, now));
                }
            }
            s.since = now;
            s.send(&setup.ehlo, Expect::Ehlo);
        } else {
            s.reply.reset();
            s.await_banner();
            s.since = now;
            // The greeting may have come with the connect's own readiness event, whose
            // edge is spent: read now rather than wait for one that will not come.
            let mut buf = std::mem::take(&mut self.base.buf);
            self.smtp_read(i, false, now, &mut buf);
            self.base.buf = buf;
            return;
        }
        self.smtp_write(i);
    }

    /// A readiness event while a message is in flight.
    pub(super) fn smtp_event(
        &mut self,
        i: usize,
        event: crate::worker::poller::Readiness,
        now: Instant,
    ) {
        if event.is_writable() {
            self.smtp_write(i);
        }
        if matches!(self.conns[i].phase, Phase::Sending | Phase::Receiving)
            && (event.is_readable() || event.is_error() || event.is_read_closed())
        {
            let mut buf = std::mem::take(&mut self.base.buf);
            self.smtp_read(i, event.is_read_closed(), now, &mut buf);
            self.base.buf = buf;
        }
    }

    /// Write what the session has queued, as far as the socket takes it.
    fn smtp_write(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let (Some(stream), Some(s)) = (c.stream.as_mut(), c.smtp.as_deref_mut()) else {
            return;
        };
        if !s.has_output() {
            return;
        }
        match write_out(stream, &s.out, &mut s.written) {
            None => s.wrote_part(),
            Some(Ok(())) => {
                self.base.rec.bytes_sent += s.out.len() as u64;
                s.wrote_all();
            }
            Some(Err(e)) => self.io_failure(i, &e),
        }
    }

    fn smtp_read(&mut self, i: usize, read_closed: bool, now: Instant, buf: &mut [u8]) {
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            let n = match stream.read(buf) {
                Ok(0) => return self.smtp_eof(i, now),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.io_failure(i, &e),
            };
            let drained = stream.short_read_drains() && n < buf.len();
            if c.first_byte.is_none() {
                c.first_byte = Some(now);
            }
            c.received += n as u64;
            // These bytes were with us before anything written from here on: they can
            // answer only the commands already sent. A reply beyond those is one nothing
            // asked for (a server out of step, whose later replies would each be taken for
            // the next command's).
            let mut answerable = c.smtp.as_deref().map_or(0, SmtpConn::answerable);
            let mut at = 0;
            while at < n {
                let c = &mut self.conns[i];
                let Some(s) = c.smtp.as_deref_mut() else {
                    return;
                };
                match s.reply.feed(&buf[at..n]) {
                    Ok(Some((code, used))) => {
                        at += used;
                        if answerable == 0 {
                            return self.fail(i, ErrorKind::Malformed);
                        }
                        answerable -= 1;
                        c.deadline = now + self.base.cfg.timeout;
                        match self.smtp_reply(i, code, now) {
                            Next::Go => {}
                            Next::Done(code) => self.smtp_done(i, code, now),
                            Next::Fail(kind) => return self.fail(i, kind),
                            Next::StartTls => return self.smtp_starttls(i, now),
                        }
                        if !matches!(self.conns[i].phase, Phase::Sending | Phase::Receiving) {
                            let c = &self.conns[i];
                            if at < n && c.phase == Phase::Idle && c.stream.is_some() {
                                // More after the message's last reply, and no message in
                                // flight to fail (open loop, nothing due): a reply nothing
                                // asked for. The session is out of step; the next message
                                // takes a new one.
                                self.close(i);
                            }
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(_) => return self.fail(i, ErrorKind::Malformed),
                }
            }
            self.smtp_write(i);
            if !matches!(self.conns[i].phase, Phase::Sending | Phase::Receiving) {
                return;
            }
            if drained && !read_closed {
                return;
            }
        }
    }

    /// One complete reply: record it, and queue what it calls for.
    fn smtp_reply(&mut self, i: usize, code: u16, now: Instant) -> Next {
        let b = &mut self.base;
        let in_window = b.in_window(now);
        let Some(setup) = b.cfg.smtp.as_deref() else {
            return Next::Fail(ErrorKind::Malformed);
        };
        let Some(sum) = b.rec.smtp.as_mut() else {
            return Next::Fail(ErrorKind::Malformed);
        };
        let c = &mut self.conns[i];
        let is_tls = c.stream.as_ref().is_some_and(Transport::is_tls);
        let Some(s) = c.smtp.as_deref_mut() else {
            return Next::Fail(ErrorKind::Malformed);
        };
        // A reply nothing asked for: the server is out of step with the protocol.
        let Some(expect) = s.expect.pop_front() else {
            return Next::Fail(ErrorKind::Malformed);
        };
        if in_window {
            *sum.replies.entry(code).or_insert(0) += 1;
        }
        if !SmtpConn::in_step(expect, code) {
            // e.g. 250 to DATA: no 354, so no message went, whatever the code says.
            return Next::Fail(ErrorKind::Malformed);
        }
        let latency = micros(s.since, now);
        let record = |h: &mut webtune_model::smtp::PhaseLatency| {
            if in_window {
                h.record(latency);
            }
        };
        let ok = code / 100 == 2;
        match expect {
            Expect::Banner => {
                record(&mut sum.banner);
                s.since = now;
                if code != 220 {
                    s.refuse(code);
                    return Next::Done(code);
                }
                s.send(&setup.ehlo, Expect::Ehlo);
            }
            Expect::Ehlo | Expect::Helo => {
                record(&mut sum.ehlo);
                s.since = now;
                if !ok && expect == Expect::Ehlo && code >= 500 {
                    if in_window {
                        sum.helo_fallbacks += 1;
                    }
                    s.send(&setup.helo, Expect::Helo);
                    return Next::Go;
                }
                if !ok {
                    s.refuse(code);
                    return Next::Done(code);
                }
                if setup.spec.starttls && !is_tls {
                    if expect == Expect::Helo || !s.reply.starttls() {
                        // Asked for STARTTLS and not offered it: no plaintext fallback.
                        return Next::Fail(ErrorKind::TlsHandshake);
                    }
                    s.send(b"STARTTLS\r\n", Expect::StartTls);
                    return Next::Go;
                }
                s.established = true;
                s.pipelining =
                    expect == Expect::Ehlo && setup.spec.pipelining && s.reply.pipelining();
                s.messages_left = setup.messages_per_connection(&mut b.rng);
                if in_window {
                    sum.sessions += 1;
                    sum.pipelined_sessions += u64::from(s.pipelining);
                }
                start_message(s, setup, &mut b.rng, now);
            }
            Expect::StartTls => {
                // The phase runs on through the handshake (recorded when EHLO goes again).
                if code != 220 {
                    s.refuse(code);
                    return Next::Done(code);
                }
                return Next::StartTls;
            }
            Expect::Mail => {
                record(&mut sum.mail);
                s.since = now;
                if !ok {
                    s.refuse(code);
                }
                if !s.pipelining {
                    if s.refusal.is_some() {
                        s.send(b"RSET\r\n", Expect::Rset);
                    } else {
                        send_rcpt(s, setup);
                    }
                }
            }
            Expect::Rcpt => {
                record(&mut sum.rcpt);
                s.since = now;
                if ok {
                    s.accepted += 1;
                    if in_window {
                        sum.recipients_accepted += 1;
                    }
                } else {
                    s.rcpt_refusal.get_or_insert(code);
                    if in_window {
                        sum.recipients_refused += 1;
                    }
                }
                if !s.pipelining {
                    if s.rcpt_sent < s.recipients.len() {
                        send_rcpt(s, setup);
                    } else if s.accepted > 0 {
                        s.data_from = now;
                        s.send(b"DATA\r\n", Expect::Data);
                    } else {
                        let refusal = s.rcpt_refusal.unwrap_or(554);
                        s.refuse(refusal);
                        s.send(b"RSET\r\n", Expect::Rset);
                    }
                }
            }
            Expect::Data => {
                s.since = now;
                if s.accepted == 0 {
                    let refusal = s.rcpt_refusal.unwrap_or(554);
                    s.refuse(refusal);
                }
                if code == 354 {
                    if s.refusal.is_some() {
                        // A server that takes DATA after refusing the envelope: end the
                        // data at once; the message counts as refused.
                        s.send(b".\r\n", Expect::Dot);
                    } else {
                        let to = s.recipients.first().map_or(0, |&r| r as usize);
                        let size = b.rng.between(setup.spec.min_size, setup.spec.max_size);
                        b.seqs[0] += 1;
                        let len = message::write_message(
                            &mut s.out,
                            &setup.text,
                            &mut b.rng,
                            size,
                            &setup.spec.from,
                            &setup.mailboxes[to],
                            b.seqs[0],
                            b.cfg.seed,
                        );
                        s.queued(Expect::Dot);
                        if in_window {
                            sum.message_bytes += len as u64;
                        }
                        b.rec.message_sent(len as u64);
                    }
                } else {
                    s.refuse(code);
                    s.send(b"RSET\r\n", Expect::Rset);
                }
            }
            Expect::Dot => {
                if in_window && s.refusal.is_none() {
                    sum.data.record(micros(s.data_from, now));
                }
                s.since = now;
                return Next::Done(s.refusal.unwrap_or(code));
            }
            Expect::Rset => {
                s.since = now;
                return Next::Done(s.refusal.unwrap_or(code));
            }
        }
        Next::Go
    }

    /// STARTTLS was accepted: the socket continues under TLS, handshake first.
    fn smtp_starttls(&mut self, i: usize, now: Instant) {
        let session = match self.base.cfg.starttls.as_ref().map(|t| t.connection()) {
            Some(Ok(session)) => session,
            _ => return self.fail(i, ErrorKind::TlsHandshake),
        };
        let c = &mut self.conns[i];
        let Some(Transport::Tcp(sock)) = c.stream.take() else {
            // Not plain TCP (STARTTLS twice): nothing to upgrade; the stream is dropped.
            self.base.open -= 1;
            self.base.cfg.open_gauge.closed();
            return self.fail(i, ErrorKind::TlsHandshake);
        };
        c.stream = Some(Transport::tls(sock, session, true));
        if let Some(s) = c.smtp.as_deref_mut() {
            s.tls_upgraded = true;
            s.reply.reset();
        }
        c.phase = Phase::Handshaking;
        c.handshake_from = now;
        c.deadline = now + self.base.cfg.connect_timeout;
        self.handshake_step(i, now);
    }

    /// The message ended with `code` (2xx: accepted). The connection takes the next message
    /// or, after its last one (or a 421), says QUIT and closes.
    fn smtp_done(&mut self, i: usize, code: u16, now: Instant) {
        let b = &mut self.base;
        let slot = b.slot_of(now);
        let in_window = b.in_window(now);
        let c = &mut self.conns[i];
        let Some(s) = c.smtp.as_deref_mut() else {
            return;
        };
        if in_window {
            if let Some(sum) = b.rec.smtp.as_mut() {
                match code / 100 {
                    2 => sum.accepted += 1,
                    4 => sum.deferred += 1,
                    _ => sum.rejected += 1,
                }
            }
        }
        if !s.established || code == 421 {
            s.closing = true;
        }
        s.messages_left = s.messages_left.saturating_sub(1);
        // Reused only while more messages will go (else QUIT now, not a silent close later).
        let reusable = s.messages_left > 0
            && !s.closing
            && b.cfg.keepalive
            && b.sending
            && b.remaining != Some(0);
        let completion = Completion {
            request: 0,
            status: code,
            expected: code / 100 == 2,
            check_failed: false,
            extract_failed: false,
            connect_us: c.connect_us,
            tls_handshake_us: c.handshake_us,
            first_byte_us: micros(c.started, c.first_byte.unwrap_or(now)),
            total_us: micros(pacer::latency_origin(c.intended, c.started), now),
            service_us: c.intended.map(|_| micros(c.started, now)),
            bytes: c.received,
            body_bytes: 0,
            length_varies: false,
            kept_alive: reusable,
        };
        c.served += 1;
        c.phase = Phase::Idle;
        b.active -= 1;
        b.rec.complete(&completion, slot, in_window);
        if !reusable {
            if code != 421 {
                // Goodbye without waiting for the 221: the session is over either way.
                if let Some(stream) = c.stream.as_mut() {
                    let mut written = 0;
                    let _ = write_out(stream, b"QUIT\r\n", &mut written);
                }
            }
            self.close(i);
        }
        self.next_request(i, now);
    }

    /// The server closed the connection. Before any byte of a message on a connection that
    /// already carried one, the connection was stale (the server's idle timeout): the
    /// message goes again on a new one. Otherwise it ended early.
    fn smtp_eof(&mut self, i: usize, now: Instant) {
        let c = &self.conns[i];
        let established = c.smtp.as_deref().is_some_and(|s| s.established);
        if c.received == 0 && c.served > 0 && established {
            self.retry_stale(i, now);
        } else {
            self.fail(i, ErrorKind::ClosedEarly);
        }
    }
}

/// A new message on an established session: its recipients, then MAIL FROM (and, pipelined,
/// every RCPT TO and DATA in the same write).
fn start_message(
    s: &mut SmtpConn,
    setup: &crate::smtp::SmtpSetup,
    rng: &mut crate::rng::Rng,
    now: Instant,
) {
    s.reset_message();
    let n = rng.between(1, u64::from(setup.spec.max_recipients.max(1)));
    for _ in 0..n {
        s.recipients.push(setup.pick_mailbox(rng) as u32);
    }
    s.since = now;
    s.send(&setup.mail_from, Expect::Mail);
    if s.pipelining {
        while s.rcpt_sent < s.recipients.len() {
            send_rcpt(s, setup);
        }
        s.data_from = now;
        s.send(b"DATA\r\n", Expect::Data);
    }
}

/// Queue the next RCPT TO.
fn send_rcpt(s: &mut SmtpConn, setup: &crate::smtp::SmtpSetup) {
    let r = s.recipients[s.rcpt_sent] as usize;
    s.rcpt_sent += 1;
    s.send(&setup.rcpt[r], Expect::Rcpt);
}
