//! The HTTP/2 worker loop: like `worker` (mio, edge-triggered, one thread's own recorder)
//! but many streams per connection. Requests wait as jobs until a connection has a free
//! stream (`--streams` per connection, fewer if the server's SETTINGS say so); a job takes
//! a connected connection with room first, else opens a new one up to `-c`.
//!
//! Closed loop: `-c × --streams` users, each starting its next request when the previous
//! one ends (after think time). Open loop: requests fall due on the schedule and latency
//! counts from the intended start, including any wait for a stream; such waits are counted
//! (`queued_for_stream`). Streams on one connection also share its socket: their frames go
//! out in order from one buffer, and a request body may wait for the server's window
//! (`flow_control_waits`).
//!
//! GOAWAY: no new streams on that connection; streams the server left unprocessed (above
//! its last stream id) are sent again on another connection after a graceful GOAWAY
//! (NO_ERROR), and fail as `h2_goaway` after one with an error code, as do the streams still
//! open then. RST_STREAM fails its stream as `h2_stream_reset`.

use super::conn::{Connection, Event};
use super::frame::NO_ERROR;
use super::request::{from_http1, H2Request};
use crate::lateness::{split_lateness, BusyClock};
use crate::recorder::{Completion, Recorder, SLOT_MS};
use crate::rng::Rng;
use crate::scenario;
use crate::tls;
use crate::transport::Transport;
use crate::worker::{
    arm_timer, connect_error_kind, contains, create_timer, io_error_kind, micros, token_of, Pacing,
    WorkerConfig, DRAIN_GRACE, INDEX_MASK, READ_BUFFER, TICK, TIMER,
};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use webtune_model::{Arrival, ErrorKind, H2Summary};

/// A closed-loop user whose connect failed waits this long before its next request.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// What an HTTP/2 run adds to a worker's configuration.
#[derive(Debug, Clone)]
pub struct H2Setup {
    pub streams: usize,
    /// Per planned request: its HTTP/2 form when it never varies (else rendered per use).
    pub fixed: Arc<Vec<Option<H2Request>>>,
    /// https:// (h2 by ALPN) rather than h2c.
    pub tls: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Closed,
    Connecting,
    Handshaking,
    Open,
}

#[derive(Debug, Clone, Copy)]
struct Job {
    request: usize,
    /// Set when a GOAWAY sends it again: its clock keeps running.
    started: Option<Instant>,
    intended: Option<Instant>,
    queued: bool,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    active: bool,
    request: usize,
    started: Instant,
    intended: Option<Instant>,
    first_byte: Option<Instant>,
    deadline: Instant,
    connect_us: Option<u64>,
    handshake_us: Option<u64>,
}

struct Conn {
    stream: Option<Transport<TcpStream>>,
    generation: usize,
    addr: std::net::SocketAddr,
    phase: Phase,
    proto: Connection,
    /// Bytes of `proto.out` already written.
    written: usize,
    slots: Vec<Slot>,
    free: Vec<usize>,
    opened_at: Instant,
    deadline: Instant,
    /// The slot whose request opened this connection: it carries the connect and
    /// handshake times.
    opener: Option<usize>,
    /// In `Worker::unflushed`.
    unflushed: bool,
}

impl Conn {
    fn busy(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

struct Worker {
    cfg: WorkerConfig,
    setup: H2Setup,
    poll: Poll,
    conns: Vec<Conn>,
    rec: Recorder,
    summary: H2Summary,
    buf: Vec<u8>,
    rng: Rng,
    seqs: Vec<u64>,
    rendered: Vec<u8>,
    events: Vec<Event>,
    /// Open connections with new streams not yet written: `dispatch` writes each once, so
    /// the requests one wake-up starts on a connection go out in one write.
    unflushed: Vec<usize>,
    sending: bool,
    remaining: Option<u64>,
    /// Requests on a stream now.
    active: usize,
    open: u64,
    jobs: VecDeque<Job>,
    /// Closed loop: users thinking (or backing off) until a time.
    thinking: BinaryHeap<Reverse<Instant>>,
    all_busy: BusyClock,
    next_due: Option<(Instant, f64)>,
    timer: Option<OwnedFd>,
    wake_timer: crate::pacing::WakeTimer,
}

/// Run one HTTP/2 worker to the end.
pub fn run(mut cfg: WorkerConfig) -> io::Result<Recorder> {
    let Some(setup) = cfg.h2.take() else {
        return Err(io::Error::other("not an HTTP/2 run"));
    };
    let now = Instant::now();
    let idle = Slot {
        active: false,
        request: 0,
        started: now,
        intended: None,
        first_byte: None,
        deadline: now,
        connect_us: None,
        handshake_us: None,
    };
    let conns = cfg
        .conn_addrs
        .iter()
        .map(|&addr| Conn {
            stream: None,
            generation: 0,
            addr,
            phase: Phase::Closed,
            proto: Connection::new(0),
            written: 0,
            slots: vec![idle; setup.streams],
            free: (0..setup.streams).rev().collect(),
            opened_at: now,
            deadline: now,
            opener: None,
            unflushed: false,
        })
        .collect();
    let names = if cfg.named { cfg.requests.len() } else { 0 };
    let mut w = Worker {
        remaining: cfg.budget,
        rng: Rng::seeded(cfg.seed),
        seqs: vec![0; cfg.requests.len()],
        summary: H2Summary {
            streams_per_connection: setup.streams as u32,
            ..H2Summary::default()
        },
        setup,
        conns,
        cfg,
        poll: Poll::new()?,
        rec: Recorder::with_names(names),
        buf: vec![0; READ_BUFFER],
        rendered: Vec::new(),
        events: Vec::new(),
        unflushed: Vec::new(),
        sending: true,
        active: 0,
        open: 0,
        jobs: VecDeque::new(),
        thinking: BinaryHeap::new(),
        all_busy: BusyClock::default(),
        next_due: None,
        timer: None,
        wake_timer: crate::pacing::WakeTimer::new(crate::pacing::MIN_TIMER_GAP),
    };
    w.event_loop()?;
    w.rec.h2 = Some(w.summary.clone());
    Ok(w.rec)
}

impl Worker {
    fn slot_of(&self, at: Instant) -> usize {
        (at.saturating_duration_since(self.cfg.start).as_millis() as u64 / SLOT_MS) as usize
    }

    fn in_window(&self, at: Instant) -> bool {
        let t = at.saturating_duration_since(self.cfg.start).as_secs_f64();
        t >= self.cfg.window.0 && t < self.cfg.window.1
    }

    fn is_open_loop(&self) -> bool {
        matches!(self.cfg.pacing, Pacing::Open { .. })
    }

    /// The due time after schedule position `t` (None at the start: the first one).
    fn due_after(&mut self, t: Option<f64>) -> Option<(Instant, f64)> {
        let Pacing::Open {
            ramp,
            arrival,
            first_work,
        } = &self.cfg.pacing
        else {
            return None;
        };
        let work = match (arrival, t) {
            (Arrival::Poisson, _) => self.rng.exp(1.0),
            (Arrival::Uniform, None) => *first_work,
            (Arrival::Uniform, Some(_)) => 1.0,
        };
        let next = ramp.advance(t.unwrap_or(0.0), work)?;
        if t.is_some() && self.cfg.end_s.is_some_and(|end| next >= end) {
            return None;
        }
        Some((self.cfg.start + Duration::from_secs_f64(next), next))
    }

    fn may_start(&mut self) -> bool {
        if !self.sending {
            return false;
        }
        match &mut self.remaining {
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
            None => true,
        }
    }

    fn pick_request(&mut self) -> usize {
        match &self.cfg.picker {
            Some(p) => p.pick(&mut self.rng),
            None => 0,
        }
    }

    /// Closed loop: a user is ready for its next request.
    fn user_ready(&mut self) {
        if self.may_start() {
            let request = self.pick_request();
            self.jobs.push_back(Job {
                request,
                started: None,
                intended: None,
                queued: false,
            });
        }
    }

    /// Closed loop: a user finished a request (or failed one).
    fn user_done(&mut self, now: Instant, kind: Option<ErrorKind>) {
        if self.is_open_loop() || !self.sending {
            return;
        }
        let pause = if kind.is_some_and(ErrorKind::is_connect) {
            CONNECT_BACKOFF
        } else {
            self.cfg.think.sample(&mut self.rng)
        };
        if pause.is_zero() {
            self.user_ready();
        } else {
            self.thinking.push(Reverse(now + pause));
        }
    }

    fn event_loop(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let interval = self.cfg.interval;
        let mut interval_index: u64 = 0;
        let mut next_interval = self.cfg.start + interval;
        let mut next_tick = Instant::now();
        let mut drain_until: Option<Instant> = None;
        let end_at = self
            .cfg
            .end_s
            .map(|s| self.cfg.start + Duration::from_secs_f64(s));
        if self.is_open_loop() {
            self.timer = Some(create_timer(&self.poll)?);
            self.next_due = self.due_after(None);
            if self.next_due.is_none() {
                self.sending = false;
            }
        } else {
            for _ in 0..self.conns.len() * self.setup.streams {
                self.user_ready();
            }
        }
        loop {
            let now = Instant::now();
            if self.sending {
                let over = end_at.is_some_and(|t| now >= t);
                if over || self.cfg.stop.load(Ordering::Relaxed) {
                    self.stop_sending();
                    drain_until = Some(now + DRAIN_GRACE);
                }
            }
            while let Some(Reverse(at)) = self.thinking.peek().copied() {
                if at > now {
                    break;
                }
                self.thinking.pop();
                self.user_ready();
            }
            self.queue_due(now);
            self.dispatch(now);
            if self.next_due.is_none() && self.is_open_loop() && self.sending {
                self.sending = false;
            }
            let done_sending = !self.sending || self.remaining == Some(0);
            if self.active == 0 && self.jobs.is_empty() && done_sending {
                break;
            }
            if drain_until.is_some_and(|t| now >= t) {
                self.abandon_all();
                break;
            }
            if now >= next_interval {
                let report = self.rec.take_interval(interval_index, self.open);
                let _ = self.cfg.reports.send(report);
                interval_index += 1;
                next_interval += interval;
            }
            if now >= next_tick {
                self.expire(now);
                next_tick = now + TICK;
            }
            let mut wake = next_tick.min(next_interval);
            if let Some(t) = drain_until {
                wake = wake.min(t);
            }
            if let (true, Some(t)) = (self.sending, end_at) {
                wake = wake.min(t);
            }
            if let Some(Reverse(at)) = self.thinking.peek() {
                wake = wake.min(*at);
            }
            if let (Some((due, _)), Some(timer)) = (self.next_due, self.timer.as_ref()) {
                if self.sending && due < wake && due > now {
                    if let Some(after) = self.wake_timer.arm_for(due, now) {
                        arm_timer(timer, after);
                    }
                }
            }
            let busy_from = (self.active > 0).then(|| self.slot_of(now));
            let polled = self
                .poll
                .poll(&mut events, Some(wake.saturating_duration_since(now)));
            if let Some(from) = busy_from {
                let to = self.slot_of(Instant::now());
                self.rec.mark_busy(from, to);
            }
            match polled {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in events.iter() {
                let token = event.token();
                if token == TIMER {
                    self.wake_timer.fired();
                    continue;
                }
                let i = token.0 & INDEX_MASK;
                if self
                    .conns
                    .get(i)
                    .is_some_and(|c| token_of(i, c.generation) == token)
                {
                    self.on_event(i, event);
                }
            }
        }
        let report = self.rec.take_interval(interval_index, self.open);
        let _ = self.cfg.reports.send(report);
        Ok(())
    }

    fn stop_sending(&mut self) {
        self.sending = false;
        self.thinking.clear();
        if self.is_open_loop() {
            self.rec.not_sent += self.jobs.iter().filter(|j| j.started.is_none()).count() as u64;
        }
        self.rec.abandoned += self.jobs.iter().filter(|j| j.started.is_some()).count() as u64;
        self.jobs.clear();
        self.next_due = None;
    }

    /// Open loop: every request due by `now` becomes a job.
    fn queue_due(&mut self, now: Instant) {
        while self.sending {
            let Some((due, t)) = self.next_due else { break };
            if !crate::pacing::sends_now(due, now) {
                break;
            }
            if !self.may_start() {
                self.next_due = None;
                break;
            }
            let request = self.pick_request();
            self.jobs.push_back(Job {
                request,
                started: None,
                intended: Some(due),
                queued: false,
            });
            self.next_due = self.due_after(Some(t));
        }
    }

    /// A connection for the next job: an open one with a free stream first, else a closed
    /// one to open.
    fn find_conn(&self) -> Option<usize> {
        let mut closed = None;
        for (i, c) in self.conns.iter().enumerate() {
            if c.phase == Phase::Closed {
                closed = closed.or(Some(i));
            } else if !c.free.is_empty() && c.proto.can_open() {
                return Some(i);
            }
        }
        closed
    }

    /// Start queued jobs on free streams.
    fn dispatch(&mut self, now: Instant) {
        while let Some(mut job) = self.jobs.pop_front() {
            let Some(i) = self.find_conn() else {
                if !job.queued {
                    job.queued = true;
                    self.summary.queued_for_stream += 1;
                }
                self.jobs.push_front(job);
                break;
            };
            if self.conns[i].phase == Phase::Closed && !self.open_connection(i, now) {
                // The connect failed at once: the job failed with it.
                let kind = ErrorKind::ConnectOther;
                self.record_error(kind, job.request, 0, now);
                self.user_done(now, Some(kind));
                continue;
            }
            self.start_job(i, job, now);
        }
        while let Some(i) = self.unflushed.pop() {
            self.conns[i].unflushed = false;
            if self.conns[i].phase == Phase::Open {
                self.flush_out(i);
            }
        }
        let none_free = self.find_conn().is_none();
        self.all_busy.set(none_free, now);
        let oldest = self
            .jobs
            .front()
            .and_then(|j| j.intended)
            .or(self.next_due.map(|(d, _)| d))
            .unwrap_or(now);
        self.all_busy.forget_before(oldest);
    }

    fn start_job(&mut self, i: usize, job: Job, now: Instant) {
        let planned = &self.cfg.requests[job.request];
        let owned;
        let req = match &self.setup.fixed[job.request] {
            Some(r) => r,
            None => {
                let Some(def) = planned.def.as_ref() else {
                    return self.record_error(ErrorKind::Malformed, job.request, 0, now);
                };
                let seq = self.seqs[job.request];
                self.seqs[job.request] += 1;
                scenario::encode_into(
                    def,
                    &self.cfg.host_header,
                    true,
                    false,
                    &mut self.rng,
                    seq,
                    &mut self.rendered,
                );
                match from_http1(&self.rendered, self.setup.tls) {
                    Ok(r) => {
                        owned = r;
                        &owned
                    }
                    Err(_) => return self.record_error(ErrorKind::Malformed, job.request, 0, now),
                }
            }
        };
        let capture = planned.body_contains.is_some();
        let want_server = self.rec.server_software.is_none();
        if let Some(due) = job.intended.filter(|_| job.started.is_none()) {
            if self.in_window(now) {
                let (wait, own) = split_lateness(&self.all_busy, due, now);
                self.rec.lag.record(micros(due, now));
                self.rec.connection_wait.record(wait.as_micros() as u64);
                self.rec.generator_lag.record(own.as_micros() as u64);
                self.rec.sent += 1;
            }
        }
        let timeout = self.cfg.timeout;
        let c = &mut self.conns[i];
        let Some(tag) = c.free.pop() else {
            return;
        };
        c.proto.start(tag, req, capture, want_server);
        c.slots[tag] = Slot {
            active: true,
            request: job.request,
            started: job.started.unwrap_or(now),
            intended: job.intended,
            first_byte: None,
            deadline: now + timeout,
            connect_us: None,
            handshake_us: None,
        };
        if c.opener.is_none() && c.phase != Phase::Open {
            c.opener = Some(tag);
        }
        self.active += 1;
        if c.phase == Phase::Open && !c.unflushed {
            c.unflushed = true;
            self.unflushed.push(i);
        }
    }

    /// Open connection `i`; false if the connect failed at once.
    fn open_connection(&mut self, i: usize, now: Instant) -> bool {
        self.rec.connect_attempts += 1;
        let session = match self.cfg.tls.as_ref().map(tls::Connector::connection) {
            None => None,
            Some(Ok(s)) => Some(s),
            Some(Err(_)) => return false,
        };
        let Ok(mut stream) = TcpStream::connect(self.conns[i].addr) else {
            return false;
        };
        let generation = self.conns[i].generation.wrapping_add(1);
        self.conns[i].generation = generation;
        if self
            .poll
            .registry()
            .register(
                &mut stream,
                token_of(i, generation),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            return false;
        }
        self.open += 1;
        self.cfg.open_gauge.opened();
        let timeout = self.cfg.connect_timeout;
        let c = &mut self.conns[i];
        c.stream = Some(match session {
            None => Transport::Tcp(stream),
            Some(s) => Transport::tls(stream, s, true),
        });
        c.proto = Connection::new(self.setup.streams);
        c.written = 0;
        c.phase = Phase::Connecting;
        c.opened_at = now;
        c.deadline = now + timeout;
        c.opener = None;
        true
    }

    fn on_event(&mut self, i: usize, event: &mio::event::Event) {
        let now = Instant::now();
        let readable = event.is_readable() || event.is_read_closed() || event.is_error();
        if readable {
            if let Some(s) = self.conns[i].stream.as_mut() {
                s.readable();
            }
        }
        match self.conns[i].phase {
            Phase::Closed => {}
            Phase::Connecting => self.on_connected(i, now),
            Phase::Handshaking => self.handshake_step(i, now),
            Phase::Open => {
                if event.is_writable() {
                    self.flush_out(i);
                }
                if readable && self.conns[i].phase == Phase::Open {
                    self.read_some(i, now);
                }
            }
        }
    }

    fn on_connected(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        let Some(sock) = c.stream.as_ref().map(Transport::socket) else {
            return;
        };
        match sock.take_error() {
            Ok(Some(e)) | Err(e) => return self.conn_failed(i, connect_error_kind(&e), now),
            Ok(None) => {}
        }
        let _ = sock.set_nodelay(true);
        self.rec.connections_opened += 1;
        let connect_us = micros(c.opened_at, now);
        if let Some(t) = c.opener {
            c.slots[t].connect_us = Some(connect_us);
        }
        c.opened_at = now;
        c.phase = Phase::Handshaking;
        c.deadline = now + self.cfg.connect_timeout;
        self.handshake_step(i, now);
    }

    fn handshake_step(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        match stream.handshake() {
            Ok(false) => {}
            Ok(true) => {
                if let Some(info) = stream.handshake_info() {
                    if let Some(t) = c.opener {
                        c.slots[t].handshake_us = Some(micros(c.opened_at, now));
                    }
                    self.rec.handshake_done(&info);
                    if info.alpn.as_deref() != Some("h2") {
                        return self.conn_failed(i, ErrorKind::H2NotNegotiated, now);
                    }
                }
                let c = &mut self.conns[i];
                c.phase = Phase::Open;
                self.flush_out(i);
                if self.conns[i].phase == Phase::Open {
                    self.read_some(i, now);
                }
            }
            Err(e) => {
                let kind = tls::failure_kind(&e).unwrap_or_else(|| io_error_kind(&e));
                self.conn_failed(i, kind, now);
            }
        }
    }

    /// Write what the connection has to send, as far as the socket takes it.
    fn flush_out(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        let result = loop {
            if c.written >= c.proto.out.len() {
                match stream.flush() {
                    Ok(true) => break Ok(()),
                    Ok(false) => return,
                    Err(e) => break Err(e),
                }
            }
            match stream.write(&c.proto.out[c.written..]) {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => c.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        match result {
            Ok(()) => {
                self.rec.bytes_sent += c.proto.out.len() as u64;
                c.proto.out.clear();
                c.written = 0;
            }
            Err(e) => {
                let kind = tls::failure_kind(&e).unwrap_or_else(|| io_error_kind(&e));
                self.conn_failed(i, kind, Instant::now());
            }
        }
    }

    fn read_some(&mut self, i: usize, now: Instant) {
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            match stream.read(&mut self.buf) {
                Ok(0) => return self.on_eof(i, now),
                Ok(n) => {
                    let drained = stream.short_read_drains() && n < self.buf.len();
                    self.events.clear();
                    let fed = c.proto.feed(&self.buf[..n], &mut self.events);
                    let events = std::mem::take(&mut self.events);
                    for e in &events {
                        self.on_h2_event(i, *e, now);
                    }
                    self.events = events;
                    if let Err(e) = fed {
                        self.flush_out(i);
                        return self.conn_failed(i, e.kind(), now);
                    }
                    if self.conns[i].phase != Phase::Open {
                        return;
                    }
                    self.flush_out(i);
                    if self.conns[i].phase != Phase::Open {
                        return;
                    }
                    let c = &self.conns[i];
                    if c.proto.going_away() && c.busy() == 0 {
                        return self.close(i);
                    }
                    if drained {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = tls::failure_kind(&e).unwrap_or_else(|| io_error_kind(&e));
                    return self.conn_failed(i, kind, now);
                }
            }
        }
    }

    fn on_h2_event(&mut self, i: usize, event: Event, now: Instant) {
        match event {
            Event::FirstByte(t) => {
                self.conns[i].slots[t].first_byte.get_or_insert(now);
            }
            Event::Done(t) => self.complete(i, t, now),
            Event::Reset { tag, .. } => {
                self.summary.resets += 1;
                self.conns[i].proto.release(tag);
                self.slot_failed(i, tag, ErrorKind::H2StreamReset, now);
            }
            Event::Refused(t) => {
                let slot = self.free_slot(i, t);
                if self.sending {
                    self.summary.goaway_retries += 1;
                    self.jobs.push_front(Job {
                        request: slot.request,
                        started: Some(slot.started),
                        intended: slot.intended,
                        queued: false,
                    });
                } else {
                    self.rec.abandoned += 1;
                }
            }
            Event::GoAway { code } => {
                self.summary.goaways += 1;
                if code != NO_ERROR {
                    self.conn_failed(i, ErrorKind::H2Goaway, now);
                }
            }
        }
        let max = self.conns[i].proto.peer_max_streams();
        if let Some(m) = max {
            let s = &mut self.summary.server_max_streams;
            *s = Some(s.map_or(m, |old| old.min(m)));
        }
    }

    /// Free slot `t` of connection `i` (its stream already released) and return it.
    fn free_slot(&mut self, i: usize, t: usize) -> Slot {
        let c = &mut self.conns[i];
        let slot = c.slots[t];
        if slot.active {
            c.slots[t].active = false;
            c.free.push(t);
            self.active -= 1;
        }
        slot
    }

    fn complete(&mut self, i: usize, t: usize, now: Instant) {
        let (slot_index, in_window) = (self.slot_of(now), self.in_window(now));
        let slot = self.free_slot(i, t);
        if !slot.active {
            return;
        }
        let c = &mut self.conns[i];
        let planned = &self.cfg.requests[slot.request];
        let body = if planned.body_contains.is_some() {
            c.proto.take_body(t)
        } else {
            Vec::new()
        };
        let s = c.proto.stream(t);
        let status = s.status.unwrap_or(0);
        let check_failed = planned
            .body_contains
            .as_deref()
            .is_some_and(|needle| !contains(&body, needle));
        let completion = Completion {
            request: slot.request,
            status,
            expected: planned
                .expect_status
                .iter()
                .any(|&(lo, hi)| status >= lo && status <= hi),
            check_failed,
            connect_us: slot.connect_us,
            tls_handshake_us: slot.handshake_us,
            first_byte_us: micros(slot.started, slot.first_byte.unwrap_or(now)),
            total_us: micros(
                crate::pacing::latency_origin(slot.intended, slot.started),
                now,
            ),
            service_us: slot.intended.map(|_| micros(slot.started, now)),
            bytes: s.bytes,
            body_bytes: s.body_bytes,
            length_varies: self.cfg.first_lengths[slot.request].varies(s.body_bytes),
            kept_alive: true,
        };
        if let Some(server) = s.server.clone() {
            self.rec.server_software.get_or_insert(server);
        }
        c.proto.release(t);
        self.rec.complete(&completion, slot_index, in_window);
        self.user_done(now, None);
    }

    fn record_error(&mut self, kind: ErrorKind, request: usize, received: u64, now: Instant) {
        let (slot, in_window) = (self.slot_of(now), self.in_window(now));
        self.rec.error(kind, request, received, slot, in_window);
    }

    fn slot_failed(&mut self, i: usize, t: usize, kind: ErrorKind, now: Instant) {
        let slot = self.free_slot(i, t);
        if slot.active {
            let received = self.conns[i].proto.stream(t).bytes;
            self.record_error(kind, slot.request, received, now);
            self.user_done(now, Some(kind));
        }
    }

    fn on_eof(&mut self, i: usize, now: Instant) {
        let c = &self.conns[i];
        if c.busy() == 0 {
            return self.close(i); // an idle connection the server closed
        }
        self.conn_failed(i, ErrorKind::ClosedEarly, now);
    }

    /// The connection is lost: every stream on it fails with `kind`.
    fn conn_failed(&mut self, i: usize, kind: ErrorKind, now: Instant) {
        for t in 0..self.conns[i].slots.len() {
            if self.conns[i].slots[t].active {
                self.conns[i].proto.release(t);
                self.slot_failed(i, t, kind, now);
            }
        }
        self.close(i);
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.stream.take().is_some() {
            self.open -= 1;
            self.cfg.open_gauge.closed();
        }
        c.phase = Phase::Closed;
    }

    fn expire(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            match self.conns[i].phase {
                Phase::Closed => {}
                Phase::Connecting | Phase::Handshaking if now >= self.conns[i].deadline => {
                    let kind = if self.conns[i].phase == Phase::Connecting {
                        ErrorKind::ConnectTimeout
                    } else {
                        ErrorKind::TlsHandshake
                    };
                    self.conn_failed(i, kind, now);
                }
                Phase::Connecting | Phase::Handshaking => {}
                Phase::Open => {
                    let mut cancelled = false;
                    for t in 0..self.conns[i].slots.len() {
                        let s = self.conns[i].slots[t];
                        if s.active && now >= s.deadline {
                            self.conns[i].proto.cancel(t);
                            self.slot_failed(i, t, ErrorKind::RequestTimeout, now);
                            cancelled = true;
                        }
                    }
                    if cancelled {
                        self.flush_out(i);
                    }
                }
            }
        }
    }

    fn abandon_all(&mut self) {
        for i in 0..self.conns.len() {
            for t in 0..self.conns[i].slots.len() {
                if self.free_slot(i, t).active {
                    self.rec.abandoned += 1;
                }
            }
            self.close(i);
        }
    }
}
