//! One worker thread: it owns its connections, its event loop (mio, edge-triggered epoll),
//! its recorder. Nothing is shared on the per-request path: no lock, no atomic write.
//!
//! Per request on a kept-alive connection the worker makes one `write` and (usually) one
//! `read`; readiness comes from one `epoll_wait` shared by all ready connections. A short
//! read means the socket was drained at that moment, so no extra read is spent to see
//! EAGAIN; a later arrival raises a new edge.

use crate::http1::{Progress as ParseProgress, ResponseParser};
use crate::recorder::{Completion, FirstLength, IntervalReport, Recorder};
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};
use webtune_model::ErrorKind;

/// How long in-flight requests may finish after sending stops (duration end or Ctrl-C).
pub const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How often deadlines (connect and request timeouts) are checked.
const DEADLINE_SCAN: Duration = Duration::from_millis(20);
const READ_BUFFER: usize = 64 * 1024;

/// Everything one worker needs; built by the coordinator.
pub struct WorkerConfig {
    pub request: Arc<Vec<u8>>,
    pub is_head: bool,
    /// Socket address for each of this worker's connections (round-robin over addresses).
    pub conn_addrs: Vec<SocketAddr>,
    /// This worker's share of `-n`, if given.
    pub budget: Option<u64>,
    /// Stop sending at this instant, if the run is timed.
    pub send_until: Option<Instant>,
    pub keepalive: bool,
    pub max_requests_per_conn: Option<u64>,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub expect_status: Vec<(u16, u16)>,
    pub start: Instant,
    pub interval: Duration,
    pub stop: Arc<AtomicBool>,
    pub first_length: Arc<FirstLength>,
    pub reports: Sender<IntervalReport>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Connecting,
    Sending,
    Receiving,
}

struct Conn {
    stream: Option<TcpStream>,
    addr: SocketAddr,
    phase: Phase,
    /// Request bytes written so far.
    written: usize,
    /// When the current request began (its connect, if it opened the connection).
    started: Instant,
    /// When this request's connection attempt began, if it opened one.
    opened_at: Option<Instant>,
    connect_us: Option<u64>,
    first_byte: Option<Instant>,
    deadline: Instant,
    /// Requests completed on the current connection.
    served: u64,
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
    sending: bool,
    remaining: Option<u64>,
    active: usize,
    open: u64,
    /// Connections waiting to start their next request (after a failure).
    ready: Vec<usize>,
}

/// Run one worker to the end; returns what it measured.
pub fn run_worker(cfg: WorkerConfig) -> io::Result<Recorder> {
    let now = Instant::now();
    let conns = cfg
        .conn_addrs
        .iter()
        .map(|&addr| Conn {
            stream: None,
            addr,
            phase: Phase::Idle,
            written: 0,
            started: now,
            opened_at: None,
            connect_us: None,
            first_byte: None,
            deadline: now,
            served: 0,
            received: 0,
            parser: ResponseParser::new(),
        })
        .collect();
    let mut w = Worker {
        remaining: cfg.budget,
        cfg,
        poll: Poll::new()?,
        conns,
        rec: Recorder::default(),
        buf: vec![0; READ_BUFFER],
        sending: true,
        active: 0,
        open: 0,
        ready: Vec::new(),
    };
    w.event_loop()?;
    Ok(w.rec)
}

fn micros(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_micros() as u64
}

fn connect_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
        io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
        _ => ErrorKind::ConnectOther,
    }
}

fn io_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::TimedOut => ErrorKind::RequestTimeout,
        _ => ErrorKind::Reset,
    }
}

impl Worker {
    fn event_loop(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let interval = self.cfg.interval;
        let mut interval_index: u64 = 0;
        let mut next_interval = self.cfg.start + interval;
        let mut next_scan = Instant::now() + DEADLINE_SCAN;
        let mut drain_until: Option<Instant> = None;

        for i in 0..self.conns.len() {
            if self.may_start() {
                self.start_request(i, Instant::now());
            }
        }
        loop {
            let now = Instant::now();
            if self.sending {
                let timed_out = self.cfg.send_until.is_some_and(|t| now >= t);
                if timed_out || self.cfg.stop.load(Ordering::Relaxed) {
                    self.sending = false;
                    self.ready.clear();
                    drain_until = Some(now + DRAIN_GRACE);
                }
            }
            while let Some(i) = self.ready.pop() {
                if self.conns[i].phase == Phase::Idle && self.may_start() {
                    self.start_request(i, now);
                }
            }
            if self.active == 0 && (!self.sending || self.remaining == Some(0)) {
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
            if now >= next_scan {
                self.expire(now);
                next_scan = now + DEADLINE_SCAN;
            }
            let mut wake = next_scan.min(next_interval);
            if let Some(t) = drain_until {
                wake = wake.min(t);
            }
            if self.sending {
                if let Some(t) = self.cfg.send_until {
                    wake = wake.min(t);
                }
            }
            let timeout = if self.ready.is_empty() {
                wake.saturating_duration_since(now)
            } else {
                Duration::ZERO
            };
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in events.iter() {
                let i = event.token().0;
                if i < self.conns.len() {
                    self.on_event(i, event);
                }
            }
        }
        let report = self.rec.take_interval(interval_index, self.open);
        let _ = self.cfg.reports.send(report);
        Ok(())
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

    fn start_request(&mut self, i: usize, now: Instant) {
        self.active += 1;
        let is_head = self.cfg.is_head;
        let c = &mut self.conns[i];
        c.received = 0;
        c.first_byte = None;
        c.connect_us = None;
        c.opened_at = None;
        c.started = now;
        c.parser.reset(is_head);
        if self.rec.responses == 0 && self.rec.server_software.is_none() {
            c.parser.capture_server();
        }
        if c.stream.is_some() {
            self.begin_send(i, now);
        } else {
            self.open_connection(i, now);
        }
    }

    fn open_connection(&mut self, i: usize, now: Instant) {
        let addr = self.conns[i].addr;
        let mut stream = match TcpStream::connect(addr) {
            Ok(s) => s,
            Err(e) => return self.fail(i, connect_error_kind(&e)),
        };
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            drop(stream);
            return self.fail(i, connect_error_kind(&e));
        }
        self.rec.connections_opened += 1;
        self.open += 1;
        let timeout = self.cfg.connect_timeout;
        let c = &mut self.conns[i];
        c.stream = Some(stream);
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
        let request = Arc::clone(&self.cfg.request);
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        while c.written < request.len() {
            match stream.write(&request[c.written..]) {
                Ok(0) => return self.io_failure(i, &io::ErrorKind::WriteZero.into()),
                Ok(n) => c.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failure(i, &e),
            }
        }
        c.phase = Phase::Receiving;
        self.rec.bytes_sent += request.len() as u64;
    }

    fn on_event(&mut self, i: usize, event: &mio::event::Event) {
        let now = Instant::now();
        match self.conns[i].phase {
            Phase::Idle => {}
            Phase::Connecting => self.on_connect_ready(i, now),
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
        let Some(stream) = c.stream.as_ref() else {
            return;
        };
        match stream.take_error() {
            Ok(Some(e)) | Err(e) => return self.fail(i, connect_error_kind(&e)),
            Ok(None) => {}
        }
        match stream.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return, // still connecting
            Err(e) => return self.fail(i, connect_error_kind(&e)),
        }
        let _ = stream.set_nodelay(true);
        if let Some(t) = c.opened_at {
            c.connect_us = Some(micros(t, now));
        }
        self.begin_send(i, now);
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
                    if c.first_byte.is_none() {
                        c.first_byte = Some(now);
                    }
                    c.received += n as u64;
                    match c.parser.feed(&self.buf[..n]) {
                        Ok(ParseProgress::NeedMore) => {
                            if n < self.buf.len() && !read_closed {
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
                        Err(_) => return self.fail(i, ErrorKind::Malformed),
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
        let is_head = self.cfg.is_head;
        let c = &mut self.conns[i];
        c.parser.reset(is_head);
        let started = c.started;
        self.open_connection(i, now);
        self.conns[i].started = started;
    }

    fn complete(&mut self, i: usize, now: Instant, closed_by_server: bool) {
        let c = &mut self.conns[i];
        let head = c.parser.head();
        let status = head.map(|h| h.status).unwrap_or(0);
        let body_bytes = c.parser.body_bytes();
        let completion = Completion {
            status,
            expected: self
                .cfg
                .expect_status
                .iter()
                .any(|&(lo, hi)| status >= lo && status <= hi),
            connect_us: c.connect_us,
            first_byte_us: micros(c.started, c.first_byte.unwrap_or(now)),
            total_us: micros(c.started, now),
            bytes: c.received,
            body_bytes,
            length_varies: self.cfg.first_length.varies(body_bytes),
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
        self.rec.complete(&completion);
        if !reusable {
            self.close(i);
        }
        if self.may_start() {
            self.start_request(i, now);
        }
    }

    fn fail(&mut self, i: usize, kind: ErrorKind) {
        let received = self.conns[i].received;
        self.rec.error(kind, received);
        self.active -= 1;
        self.close(i);
        self.conns[i].phase = Phase::Idle;
        self.ready.push(i);
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut stream) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut stream);
            self.open -= 1;
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
