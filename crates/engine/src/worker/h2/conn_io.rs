//! The HTTP/2 worker's I/O on one connection: open it (TCP, then TLS with ALPN `h2`, or h2c
//! straight away), write its frames out of the one buffer its streams share, read frames
//! in and act on what they say (a stream done, reset, refused by a GOAWAY), and fail
//! streams past their deadline or all of a connection's streams when it is lost. Which job
//! takes which stream is the worker's pacing (`worker::h2`).

use super::super::base::{check_failed, expected, failure_kind, micros, write_out};
use super::{Phase, Slot, Worker};
use crate::h2::conn::Event;
use crate::h2::frame::NO_ERROR;
use crate::pacer;
use crate::recorder::Completion;
use crate::tls;
use std::io;
use std::time::Instant;
use webtune_model::ErrorKind;

impl Worker {
    /// Open connection `i`; false if the connect failed at once.
    pub(super) fn open_connection(&mut self, i: usize, now: Instant) -> bool {
        let c = &mut self.conns[i];
        let Ok(stream) = self.base.open_socket(i, c.addr, &mut c.generation) else {
            return false;
        };
        c.stream = Some(stream);
        let old = std::mem::take(&mut c.proto);
        self.summary.flow_control_waits += old.flow_waits;
        c.refused = false;
        c.written = 0;
        c.phase = Phase::Connecting;
        c.opened_at = now;
        c.deadline = now + self.base.cfg.connect_timeout;
        c.opener = None;
        true
    }

    pub(super) fn socket_event(&mut self, i: usize, event: super::super::poller::Readiness) {
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
        let Some(stream) = c.stream.as_ref() else {
            return;
        };
        if let Err(kind) = self.base.finish_connect(stream, &mut c.backoff) {
            return self.conn_failed(i, kind, now);
        }
        let connect_us = micros(c.opened_at, now);
        if let Some(t) = c.opener {
            c.slots[t].connect_us = Some(connect_us);
        }
        c.opened_at = now;
        c.phase = Phase::Handshaking;
        c.deadline = now + self.base.cfg.connect_timeout;
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
                    self.base.rec.handshake_done(&info);
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
            // nginx (1.21.4 on) refuses an ALPN offer of only h2 with a fatal
            // no_application_protocol alert: the server does not offer h2, as when it
            // picks http/1.1 above; `tls_alert` would hide that.
            Err(e) if tls::alpn_refused(&e) => self.conn_failed(i, ErrorKind::H2NotNegotiated, now),
            Err(e) => self.conn_failed(i, failure_kind(&e), now),
        }
    }

    /// Write what the connection has to send, as far as the socket takes it.
    pub(super) fn flush_out(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        match write_out(stream, &c.proto.out, &mut c.written) {
            None => {}
            Some(Ok(())) => {
                self.base.rec.bytes_sent += c.proto.out.len() as u64;
                c.proto.out.clear();
                c.written = 0;
            }
            Some(Err(e)) => self.conn_failed(i, failure_kind(&e), Instant::now()),
        }
    }

    fn read_some(&mut self, i: usize, now: Instant) {
        loop {
            let c = &mut self.conns[i];
            let Some(stream) = c.stream.as_mut() else {
                return;
            };
            let buf = &mut self.base.buf;
            match stream.read(buf) {
                Ok(0) => return self.on_eof(i, now),
                Ok(n) => {
                    let drained = stream.short_read_drains() && n < buf.len();
                    self.events.clear();
                    let fed = c.proto.feed(&buf[..n], &mut self.events);
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
                Err(e) => return self.conn_failed(i, failure_kind(&e), now),
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
            Event::Refused(t) if self.conns[i].refused => {
                // The server processed none of this connection's streams: refused.
                self.slot_failed(i, t, ErrorKind::H2Goaway, now);
            }
            Event::Refused(t) => {
                self.summary.goaway_retries += 1;
                self.send_again(i, t, false);
            }
            // The server's stream limit held it back: it waits for a stream.
            Event::Unstarted(t) => self.send_again(i, t, true),
            Event::GoAway { code, last } => {
                self.summary.goaways += 1;
                if last == 0 {
                    // Nothing of this connection's was processed: it was turned away, and
                    // rests before the next try like a refused connect.
                    self.conns[i].refused = true;
                    self.rest(i, now);
                }
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

    /// Stream `t` of connection `i` was not processed (its tag already free): its request
    /// waits for another stream, its clock running (abandoned if sending has stopped);
    /// `queued`: counted as waiting for a stream now.
    fn send_again(&mut self, i: usize, t: usize, queued: bool) {
        let slot = self.free_slot(i, t);
        if !slot.active {
            return;
        }
        if self.base.sending {
            self.summary.queued_for_stream += u64::from(queued);
            self.jobs.push_front(super::Job {
                request: slot.request,
                started: Some(slot.started),
                intended: slot.intended,
                deadline: slot.deadline,
                queued,
            });
        } else {
            self.base.rec.abandoned += 1;
        }
    }

    /// Free slot `t` of connection `i` (its stream already released) and return it.
    pub(super) fn free_slot(&mut self, i: usize, t: usize) -> Slot {
        let c = &mut self.conns[i];
        let slot = c.slots[t];
        if slot.active {
            c.slots[t].active = false;
            c.free.push(t);
            self.base.active -= 1;
        }
        slot
    }

    fn complete(&mut self, i: usize, t: usize, now: Instant) {
        let (slot_index, in_window) = (self.base.slot_of(now), self.base.in_window(now));
        let slot = self.free_slot(i, t);
        if !slot.active {
            return;
        }
        let b = &mut self.base;
        let c = &mut self.conns[i];
        let planned = &b.cfg.requests[slot.request];
        let body = if planned.body_contains.is_some() {
            c.proto.take_body(t)
        } else {
            Vec::new()
        };
        let s = c.proto.stream(t);
        let status = s.status.unwrap_or(0);
        let completion = Completion {
            request: slot.request,
            status,
            expected: expected(planned, status),
            check_failed: check_failed(planned, &body),
            extract_failed: false,
            connect_us: slot.connect_us,
            tls_handshake_us: slot.handshake_us,
            first_byte_us: micros(slot.started, slot.first_byte.unwrap_or(now)),
            total_us: micros(pacer::latency_origin(slot.intended, slot.started), now),
            service_us: slot.intended.map(|_| micros(slot.started, now)),
            bytes: s.bytes,
            body_bytes: s.body_bytes,
            length_varies: b.cfg.first_lengths[slot.request].varies(s.body_bytes),
            kept_alive: true,
        };
        if let Some(server) = s.server.clone() {
            b.rec.server_software.get_or_insert(server);
        }
        c.proto.release(t);
        c.refusals.reset();
        b.rec.complete(&completion, slot_index, in_window);
        self.user_done(now, None);
    }

    /// Stream `t` of connection `i` failed as `kind`; after a failed connect (or a refusal
    /// by GOAWAY) its user waits until the connection may be tried again.
    fn slot_failed(&mut self, i: usize, t: usize, kind: ErrorKind, now: Instant) {
        let slot = self.free_slot(i, t);
        if slot.active {
            let c = &self.conns[i];
            let received = c.proto.received(t);
            self.base.record_error(kind, slot.request, received, now);
            let rests = kind.is_connect() || (kind == ErrorKind::H2Goaway && c.refused);
            let backoff_until = rests.then_some(c.rest_until);
            self.user_done(now, backoff_until);
        }
    }

    fn on_eof(&mut self, i: usize, now: Instant) {
        let c = &self.conns[i];
        if c.busy() == 0 {
            return self.close(i); // an idle connection the server closed
        }
        self.conn_failed(i, ErrorKind::ClosedEarly, now);
    }

    /// The connection is lost: every stream on it fails with `kind` (a failed connect rests
    /// the connection first).
    fn conn_failed(&mut self, i: usize, kind: ErrorKind, now: Instant) {
        if kind.is_connect() {
            self.rest(i, now);
        }
        for t in 0..self.conns[i].slots.len() {
            if self.conns[i].slots[t].active {
                self.conns[i].proto.release(t);
                self.slot_failed(i, t, kind, now);
            }
        }
        self.close(i);
    }

    pub(super) fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        self.base.close_socket(&mut c.stream);
        c.phase = Phase::Closed;
        self.summary.flow_control_waits += std::mem::take(&mut c.proto.flow_waits);
    }

    /// Fail what is past its deadline: a connect or handshake, or a stream's answer.
    pub(super) fn expire(&mut self, now: Instant) {
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
}
