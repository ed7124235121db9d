//! One HTTP/3 worker thread: a single-threaded tokio runtime (quinn's), one UDP socket
//! (a quinn endpoint) shared by this worker's connections, and per connection `--streams`
//! request loops. Closed loop: each stream sends its next request when its answer ends;
//! open loop: a free stream takes the request due (`next_request`). The request that opens
//! a connection counts the QUIC handshake in its latency and in `connect`.
//!
//! It holds the other workers' `base::Base` (its poller unused): the recorder,
//! window, `-n` budget, the open loop's schedule and lateness, and the end (or Ctrl-C) with
//! `DRAIN_GRACE` for what is in flight. Failures are classified in `h3::exchange`; a GOAWAY
//! ends the connection's streams without an error, its unsent requests go on a new one.

use super::base::{check_failed, expected, micros, Base};
use super::config::WorkerConfig;
use super::event_loop::DRAIN_GRACE;
use crate::h3::exchange::{
    connect, connection_kind, exchange, note_close, stream_kind, Answer, Failure, Opening,
    SendRequest,
};
use crate::h3::{H3Request, H3Setup, IDLE_TIMEOUT, UDP_BUFFER_BYTES};
use crate::recorder::{Completion, Recorder};
use bytes::Bytes;
use quinn::crypto::rustls::QuicClientConfig;
use std::cell::RefCell;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use webtune_model::{ErrorKind, H3Summary};

/// How often the worker looks at the clock for its intervals, the end and a stop.
const TICK: Duration = Duration::from_millis(10);

/// One QUIC connection as its streams see it.
struct ConnCtx {
    conn: quinn::Connection,
    /// `--0rtt`: whether the server accepted this connection's 0-RTT (None until the
    /// handshake says; no receiver when the connection did not try 0-RTT).
    early: Option<tokio::sync::watch::Receiver<Option<bool>>>,
    /// Requests taken on it so far, and `--max-requests-per-conn`.
    taken: std::cell::Cell<u64>,
    max: Option<u64>,
}

impl ConnCtx {
    /// May one more request go on this connection?
    fn may_take(&self) -> bool {
        let n = self.taken.get();
        if self.max.is_some_and(|max| n >= max) {
            return false;
        }
        self.taken.set(n + 1);
        true
    }

    /// Did the server refuse this connection's 0-RTT? Waits for the handshake's word (at
    /// most a second): a stream that failed on a 0-RTT connection may have failed for it.
    async fn refused_0rtt(&self) -> bool {
        let Some(rx) = &self.early else {
            return false;
        };
        let mut rx = rx.clone();
        let said = tokio::time::timeout(Duration::from_secs(1), rx.wait_for(|v| v.is_some()))
            .await
            .ok()
            .and_then(|r| r.ok().map(|v| *v));
        said == Some(Some(false))
    }
}

/// What the worker's tasks share (one thread: no lock, no atomic).
struct Shared {
    /// The rules every worker follows (`base`): window, budget, the open loop's
    /// schedule and lateness, the recorder. Its poller is never waited on here.
    base: Base,
    summary: H3Summary,
    /// Each connection's QUIC connection while it is up (its stats are read at its end).
    live: Vec<Option<quinn::Connection>>,
    /// Open loop: streams waiting for a due request, and whether one of them holds the
    /// timer (sleeps until the next due time; the others wait to be woken).
    idle: usize,
    timer_held: bool,
}

/// A request taken from the budget: which one, and when it began.
#[derive(Clone, Copy)]
struct Taken {
    request: usize,
    /// Its start: the due time in open loop (latency counts from there).
    started: Instant,
    /// Open loop: when it was actually sent.
    sent: Option<Instant>,
}

impl Shared {
    /// Closed loop: one request from the budget, if sending and any is left; counted in
    /// flight.
    fn take(&mut self) -> Option<Taken> {
        if !self.base.may_start() {
            return None;
        }
        let request = self.base.pick_request();
        self.base.active += 1;
        Some(Taken {
            request,
            started: Instant::now(),
            sent: None,
        })
    }

    /// Open loop: the request due by now, if any, sent now (its lateness recorded).
    fn take_due(&mut self) -> Option<Taken> {
        let now = Instant::now();
        let due = self.base.take_due(now)?;
        self.base.record_send(due, now);
        self.base.all_busy.forget_before(due);
        let request = self.base.pick_request();
        self.base.active += 1;
        Some(Taken {
            request,
            started: due,
            sent: Some(now),
        })
    }

    /// Open loop: a stream starts or stops waiting; with none waiting, every stream is busy
    /// (the server's time in a late send, `lateness`).
    fn set_idle(&mut self, delta: isize) {
        self.idle = self.idle.saturating_add_signed(delta);
        self.base.all_busy.set(self.idle == 0, Instant::now());
    }

    /// A taken request was never sent (a GOAWAY came first): back into the budget.
    fn give_back(&mut self) {
        self.base.active -= 1;
        if let Some(n) = &mut self.base.remaining {
            *n += 1;
        }
    }

    fn fail(&mut self, kind: ErrorKind, request: usize) {
        self.base.active -= 1;
        self.base.record_error(kind, request, 0, Instant::now());
    }

    fn opened(&mut self, index: usize, conn: &quinn::Connection) {
        self.base.open += 1;
        self.base.cfg.open_gauge.opened();
        self.base.rec.connection_opened();
        self.live[index] = Some(conn.clone());
    }

    /// Connection `index` is over: its QUIC stats join the worker's.
    fn closed(&mut self, index: usize) {
        if let Some(conn) = self.live[index].take() {
            self.base.open -= 1;
            self.base.cfg.open_gauge.closed();
            add_stats(&mut self.summary, &conn.stats());
        }
    }
}

/// How requests are paced: closed loop takes the next one from the budget at once; open
/// loop waits for the schedule.
#[derive(Clone)]
struct Pace {
    open_loop: bool,
    /// Open loop: wakes waiting streams (the timer holder hands over, the end says stop).
    notify: Rc<tokio::sync::Notify>,
}

/// The next request this stream (or connection) sends, or None when sending is over.
/// Open loop: the one due now; else one waiting stream sleeps until the next due time and
/// the others wait to be woken, so a due time wakes one task, not every idle stream.
async fn next_request(shared: &RefCell<Shared>, pace: &Pace) -> Option<Taken> {
    if !pace.open_loop {
        return shared.borrow_mut().take();
    }
    shared.borrow_mut().set_idle(1);
    let taken = loop {
        let wait = {
            let mut s = shared.borrow_mut();
            if let Some(taken) = s.take_due() {
                break Some(taken);
            }
            match (s.base.sending, s.base.pacer.next_due()) {
                (true, Some(due)) if !s.timer_held => {
                    s.timer_held = true;
                    Some(due)
                }
                (true, Some(_)) => None,
                _ => break None,
            }
        };
        match wait {
            Some(due) => {
                tokio::time::sleep_until(due.into()).await;
                shared.borrow_mut().timer_held = false;
                // Hand the timer to another waiting stream, then take what fell due.
                pace.notify.notify_one();
            }
            None => pace.notify.notified().await,
        }
    };
    shared.borrow_mut().set_idle(-1);
    if taken.is_none() {
        // The schedule is over (budget spent, the end): every waiting stream hears it.
        pace.notify.notify_waiters();
    }
    taken
}

/// A connection's QUIC and UDP counts, added to the summary.
fn add_stats(s: &mut H3Summary, stats: &quinn::ConnectionStats) {
    s.datagrams_sent += stats.udp_tx.datagrams;
    s.datagrams_received += stats.udp_rx.datagrams;
    s.udp_bytes_sent += stats.udp_tx.bytes;
    s.udp_bytes_received += stats.udp_rx.bytes;
    s.packets_sent += stats.path.sent_packets;
    s.packets_lost += stats.path.lost_packets;
    s.bytes_lost += stats.path.lost_bytes;
    s.congestion_events += stats.path.congestion_events;
}

/// Run one HTTP/3 worker to the end; returns what it measured.
pub(crate) fn run(cfg: WorkerConfig) -> io::Result<Recorder> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, drive(cfg))
}

/// The worker's UDP socket: bound to any port of the first address's family, its buffers
/// sized (`UDP_BUFFER_BYTES`), what the kernel granted and its offloads recorded.
fn udp_socket(family: SocketAddr, summary: &mut H3Summary) -> io::Result<UdpSocket> {
    let domain = socket2::Domain::for_address(family);
    let socket = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    // Refused sizes are not fatal: the kernel keeps its own and the result says which.
    let _ = socket.set_recv_buffer_size(UDP_BUFFER_BYTES);
    let _ = socket.set_send_buffer_size(UDP_BUFFER_BYTES);
    let any: SocketAddr = match family {
        SocketAddr::V4(_) => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    socket.bind(&any.into())?;
    summary.udp_recv_buffer_bytes = socket.recv_buffer_size()? as u64;
    summary.udp_send_buffer_bytes = socket.send_buffer_size()? as u64;
    let socket: UdpSocket = socket.into();
    let state = quinn::udp::UdpSocketState::new((&socket).into())?;
    summary.gso_segments = state.max_gso_segments() as u64;
    summary.gro_segments = state.gro_segments() as u64;
    Ok(socket)
}

/// This worker's quinn client config: its own rustls config (own session cache), ALPN h3.
fn client_config(setup: &H3Setup) -> io::Result<quinn::ClientConfig> {
    let tls = setup
        .tls
        .quic_config(setup.zero_rtt)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let quic = QuicClientConfig::try_from(Arc::new(tls)).map_err(io::Error::other)?;
    let mut config = quinn::ClientConfig::new(Arc::new(quic));
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(IDLE_TIMEOUT).map_err(io::Error::other)?,
    ));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

async fn drive(cfg: WorkerConfig) -> io::Result<Recorder> {
    let setup = cfg
        .h3
        .clone()
        .ok_or_else(|| io::Error::other("not an HTTP/3 worker"))?;
    let mut summary = H3Summary {
        streams_per_connection: setup.streams,
        ..H3Summary::default()
    };
    let Some(&first) = cfg.conn_addrs.first() else {
        return Ok(Recorder::default());
    };
    let socket = udp_socket(first, &mut summary)?;
    let endpoint = quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        None,
        socket,
        Arc::new(quinn::TokioRuntime),
    )?;
    let client = client_config(&setup)?;
    let live = vec![None; cfg.conn_addrs.len()];
    let mut base = Base::new(cfg)?;
    let open_loop = base.start_schedule()?;
    let shared = Rc::new(RefCell::new(Shared {
        base,
        summary,
        live,
        idle: 0,
        timer_held: false,
    }));
    let notify = Rc::new(tokio::sync::Notify::new());
    let (start, interval, end_at, addrs) = {
        let s = shared.borrow();
        (
            s.base.cfg.start,
            s.base.cfg.interval,
            s.base
                .cfg
                .end_s
                .map(|e| s.base.cfg.start + Duration::from_secs_f64(e)),
            s.base.cfg.conn_addrs.clone(),
        )
    };
    let tasks: Vec<_> = addrs
        .into_iter()
        .enumerate()
        .map(|(i, addr)| {
            tokio::task::spawn_local(connection_loop(
                Rc::clone(&shared),
                Pace {
                    open_loop,
                    notify: Rc::clone(&notify),
                },
                endpoint.clone(),
                client.clone(),
                setup.clone(),
                i,
                addr,
            ))
        })
        .collect();
    let mut interval_index = 0u64;
    let mut next_interval = start + interval;
    let mut drain_until: Option<Instant> = None;
    let mut busy_from: Option<usize> = None;
    loop {
        tokio::time::sleep(TICK).await;
        let now = Instant::now();
        let mut s = shared.borrow_mut();
        if drain_until.is_none()
            && (end_at.is_some_and(|t| now >= t) || s.base.cfg.stop.load(Ordering::Relaxed))
        {
            s.base.stop_sending(now);
            drain_until = Some(now + DRAIN_GRACE);
            // Streams waiting for a due request hear that none will come.
            notify.notify_waiters();
        }
        let slot = s.base.slot_of(now);
        if s.base.active > 0 {
            let from = busy_from.unwrap_or(slot);
            s.base.rec.mark_busy(from, slot);
            busy_from = Some(slot);
        } else {
            busy_from = None;
        }
        if now >= next_interval {
            let open = s.base.open;
            let report = s.base.rec.take_interval(interval_index, open);
            let _ = s.base.cfg.reports.send(report);
            interval_index += 1;
            next_interval += interval;
        }
        let finished = tasks.iter().all(|t| t.is_finished());
        let ends_later = drain_until.is_none() && end_at.is_some_and(|t| now < t);
        if finished && !ends_later {
            break;
        }
        if drain_until.is_some_and(|t| now >= t) {
            // What is still in flight is abandoned, not failed.
            s.base.rec.abandoned += s.base.active as u64;
            s.base.active = 0;
            break;
        }
    }
    for t in &tasks {
        t.abort();
    }
    let mut s = shared.borrow_mut();
    for i in 0..s.live.len() {
        if let Some(conn) = &s.live[i] {
            conn.close(0u32.into(), b"done");
        }
        s.closed(i);
    }
    let open = s.base.open;
    let report = s.base.rec.take_interval(interval_index, open);
    let _ = s.base.cfg.reports.send(report);
    let summary = std::mem::take(&mut s.summary);
    let mut rec = std::mem::take(&mut s.base.rec);
    rec.h3 = Some(summary);
    drop(s);
    endpoint.close(0u32.into(), b"done");
    Ok(rec)
}

/// Connection `index`: connect (the request that opens it waits for the handshake), run
/// its streams until sending stops or the connection breaks, then connect again.
async fn connection_loop(
    shared: Rc<RefCell<Shared>>,
    pace: Pace,
    endpoint: quinn::Endpoint,
    client: quinn::ClientConfig,
    setup: H3Setup,
    index: usize,
    addr: SocketAddr,
) {
    let (connect_timeout, timeout) = {
        let s = shared.borrow();
        (s.base.cfg.connect_timeout, s.base.cfg.timeout)
    };
    let max = shared.borrow().base.cfg.max_requests_per_conn;
    let mut failures = 0u32;
    // After a refused 0-RTT the next connection goes in 1-RTT, so a server that refuses
    // every time still gets its requests.
    let mut try_0rtt = setup.zero_rtt;
    loop {
        let Some(first) = next_request(&shared, &pace).await else {
            return;
        };
        shared.borrow_mut().base.rec.connect_attempts += 1;
        let connected = connect(&endpoint, &client, &setup, addr, connect_timeout, try_0rtt).await;
        try_0rtt = setup.zero_rtt;
        let (conn, opening) = match connected {
            Ok(pair) => pair,
            Err(kind) => {
                shared.borrow_mut().fail(kind, first.request);
                // A pause that grows with failures in a row (at most 1 s), so a server
                // that is down is not hammered with handshakes.
                failures += 1;
                let pause = Duration::from_millis(10u64 << failures.min(7));
                tokio::time::sleep(pause.min(Duration::from_secs(1))).await;
                continue;
            }
        };
        failures = 0;
        let handshake_us = micros(first.started, Instant::now());
        shared.borrow_mut().opened(index, &conn);
        let built = h3::client::builder()
            .send_grease(false)
            .build::<_, _, Bytes>(h3_quinn::Connection::new(conn.clone()))
            .await;
        let (mut driver, send) = match built {
            Ok(pair) => pair,
            Err(_) => {
                let kind = connection_kind(&conn).unwrap_or(ErrorKind::QuicHandshake);
                let mut s = shared.borrow_mut();
                s.fail(kind, first.request);
                s.closed(index);
                continue;
            }
        };
        // The connection's driver: it reads the control stream (SETTINGS, GOAWAY).
        let driver_task = tokio::task::spawn_local(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        // `--0rtt`: the handshake's verdict on the early data, counted when it comes.
        let accepted = match opening {
            Opening::ZeroRtt(accepted) => Some(accepted),
            Opening::NoTicket => {
                shared.borrow_mut().summary.zero_rtt_without_ticket += 1;
                None
            }
            Opening::OneRtt => None,
        };
        let early = accepted.map(|accepted| {
            let (tx, rx) = tokio::sync::watch::channel(None);
            let verdict_shared = Rc::clone(&shared);
            tokio::task::spawn_local(async move {
                let ok = accepted.await;
                let mut s = verdict_shared.borrow_mut();
                if ok {
                    s.summary.zero_rtt_accepted += 1;
                    s.summary.resumed_handshakes += 1;
                } else {
                    s.summary.zero_rtt_refused += 1;
                }
                let _ = tx.send(Some(ok));
            });
            rx
        });
        let ctx = Rc::new(ConnCtx {
            conn: conn.clone(),
            early,
            taken: std::cell::Cell::new(1),
            max,
        });
        let mut streams = Vec::with_capacity(setup.streams as usize);
        for stream in 0..setup.streams {
            let opening = (stream == 0).then_some((first, handshake_us));
            streams.push(tokio::task::spawn_local(stream_loop(
                Rc::clone(&shared),
                pace.clone(),
                send.clone(),
                Rc::clone(&ctx),
                Arc::clone(&setup.requests),
                opening,
                timeout,
            )));
        }
        drop(send);
        for s in streams {
            if let Ok(StreamEnd::Refused0Rtt) = s.await {
                try_0rtt = false;
            }
        }
        driver_task.abort();
        let sending = {
            let mut s = shared.borrow_mut();
            if let Some(reason) = conn.close_reason() {
                note_close(&mut s.summary, &reason);
            }
            s.closed(index);
            s.base.sending
        };
        conn.close(0u32.into(), b"done");
        if !sending {
            return;
        }
    }
}

/// Why a stream loop ended.
enum StreamEnd {
    /// Sending stopped, the connection's request limit was reached, or it broke.
    Done,
    /// The server refused the connection's 0-RTT: its requests were given back.
    Refused0Rtt,
}

/// One stream's requests, one after another, until sending stops or the connection
/// breaks. `opening`: the request that opened the connection, with its handshake time.
async fn stream_loop(
    shared: Rc<RefCell<Shared>>,
    pace: Pace,
    mut send: SendRequest,
    ctx: Rc<ConnCtx>,
    requests: Arc<Vec<H3Request>>,
    mut opening: Option<(Taken, u64)>,
    timeout: Duration,
) -> StreamEnd {
    loop {
        let (taken, handshake_us) = match opening.take() {
            Some((taken, us)) => (taken, Some(us)),
            None if !ctx.may_take() => return StreamEnd::Done,
            None => match next_request(&shared, &pace).await {
                Some(taken) => (taken, None),
                None => return StreamEnd::Done,
            },
        };
        let keep_body = shared.borrow().base.cfg.requests[taken.request]
            .body_contains
            .is_some();
        let request = &requests[taken.request];
        let outcome = tokio::time::timeout(timeout, exchange(&mut send, request, keep_body)).await;
        if matches!(outcome, Ok(Err(Failure::Stream(_)))) && ctx.refused_0rtt().await {
            // Sent in 0-RTT and refused: never processed; it goes again in 1-RTT.
            shared.borrow_mut().give_back();
            ctx.conn.close(0u32.into(), b"0-RTT refused");
            return StreamEnd::Refused0Rtt;
        }
        let mut s = shared.borrow_mut();
        match outcome {
            Err(_) => s.fail(ErrorKind::RequestTimeout, taken.request),
            Ok(Ok(answer)) => complete(&mut s, taken, handshake_us, answer),
            Ok(Err(Failure::Goaway)) => {
                s.summary.goaways += 1;
                s.give_back();
                return StreamEnd::Done;
            }
            Ok(Err(Failure::Stream(e))) => {
                let (kind, fatal) = stream_kind(&e, &ctx.conn, &mut s.summary);
                s.fail(kind, taken.request);
                if fatal {
                    return StreamEnd::Done;
                }
            }
        }
    }
}

fn complete(s: &mut Shared, taken: Taken, handshake_us: Option<u64>, a: Answer) {
    let now = Instant::now();
    s.base.active -= 1;
    let planned = &s.base.cfg.requests[taken.request];
    let c = Completion {
        request: taken.request,
        status: a.status,
        expected: expected(planned, a.status),
        check_failed: a.body.as_deref().is_some_and(|b| check_failed(planned, b)),
        extract_failed: false,
        connect_us: handshake_us,
        tls_handshake_us: None,
        first_byte_us: micros(taken.started, a.first_byte),
        total_us: micros(taken.started, now),
        service_us: taken.sent.map(|sent| micros(sent, now)),
        bytes: a.head_bytes + a.body_bytes,
        body_bytes: a.body_bytes,
        length_varies: s.base.cfg.first_lengths[taken.request].varies(a.body_bytes),
        kept_alive: true,
    };
    if s.base.rec.server_software.is_none() {
        s.base.rec.server_software = a.server;
    }
    let (slot, in_window) = (s.base.slot_of(now), s.base.in_window(now));
    s.base.rec.complete(&c, slot, in_window);
}
