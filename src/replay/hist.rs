//! Latency histograms: HdrHistogram from 1 us to 1 h at 3 significant
//! digits, one per (step, statement) and (step, transaction) per worker
//! thread, merged at the step's end (never averaged).
//!
//! Percentiles are HdrHistogram's value at the nearest rank (the smallest
//! recorded value with at least `q * n` values at or below it), within its
//! 0.1 % resolution: exact below 2048 us.

use std::time::Duration;

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// The highest latency a histogram holds (1 h, in microseconds); longer ones
/// are recorded as 1 h.
pub const MAX_US: u64 = 3_600_000_000;

/// How percentiles are computed, as the report names it.
pub const METHOD: &str =
    "HdrHistogram value at the nearest rank (3 significant digits, within 0.1 %)";

/// The latencies of one (step, statement) or (step, transaction), in microseconds.
#[derive(Clone)]
pub struct Latency(Histogram<u64>);

impl std::fmt::Debug for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Latency(n={})", self.0.len())
    }
}

impl Default for Latency {
    fn default() -> Self {
        Latency::new()
    }
}

impl Latency {
    pub fn new() -> Latency {
        Latency(Histogram::new_with_bounds(1, MAX_US, 3).expect("constant bounds are valid"))
    }

    /// Records one latency (below 1 us counts as 1 us, above 1 h as 1 h).
    pub fn record(&mut self, d: Duration) {
        self.record_us(u64::try_from(d.as_micros()).unwrap_or(MAX_US));
    }

    pub fn record_us(&mut self, us: u64) {
        self.0.saturating_record(us.clamp(1, MAX_US));
    }

    /// Adds every value of `other` (the step-end merge of the workers' histograms).
    pub fn merge(&mut self, other: &Latency) {
        self.0
            .add(&other.0)
            .expect("histograms of one shape always merge");
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The value at percentile `pct` (0..=100), in microseconds; 0 when empty.
    pub fn percentile_us(&self, pct: f64) -> u64 {
        if self.0.is_empty() {
            return 0;
        }
        // HdrHistogram's nearest rank: the count at the quantile is
        // ceil(q * n) computed without a float error that would turn the
        // 90th of 10 into rank 10 (the instrument bug the issue recalls).
        self.0.value_at_quantile(pct / 100.0)
    }

    /// The value at `pct` in milliseconds.
    pub fn percentile_ms(&self, pct: f64) -> f64 {
        self.percentile_us(pct) as f64 / 1000.0
    }

    pub fn max_ms(&self) -> f64 {
        if self.0.is_empty() {
            0.0
        } else {
            self.0.max() as f64 / 1000.0
        }
    }

    /// HdrHistogram's V2 + DEFLATE form, base64: what the JSON carries so runs
    /// of several client machines can be merged exactly.
    pub fn to_base64(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.0, &mut bytes)
            .expect("serialising to memory does not fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads [`Latency::to_base64`]'s form back.
    pub fn from_base64(text: &str) -> Result<Latency, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("not base64: {e}"))?;
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut std::io::Cursor::new(bytes))
            .map_err(|e| format!("not an HdrHistogram V2 form: {e:?}"))?;
        let mut out = Latency::new();
        out.0.add(&h).map_err(|e| format!("{e:?}"))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The instrument bug of the concurrency-ladder write-up: a nearest rank
    /// that rounds halves to even (median of 1..10 = 6) or lets 0.9 * 10
    /// become 9.000000000000002 (p90 = 10). Values a person can count.
    #[test]
    fn percentiles_of_one_to_ten_us_are_countable() {
        let mut h = Latency::new();
        for us in 1..=10 {
            h.record_us(us);
        }
        assert_eq!(h.percentile_us(50.0), 5);
        assert_eq!(h.percentile_us(90.0), 9);
        assert_eq!(h.percentile_us(100.0), 10);
        assert_eq!(h.count(), 10);
    }

    #[test]
    fn percentiles_of_one_to_ten_ms_are_within_resolution() {
        let mut h = Latency::new();
        for ms in 1..=10u64 {
            h.record(Duration::from_millis(ms));
        }
        let p50 = h.percentile_ms(50.0);
        let p90 = h.percentile_ms(90.0);
        assert!((p50 - 5.0).abs() / 5.0 <= 0.001, "p50 {p50}");
        assert!((p90 - 9.0).abs() / 9.0 <= 0.001, "p90 {p90}");
        assert!((h.max_ms() - 10.0).abs() / 10.0 <= 0.001);
    }

    #[test]
    fn merging_adds_counts_never_averages() {
        let mut a = Latency::new();
        let mut b = Latency::new();
        for _ in 0..9 {
            a.record_us(100);
        }
        b.record_us(10_000);
        a.merge(&b);
        assert_eq!(a.count(), 10);
        assert_eq!(a.percentile_us(50.0), 100);
        assert!(a.percentile_us(100.0) >= 10_000);
    }

    #[test]
    fn base64_form_round_trips_exactly() {
        let mut h = Latency::new();
        for us in [3, 70, 900, 12_345, 2_000_000] {
            h.record_us(us);
        }
        let text = h.to_base64();
        let back = Latency::from_base64(&text).unwrap();
        assert_eq!(back.count(), 5);
        for pct in [20.0, 50.0, 80.0, 100.0] {
            assert_eq!(back.percentile_us(pct), h.percentile_us(pct));
        }
        assert!(Latency::from_base64("not base64!").is_err());
    }

    #[test]
    fn empty_histogram_reads_zero() {
        let h = Latency::new();
        assert_eq!(h.percentile_us(95.0), 0);
        assert_eq!(h.max_ms(), 0.0);
    }
}
