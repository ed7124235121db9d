//! The HTTP/1.1 worker (and SMTP's, which paces a message as HTTP/1.1 paces a request):
//! one request in flight per connection. This file decides which connection sends when
//! (the pacer, `crate::pacer`, says when a request is due). `conn_io` is its exchange on one connection (connect, TLS handshake, write, read,
//! parse, complete), `smtp_io` SMTP's (banner, EHLO, MAIL, RCPT, DATA); siblings of HTTP/2's
//! `worker::h2` and HTTP/3's `worker::h3`, as hyper's `proto/h1` and `proto/h2` are. What it
//! shares with them lives in `worker`: `event_loop` (the loop itself), `wakeup` (its timer
//! and tokens), `base` (the state and per-request rules: the pacer, window, budget,
//! recording, sockets) and `backoff` (the pause after a failed connect).
//!
//! Per request on a kept-alive connection the worker makes one `write` and (usually) one
//! `read`; readiness comes from one `epoll_wait` shared by all ready connections. A short
//! read means the socket was drained at that moment, so no extra read is spent to see
//! EAGAIN; a later arrival raises a new edge.
//!
//! Closed loop: each connection sends its next request when the previous answer ends (after
//! an optional think time); a ramp changes how many connections may be busy. Open loop:
//! requests fall due on a schedule; a due request takes an idle connection, or opens one up
//! to the cap, or waits — and its latency counts from when it was due. Waiting requests are
//! not queued: a free connection takes the oldest due arrival from the pacer itself
//! (`Base::take_due`), so a backlog costs no memory however large it grows. How
//! late it was sent is split (`lateness`) into the wait with every connection busy (the
//! server's time) and the generator's own lateness. A
//! timerfd wakes the loop at the next due time with microsecond precision (epoll's own
//! timeout has millisecond steps; under io_uring the wait's own timeout, in nanoseconds, is
//! the timer); one wake-up sends every request due by then or within a
//! small slack (`pacer`), and the timer is re-armed only when its set time no longer serves.
//! Under epoll over plain TCP the answers are read with the kernel's arrival stamp
//! (`rx_stamp`), so the worker need not wake for each: it sleeps to its next due time and
//! takes them together (`batches_answers`), each ending when it arrived.
//!
//! SMTP (`webtune smtp`): the same pacing, with a message as the request; a connection
//! carries an SMTP session and `smtp_io` is its exchange (banner, EHLO, MAIL, RCPT, DATA).
//!
//! HTTPS: each connection's bytes go through a `Transport` (plain TCP or rustls over the
//! socket); a new TLS connection goes from connecting through a handshake phase, timed in
//! its own histogram, before its first request is written.

mod conn_io;
mod smtp_io;

use super::backoff::ConnectBackoff;
use super::base::Base;
use super::config::WorkerConfig;
use super::event_loop::{run_loop, Driver};
use super::poller;
use crate::http1::ResponseParser;
use crate::recorder::Recorder;
use crate::scenario;
use crate::transport::Transport;
use mio::net::TcpStream;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;
use webtune_model::ErrorKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Connecting,
    /// TLS: the TCP connect is done, the handshake is under way.
    Handshaking,
    Sending,
    Receiving,
}

struct Conn {
    stream: Option<Transport<TcpStream>>,
    /// Bumped for every new socket; part of its event token.
    generation: usize,
    addr: SocketAddr,
    phase: Phase,
    /// Which planned request is in flight.
    request: usize,
    /// Rendered request bytes when the request varies (else the plan's fixed bytes).
    rendered: Vec<u8>,
    /// Request bytes written so far.
    written: usize,
    /// When the current request actually began (its connect, if it opened the connection).
    started: Instant,
    /// Open loop: when it was due. Latency counts from here.
    intended: Option<Instant>,
    /// When this request's connection attempt began, if it opened one.
    opened_at: Option<Instant>,
    connect_us: Option<u64>,
    /// TLS: when the handshake began (the TCP connect's end), and how long it took.
    handshake_from: Instant,
    handshake_us: Option<u64>,
    first_byte: Option<Instant>,
    /// Open loop under epoll: when the answer's latest bytes arrived, by the kernel's stamp
    /// (None: unstamped, the read's time counts).
    answered: Option<Instant>,
    deadline: Instant,
    /// Requests completed on the current connection.
    served: u64,
    /// Connects that failed in a row (reset by one that succeeds).
    backoff: ConnectBackoff,
    /// Bytes received for the current request.
    received: u64,
    parser: ResponseParser,
    /// SMTP runs: the session on this connection (made at its first message).
    smtp: Option<Box<crate::smtp::session::SmtpConn>>,
    /// io_uring: this socket is read through the ring (`Poller::recv`), not on readiness.
    ring_recv: bool,
    /// io_uring: bytes received while no request was in flight, and how the receive ended
    /// then (0: end of file, else -errno); taken by the next request.
    inbox: Vec<u8>,
    peer_end: Option<i32>,
    /// Journeys: the virtual user this connection carries (None for a mix or a URL).
    user: Option<Box<crate::journey::VirtualUser>>,
}

struct Worker {
    base: Base,
    conns: Vec<Conn>,
    /// Closed loop: connections (by index) that may be busy now.
    allowed: usize,
    /// Closed loop: connections waiting to start their next request (after a failure or a
    /// ramp-up).
    ready: Vec<usize>,
    /// Closed loop: connections thinking (or backing off after a failed connect) until a time.
    thinking: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Open loop: idle connections, connected ones preferred.
    idle_connected: Vec<usize>,
    idle_fresh: Vec<usize>,
    /// Connections whose connect is under way (their end is timed when it is seen).
    connecting: usize,
}

/// Run one HTTP/1.1 (or SMTP) worker to the end; returns what it measured.
pub(super) fn run(cfg: WorkerConfig) -> io::Result<Recorder> {
    let now = Instant::now();
    let conns: Vec<Conn> = cfg
        .conn_addrs
        .iter()
        .enumerate()
        .map(|(k, &addr)| Conn {
            stream: None,
            generation: 0,
            addr,
            phase: Phase::Idle,
            request: 0,
            rendered: Vec::new(),
            written: 0,
            started: now,
            intended: None,
            opened_at: None,
            connect_us: None,
            handshake_from: now,
            handshake_us: None,
            first_byte: None,
            answered: None,
            deadline: now,
            served: 0,
            backoff: ConnectBackoff::default(),
            received: 0,
            parser: ResponseParser::new(),
            smtp: None,
            ring_recv: false,
            inbox: Vec::new(),
            peer_end: None,
            // Closed loop: the connection's user for the whole run. Open loop: each arrival's.
            user: cfg.journeys.as_ref().filter(|run| !run.open).map(|run| {
                Box::new(crate::journey::VirtualUser::new(
                    run,
                    cfg.first_user + k,
                    now,
                ))
            }),
        })
        .collect();
    let mut w = Worker {
        allowed: conns.len(),
        idle_fresh: (0..conns.len()).rev().collect(),
        conns,
        base: Base::new(cfg)?,
        ready: Vec::new(),
        thinking: BinaryHeap::new(),
        idle_connected: Vec::new(),
        connecting: 0,
    };
    w.base.read_through_ring();
    w.base.stamp_answers();
    run_loop(&mut w)?;
    Ok(w.base.rec)
}

impl Driver for Worker {
    fn base(&mut self) -> &mut Base {
        &mut self.base
    }

    fn start_closed(&mut self) {
        self.update_allowed(Instant::now());
        for i in 0..self.allowed {
            self.ready.push(i);
        }
        self.ready.reverse();
    }

    fn release(&mut self, now: Instant) {
        if self.base.is_open_loop() {
            // Journeys: users back from thinking take their walk's next step.
            while let Some(Reverse((at, i))) = self.thinking.peek().copied() {
                if at > now {
                    break;
                }
                self.thinking.pop();
                if self.base.sending && self.conns[i].phase == Phase::Idle {
                    self.start_request(i, now, None);
                }
            }
            return self.release_due(now);
        }
        while let Some(Reverse((at, i))) = self.thinking.peek().copied() {
            if at > now {
                break;
            }
            self.thinking.pop();
            self.ready.push(i);
        }
        while let Some(i) = self.ready.pop() {
            if self.conns[i].phase == Phase::Idle && i < self.allowed && self.may_go(i) {
                self.start_request(i, now, None);
            }
        }
    }

    /// Nothing is queued: a due request not yet sent is still the schedule's (`take_due`).
    fn waiting(&self) -> bool {
        false
    }

    fn on_stop(&mut self) {
        self.ready.clear();
        self.thinking.clear();
    }

    fn tick(&mut self, now: Instant) {
        self.expire(now);
        if !self.base.is_open_loop() {
            self.update_allowed(now);
        }
    }

    /// The run is over: requests still in flight are counted as abandoned, not failed.
    fn abandon_all(&mut self) {
        for i in 0..self.conns.len() {
            if self.conns[i].phase != Phase::Idle {
                self.left_connecting(i);
                self.base.rec.abandoned += 1;
                self.base.active -= 1;
                self.conns[i].phase = Phase::Idle;
                self.close(i);
            }
        }
    }

    fn resume_at(&self) -> Option<Instant> {
        self.thinking.peek().map(|Reverse((at, _))| *at)
    }

    /// Closed loop: connections ready to start. Open loop: an idle connection and a request
    /// already due (a turn's starts were used up by connects that failed at once).
    fn ready_now(&self) -> bool {
        !self.ready.is_empty()
            || (self.base.sending && self.has_idle() && self.base.pacer.due_by(Instant::now()))
    }

    /// Open loop under epoll, answers stamped by the kernel: the loop may sleep to its next
    /// wake-up with answers outstanding — unless a connection is free for nothing (a due
    /// request may wait for one an answer frees) or a connect is under way (its end is
    /// timed when it is seen).
    fn batches_answers(&self) -> bool {
        self.base.batches_answers() && self.connecting == 0 && self.has_idle()
    }

    fn generation(&self, i: usize) -> Option<usize> {
        self.conns.get(i).map(|c| c.generation)
    }

    fn on_event(&mut self, i: usize, event: poller::Readiness) {
        self.socket_event(i, event);
    }

    fn on_sent(&mut self, i: usize, res: i32) {
        self.send_done(i, res);
    }

    fn on_received(&mut self, i: usize, r: poller::Received) {
        self.recv_done(i, r);
    }
}

impl Worker {
    /// Closed loop with a ramp: how many connections may be busy now.
    fn update_allowed(&mut self, now: Instant) {
        let Some(target) = self.base.pacer.allowed(now, self.conns.len()) else {
            return;
        };
        if target > self.allowed {
            for i in self.allowed..target {
                self.ready.push(i);
            }
        }
        self.allowed = target;
    }

    /// Open loop: start as many of the requests due by `now` as there are idle connections
    /// for; the rest stay due in the schedule until a connection comes free. At most one
    /// start per connection in a turn: a connect that fails at once (no route, no local
    /// port) frees its connection again, and a backlog larger than the failures can drain
    /// must not keep the loop from its end (`ready_now` brings the next turn at once).
    fn release_due(&mut self, now: Instant) {
        for _ in 0..self.conns.len() {
            if !self.has_idle() {
                break;
            }
            let Some(due) = self.base.take_due(now) else {
                break;
            };
            if let Some(i) = self.idle_connected.pop().or_else(|| self.idle_fresh.pop()) {
                self.start_arrival(i, now, due);
            }
        }
        self.note_idle(now);
        // No request still to be sent was due before the next one the schedule holds.
        let oldest = self.base.pacer.next_due().unwrap_or(now);
        self.base.all_busy.forget_before(oldest);
        if self.base.pacer.next_due().is_none() && self.base.sending {
            // Nothing more will fall due: stop sending (a timed run still lasts until its
            // end, `event_loop`).
            self.base.sending = false;
        }
    }

    /// Open loop: is a connection idle?
    fn has_idle(&self) -> bool {
        !(self.idle_connected.is_empty() && self.idle_fresh.is_empty())
    }

    /// Open loop: the idle lists changed at `now`; keep the busy clock in step.
    fn note_idle(&mut self, now: Instant) {
        let none_idle = !self.has_idle();
        self.base.all_busy.set(none_idle, now);
    }

    /// Closed loop: may connection `i` start its next request? A journey's user in the
    /// middle of a walk may when the budget counts walks (it was taken when the walk began).
    fn may_go(&mut self, i: usize) -> bool {
        if self.base.walk_budget() && self.conns[i].user.as_ref().is_some_and(|u| u.in_walk()) {
            return self.base.sending;
        }
        self.base.may_start()
    }

    /// Open loop: the arrival due at `due` starts on idle connection `i` — for journeys, as
    /// a fresh user's walk (none left under `unique_users`: the arrival is not sent and the
    /// connection stays idle).
    fn start_arrival(&mut self, i: usize, now: Instant, due: Instant) {
        if let Some(run) = self.base.cfg.journeys.as_deref() {
            match crate::journey::VirtualUser::arrive(run, &mut self.base.rng, due) {
                Some(user) => self.conns[i].user = Some(Box::new(user)),
                None => {
                    self.base.rec.not_sent += 1;
                    if self.conns[i].stream.is_some() {
                        self.idle_connected.push(i);
                    } else {
                        self.idle_fresh.push(i);
                    }
                    return;
                }
            }
        }
        self.start_request(i, now, Some(due));
    }

    fn start_request(&mut self, i: usize, now: Instant, intended: Option<Instant>) {
        self.base.active += 1;
        let b = &mut self.base;
        let c = &mut self.conns[i];
        let request = match (c.user.as_deref_mut(), b.cfg.journeys.as_deref()) {
            (Some(user), Some(run)) => {
                if !user.in_walk() && run.walk_budget {
                    b.walking += 1;
                }
                user.next_request(run, &mut b.rng, intended.unwrap_or(now))
            }
            _ => b.pick_request(),
        };
        let planned = &b.cfg.requests[request];
        c.request = request;
        let mut capture = planned.body_contains.is_some();
        if let (Some(user), Some(run)) = (c.user.as_deref_mut(), b.cfg.journeys.as_deref()) {
            let seq = b.seqs[request];
            b.seqs[request] += 1;
            user.encode(
                run,
                &b.cfg.host_header,
                b.cfg.keepalive,
                b.cfg.http10,
                &mut b.rng,
                seq,
                now,
                &mut c.rendered,
            );
            capture |= user.wants_body(run);
        } else if let Some(def) = planned.def.as_ref() {
            let seq = b.seqs[request];
            b.seqs[request] += 1;
            scenario::encode_into(
                def,
                &b.cfg.host_header,
                b.cfg.keepalive,
                b.cfg.http10,
                &mut b.rng,
                seq,
                &mut c.rendered,
            );
        }
        c.received = 0;
        c.first_byte = None;
        c.answered = None;
        c.connect_us = None;
        c.handshake_us = None;
        c.opened_at = None;
        c.started = now;
        c.intended = intended;
        c.parser.reset(planned.is_head);
        c.parser.capture_body(capture);
        c.parser.capture_cookies(c.user.is_some());
        if b.rec.responses == 0 && b.rec.server_software.is_none() {
            c.parser.capture_server();
        }
        let connected = c.stream.is_some();
        if let Some(due) = intended {
            b.record_send(due, now);
        }
        if connected {
            self.begin_send(i, now);
        } else {
            self.open_connection(i, now);
        }
    }

    /// A connection has become free: give it its next request.
    fn next_request(&mut self, i: usize, now: Instant) {
        if self.base.is_open_loop() {
            // Journeys: a walk under way keeps its connection for its next step.
            if let Some(user) = self.conns[i].user.as_deref() {
                if user.in_walk() {
                    let pause = user.pause.sample(&mut self.base.rng);
                    if !self.base.sending {
                    } else if pause.is_zero() {
                        self.start_request(i, now, None);
                    } else {
                        self.thinking.push(Reverse((now + pause, i)));
                    }
                    return;
                }
            }
            // Requests that fell due while this worker handled events take the freed
            // connection now, not at the next turn of the loop.
            if let Some(due) = self.base.take_due(now) {
                self.start_arrival(i, now, due);
            } else if self.conns[i].stream.is_some() {
                self.idle_connected.push(i);
                self.note_idle(now);
            } else {
                self.idle_fresh.push(i);
                self.note_idle(now);
            }
            return;
        }
        if i >= self.allowed {
            self.close(i); // ramping down: this connection rests
            return;
        }
        let think = match self.conns[i].user.as_deref() {
            Some(user) => user.pause,
            None => self.base.cfg.think,
        };
        let pause = think.sample(&mut self.base.rng);
        if !pause.is_zero() {
            if self.base.sending {
                self.thinking.push(Reverse((now + pause, i)));
            }
        } else if self.may_go(i) {
            self.start_request(i, now, None);
        }
    }

    fn fail(&mut self, i: usize, kind: ErrorKind) {
        let now = Instant::now();
        let (request, received) = (self.conns[i].request, self.conns[i].received);
        self.base.record_error(kind, request, received, now);
        self.left_connecting(i);
        self.end_walk(i, kind, now);
        self.base.active -= 1;
        self.close(i);
        self.conns[i].phase = Phase::Idle;
        if self.base.is_open_loop() {
            // The schedule paces the attempts: one per due request.
            self.idle_fresh.push(i);
            self.note_idle(now);
        } else if kind.is_connect() && self.base.sending {
            let pause = self.conns[i].backoff.next_pause(&mut self.base.rng);
            self.thinking.push(Reverse((now + pause, i)));
        } else {
            self.ready.push(i);
        }
    }

    /// Journeys: the step in flight on connection `i` failed with `kind`: the user's walk
    /// ends there, counted under the step and kind.
    fn end_walk(&mut self, i: usize, kind: ErrorKind, now: Instant) {
        let b = &mut self.base;
        if let (Some(user), Some(run)) =
            (self.conns[i].user.as_deref_mut(), b.cfg.journeys.as_deref())
        {
            let in_window = b.in_window(now);
            if run.walk_budget && user.in_walk() {
                b.walking = b.walking.saturating_sub(1);
            }
            let step = user.fail(run);
            b.rec.journey_failed(user.journey, step, kind, in_window);
        }
    }

    /// Connection `i` leaves its phase: if it was connecting, one connect fewer under way.
    fn left_connecting(&mut self, i: usize) {
        if self.conns[i].phase == Phase::Connecting {
            self.connecting = self.connecting.saturating_sub(1);
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        self.base.close_socket(&mut c.stream);
        c.served = 0;
        c.ring_recv = false;
        c.inbox.clear();
        c.peer_end = None;
        if let Some(s) = c.smtp.as_deref_mut() {
            s.reset_session();
        }
    }

    /// Fail requests whose connect or response deadline has passed.
    fn expire(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if now < c.deadline {
                continue;
            }
            match c.phase {
                Phase::Idle => {}
                Phase::Connecting => self.fail(i, ErrorKind::ConnectTimeout),
                Phase::Handshaking => self.fail(i, ErrorKind::TlsHandshake),
                Phase::Sending | Phase::Receiving => self.fail(i, ErrorKind::RequestTimeout),
            }
        }
    }
}
