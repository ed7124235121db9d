//! The HTTP/2 worker: the same loop as `worker::h1` (mio, edge-triggered, one thread's own
//! recorder; `worker::event_loop`) but many streams per connection. Requests wait as jobs
//! until a connection has a free stream (`--streams` per connection, fewer if the server's
//! SETTINGS say so); a job takes a connected connection with room first, else opens a new
//! one up to `-c`.
//!
//! Closed loop: `-c × --streams` users, each starting its next request when the previous
//! one ends (after think time); users waiting for a stream are a count per moment they
//! became ready, not a job each. Open loop: requests fall due on the schedule and latency
//! counts from the intended start, including any wait for a stream; such waits are counted
//! (`queued_for_stream`). `--timeout` runs from when a request is ready (due, or its user
//! ready), so a request that waits too long for a stream fails as `request_timeout`. Streams
//! on one connection also share its socket: their frames go out in order from one buffer,
//! and a request body may wait for the server's window (`flow_control_waits`). Memory for
//! streams is taken as they are used: a connection's slots grow to the streams it has had
//! in flight at once (at most `PRE_SETTINGS_STREAMS` before the server's SETTINGS, then its
//! SETTINGS_MAX_CONCURRENT_STREAMS), never to `--streams` up front.
//!
//! A failed connect in a closed loop rests its connection for the same backoff as HTTP/1.1
//! (`worker::backoff`), and the users whose requests failed with it wait as long: a
//! refusing server sees one attempt per connection and pause, however many streams wait.
//!
//! GOAWAY: no new streams on that connection; streams the server left unprocessed (above
//! its last stream id) are sent again on another connection after a graceful GOAWAY
//! (NO_ERROR), and fail as `h2_goaway` after one with an error code, as do the streams still
//! open then. A GOAWAY that processed none of the connection's streams (last stream id 0)
//! refuses the connection: its streams fail as `h2_goaway` whatever the code, and the
//! connection rests like one whose connect failed (its own backoff, started over by a
//! response), so a server that turns every connection away is not reconnected in a tight
//! loop and `-n` counts the failures. RST_STREAM fails its stream as `h2_stream_reset`.
//!
//! This file is the worker's pacing (users, jobs, which connection takes a job); `conn_io`
//! is one connection's I/O: connect, handshake, frames out and in, completions, failures.

mod conn_io;

/// Open loop: the most jobs (due requests waiting for a stream) one worker holds; a few MiB.
/// Enough to keep `-c × --streams` busy a turn at a time, since each turn of the loop takes
/// more as jobs leave.
const MAX_WAITING_JOBS: usize = 1 << 16;

use super::backoff::ConnectBackoff;
use super::base::Base;
use super::config::WorkerConfig;
use super::event_loop::{run_loop, Driver};
use crate::h2::conn::{Connection, Event};
use crate::h2::request::from_http1;
use crate::h2::H2Setup;
use crate::recorder::Recorder;
use crate::scenario;
use crate::transport::Transport;
use mio::net::TcpStream;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::time::Instant;
use webtune_model::{ErrorKind, H2Summary};

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
    /// Set when a GOAWAY (or a server's lower stream limit) sends it again: its clock keeps
    /// running.
    started: Option<Instant>,
    intended: Option<Instant>,
    /// `--timeout` from when it was ready, the wait for a stream included.
    deadline: Instant,
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
    /// By tag: grown as streams are used, to `--streams` at most.
    slots: Vec<Slot>,
    free: Vec<usize>,
    opened_at: Instant,
    deadline: Instant,
    /// The slot whose request opened this connection: it carries the connect and
    /// handshake times.
    opener: Option<usize>,
    /// In `Worker::unflushed`.
    unflushed: bool,
    /// Connects that failed in a row (reset by one that succeeds).
    backoff: ConnectBackoff,
    /// Closed loop: after a failed connect, not to be connected again before this.
    rest_until: Instant,
    /// Connections in a row the server refused by GOAWAY (reset by a response).
    refusals: ConnectBackoff,
    /// This connection was refused by a GOAWAY that processed none of its streams.
    refused: bool,
}

impl Conn {
    fn busy(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Is a slot free or may one more be made (below `limit`, `--streams`)?
    fn has_room(&self, limit: usize) -> bool {
        !self.free.is_empty() || self.slots.len() < limit
    }

    /// A free slot's tag, making one if none is free and `limit` allows.
    fn take_tag(&mut self, limit: usize, idle: Slot) -> Option<usize> {
        if let Some(t) = self.free.pop() {
            return Some(t);
        }
        (self.slots.len() < limit).then(|| {
            self.slots.push(idle);
            self.slots.len() - 1
        })
    }
}

struct Worker {
    base: Base,
    setup: H2Setup,
    conns: Vec<Conn>,
    summary: H2Summary,
    rendered: Vec<u8>,
    events: Vec<Event>,
    /// Open connections with new streams not yet written: `dispatch` writes each once, so
    /// the requests one wake-up starts on a connection go out in one write.
    unflushed: Vec<usize>,
    jobs: VecDeque<Job>,
    /// Closed loop: users ready for a request (taken from the budget) and waiting for a
    /// stream, as (when they became ready, how many), oldest first.
    ready: VecDeque<(Instant, u64)>,
    /// The users at the front of `ready` already counted in `queued_for_stream`.
    ready_counted: u64,
    /// Closed loop: users thinking (or backing off) until a time.
    thinking: BinaryHeap<Reverse<Instant>>,
}

/// A slot not in use.
fn idle_slot(now: Instant) -> Slot {
    Slot {
        active: false,
        request: 0,
        started: now,
        intended: None,
        first_byte: None,
        deadline: now,
        connect_us: None,
        handshake_us: None,
    }
}

/// Run one HTTP/2 worker to the end.
pub(super) fn run(mut cfg: WorkerConfig) -> io::Result<Recorder> {
    let Some(setup) = cfg.h2.take() else {
        return Err(io::Error::other("not an HTTP/2 run"));
    };
    let now = Instant::now();
    let conns = cfg
        .conn_addrs
        .iter()
        .map(|&addr| Conn {
            stream: None,
            generation: 0,
            addr,
            phase: Phase::Closed,
            proto: Connection::new(),
            written: 0,
            slots: Vec::new(),
            free: Vec::new(),
            opened_at: now,
            deadline: now,
            opener: None,
            unflushed: false,
            backoff: ConnectBackoff::default(),
            rest_until: now,
            refusals: ConnectBackoff::default(),
            refused: false,
        })
        .collect();
    let mut w = Worker {
        summary: H2Summary {
            streams_per_connection: setup.streams as u32,
            ..H2Summary::default()
        },
        setup,
        conns,
        base: Base::new(cfg)?,
        rendered: Vec::new(),
        events: Vec::new(),
        unflushed: Vec::new(),
        jobs: VecDeque::new(),
        ready: VecDeque::new(),
        ready_counted: 0,
        thinking: BinaryHeap::new(),
    };
    run_loop(&mut w)?;
    // Connections still open at the end (`close` takes the count of those closed before).
    for c in &mut w.conns {
        w.summary.flow_control_waits += std::mem::take(&mut c.proto.flow_waits);
    }
    w.base.rec.h2 = Some(w.summary.clone());
    Ok(w.base.rec)
}

impl Driver for Worker {
    fn base(&mut self) -> &mut Base {
        &mut self.base
    }

    fn start_closed(&mut self) {
        let now = Instant::now();
        for _ in 0..self.conns.len() * self.setup.streams {
            if !self.user_ready(now) {
                break;
            }
        }
    }

    fn release(&mut self, now: Instant) {
        while let Some(Reverse(at)) = self.thinking.peek().copied() {
            if at > now {
                break;
            }
            self.thinking.pop();
            self.user_ready(now);
        }
        self.queue_due(now);
        self.dispatch(now);
        let b = &mut self.base;
        if b.pacer.next_due().is_none() && b.is_open_loop() && b.sending {
            b.sending = false;
        }
    }

    fn waiting(&self) -> bool {
        !self.jobs.is_empty() || !self.ready.is_empty()
    }

    fn on_stop(&mut self) {
        self.thinking.clear();
        self.ready.clear();
        self.ready_counted = 0;
        let open_loop = self.base.is_open_loop();
        let rec = &mut self.base.rec;
        if open_loop {
            rec.not_sent += self.jobs.iter().filter(|j| j.started.is_none()).count() as u64;
        }
        rec.abandoned += self.jobs.iter().filter(|j| j.started.is_some()).count() as u64;
        self.jobs.clear();
    }

    fn tick(&mut self, now: Instant) {
        self.expire(now);
        self.expire_waiting(now);
    }

    fn abandon_all(&mut self) {
        for i in 0..self.conns.len() {
            for t in 0..self.conns[i].slots.len() {
                if self.free_slot(i, t).active {
                    self.base.rec.abandoned += 1;
                }
            }
            self.close(i);
        }
    }

    fn resume_at(&self) -> Option<Instant> {
        self.thinking.peek().map(|Reverse(at)| *at)
    }

    fn generation(&self, i: usize) -> Option<usize> {
        self.conns.get(i).map(|c| c.generation)
    }

    fn on_event(&mut self, i: usize, event: super::poller::Readiness) {
        self.socket_event(i, event);
    }
}

impl Worker {
    /// Closed loop: a user is ready for its next request at `now` (false: the budget is
    /// spent, or sending stopped).
    fn user_ready(&mut self, now: Instant) -> bool {
        if !self.base.may_start() {
            return false;
        }
        match self.ready.back_mut() {
            Some((at, n)) if *at == now => *n += 1,
            _ => self.ready.push_back((now, 1)),
        }
        true
    }

    /// Closed loop: the user first in line, as a job (None: none is ready).
    fn next_user(&mut self) -> Option<Job> {
        let (at, n) = self.ready.front_mut()?;
        let since = *at;
        *n -= 1;
        if *n == 0 {
            self.ready.pop_front();
        }
        self.ready_counted = self.ready_counted.saturating_sub(1);
        Some(Job {
            request: self.base.pick_request(),
            started: None,
            intended: None,
            deadline: since + self.base.cfg.timeout,
            queued: false,
        })
    }

    /// The next job to start: a waiting job first (one resent keeps its clock), then a
    /// ready user.
    fn next_job(&mut self) -> Option<Job> {
        match self.jobs.pop_front() {
            Some(job) => Some(job),
            None => self.next_user(),
        }
    }

    /// No stream is free for what waits: count in `queued_for_stream` each request that
    /// waits for the first time.
    fn count_queued(&mut self) {
        let mut newly = 0;
        for job in self.jobs.iter_mut().rev() {
            if job.queued {
                break;
            }
            job.queued = true;
            newly += 1;
        }
        let ready: u64 = self.ready.iter().map(|(_, n)| n).sum();
        newly += ready.saturating_sub(self.ready_counted);
        self.ready_counted = ready;
        self.summary.queued_for_stream += newly;
    }

    /// Fail each request that waited for a stream past its deadline.
    fn expire_waiting(&mut self, now: Instant) {
        let mut expired = Vec::new();
        if self.jobs.iter().any(|j| j.deadline <= now) {
            self.jobs.retain(|j| {
                let keep = j.deadline > now;
                if !keep {
                    expired.push(j.request);
                }
                keep
            });
        }
        let timeout = self.base.cfg.timeout;
        let mut users = 0;
        while let Some(&(at, n)) = self.ready.front() {
            if at + timeout > now {
                break;
            }
            self.ready.pop_front();
            users += n;
        }
        self.ready_counted = self.ready_counted.saturating_sub(users);
        for request in expired {
            self.base
                .record_error(ErrorKind::RequestTimeout, request, 0, now);
            self.user_done(now, None);
        }
        for _ in 0..users {
            let request = self.base.pick_request();
            self.base
                .record_error(ErrorKind::RequestTimeout, request, 0, now);
            self.user_done(now, None);
        }
    }

    /// Closed loop: a user finished a request, or failed one (after a failed connect it
    /// waits until `backoff_until`, when its connection may be tried again).
    fn user_done(&mut self, now: Instant, backoff_until: Option<Instant>) {
        if self.base.is_open_loop() || !self.base.sending {
            return;
        }
        let pause = match backoff_until {
            Some(until) => until.saturating_duration_since(now),
            None => self.base.cfg.think.sample(&mut self.base.rng),
        };
        if pause.is_zero() {
            self.user_ready(now);
        } else {
            self.thinking.push(Reverse(now + pause));
        }
    }

    /// Closed loop: connection `i` failed to connect at `now` (or was refused by a GOAWAY);
    /// it rests for the backoff.
    fn rest(&mut self, i: usize, now: Instant) {
        if self.base.sending && !self.base.is_open_loop() {
            let c = &mut self.conns[i];
            let backoff = if c.refused {
                &mut c.refusals
            } else {
                &mut c.backoff
            };
            c.rest_until = now + backoff.next_pause(&mut self.base.rng);
        }
    }

    /// Open loop: requests due by `now` become jobs, at most `MAX_WAITING_JOBS` waiting at
    /// once. Past that a due request stays the schedule's (a stretch of it, not a list:
    /// `Base::take_due`) until a job leaves, and one never taken is counted as not sent when
    /// sending stops, as in the HTTP/1.1 worker; so a rate no server keeps up with costs no
    /// memory in proportion to rate × duration.
    fn queue_due(&mut self, now: Instant) {
        let deadline = now + self.base.cfg.timeout;
        while self.jobs.len() < MAX_WAITING_JOBS {
            let Some(due) = self.base.take_due(now) else {
                break;
            };
            let request = self.base.pick_request();
            self.jobs.push_back(Job {
                request,
                started: None,
                intended: Some(due),
                deadline,
                queued: false,
            });
        }
    }

    /// A connection for the next job at `now`: an open one with a free stream first, else a
    /// closed one to open (not one resting after a failed connect).
    fn find_conn(&self, now: Instant) -> Option<usize> {
        let mut closed = None;
        let limit = self.setup.streams;
        for (i, c) in self.conns.iter().enumerate() {
            if c.phase == Phase::Closed {
                if closed.is_none() && c.rest_until <= now {
                    closed = Some(i);
                }
            } else if c.has_room(limit) && c.proto.can_open() {
                return Some(i);
            }
        }
        closed
    }

    /// Start waiting jobs and ready users on free streams.
    fn dispatch(&mut self, now: Instant) {
        while !self.jobs.is_empty() || !self.ready.is_empty() {
            let Some(i) = self.find_conn(now) else {
                self.count_queued();
                break;
            };
            let Some(job) = self.next_job() else {
                break;
            };
            if self.conns[i].phase == Phase::Closed && !self.open_connection(i, now) {
                // The connect failed at once: the job failed with it.
                let kind = ErrorKind::ConnectOther;
                self.rest(i, now);
                self.base.record_error(kind, job.request, 0, now);
                self.user_done(now, Some(self.conns[i].rest_until));
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
        let none_free = self.find_conn(now).is_none();
        let b = &mut self.base;
        b.all_busy.set(none_free, now);
        let oldest = self
            .jobs
            .front()
            .and_then(|j| j.intended)
            .or(b.pacer.next_due())
            .unwrap_or(now);
        b.all_busy.forget_before(oldest);
    }

    fn start_job(&mut self, i: usize, job: Job, now: Instant) {
        if !self.try_start_job(i, job, now) {
            // Its request could not be put in HTTP/2 form: failed, and its user goes on.
            self.base
                .record_error(ErrorKind::Malformed, job.request, 0, now);
            self.user_done(now, None);
        }
    }

    /// Start `job` on connection `i`; false if its request does not render.
    fn try_start_job(&mut self, i: usize, job: Job, now: Instant) -> bool {
        let b = &mut self.base;
        let planned = &b.cfg.requests[job.request];
        let owned;
        let req = match &self.setup.fixed[job.request] {
            Some(r) => r,
            None => {
                let Some(def) = planned.def.as_ref() else {
                    return false;
                };
                let seq = b.seqs[job.request];
                b.seqs[job.request] += 1;
                scenario::encode_into(
                    def,
                    &b.cfg.host_header,
                    true,
                    false,
                    &mut b.rng,
                    seq,
                    &mut self.rendered,
                );
                match from_http1(&self.rendered, self.setup.tls) {
                    Ok(r) => {
                        owned = r;
                        &owned
                    }
                    Err(_) => return false,
                }
            }
        };
        let capture = planned.body_contains.is_some();
        let want_server = b.rec.server_software.is_none();
        if let Some(due) = job.intended.filter(|_| job.started.is_none()) {
            b.record_send(due, now);
        }
        let c = &mut self.conns[i];
        let Some(tag) = c.take_tag(self.setup.streams, idle_slot(now)) else {
            return true; // find_conn saw room: never here
        };
        c.proto.start(tag, req, capture, want_server);
        c.slots[tag] = Slot {
            active: true,
            request: job.request,
            started: job.started.unwrap_or(now),
            intended: job.intended,
            first_byte: None,
            deadline: job.deadline,
            connect_us: None,
            handshake_us: None,
        };
        if c.opener.is_none() && c.phase != Phase::Open {
            c.opener = Some(tag);
        }
        b.active += 1;
        if c.phase == Phase::Open && !c.unflushed {
            c.unflushed = true;
            self.unflushed.push(i);
        }
        true
    }
}
