//! Value types of paddock's metrics, kept apart from the metrics themselves (`metrics.rs`,
//! `metering.rs`, `fair_queue.rs` all use them): a label that does not allocate, a gauge set
//! without a locked instruction; and the one way a metric is made and registered.

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Metric, Registry};

/// Registers `metric` as `name` and hands it back: a metric is a shared handle, so the
/// registry encodes a clone and the caller keeps the one it updates.
pub fn registered<M: Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}

/// [`registered`] for a metric made by `Default` (a counter, a gauge, a family of them).
pub fn new_metric<M: Metric + Clone + Default>(
    registry: &mut Registry,
    name: &str,
    help: &str,
) -> M {
    registered(registry, name, help, M::default())
}

/// A label value such as a tenant id: kept inline up to 24 bytes (`compact_str`), so the
/// per-request look-up of a tenant's counters allocates nothing.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct LabelText(compact_str::CompactString);

impl From<&str> for LabelText {
    fn from(s: &str) -> Self {
        LabelText(s.into())
    }
}

impl prometheus_client::encoding::EncodeLabelValue for LabelText {
    fn encode(
        &self,
        encoder: &mut prometheus_client::encoding::LabelValueEncoder,
    ) -> Result<(), std::fmt::Error> {
        prometheus_client::encoding::EncodeLabelValue::encode(&self.0.as_str(), encoder)
    }
}

/// A gauge written by one writer at a time (under the lock of what it measures): set with a
/// plain store. prometheus-client's own gauge sets with an atomic swap, a locked instruction
/// on a line every worker thread writes, which the fair queue paid twice per request.
pub type StoredGauge = Gauge<i64, StoredI64>;

/// The value of a [`StoredGauge`].
#[derive(Debug, Default)]
pub struct StoredI64(std::sync::atomic::AtomicI64);

impl prometheus_client::metrics::gauge::Atomic<i64> for StoredI64 {
    fn inc(&self) -> i64 {
        self.inc_by(1)
    }
    fn inc_by(&self, v: i64) -> i64 {
        self.0.fetch_add(v, std::sync::atomic::Ordering::Relaxed)
    }
    fn dec(&self) -> i64 {
        self.dec_by(1)
    }
    fn dec_by(&self, v: i64) -> i64 {
        self.0.fetch_sub(v, std::sync::atomic::Ordering::Relaxed)
    }
    fn set(&self, v: i64) -> i64 {
        let old = self.0.load(std::sync::atomic::Ordering::Relaxed);
        self.0.store(v, std::sync::atomic::Ordering::Relaxed);
        old
    }
    fn get(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod stored_gauge_tests {
    use super::*;

    #[test]
    fn a_stored_gauge_sets_counts_and_encodes() {
        let g = StoredGauge::default();
        assert_eq!(g.set(7), 0);
        assert_eq!(g.inc(), 7);
        assert_eq!(g.dec_by(3), 8);
        assert_eq!(g.get(), 5);
        let mut registry = Registry::default();
        registry.register("seats", "seats", g.clone());
        let mut text = String::new();
        let encoded = prometheus_client::encoding::text::encode(&mut text, &registry);
        assert!(encoded.is_ok());
        assert!(text.contains("seats 5"), "{text}");
    }
}
