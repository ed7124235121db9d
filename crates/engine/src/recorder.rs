//! Per-worker recording: histograms and counters owned by one thread, never shared on the hot
//! path. A worker hands the coordinator a small `IntervalReport` once per interval and its
//! whole `Recorder` at the end; the coordinator merges them.
//!
//! The summary (counts, histograms) takes only what finished inside the measurement window
//! (after `--warmup`, before `--cooldown`); the interval reports and the stall slots take
//! everything, so the time series shows the warm-up too.

use crate::transport::HandshakeInfo;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use webtune_model::result::Histograms;
use webtune_model::{
    ErrorCounts, ErrorKind, JourneyResult, LatencyHistogram, NamedResult, TlsSummary,
};

/// The slot of the time series' busy time and of stall detection: the model's least stall
/// (`webtune_model::stall`), so a stall is found in steps of it.
pub const SLOT_MS: u64 = webtune_model::stall::STALL_MS;

/// Body length of the first complete response to one request (shared by all workers; written
/// once, then only read, so it costs no contention).
#[derive(Debug)]
pub struct FirstLength(AtomicU64);

impl Default for FirstLength {
    fn default() -> Self {
        FirstLength(AtomicU64::new(u64::MAX))
    }
}

impl FirstLength {
    /// Returns true when `len` differs from the first length seen (setting it if unset).
    #[inline]
    pub fn varies(&self, len: u64) -> bool {
        let first = self.0.load(Ordering::Relaxed);
        if first == u64::MAX {
            match self
                .0
                .compare_exchange(u64::MAX, len, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => false,
                Err(actual) => actual != len,
            }
        } else {
            first != len
        }
    }

    pub fn get(&self) -> Option<u64> {
        match self.0.load(Ordering::Relaxed) {
            u64::MAX => None,
            n => Some(n),
        }
    }
}

/// Connections open right now and the most ever open at once, all workers together. Touched
/// only when a socket opens or closes (next to a connect and a close syscall, so it adds
/// nothing that matters), never per request on a kept-alive connection.
#[derive(Debug, Default)]
pub struct OpenGauge {
    open: AtomicU64,
    peak: AtomicU64,
}

impl OpenGauge {
    pub fn opened(&self) {
        let now = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        if now > self.peak.load(Ordering::Relaxed) {
            self.peak.fetch_max(now, Ordering::Relaxed);
        }
    }

    pub fn closed(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Connections open now, all workers together.
    pub fn open(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }

    /// The most connections open at the same moment so far.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

/// One complete response, as the worker saw it.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    /// Index of the request (scenario name) it answered.
    pub request: usize,
    pub status: u16,
    pub expected: bool,
    /// The scenario's body check failed.
    pub check_failed: bool,
    /// A journey step's extraction found nothing.
    pub extract_failed: bool,
    pub connect_us: Option<u64>,
    /// TLS handshake time, for requests that opened their connection over TLS.
    pub tls_handshake_us: Option<u64>,
    pub first_byte_us: u64,
    /// From the request's start (intended start in open loop).
    pub total_us: u64,
    /// Open loop: from the actual send.
    pub service_us: Option<u64>,
    pub bytes: u64,
    pub body_bytes: u64,
    pub length_varies: bool,
    /// The server left the connection open for another request (ab's "Keep-Alive").
    pub kept_alive: bool,
}

/// Per 100 ms of the run: how many requests finished, and whether any was outstanding.
#[derive(Debug, Clone, Copy, Default)]
pub struct Slot {
    pub finished: u32,
    pub busy: bool,
}

/// Everything one worker measured.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    /// Connect, first byte, total, service and (HTTPS) handshake times: the result's own
    /// `Histograms`, so one merge serves workers and results.
    pub histograms: Histograms,
    /// HTTPS: handshakes full and resumed, and what the first one agreed.
    pub tls: Option<TlsSummary>,
    /// HTTP/2 runs: GOAWAYs, resets, client-side queueing.
    pub h2: Option<webtune_model::H2Summary>,
    /// HTTP/3 runs: UDP, QUIC's packets and losses, resets and closes by code.
    pub h3: Option<webtune_model::H3Summary>,
    /// SMTP runs: per-phase latencies, replies by code, messages accepted and refused.
    pub smtp: Option<webtune_model::SmtpSummary>,
    /// Open loop: how late each request was sent after its intended start.
    pub lag: LatencyHistogram,
    /// Open loop: the part of `lag` spent with every connection busy (server time).
    pub connection_wait: LatencyHistogram,
    /// Open loop: the rest of `lag`, a connection free but the generator late.
    pub generator_lag: LatencyHistogram,
    pub not_sent: u64,
    /// Requests sent inside the window (open loop's achieved rate).
    pub sent: u64,
    pub responses: u64,
    pub ok: u64,
    pub errors: ErrorCounts,
    pub length_varies: u64,
    pub status: BTreeMap<u16, u64>,
    pub bytes_received: u64,
    pub body_bytes: u64,
    pub bytes_sent: u64,
    /// Connects that succeeded.
    pub connections_opened: u64,
    pub keepalive_responses: u64,
    /// Connects started, failed ones included.
    pub connect_attempts: u64,
    pub stale_reconnects: u64,
    /// Requests still in flight when the run ended (not errors: the run stopped waiting).
    pub abandoned: u64,
    /// The `Server` header of the first response this worker saw.
    pub server_software: Option<String>,
    /// Per request name, for scenarios (empty otherwise).
    pub names: Vec<NamedResult>,
    /// Per journey, for scenarios with journeys (empty otherwise).
    pub journeys: Vec<JourneyResult>,
    pub slots: Vec<Slot>,
    /// Slots before this one are already marked busy (marking is then O(1) per call).
    busy_through: usize,
    interval: IntervalReport,
}

/// What changed in one interval (sent to the coordinator, then cleared).
#[derive(Debug, Clone, Default)]
pub struct IntervalReport {
    pub index: u64,
    pub responses: u64,
    pub errors: ErrorCounts,
    pub bytes: u64,
    pub open_connections: u64,
    pub latency: LatencyHistogram,
    /// Connections that opened (the connect succeeded).
    pub connections: u64,
    /// SMTP: message bytes sent after DATA.
    pub message_bytes: u64,
}

impl Recorder {
    /// A recorder that also keeps one `NamedResult` per scenario request.
    pub fn with_names(names: usize) -> Recorder {
        Recorder {
            names: vec![NamedResult::default(); names],
            ..Recorder::default()
        }
    }

    fn slot(&mut self, index: usize) -> &mut Slot {
        if index >= self.slots.len() {
            self.slots.resize(index + 1, Slot::default());
        }
        &mut self.slots[index]
    }

    /// Requests were outstanding from slot `from` through slot `to`.
    pub fn mark_busy(&mut self, from: usize, to: usize) {
        let from = from.max(self.busy_through);
        if from > to {
            return;
        }
        for i in from..=to {
            self.slot(i).busy = true;
        }
        self.busy_through = to + 1;
    }

    #[inline]
    pub fn complete(&mut self, c: &Completion, slot: usize, in_window: bool) {
        self.slot(slot).finished += 1;
        let kind = if !c.expected {
            Some(ErrorKind::UnexpectedStatus)
        } else if c.check_failed {
            Some(ErrorKind::BodyCheck)
        } else if c.extract_failed {
            Some(ErrorKind::Extract)
        } else {
            None
        };
        self.interval.responses += 1;
        self.interval.bytes += c.bytes;
        self.interval.latency.record(c.total_us);
        if let Some(k) = kind {
            self.interval.errors.add(k);
        }
        if !in_window {
            return;
        }
        self.responses += 1;
        if c.kept_alive {
            self.keepalive_responses += 1;
        }
        let h = &mut self.histograms;
        if let Some(us) = c.connect_us {
            h.connect.record(us);
        }
        if let Some(us) = c.tls_handshake_us {
            h.tls_handshake.record(us);
        }
        h.first_byte.record(c.first_byte_us);
        h.total.record(c.total_us);
        if let Some(us) = c.service_us {
            h.service.record(us);
        }
        *self.status.entry(c.status).or_insert(0) += 1;
        match kind {
            Some(k) => self.errors.add(k),
            None => self.ok += 1,
        }
        if c.length_varies {
            self.length_varies += 1;
        }
        self.bytes_received += c.bytes;
        self.body_bytes += c.body_bytes;
        if let Some(n) = self.names.get_mut(c.request) {
            n.responses += 1;
            *n.status.entry(c.status).or_insert(0) += 1;
            match kind {
                Some(k) => n.errors.add(k),
                None => n.ok += 1,
            }
            if c.length_varies {
                n.length_varies += 1;
            }
            n.body_bytes += c.body_bytes;
            n.histogram.record(c.total_us);
        }
    }

    #[inline]
    pub fn error(
        &mut self,
        kind: ErrorKind,
        request: usize,
        bytes: u64,
        slot: usize,
        in_window: bool,
    ) {
        self.slot(slot).finished += 1;
        self.interval.errors.add(kind);
        self.interval.bytes += bytes;
        if !in_window {
            return;
        }
        self.errors.add(kind);
        self.bytes_received += bytes;
        if let Some(n) = self.names.get_mut(request) {
            n.errors.add(kind);
        }
    }

    /// A journey's walk completed in `us` microseconds (counted when it ends in the window).
    pub fn journey_done(&mut self, journey: usize, us: u64, in_window: bool) {
        if let (true, Some(j)) = (in_window, self.journeys.get_mut(journey)) {
            j.completed += 1;
            j.histogram.record(us);
        }
    }

    /// A journey's walk ended with `kind` in step `step`.
    pub fn journey_failed(&mut self, journey: usize, step: &str, kind: ErrorKind, in_window: bool) {
        if let (true, Some(j)) = (in_window, self.journeys.get_mut(journey)) {
            j.failed_at(step, kind);
        }
    }

    /// A TLS handshake finished (counted whenever it happens, like `connections_opened`).
    pub fn handshake_done(&mut self, info: &HandshakeInfo) {
        let tls = self.tls.get_or_insert_with(|| TlsSummary {
            version: info.version.clone(),
            cipher: info.cipher.clone(),
            alpn: info.alpn.clone(),
            ..TlsSummary::default()
        });
        if info.resumed {
            tls.resumed_handshakes += 1;
        } else {
            tls.full_handshakes += 1;
        }
    }

    /// A connect succeeded (counted whenever it happens, and in the interval's report).
    pub fn connection_opened(&mut self) {
        self.connections_opened += 1;
        self.interval.connections += 1;
    }

    /// SMTP: a message of `bytes` went after DATA (for the interval's report).
    pub fn message_sent(&mut self, bytes: u64) {
        self.interval.message_bytes += bytes;
    }

    /// Close the current interval and return its report.
    pub fn take_interval(&mut self, index: u64, open_connections: u64) -> IntervalReport {
        let mut report = std::mem::take(&mut self.interval);
        report.index = index;
        report.open_connections = open_connections;
        report
    }

    pub fn merge(&mut self, other: &Recorder) {
        self.histograms.merge(&other.histograms);
        match (&mut self.h3, &other.h3) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.h3 = Some(theirs.clone()),
            _ => {}
        }
        match (&mut self.h2, &other.h2) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.h2 = Some(theirs.clone()),
            _ => {}
        }
        match (&mut self.smtp, &other.smtp) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.smtp = Some(theirs.clone()),
            _ => {}
        }
        match (&mut self.tls, &other.tls) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, Some(theirs)) => self.tls = Some(theirs.clone()),
            _ => {}
        }
        self.lag.merge(&other.lag);
        self.connection_wait.merge(&other.connection_wait);
        self.generator_lag.merge(&other.generator_lag);
        self.not_sent += other.not_sent;
        self.sent += other.sent;
        self.responses += other.responses;
        self.ok += other.ok;
        self.errors.merge(&other.errors);
        self.length_varies += other.length_varies;
        for (k, v) in &other.status {
            *self.status.entry(*k).or_insert(0) += v;
        }
        self.bytes_received += other.bytes_received;
        self.body_bytes += other.body_bytes;
        self.bytes_sent += other.bytes_sent;
        self.connections_opened += other.connections_opened;
        self.keepalive_responses += other.keepalive_responses;
        self.connect_attempts += other.connect_attempts;
        self.stale_reconnects += other.stale_reconnects;
        self.abandoned += other.abandoned;
        if self.server_software.is_none() {
            self.server_software.clone_from(&other.server_software);
        }
        if self.names.len() < other.names.len() {
            self.names.resize(other.names.len(), NamedResult::default());
        }
        for (mine, theirs) in self.names.iter_mut().zip(&other.names) {
            mine.merge(theirs);
        }
        if self.journeys.len() < other.journeys.len() {
            self.journeys
                .resize(other.journeys.len(), JourneyResult::default());
        }
        for (mine, theirs) in self.journeys.iter_mut().zip(&other.journeys) {
            mine.merge(theirs);
        }
        if self.slots.len() < other.slots.len() {
            self.slots.resize(other.slots.len(), Slot::default());
        }
        for (mine, theirs) in self.slots.iter_mut().zip(&other.slots) {
            mine.finished += theirs.finished;
            mine.busy |= theirs.busy;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_length_is_set_once() {
        let f = FirstLength::default();
        assert_eq!(f.get(), None);
        assert!(!f.varies(10));
        assert!(!f.varies(10));
        assert!(f.varies(11));
        assert_eq!(f.get(), Some(10));
    }

    #[test]
    fn open_gauge_keeps_the_peak_of_simultaneous_connections() {
        let g = OpenGauge::default();
        g.opened();
        g.closed();
        g.opened();
        g.opened();
        g.closed();
        g.opened();
        assert_eq!(g.peak(), 2);
    }

    #[test]
    fn outside_the_window_only_the_time_series_counts() {
        let mut r = Recorder::default();
        let c = Completion {
            request: 0,
            status: 200,
            expected: true,
            check_failed: false,
            extract_failed: false,
            connect_us: None,
            tls_handshake_us: None,
            first_byte_us: 5,
            total_us: 10,
            service_us: None,
            bytes: 100,
            body_bytes: 50,
            length_varies: false,
            kept_alive: true,
        };
        r.complete(&c, 0, false);
        assert_eq!(r.responses, 0);
        assert_eq!(r.slots[0].finished, 1);
        r.complete(&c, 1, true);
        assert_eq!(r.responses, 1);
        assert_eq!(r.keepalive_responses, 1);
        let report = r.take_interval(0, 0);
        assert_eq!(report.responses, 2);
    }
}
