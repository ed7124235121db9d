//! The HTTP/1.1 worker's exchange on one connection: open it (TCP, then the TLS handshake
//! for https://), write the request, read and parse the answer, and complete the request or
//! fail it. An answer closed before its first byte on a kept-alive connection is a stale
//! connection, not a failure: the request goes again on a new one. Which request a free
//! connection takes next is the worker's pacing (`worker`).
//!
//! Under io_uring a plain-TCP connection goes through the ring: a request whose bytes are
//! fixed is handed to it (`queue_send`: one `io_uring_enter` for the turn's sends; a send
//! the ring could not finish goes on by `write`), and the answer comes from a multishot
//! receive (`recv_done`), fed to the same parser a `read` feeds (`take_bytes`). Bytes or an
//! end of file that arrive while the connection is idle wait in the connection (`inbox`,
//! `peer_end`) until its next request, as they would wait in the socket under epoll.

use super::{Phase, Worker};
use crate::http1::{ParseError, Progress as ParseProgress};
use crate::journey::Outcome;
use crate::pacer;
use crate::recorder::Completion;
use crate::tls;
use crate::transport::Transport;
use crate::worker::base::{check_failed, expected, failure_kind, io_error_kind, micros, write_out};
use crate::worker::poller::Received;
use crate::worker::rx_stamp;
use crate::worker::wakeup::token_of;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;
use webtune_model::ErrorKind;

impl Worker {
    pub(super) fn open_connection(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        let stream = match self.base.open_socket(i, c.addr, &mut c.generation) {
            Ok(stream) => stream,
            Err(kind) => return self.fail(i, kind),
        };
        c.stream = Some(stream);
        c.served = 0;
        c.phase = Phase::Connecting;
        self.connecting += 1;
        let c = &mut self.conns[i];
        c.opened_at = Some(now);
        c.deadline = now + self.base.cfg.connect_timeout;
    }

    pub(super) fn begin_send(&mut self, i: usize, now: Instant) {
        if self.base.cfg.smtp.is_some() {
            return self.smtp_begin(i, now);
        }
        let timeout = self.base.cfg.timeout;
        let c = &mut self.conns[i];
        c.phase = Phase::Sending;
        c.written = 0;
        c.deadline = now + timeout;
        if c.ring_recv && (c.peer_end.is_some() || !c.inbox.is_empty()) {
            return self.take_inbox(i, now);
        }
        if !self.queue_send(i) {
            self.write_some(i);
        }
    }

    /// io_uring: the server sent bytes or closed while this connection was idle. An end of
    /// file alone is a stale connection (`on_eof`); bytes are read after the request is
    /// written, as epoll would read them from the socket.
    fn take_inbox(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        if !c.inbox.is_empty() {
            self.write_some(i);
            let c = &mut self.conns[i];
            if !matches!(c.phase, Phase::Sending | Phase::Receiving) || !c.ring_recv {
                return;
            }
            let inbox = std::mem::take(&mut c.inbox);
            c.first_byte.get_or_insert(now);
            c.received += inbox.len() as u64;
            let progress = c.parser.feed(&inbox);
            if !self.take_bytes(i, inbox.len(), progress, now) {
                return;
            }
        }
        match self.conns[i].peer_end.take() {
            Some(0) => self.on_eof(i, now),
            Some(err) => self.io_failure(i, &io::Error::from_raw_os_error(-err)),
            None => {}
        }
    }

    /// io_uring: a receive on connection `i` brought bytes, or ended.
    pub(super) fn recv_done(&mut self, i: usize, r: Received) {
        let now = Instant::now();
        let c = &mut self.conns[i];
        if !c.ring_recv || c.stream.is_none() {
            return;
        }
        let receiving = matches!(c.phase, Phase::Sending | Phase::Receiving);
        match r {
            Received::Bytes { bid, len } => {
                let data = self.base.poll.received_bytes(bid, len);
                if !receiving {
                    c.inbox.extend_from_slice(data);
                    return;
                }
                c.first_byte.get_or_insert(now);
                c.received += data.len() as u64;
                let progress = c.parser.feed(data);
                self.take_bytes(i, len as usize, progress, now);
            }
            Received::End(res) if !receiving => c.peer_end = Some(res),
            Received::End(0) => self.on_eof(i, now),
            Received::End(err) => self.io_failure(i, &io::Error::from_raw_os_error(-err)),
        }
    }

    /// io_uring, plain TCP, bytes fixed by the plan: hand the request to the ring (the phase
    /// moves on to receiving; `send_done` sees how it went). False: write it here.
    fn queue_send(&mut self, i: usize) -> bool {
        let b = &mut self.base;
        if !b.poll.queues_sends() {
            return false;
        }
        let c = &mut self.conns[i];
        let (Some(bytes), Some(Transport::Tcp(socket))) = (
            b.cfg.requests[c.request].fixed_bytes.as_deref(),
            c.stream.as_ref(),
        ) else {
            return false;
        };
        let token = token_of(i, c.generation);
        // SAFETY: the plan's bytes live in `cfg.requests`, unchanged for the whole run, and
        // `Base` drops its poller (the ring) before its `cfg`.
        let queued = unsafe { b.poll.queue_send(socket.as_raw_fd(), token, bytes) };
        if queued.is_err() {
            return false;
        }
        c.phase = Phase::Receiving;
        true
    }

    /// io_uring: the send `queue_send` queued ended, `res` bytes sent (or -errno).
    pub(super) fn send_done(&mut self, i: usize, res: i32) {
        let c = &mut self.conns[i];
        if c.phase != Phase::Receiving || c.received > 0 || c.stream.is_none() {
            return;
        }
        let len = self.base.cfg.requests[c.request]
            .fixed_bytes
            .as_ref()
            .map_or(0, Vec::len);
        if res < 0 && res != -libc::EAGAIN {
            return self.io_failure(i, &io::Error::from_raw_os_error(-res));
        }
        let n = res.max(0) as usize;
        if n >= len {
            self.base.rec.bytes_sent += len as u64;
            return;
        }
        // The socket took only part (or none): the rest by `write`, on writable events.
        c.written = n;
        c.phase = Phase::Sending;
        self.write_some(i);
    }

    fn write_some(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let bytes: &[u8] = match &self.base.cfg.requests[c.request].fixed_bytes {
            Some(b) => b,
            None => &c.rendered,
        };
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        match write_out(stream, bytes, &mut c.written) {
            // io_uring reading through the ring: no poll waits on this socket, ask for one.
            None if c.ring_recv => {
                let (fd, token) = (stream.socket().as_raw_fd(), token_of(i, c.generation));
                if let Err(e) = self.base.poll.writable_once(fd, token) {
                    self.io_failure(i, &e);
                }
            }
            None => {}
            Some(Ok(())) => {
                c.phase = Phase::Receiving;
                self.base.rec.bytes_sent += bytes.len() as u64;
            }
            Some(Err(e)) => self.io_failure(i, &e),
        }
    }

    pub(super) fn socket_event(&mut self, i: usize, event: crate::worker::poller::Readiness) {
        let now = Instant::now();
        if self.conns[i].ring_recv {
            // Read through the ring: a poll here only says the socket can be written.
            if self.conns[i].phase == Phase::Sending && (event.is_writable() || event.is_error()) {
                self.write_some(i);
            }
            return;
        }
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            if let Some(stream) = self.conns[i].stream.as_mut() {
                stream.readable();
            }
        }
        match self.conns[i].phase {
            Phase::Idle => {}
            Phase::Connecting => self.on_connect_ready(i, now),
            Phase::Handshaking => self.handshake_step(i, now),
            Phase::Sending | Phase::Receiving if self.base.cfg.smtp.is_some() => {
                self.smtp_event(i, event, now)
            }
            Phase::Sending => {
                if event.is_writable() {
                    self.write_some(i);
                }
                if self.conns[i].phase != Phase::Idle
                    && (event.is_readable() || event.is_error() || event.is_read_closed())
                {
                    self.read_some(i, event.is_read_closed(), now);
                }
            }
            Phase::Receiving => self.read_some(i, event.is_read_closed(), now),
        }
    }

    fn on_connect_ready(&mut self, i: usize, now: Instant) {
        if self.conns[i].stream.is_none() {
            return;
        }
        // The connect ended (how, SO_ERROR says below): no longer one under way.
        self.left_connecting(i);
        self.conns[i].phase = Phase::Sending;
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_ref() else {
            return;
        };
        // Tokens carry the socket's generation, so this event is this socket's own: readiness
        // in the connecting phase means the connect finished, and SO_ERROR says how.
        if let Err(kind) = self.base.finish_connect(stream, &mut c.backoff) {
            return self.fail(i, kind);
        }
        if let Some(t) = c.opened_at {
            c.connect_us = Some(micros(t, now));
        }
        if c.stream.as_ref().is_some_and(Transport::is_tls) {
            c.phase = Phase::Handshaking;
            c.handshake_from = now;
            c.deadline = now + self.base.cfg.connect_timeout;
            return self.handshake_step(i, now);
        }
        if self.base.ring_receives() {
            if let Some(stream) = c.stream.as_ref() {
                let (fd, token) = (stream.socket().as_raw_fd(), token_of(i, c.generation));
                if let Err(e) = self.base.poll.recv(fd, token) {
                    return self.io_failure(i, &e);
                }
                c.ring_recv = true;
            }
        }
        self.begin_send(i, now);
    }

    /// TLS: take the handshake as far as the socket allows; send the request once it is done.
    pub(super) fn handshake_step(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        match stream.handshake() {
            Ok(false) => {}
            Ok(true) => {
                c.handshake_us = Some(micros(c.handshake_from, now));
                if let Some(info) = stream.handshake_info() {
                    self.base.rec.handshake_done(&info);
                }
                self.begin_send(i, now);
            }
            Err(e) => self.fail(i, failure_kind(&e)),
        }
    }

    fn read_some(&mut self, i: usize, read_closed: bool, now: Instant) {
        let stamped = self.base.stamps.asked();
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            let buf = &mut self.base.buf;
            let read = match stream {
                // Open loop under epoll: with the kernel's arrival stamp (`rx_stamp`).
                Transport::Tcp(s) if stamped => rx_stamp::recv(s.as_raw_fd(), buf),
                _ => stream.read(buf).map(|n| (n, None)),
            };
            match read {
                Ok((0, _)) => return self.on_eof(i, now),
                Ok((n, stamp)) => {
                    let drained = stream.short_read_drains() && n < buf.len();
                    let at = match stamp {
                        Some(stamp) => rx_stamp::arrival(stamp, c.started),
                        None => now,
                    };
                    if stamped {
                        self.base.stamps.read(stamp.is_some());
                        c.answered = stamp.map(|_| at);
                    }
                    c.first_byte.get_or_insert(at);
                    c.received += n as u64;
                    let progress = c.parser.feed(&buf[..n]);
                    // TCP: a short read drained the socket. TLS: read on until the
                    // transport says WouldBlock.
                    if !self.take_bytes(i, n, progress, now) || (drained && !read_closed) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failure(i, &e),
            }
        }
    }

    /// What the parser made of `n` more bytes of the answer (a read's, or a receive's from
    /// the ring): true when it needs more.
    fn take_bytes(
        &mut self,
        i: usize,
        n: usize,
        progress: Result<ParseProgress, ParseError>,
        now: Instant,
    ) -> bool {
        match progress {
            Ok(ParseProgress::NeedMore) => true,
            Ok(ParseProgress::Complete { consumed }) => {
                if consumed < n {
                    // Bytes after the end of the body: we never pipeline, so the framing
                    // was wrong.
                    self.fail(i, ErrorKind::Malformed);
                } else {
                    self.complete(i, now, false);
                }
                false
            }
            Err(e) => {
                self.fail(i, e.kind());
                false
            }
        }
    }

    fn on_eof(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        if c.parser.finish_at_eof() {
            self.complete(i, now, true);
        } else if c.received == 0 && c.served > 0 {
            self.retry_stale(i, now);
        } else {
            self.fail(i, ErrorKind::ClosedEarly);
        }
    }

    pub(super) fn io_failure(&mut self, i: usize, e: &io::Error) {
        if let Some(kind) = tls::failure_kind(e) {
            return self.fail(i, kind);
        }
        let c = &self.conns[i];
        let stale = c.received == 0
            && c.served > 0
            && matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::ConnectionAborted
            );
        if stale {
            self.retry_stale(i, Instant::now());
        } else {
            self.fail(i, io_error_kind(e));
        }
    }

    /// The server closed a kept-alive connection before any byte of this request's answer:
    /// the connection was stale, not the request failed. Send it again on a new connection
    /// (the request's clock keeps running: the user waited that long).
    pub(super) fn retry_stale(&mut self, i: usize, now: Instant) {
        self.base.rec.stale_reconnects += 1;
        self.close(i);
        let is_head = self.base.cfg.requests[self.conns[i].request].is_head;
        let c = &mut self.conns[i];
        c.parser.reset(is_head);
        let started = c.started;
        self.open_connection(i, now);
        self.conns[i].started = started;
    }

    /// Request `i`'s answer is complete: recorded as ended when its last bytes arrived (the
    /// kernel's stamp, else `now`); the connection's next request goes at `now`.
    fn complete(&mut self, i: usize, now: Instant, closed_by_server: bool) {
        let answered = self.conns[i].answered.take();
        let now_for_next = now;
        let now = answered.unwrap_or(now);
        let b = &mut self.base;
        let slot = b.slot_of(now);
        let in_window = b.in_window(now);
        let c = &mut self.conns[i];
        let planned = &b.cfg.requests[c.request];
        let head = c.parser.head();
        let status = head.map(|h| h.status).unwrap_or(0);
        let body_bytes = c.parser.body_bytes();
        let extract_failed = match (c.user.as_deref_mut(), b.cfg.journeys.as_deref()) {
            (Some(user), Some(run)) => !user.on_answer(
                run,
                &c.rendered,
                c.parser.set_cookies(),
                c.parser.body(),
                now,
            ),
            _ => false,
        };
        let completion = Completion {
            request: c.request,
            status,
            expected: expected(planned, status),
            check_failed: check_failed(planned, c.parser.body()),
            extract_failed,
            connect_us: c.connect_us,
            tls_handshake_us: c.handshake_us,
            first_byte_us: micros(c.started, c.first_byte.unwrap_or(now)),
            total_us: micros(pacer::latency_origin(c.intended, c.started), now),
            service_us: c.intended.map(|_| micros(c.started, now)),
            bytes: c.received,
            body_bytes,
            length_varies: b.cfg.first_lengths[c.request].varies(body_bytes),
            kept_alive: !closed_by_server && head.is_some_and(|h| h.keep_alive),
        };
        if let Some(server) = c.parser.take_server() {
            b.rec.server_software.get_or_insert(server);
        }
        c.served += 1;
        c.phase = Phase::Idle;
        let reusable = b.cfg.keepalive
            && !closed_by_server
            && head.is_some_and(|h| h.keep_alive)
            && b.cfg.max_requests_per_conn.is_none_or(|m| c.served < m);
        b.active -= 1;
        b.rec.complete(&completion, slot, in_window);
        if let (Some(user), Some(run)) = (c.user.as_deref_mut(), b.cfg.journeys.as_deref()) {
            let failed = if !completion.expected {
                Some(ErrorKind::UnexpectedStatus)
            } else if completion.check_failed {
                Some(ErrorKind::BodyCheck)
            } else if extract_failed {
                Some(ErrorKind::Extract)
            } else {
                None
            };
            let ended = match failed {
                Some(kind) => {
                    let step = user.fail(run);
                    b.rec.journey_failed(user.journey, step, kind, in_window);
                    true
                }
                None => match user.advance(run, &mut b.rng, now) {
                    Outcome::Done(us) => {
                        b.rec.journey_done(user.journey, us, in_window);
                        true
                    }
                    Outcome::Going => false,
                },
            };
            if ended && run.walk_budget {
                b.walking = b.walking.saturating_sub(1);
            }
        }
        if !reusable {
            self.close(i);
        }
        self.next_request(i, now_for_next);
    }
}
