//! Per-worker recording: histograms and counters owned by one thread, never shared on the hot
//! path. A worker hands the coordinator a small `IntervalReport` once per interval and its
//! whole `Recorder` at the end; the coordinator merges them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use webtune_model::{ErrorCounts, ErrorKind, LatencyHistogram};

/// Body length of the first complete response of the run (shared by all workers; written
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

/// One complete response, as the worker saw it.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    pub status: u16,
    pub expected: bool,
    pub connect_us: Option<u64>,
    pub first_byte_us: u64,
    pub total_us: u64,
    pub bytes: u64,
    pub body_bytes: u64,
    pub length_varies: bool,
}

/// Everything one worker measured.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    pub connect: LatencyHistogram,
    pub first_byte: LatencyHistogram,
    pub total: LatencyHistogram,
    pub responses: u64,
    pub ok: u64,
    pub errors: ErrorCounts,
    pub length_varies: u64,
    pub status: BTreeMap<u16, u64>,
    pub bytes_received: u64,
    pub body_bytes: u64,
    pub bytes_sent: u64,
    pub connections_opened: u64,
    pub stale_reconnects: u64,
    /// Requests still in flight when the run ended (not errors: the run stopped waiting).
    pub abandoned: u64,
    /// The `Server` header of the first response this worker saw.
    pub server_software: Option<String>,
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
}

impl Recorder {
    #[inline]
    pub fn complete(&mut self, c: &Completion) {
        self.responses += 1;
        if let Some(us) = c.connect_us {
            self.connect.record(us);
        }
        self.first_byte.record(c.first_byte_us);
        self.total.record(c.total_us);
        *self.status.entry(c.status).or_insert(0) += 1;
        if c.expected {
            self.ok += 1;
        } else {
            self.errors.add(ErrorKind::UnexpectedStatus);
            self.interval.errors.add(ErrorKind::UnexpectedStatus);
        }
        if c.length_varies {
            self.length_varies += 1;
        }
        self.bytes_received += c.bytes;
        self.body_bytes += c.body_bytes;
        self.interval.responses += 1;
        self.interval.bytes += c.bytes;
        self.interval.latency.record(c.total_us);
    }

    #[inline]
    pub fn error(&mut self, kind: ErrorKind, bytes: u64) {
        self.errors.add(kind);
        self.bytes_received += bytes;
        self.interval.errors.add(kind);
        self.interval.bytes += bytes;
    }

    /// Close the current interval and return its report.
    pub fn take_interval(&mut self, index: u64, open_connections: u64) -> IntervalReport {
        let mut report = std::mem::take(&mut self.interval);
        report.index = index;
        report.open_connections = open_connections;
        report
    }

    pub fn merge(&mut self, other: &Recorder) {
        self.connect.merge(&other.connect);
        self.first_byte.merge(&other.first_byte);
        self.total.merge(&other.total);
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
        self.stale_reconnects += other.stale_reconnects;
        self.abandoned += other.abandoned;
        if self.server_software.is_none() {
            self.server_software.clone_from(&other.server_software);
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
}
