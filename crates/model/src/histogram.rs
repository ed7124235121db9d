//! Latency histograms: HdrHistogram with microsecond values and 3 significant digits,
//! serialised in HdrHistogram's own compressed V2 form (base64, the same text the
//! HdrHistogram log format uses) so results from several processes merge exactly.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest value recorded: one hour in microseconds. Larger values are clamped to it.
pub const MAX_MICROS: u64 = 3_600_000_000;
/// Significant decimal digits kept by every histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A histogram of durations in microseconds.
#[derive(Debug, Clone)]
pub struct LatencyHistogram(Histogram<u64>);

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for LatencyHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        let mut h = Histogram::new_with_bounds(1, MAX_MICROS, SIGNIFICANT_DIGITS)
            .expect("static histogram bounds are valid");
        h.auto(true);
        LatencyHistogram(h)
    }

    /// Record one duration in microseconds (0 is recorded as 0; above an hour is clamped).
    #[inline]
    pub fn record(&mut self, micros: u64) {
        self.0.saturating_record(micros.min(MAX_MICROS));
    }

    /// Add every value of another histogram (exact: bucket counts are summed).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Both sides auto-resize, so adding cannot fail for range reasons.
        let _ = self.0.add(&other.0);
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn reset(&mut self) {
        self.0.reset();
    }

    /// Value at a percentile (0..=100) in microseconds; 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.value_at_percentile(p)
        }
    }

    pub fn min(&self) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.min()
        }
    }

    pub fn max(&self) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.max()
        }
    }

    pub fn mean(&self) -> f64 {
        if self.0.is_empty() {
            0.0
        } else {
            self.0.mean()
        }
    }

    pub fn stdev(&self) -> f64 {
        if self.0.is_empty() {
            0.0
        } else {
            self.0.stdev()
        }
    }

    /// The standard summary (p50 … p99.9, max, mean) of this histogram.
    pub fn percentiles(&self) -> Percentiles {
        Percentiles {
            count: self.count(),
            min_us: self.min(),
            mean_us: self.mean(),
            stdev_us: self.stdev(),
            p50_us: self.percentile(50.0),
            p75_us: self.percentile(75.0),
            p90_us: self.percentile(90.0),
            p95_us: self.percentile(95.0),
            p99_us: self.percentile(99.0),
            p999_us: self.percentile(99.9),
            max_us: self.max(),
        }
    }

    /// Iterate (value_us, count) over recorded values, one entry per distinct bucket.
    pub fn iter_recorded(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.0
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
    }

    /// The underlying hdrhistogram, for callers that need more than the summary.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.0
    }

    /// HdrHistogram V2 compressed encoding, base64 ("HISTF…").
    pub fn to_base64(&self) -> String {
        let mut buf = Vec::new();
        // Serialising into a Vec cannot fail for I/O reasons.
        let _ = V2DeflateSerializer::new().serialize(&self.0, &mut buf);
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    pub fn from_base64(text: &str) -> Result<Self, HistogramDecodeError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| HistogramDecodeError(format!("not base64: {e}")))?;
        let mut h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| HistogramDecodeError(format!("not an HdrHistogram: {e:?}")))?;
        // HdrHistogram saturates a count that passes u64::MAX, and its percentiles then
        // read wrong (0 for p50..p99.9): such a histogram is no measurement.
        h.iter_all()
            .try_fold(0u64, |sum, v| sum.checked_add(v.count_at_value()))
            .ok_or_else(|| {
                HistogramDecodeError("its counts add up past 2^64 - 1 (saturated)".into())
            })?;
        h.auto(true);
        Ok(LatencyHistogram(h))
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot decode histogram: {0}")]
pub struct HistogramDecodeError(String);

impl Serialize for LatencyHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_base64())
    }
}

impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        LatencyHistogram::from_base64(&text).map_err(serde::de::Error::custom)
    }
}

/// A histogram's summary in microseconds: what reports print and JSON readers use without
/// decoding the histogram.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub min_us: u64,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub p50_us: u64,
    pub p75_us: u64,
    pub p90_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_exactly_and_merges() {
        let mut a = LatencyHistogram::new();
        for v in [1, 50, 120, 5_000, 1_000_000] {
            a.record(v);
        }
        let text = a.to_base64();
        assert!(text.starts_with("HISTF"), "{text}");
        let b = LatencyHistogram::from_base64(&text).unwrap();
        assert_eq!(a, b);
        let mut m = a.clone();
        m.merge(&b);
        assert_eq!(m.count(), 10);
        assert_eq!(m.max(), a.max());
    }

    #[test]
    fn rejects_garbage() {
        assert!(LatencyHistogram::from_base64("not a histogram").is_err());
    }

    #[test]
    fn empty_histogram_summarises_to_zero() {
        let p = LatencyHistogram::new().percentiles();
        assert_eq!(p.count, 0);
        assert_eq!(p.p99_us, 0);
    }
}
