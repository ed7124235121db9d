//! What every worker owns whatever protocol it speaks (HTTP/1.1 in `worker::h1`, HTTP/2
//! in `worker::h2`, HTTP/3 in `worker::h3`), and the rules they follow per request: the
//! pacer (`crate::pacer`: when the next request is due) with the budget and stop around it,
//! the measurement window (which slot a moment falls in, and whether it counts), the
//! budget (`may_start`), the request mix (`pick_request`), how a sent request's lateness and
//! a failed one are recorded, how a completion is judged, and how a socket is opened,
//! written and closed (counted in the shared open-connection gauge).

use super::backoff::ConnectBackoff;
use super::config::{WorkerConfig, READ_BUFFER};
use super::poller::Poller;
use super::rx_stamp::{self, Stamps};
use super::wakeup::{arm_timer, create_timer, token_of};
use crate::lateness::{split_lateness, BusyClock};
use crate::pacer::Pacer;
use crate::plan::PlannedRequest;
use crate::recorder::{Recorder, SLOT_MS};
use crate::rng::Rng;
use crate::tls::{self, Connector};
use crate::transport::Transport;
use mio::net::TcpStream;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;
use webtune_model::ErrorKind;

/// A worker's state apart from its connections.
pub(crate) struct Base {
    /// Declared (so dropped) before `cfg`: sends queued on the ring point into `cfg.requests`.
    pub poll: Poller,
    pub cfg: WorkerConfig,
    pub rec: Recorder,
    pub buf: Vec<u8>,
    pub rng: Rng,
    /// Per request name: `{seq}` counters.
    pub seqs: Vec<u64>,
    pub sending: bool,
    pub remaining: Option<u64>,
    /// Requests in flight.
    pub active: usize,
    /// Sockets open now.
    pub open: u64,
    /// Open loop: when no connection could take a request.
    pub all_busy: BusyClock,
    /// When the next request is due (taken from `cfg`).
    pub pacer: Pacer,
    /// Open loop under epoll: the timerfd (io_uring times its wait itself).
    pub timer: Option<OwnedFd>,
    /// Plain-TCP sockets are read through the ring (`ring_receives`).
    ring_reads: bool,
    /// Open loop under epoll over plain TCP: answers read with the kernel's receive stamps,
    /// so they may wait for the next due time (`batches_answers`).
    pub stamps: Stamps,
    /// Journeys whose budget counts walks (`JourneyRun::walk_budget`): walks under way, which
    /// go on to their end once the budget is spent.
    pub walking: usize,
}

impl Base {
    pub fn new(mut cfg: WorkerConfig) -> io::Result<Base> {
        let names = if cfg.named { cfg.requests.len() } else { 0 };
        let mut rec = Recorder::with_names(names);
        if let Some(run) = cfg.journeys.as_ref() {
            rec.journeys = vec![Default::default(); run.journeys.len()];
        }
        if cfg.smtp.is_some() {
            rec.smtp = Some(Default::default());
        }
        Ok(Base {
            remaining: cfg.budget,
            rng: Rng::seeded(cfg.seed),
            seqs: vec![0; cfg.requests.len()],
            poll: Poller::new(cfg.io, cfg.conn_addrs.len())?,
            rec,
            buf: vec![0; READ_BUFFER],
            sending: true,
            active: 0,
            open: 0,
            all_busy: BusyClock::default(),
            pacer: std::mem::take(&mut cfg.pacer),
            timer: None,
            ring_reads: false,
            stamps: Stamps::Off,
            walking: 0,
            cfg,
        })
    }

    /// The HTTP/1.1 worker reads its plain-TCP sockets through the ring where it can
    /// (io_uring with a buffer ring); h2 and SMTP read on readiness.
    pub fn read_through_ring(&mut self) {
        self.ring_reads = self.cfg.smtp.is_none() && self.poll.receives();
    }

    pub fn seconds_since_start(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.cfg.start).as_secs_f64()
    }

    /// The per-second slot `at` falls in (for the timeline and busy time).
    pub fn slot_of(&self, at: Instant) -> usize {
        (at.saturating_duration_since(self.cfg.start).as_millis() as u64 / SLOT_MS) as usize
    }

    /// Does `at` fall in the measurement window (what the summary counts)?
    pub fn in_window(&self, at: Instant) -> bool {
        let t = self.seconds_since_start(at);
        t >= self.cfg.window.0 && t < self.cfg.window.1
    }

    /// Does the budget count journeys' walks (not requests)?
    pub fn walk_budget(&self) -> bool {
        self.cfg.journeys.as_ref().is_some_and(|r| r.walk_budget)
    }

    pub fn is_open_loop(&self) -> bool {
        self.pacer.is_open()
    }

    /// Take one request from the budget, if sending and any is left.
    pub fn may_start(&mut self) -> bool {
        self.sending && take_one(&mut self.remaining)
    }

    /// Which planned request goes next.
    pub fn pick_request(&mut self) -> usize {
        match &self.cfg.picker {
            Some(p) => p.pick(&mut self.rng),
            None => 0,
        }
    }

    /// Open loop, before the first turn: the timer and the first due time (none due: nothing
    /// to send). False for a closed loop.
    pub fn start_schedule(&mut self) -> io::Result<bool> {
        if !self.is_open_loop() {
            return Ok(false);
        }
        if !self.poll.times_precisely() {
            self.timer = Some(create_timer(&mut self.poll)?);
        }
        if !self.pacer.begin(&mut self.rng) {
            self.sending = false;
        }
        Ok(true)
    }

    /// Open loop: the next request due by `now` (or within the batching slack), taken from
    /// the budget, or None when none is due yet or sending has stopped (`Pacer::take_due`).
    #[inline]
    pub fn take_due(&mut self, now: Instant) -> Option<Instant> {
        if !self.sending {
            return None;
        }
        let remaining = &mut self.remaining;
        self.pacer
            .take_due(now, &mut self.rng, || take_one(remaining))
    }

    /// Sending stops at `now` (the run's end, Ctrl-C): nothing more falls due, and the
    /// requests that fell due and were never taken are counted as not sent.
    pub fn stop_sending(&mut self, now: Instant) {
        if self.sending {
            self.rec.not_sent += self.pacer.backlog(now, self.remaining);
        }
        self.sending = false;
        self.pacer.stop();
    }

    /// Open loop: arm the timer for the next due time when it comes before `wake` (the loop's
    /// other reason to wake) and the timer is not already set to serve it. Under io_uring the
    /// wait's own timeout is the timer (no timerfd, no `timerfd_settime`). The time it is set
    /// for is returned, for the loop to wake then: the ring's wait and a worker sleeping with
    /// its answers batched (`batches_answers`) time themselves by it; epoll's wait, whose
    /// timeout is rounded up to a millisecond, is woken by the timerfd first.
    pub fn arm_timer_before(&mut self, wake: Instant, now: Instant) -> Option<Instant> {
        if !self.is_open_loop() {
            return None;
        }
        if self.pacer.timer_set_for().is_some_and(|t| t <= now) {
            // The wait woke at (or after) the time it was set for: the timer fired (its
            // timerfd's event may come a moment later; a second `timer_fired` is harmless).
            self.pacer.timer_fired();
        }
        if self.sending {
            let after = self.pacer.arm_before(wake, now);
            if let (Some(after), Some(timer)) = (after, self.timer.as_ref()) {
                arm_timer(timer, after);
            }
        }
        self.pacer.timer_set_for()
    }

    /// Open loop: the request due at `due` is sent at `now`; record how late, split into the
    /// wait for a connection and the generator's own lag.
    pub fn record_send(&mut self, due: Instant, now: Instant) {
        if self.in_window(now) {
            let (wait, own) = split_lateness(&self.all_busy, due, now);
            self.rec.lag.record(micros(due, now));
            self.rec.connection_wait.record(wait.as_micros() as u64);
            self.rec.generator_lag.record(own.as_micros() as u64);
            self.rec.sent += 1;
        }
    }

    /// Planned request `request` failed as `kind` at `now`, after `received` bytes.
    pub fn record_error(&mut self, kind: ErrorKind, request: usize, received: u64, now: Instant) {
        let (slot, in_window) = (self.slot_of(now), self.in_window(now));
        self.rec.error(kind, request, received, slot, in_window);
    }

    /// Open a socket to `addr` for connection `index`: counted as an attempt, its TLS session
    /// begun for https://, registered for read and write readiness under a token of a new
    /// `generation`, counted as open. The error is the connect's failure kind.
    pub fn open_socket(
        &mut self,
        index: usize,
        addr: SocketAddr,
        generation: &mut usize,
    ) -> Result<Transport<TcpStream>, ErrorKind> {
        self.rec.connect_attempts += 1;
        let session = match self.cfg.tls.as_ref().map(Connector::connection) {
            None => None,
            Some(Ok(session)) => Some(session),
            Some(Err(_)) => return Err(ErrorKind::TlsHandshake),
        };
        let stream = TcpStream::connect(addr).map_err(|e| connect_error_kind(&e))?;
        *generation = generation.wrapping_add(1);
        let token = token_of(index, *generation);
        let registered = if session.is_none() && self.ring_receives() {
            // Read through the ring once connected: polled only for the connect's end.
            self.poll.writable_once(stream.as_raw_fd(), token)
        } else {
            self.poll.register(stream.as_raw_fd(), token, true)
        };
        if self.stamps.asked() && rx_stamp::enable(stream.as_raw_fd()).is_err() {
            // No stamps on this socket: its answers must be read when they come.
            self.stamps = Stamps::Missing;
        }
        if let Err(e) = registered {
            drop(stream);
            return Err(connect_error_kind(&e));
        }
        self.open += 1;
        self.cfg.open_gauge.opened();
        Ok(match session {
            None => Transport::Tcp(stream),
            Some(session) => Transport::tls(stream, session, true),
        })
    }

    /// The HTTP/1.1 worker's open loop under epoll over plain TCP (no journeys, whose walks
    /// time themselves by the loop's clock) reads its answers with the kernel's receive
    /// stamps, so that they may wait for the next due time (`batches_answers`).
    /// `WEBTUNE_NO_ANSWER_BATCH` keeps one wake-up per answer (for bench/ to compare).
    pub fn stamp_answers(&mut self) {
        let plain = self.cfg.tls.is_none() && self.cfg.smtp.is_none();
        let epoll = matches!(self.poll, Poller::Epoll { .. });
        let on = self.is_open_loop()
            && plain
            && epoll
            && self.cfg.journeys.is_none()
            && std::env::var_os("WEBTUNE_NO_ANSWER_BATCH").is_none();
        self.stamps = if on { Stamps::Unknown } else { Stamps::Off };
    }

    /// May the loop sleep to its next wake-up with answers outstanding, collecting them
    /// then? Only while every answer read carried the kernel's arrival stamp.
    pub fn batches_answers(&self) -> bool {
        self.stamps.trusted()
    }

    /// Are this worker's plain-TCP sockets read through the ring? Only the HTTP/1.1 worker
    /// (not SMTP) asks for it (`ring_reads`), and only io_uring with a buffer ring has it.
    pub fn ring_receives(&self) -> bool {
        self.ring_reads
    }

    /// A connecting socket became ready: how the connect ended (SO_ERROR). Connected: Nagle
    /// off, the backoff over, counted as opened.
    pub fn finish_connect(
        &mut self,
        stream: &Transport<TcpStream>,
        backoff: &mut ConnectBackoff,
    ) -> Result<(), ErrorKind> {
        let socket = stream.socket();
        match socket.take_error() {
            Ok(Some(e)) | Err(e) => return Err(connect_error_kind(&e)),
            Ok(None) => {}
        }
        let _ = socket.set_nodelay(true);
        backoff.reset();
        self.rec.connection_opened();
        Ok(())
    }

    /// Close a connection's socket, if it has one. Closing removes it from the epoll set
    /// (Linux drops a closed file from every interest list), so no deregister call is spent
    /// (io_uring: the cancellations of its polls and its receive are queued, `uring`); a
    /// stale event still queued for it carries an old generation and is ignored.
    pub fn close_socket(&mut self, stream: &mut Option<Transport<TcpStream>>) {
        if let Some(s) = stream.as_ref() {
            self.poll.closing(s.socket().as_raw_fd());
        }
        if stream.take().is_some() {
            self.open -= 1;
            self.cfg.open_gauge.closed();
        }
    }
}

/// Take one request from a budget (None: no budget), if any is left.
#[inline]
fn take_one(remaining: &mut Option<u64>) -> bool {
    match remaining {
        Some(0) => false,
        Some(n) => {
            *n -= 1;
            true
        }
        None => true,
    }
}

/// Did the answer have a status the request expects?
pub(crate) fn expected(planned: &PlannedRequest, status: u16) -> bool {
    planned
        .expect_status
        .iter()
        .any(|&(lo, hi)| status >= lo && status <= hi)
}

/// Did the body check (`body_contains`) fail on `body`?
pub(crate) fn check_failed(planned: &PlannedRequest, body: &[u8]) -> bool {
    planned
        .body_contains
        .as_deref()
        .is_some_and(|needle| !contains(body, needle))
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

/// Write `bytes` from `*written` on as far as the socket takes them, then flush what TLS
/// still holds: Some(Ok) once all is out, None when the socket would block first (a
/// writable event carries on), Some(Err) when writing failed.
#[inline]
pub(crate) fn write_out(
    stream: &mut Transport<TcpStream>,
    bytes: &[u8],
    written: &mut usize,
) -> Option<io::Result<()>> {
    loop {
        if *written >= bytes.len() {
            // TLS may hold records the socket did not take yet (always done for TCP).
            return match stream.flush() {
                Ok(true) => Some(Ok(())),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            };
        }
        match stream.write(&bytes[*written..]) {
            Ok(0) => return Some(Err(io::ErrorKind::WriteZero.into())),
            Ok(n) => *written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Some(Err(e)),
        }
    }
}

/// A read, write or handshake that failed: TLS's kind when TLS says what went wrong, else
/// the I/O error's.
pub(crate) fn failure_kind(e: &io::Error) -> ErrorKind {
    tls::failure_kind(e).unwrap_or_else(|| io_error_kind(e))
}

pub(crate) fn io_error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::TimedOut => ErrorKind::RequestTimeout,
        _ => ErrorKind::Reset,
    }
}

/// Does `haystack` contain `needle`?
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}
