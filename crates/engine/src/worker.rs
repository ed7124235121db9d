//! One worker thread: it owns its connections, its event loop (mio, edge-triggered epoll),
//! its recorder. Nothing is shared on the per-request path: no lock, no atomic write (only
//! opening or closing a socket touches the shared open-connection gauge).
//!
//! Per request on a kept-alive connection the worker makes one `write` and (usually) one
//! `read`; readiness comes from one `epoll_wait` shared by all ready connections. A short
//! read means the socket was drained at that moment, so no extra read is spent to see
//! EAGAIN; a later arrival raises a new edge.
//!
//! Closed loop: each connection sends its next request when the previous answer ends (after
//! an optional think time); a ramp changes how many connections may be busy. Open loop:
//! requests fall due on a schedule; a due request takes an idle connection, or opens one up
//! to the cap, or waits in the queue — and its latency counts from when it was due. How
//! late it was sent is split (`lateness`) into the wait with every connection busy (the
//! server's time) and the generator's own lateness. A
//! timerfd wakes the loop at the next due time with microsecond precision (epoll's own
//! timeout has millisecond steps); one wake-up sends every request due by then or within a
//! small slack (`pacing`), and the timer is re-armed only when its set time no longer serves.
//!
//! HTTPS: each connection's bytes go through a `Transport` (plain TCP or rustls over the
//! socket); a new TLS connection goes from connecting through a handshake phase, timed in
//! its own histogram, before its first request is written.

use crate::http1::{Progress as ParseProgress, ResponseParser};
use crate::lateness::{split_lateness, BusyClock};
use crate::pacing::{self, WakeTimer};
use crate::plan::PlannedRequest;
use crate::recorder::{Completion, FirstLength, IntervalReport, OpenGauge, Recorder, SLOT_MS};
use crate::rng::Rng;
use crate::scenario::{self, Think, WeightedPicker};
use crate::schedule::Ramp;
use crate::tls::{self, Connector};
use crate::transport::Transport;
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use webtune_model::{Arrival, ErrorKind};

/// How long in-flight requests may finish after sending stops (duration end or Ctrl-C).
pub const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How often deadlines (connect and request timeouts) and ramps are checked.
pub(crate) const TICK: Duration = Duration::from_millis(20);
pub(crate) const READ_BUFFER: usize = 64 * 1024;
/// Closed loop: after a failed connect a connection waits this long before trying again,
/// doubling with each further failure up to `CONNECT_BACKOFF_MAX` (less up to half, at
/// random, so connections do not retry in step). A connect can fail at once (no local port
/// free, refused on loopback); without a pause the loop would spin on socket/connect/close.
const CONNECT_BACKOFF_FIRST: Duration = Duration::from_millis(1);
const CONNECT_BACKOFF_MAX: Duration = Duration::from_millis(100);
pub(crate) const TIMER: Token = Token(usize::MAX);
/// A token is (socket generation << INDEX_BITS) | connection index: an event still queued
/// for a closed socket carries an old generation and is dropped, so a reused index never
/// takes another socket's event for its own.
const INDEX_BITS: u32 = 24;
pub(crate) const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;

/// How this worker paces its requests.
pub enum Pacing {
    Closed {
        /// Connections this worker may keep busy over time (None: all of them).
        ramp: Option<Ramp>,
    },
    Open {
        /// This worker's share of the rate, requests/s over time.
        ramp: Ramp,
        arrival: Arrival,
        /// Work (in requests) before this worker's first one: interleaves the workers.
        first_work: f64,
    },
}

/// Everything one worker needs; built by the coordinator.
pub struct WorkerConfig {
    pub requests: Arc<Vec<PlannedRequest>>,
    pub picker: Option<Arc<WeightedPicker>>,
    pub think: Think,
    pub named: bool,
    pub host_header: Arc<str>,
    pub http10: bool,
    /// Socket address for each of this worker's connections (round-robin over addresses).
    pub conn_addrs: Vec<SocketAddr>,
    /// This worker's share of `-n`, if given.
    pub budget: Option<u64>,
    /// Stop sending this long after the start, if the run is timed.
    pub end_s: Option<f64>,
    pub pacing: Pacing,
    /// The measurement window (seconds since start): summary counts only what finishes in it.
    pub window: (f64, f64),
    pub keepalive: bool,
    pub max_requests_per_conn: Option<u64>,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub start: Instant,
    pub interval: Duration,
    pub stop: Arc<AtomicBool>,
    /// Body length of the first response, per request.
    pub first_lengths: Arc<Vec<FirstLength>>,
    /// Connections open across all workers, and their peak.
    pub open_gauge: Arc<OpenGauge>,
    pub reports: Sender<IntervalReport>,
    pub seed: u64,
    /// HTTPS: this worker's TLS connector (its own session cache); None for http://.
    pub tls: Option<Connector>,
    /// `--http2`: the run speaks HTTP/2 (`h2::worker` runs it).
    pub h2: Option<crate::h2::worker::H2Setup>,
}

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
    deadline: Instant,
    /// Requests completed on the current connection.
    served: u64,
    /// Connects that failed in a row (reset by one that succeeds): the backoff's exponent.
    connect_failures: u32,
    /// Bytes received for the current request.
    received: u64,
    parser: ResponseParser,
}

struct Worker {
    cfg: WorkerConfig,
    poll: Poll,
    conns: Vec<Conn>,
    rec: Recorder,
    buf: Vec<u8>,
    rng: Rng,
    /// Per request name: `{seq}` counters.
    seqs: Vec<u64>,
    sending: bool,
    remaining: Option<u64>,
    active: usize,
    open: u64,
    /// Closed loop: connections (by index) that may be busy now.
    allowed: usize,
    /// Closed loop: connections waiting to start their next request (after a failure or a
    /// ramp-up).
    ready: Vec<usize>,
    /// Closed loop: connections thinking (or backing off after a failed connect) until a time.
    thinking: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Open loop: due requests (their intended times) waiting for a connection.
    pending: VecDeque<Instant>,
    /// Open loop: idle connections, connected ones preferred.
    idle_connected: Vec<usize>,
    idle_fresh: Vec<usize>,
    /// Open loop: when none of the connections was idle (both lists above empty).
    all_busy: BusyClock,
    /// Open loop: the next intended start, and the schedule position (work) it is at.
    next_due: Option<(Instant, f64)>,
    timer: Option<OwnedFd>,
    /// When the timer is set to fire (it is one-shot).
    wake_timer: WakeTimer,
}

/// Run one worker to the end; returns what it measured.
pub fn run_worker(cfg: WorkerConfig) -> io::Result<Recorder> {
    if cfg.h2.is_some() {
        return crate::h2::worker::run(cfg);
    }
    let now = Instant::now();
    let conns: Vec<Conn> = cfg
        .conn_addrs
        .iter()
        .map(|&addr| Conn {
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
            deadline: now,
            served: 0,
            connect_failures: 0,
            received: 0,
            parser: ResponseParser::new(),
        })
        .collect();
    let names = if cfg.named { cfg.requests.len() } else { 0 };
    let mut w = Worker {
        remaining: cfg.budget,
        rng: Rng::seeded(cfg.seed),
        seqs: vec![0; cfg.requests.len()],
        allowed: conns.len(),
        idle_fresh: (0..conns.len()).rev().collect(),
        conns,
        cfg,
        poll: Poll::new()?,
        rec: Recorder::with_names(names),
        buf: vec![0; READ_BUFFER],
        sending: true,
        active: 0,
        open: 0,
        ready: Vec::new(),
        thinking: BinaryHeap::new(),
        pending: VecDeque::new(),
        idle_connected: Vec::new(),
        all_busy: BusyClock::default(),
        next_due: None,
        timer: None,
        wake_timer: WakeTimer::new(crate::pacing::MIN_TIMER_GAP),
    };
    w.event_loop()?;
    Ok(w.rec)
}

/// The event token of connection `index`'s socket number `generation` (the generation is
/// cut short of the top bit, so no token is ever `TIMER`).
pub(crate) fn token_of(index: usize, generation: usize) -> Token {
    let generation_mask = usize::MAX >> (INDEX_BITS + 1);
    Token(((generation & generation_mask) << INDEX_BITS) | index)
}

pub(crate) fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

pub(crate) fn connect_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
        io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
        io::ErrorKind::AddrNotAvailable => ErrorKind::ConnectNoLocalAddress,
        _ => ErrorKind::ConnectOther,
    }
}

pub(crate) fn io_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::TimedOut => ErrorKind::RequestTimeout,
        _ => ErrorKind::Reset,
    }
}

/// A non-blocking monotonic timerfd, registered for readability.
pub(crate) fn create_timer(poll: &Poll) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the returned fd is owned below.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    poll.registry()
        .register(&mut SourceFd(&owned.as_raw_fd()), TIMER, Interest::READABLE)?;
    Ok(owned)
}

/// Arm the timer to fire once after `after` (at least 1 µs).
pub(crate) fn arm_timer(timer: &OwnedFd, after: Duration) {
    let after = after.max(Duration::from_micros(1));
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: after.as_secs() as libc::time_t,
            tv_nsec: after.subsec_nanos() as libc::c_long,
        },
    };
    // SAFETY: valid fd and a fully initialised itimerspec.
    unsafe { libc::timerfd_settime(timer.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
}

impl Worker {
    fn seconds_since_start(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.cfg.start).as_secs_f64()
    }

    fn slot_of(&self, at: Instant) -> usize {
        (at.saturating_duration_since(self.cfg.start).as_millis() as u64 / SLOT_MS) as usize
    }

    fn in_window(&self, at: Instant) -> bool {
        let t = self.seconds_since_start(at);
        t >= self.cfg.window.0 && t < self.cfg.window.1
    }

    fn is_open_loop(&self) -> bool {
        matches!(self.cfg.pacing, Pacing::Open { .. })
    }

    /// The first due time of the open-loop schedule.
    fn first_due(&mut self) -> Option<(Instant, f64)> {
        let (ramp, arrival, first_work) = match &self.cfg.pacing {
            Pacing::Open {
                ramp,
                arrival,
                first_work,
            } => (ramp, *arrival, *first_work),
            Pacing::Closed { .. } => return None,
        };
        let work = match arrival {
            Arrival::Uniform => first_work,
            Arrival::Poisson => self.rng.exp(1.0),
        };
        let t = ramp.advance(0.0, work)?;
        Some((self.cfg.start + Duration::from_secs_f64(t), t))
    }

    /// The due time after the one at schedule position `t` seconds.
    fn following_due(&mut self, t: f64) -> Option<(Instant, f64)> {
        let (ramp, arrival) = match &self.cfg.pacing {
            Pacing::Open { ramp, arrival, .. } => (ramp, *arrival),
            Pacing::Closed { .. } => return None,
        };
        let work = match arrival {
            Arrival::Uniform => 1.0,
            Arrival::Poisson => self.rng.exp(1.0),
        };
        let next = ramp.advance(t, work)?;
        if self.cfg.end_s.is_some_and(|end| next >= end) {
            return None;
        }
        Some((self.cfg.start + Duration::from_secs_f64(next), next))
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
            self.next_due = self.first_due();
            if self.next_due.is_none() {
                self.sending = false;
            }
        } else {
            self.update_allowed(Instant::now());
            for i in 0..self.allowed {
                self.ready.push(i);
            }
            self.ready.reverse();
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
            if self.is_open_loop() {
                self.release_due(now);
            } else {
                while let Some(Reverse((at, i))) = self.thinking.peek().copied() {
                    if at > now {
                        break;
                    }
                    self.thinking.pop();
                    self.ready.push(i);
                }
                while let Some(i) = self.ready.pop() {
                    if self.conns[i].phase == Phase::Idle && i < self.allowed && self.may_start() {
                        self.start_request(i, now, None);
                    }
                }
            }
            let done_sending = !self.sending || self.remaining == Some(0);
            if self.active == 0 && self.pending.is_empty() && done_sending {
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
                if !self.is_open_loop() {
                    self.update_allowed(now);
                }
                next_tick = now + TICK;
            }
            let mut wake = next_tick.min(next_interval);
            if let Some(t) = drain_until {
                wake = wake.min(t);
            }
            if self.sending {
                if let Some(t) = end_at {
                    wake = wake.min(t);
                }
            }
            if let Some(Reverse((at, _))) = self.thinking.peek() {
                wake = wake.min(*at);
            }
            if let (Some((due, _)), Some(timer)) = (self.next_due, self.timer.as_ref()) {
                if self.sending && due < wake && due > now {
                    if let Some(after) = self.wake_timer.arm_for(due, now) {
                        arm_timer(timer, after);
                    }
                }
            }
            let timeout = if self.ready.is_empty() {
                wake.saturating_duration_since(now)
            } else {
                Duration::ZERO
            };
            let busy_from = (self.active > 0).then(|| self.slot_of(now));
            let polled = self.poll.poll(&mut events, Some(timeout));
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
                    // Edge-triggered epoll reports every expiry, and arming again resets
                    // the expiry count: no read is needed to drain it.
                    self.wake_timer.fired();
                } else {
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
        }
        let report = self.rec.take_interval(interval_index, self.open);
        let _ = self.cfg.reports.send(report);
        Ok(())
    }

    fn stop_sending(&mut self) {
        self.sending = false;
        self.ready.clear();
        self.thinking.clear();
        self.rec.not_sent += self.pending.len() as u64;
        self.pending.clear();
        self.next_due = None;
    }

    /// Closed loop with a ramp: how many connections may be busy now.
    fn update_allowed(&mut self, now: Instant) {
        let Pacing::Closed { ramp: Some(ramp) } = &self.cfg.pacing else {
            return;
        };
        let t = self.seconds_since_start(now);
        let target = (ramp.at(t).round() as usize).min(self.conns.len());
        if target > self.allowed {
            for i in self.allowed..target {
                self.ready.push(i);
            }
        }
        self.allowed = target;
    }

    /// Open loop: queue every request that has fallen due, and start as many as there are
    /// connections for.
    fn release_due(&mut self, now: Instant) {
        self.queue_due(now);
        while let Some(&due) = self.pending.front() {
            let Some(i) = self.idle_connected.pop().or_else(|| self.idle_fresh.pop()) else {
                break;
            };
            self.pending.pop_front();
            self.start_request(i, now, Some(due));
        }
        self.note_idle(now);
        // No request still to be sent was due before the oldest queued one (or the next).
        let oldest = self
            .pending
            .front()
            .copied()
            .or(self.next_due.map(|(due, _)| due))
            .unwrap_or(now);
        self.all_busy.forget_before(oldest);
        if self.next_due.is_none() && self.pending.is_empty() && self.sending {
            // Nothing more will fall due: finish like a timed run whose end has come.
            self.sending = false;
        }
    }

    /// Open loop: queue every request that has fallen due by `now`, or falls due within the
    /// batching slack.
    fn queue_due(&mut self, now: Instant) {
        while self.sending {
            let Some((due, t)) = self.next_due else { break };
            if !pacing::sends_now(due, now) {
                break;
            }
            if !self.may_start() {
                self.next_due = None;
                break;
            }
            self.pending.push_back(due);
            self.next_due = self.following_due(t);
        }
    }

    /// Open loop: the idle lists changed at `now`; keep the busy clock in step.
    fn note_idle(&mut self, now: Instant) {
        let none_idle = self.idle_connected.is_empty() && self.idle_fresh.is_empty();
        self.all_busy.set(none_idle, now);
    }

    /// Take one request from the budget, if sending and any is left.
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

    fn start_request(&mut self, i: usize, now: Instant, intended: Option<Instant>) {
        self.active += 1;
        let request = self.pick_request();
        let planned = &self.cfg.requests[request];
        let c = &mut self.conns[i];
        c.request = request;
        if let Some(def) = planned.def.as_ref() {
            let seq = self.seqs[request];
            self.seqs[request] += 1;
            scenario::encode_into(
                def,
                &self.cfg.host_header,
                self.cfg.keepalive,
                self.cfg.http10,
                &mut self.rng,
                seq,
                &mut c.rendered,
            );
        }
        c.received = 0;
        c.first_byte = None;
        c.connect_us = None;
        c.handshake_us = None;
        c.opened_at = None;
        c.started = now;
        c.intended = intended;
        c.parser.reset(planned.is_head);
        c.parser.capture_body(planned.body_contains.is_some());
        if self.rec.responses == 0 && self.rec.server_software.is_none() {
            c.parser.capture_server();
        }
        let connected = c.stream.is_some();
        if let Some(due) = intended {
            if self.in_window(now) {
                let (wait, own) = split_lateness(&self.all_busy, due, now);
                self.rec.lag.record(micros(due, now));
                self.rec.connection_wait.record(wait.as_micros() as u64);
                self.rec.generator_lag.record(own.as_micros() as u64);
                self.rec.sent += 1;
            }
        }
        if connected {
            self.begin_send(i, now);
        } else {
            self.open_connection(i, now);
        }
    }

    fn open_connection(&mut self, i: usize, now: Instant) {
        let addr = self.conns[i].addr;
        self.rec.connect_attempts += 1;
        let session = match self.cfg.tls.as_ref().map(Connector::connection) {
            None => None,
            Some(Ok(session)) => Some(session),
            Some(Err(_)) => return self.fail(i, ErrorKind::TlsHandshake),
        };
        let mut stream = match TcpStream::connect(addr) {
            Ok(s) => s,
            Err(e) => return self.fail(i, connect_error_kind(&e)),
        };
        let generation = self.conns[i].generation.wrapping_add(1);
        self.conns[i].generation = generation;
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            token_of(i, generation),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            drop(stream);
            return self.fail(i, connect_error_kind(&e));
        }
        self.open += 1;
        self.cfg.open_gauge.opened();
        let timeout = self.cfg.connect_timeout;
        let c = &mut self.conns[i];
        c.stream = Some(match session {
            None => Transport::Tcp(stream),
            Some(session) => Transport::tls(stream, session, true),
        });
        c.served = 0;
        c.phase = Phase::Connecting;
        c.opened_at = Some(now);
        c.deadline = now + timeout;
    }

    fn begin_send(&mut self, i: usize, now: Instant) {
        let timeout = self.cfg.timeout;
        let c = &mut self.conns[i];
        c.phase = Phase::Sending;
        c.written = 0;
        c.deadline = now + timeout;
        self.write_some(i);
    }

    fn write_some(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let bytes: &[u8] = match &self.cfg.requests[c.request].fixed_bytes {
            Some(b) => b,
            None => &c.rendered,
        };
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        // Write what the socket takes; act on the outcome once the borrows have ended.
        let outcome = loop {
            if c.written >= bytes.len() {
                // TLS may hold records the socket did not take yet (always done for TCP).
                match stream.flush() {
                    Ok(true) => break Ok(bytes.len()),
                    Ok(false) => return,
                    Err(e) => break Err(e),
                }
            }
            match stream.write(&bytes[c.written..]) {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => c.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        match outcome {
            Ok(len) => {
                c.phase = Phase::Receiving;
                self.rec.bytes_sent += len as u64;
            }
            Err(e) => self.io_failure(i, &e),
        }
    }

    fn on_event(&mut self, i: usize, event: &mio::event::Event) {
        let now = Instant::now();
        if event.is_readable() || event.is_read_closed() || event.is_error() {
            if let Some(stream) = self.conns[i].stream.as_mut() {
                stream.readable();
            }
        }
        match self.conns[i].phase {
            Phase::Idle => {}
            Phase::Connecting => self.on_connect_ready(i, now),
            Phase::Handshaking => self.handshake_step(i, now),
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
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_ref().map(Transport::socket) else {
            return;
        };
        // Tokens carry the socket's generation, so this event is this socket's own: readiness
        // in the connecting phase means the connect finished, and SO_ERROR says how.
        match stream.take_error() {
            Ok(Some(e)) | Err(e) => return self.fail(i, connect_error_kind(&e)),
            Ok(None) => {}
        }
        let _ = stream.set_nodelay(true);
        c.connect_failures = 0;
        self.rec.connections_opened += 1;
        if let Some(t) = c.opened_at {
            c.connect_us = Some(micros(t, now));
        }
        if c.stream.as_ref().is_some_and(Transport::is_tls) {
            c.phase = Phase::Handshaking;
            c.handshake_from = now;
            c.deadline = now + self.cfg.connect_timeout;
            return self.handshake_step(i, now);
        }
        self.begin_send(i, now);
    }

    /// TLS: take the handshake as far as the socket allows; send the request once it is done.
    fn handshake_step(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        match stream.handshake() {
            Ok(false) => {}
            Ok(true) => {
                c.handshake_us = Some(micros(c.handshake_from, now));
                if let Some(info) = stream.handshake_info() {
                    self.rec.handshake_done(&info);
                }
                self.begin_send(i, now);
            }
            Err(e) => {
                let kind = tls::failure_kind(&e).unwrap_or_else(|| io_error_kind(&e));
                self.fail(i, kind);
            }
        }
    }

    fn read_some(&mut self, i: usize, read_closed: bool, now: Instant) {
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            match stream.read(&mut self.buf) {
                Ok(0) => return self.on_eof(i, now),
                Ok(n) => {
                    let drained = stream.short_read_drains() && n < self.buf.len();
                    if c.first_byte.is_none() {
                        c.first_byte = Some(now);
                    }
                    c.received += n as u64;
                    match c.parser.feed(&self.buf[..n]) {
                        Ok(ParseProgress::NeedMore) => {
                            // TCP: a short read drained the socket. TLS: read on until
                            // the transport says WouldBlock.
                            if drained && !read_closed {
                                return;
                            }
                        }
                        Ok(ParseProgress::Complete { consumed }) => {
                            if consumed < n {
                                // Bytes after the end of the body: we never pipeline, so
                                // the framing was wrong.
                                return self.fail(i, ErrorKind::Malformed);
                            }
                            return self.complete(i, now, false);
                        }
                        Err(e) => return self.fail(i, e.kind()),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failure(i, &e),
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

    fn io_failure(&mut self, i: usize, e: &io::Error) {
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
    fn retry_stale(&mut self, i: usize, now: Instant) {
        self.rec.stale_reconnects += 1;
        self.close(i);
        let is_head = self.cfg.requests[self.conns[i].request].is_head;
        let c = &mut self.conns[i];
        c.parser.reset(is_head);
        let started = c.started;
        self.open_connection(i, now);
        self.conns[i].started = started;
    }

    fn complete(&mut self, i: usize, now: Instant, closed_by_server: bool) {
        let slot = self.slot_of(now);
        let in_window = self.in_window(now);
        let c = &mut self.conns[i];
        let planned = &self.cfg.requests[c.request];
        let head = c.parser.head();
        let status = head.map(|h| h.status).unwrap_or(0);
        let body_bytes = c.parser.body_bytes();
        let check_failed = planned
            .body_contains
            .as_deref()
            .is_some_and(|needle| !contains(c.parser.body(), needle));
        let completion = Completion {
            request: c.request,
            status,
            expected: planned
                .expect_status
                .iter()
                .any(|&(lo, hi)| status >= lo && status <= hi),
            check_failed,
            connect_us: c.connect_us,
            tls_handshake_us: c.handshake_us,
            first_byte_us: micros(c.started, c.first_byte.unwrap_or(now)),
            total_us: micros(pacing::latency_origin(c.intended, c.started), now),
            service_us: c.intended.map(|_| micros(c.started, now)),
            bytes: c.received,
            body_bytes,
            length_varies: self.cfg.first_lengths[c.request].varies(body_bytes),
            kept_alive: !closed_by_server && head.is_some_and(|h| h.keep_alive),
        };
        if let Some(server) = c.parser.take_server() {
            self.rec.server_software.get_or_insert(server);
        }
        c.served += 1;
        c.phase = Phase::Idle;
        let reusable = self.cfg.keepalive
            && !closed_by_server
            && head.is_some_and(|h| h.keep_alive)
            && self.cfg.max_requests_per_conn.is_none_or(|m| c.served < m);
        self.active -= 1;
        self.rec.complete(&completion, slot, in_window);
        if !reusable {
            self.close(i);
        }
        self.next_request(i, now);
    }

    /// A connection has become free: give it its next request.
    fn next_request(&mut self, i: usize, now: Instant) {
        if self.is_open_loop() {
            // Requests that fell due while this worker handled events take the freed
            // connection now, not at the next turn of the loop.
            self.queue_due(now);
            if let Some(due) = self.pending.pop_front() {
                self.start_request(i, now, Some(due));
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
        let pause = self.cfg.think.sample(&mut self.rng);
        if !pause.is_zero() {
            if self.sending {
                self.thinking.push(Reverse((now + pause, i)));
            }
        } else if self.may_start() {
            self.start_request(i, now, None);
        }
    }

    fn fail(&mut self, i: usize, kind: ErrorKind) {
        let now = Instant::now();
        let (slot, in_window) = (self.slot_of(now), self.in_window(now));
        let (request, received) = (self.conns[i].request, self.conns[i].received);
        self.rec.error(kind, request, received, slot, in_window);
        self.active -= 1;
        self.close(i);
        self.conns[i].phase = Phase::Idle;
        if self.is_open_loop() {
            // The schedule paces the attempts: one per due request.
            self.idle_fresh.push(i);
            self.note_idle(now);
        } else if kind.is_connect() && self.sending {
            let pause = self.connect_backoff(i);
            self.thinking.push(Reverse((now + pause, i)));
        } else {
            self.ready.push(i);
        }
    }

    /// How long connection `i` waits after one more failed connect (see
    /// `CONNECT_BACKOFF_FIRST`).
    fn connect_backoff(&mut self, i: usize) -> Duration {
        let c = &mut self.conns[i];
        let doublings = c.connect_failures.min(16);
        c.connect_failures = c.connect_failures.saturating_add(1);
        let full = CONNECT_BACKOFF_FIRST
            .saturating_mul(1 << doublings)
            .min(CONNECT_BACKOFF_MAX);
        full.mul_f64(1.0 - 0.5 * self.rng.unit())
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        // Closing the socket removes it from the epoll set (Linux drops a closed file from
        // every interest list), so no deregister call is spent; a stale event still queued
        // for it carries an old generation and is ignored.
        if c.stream.take().is_some() {
            self.open -= 1;
            self.cfg.open_gauge.closed();
        }
        c.served = 0;
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

    /// The run is over: requests still in flight are counted as abandoned, not failed.
    fn abandon_all(&mut self) {
        for i in 0..self.conns.len() {
            if self.conns[i].phase != Phase::Idle {
                self.rec.abandoned += 1;
                self.active -= 1;
                self.conns[i].phase = Phase::Idle;
                self.close(i);
            }
        }
    }
}

/// Does `haystack` contain `needle`?
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_tell_generations_apart_and_never_equal_the_timer() {
        assert_ne!(token_of(5, 1), token_of(5, 2));
        assert_eq!(token_of(5, 7).0 & INDEX_MASK, 5);
        assert_ne!(token_of(INDEX_MASK, usize::MAX), TIMER);
        assert_eq!(token_of(3, usize::MAX).0 & INDEX_MASK, 3);
    }
}
