//! Whether the upstream answers: a probe every [`PROBE_INTERVAL`] (every
//! [`IDLE_PROBE_INTERVAL`] while idle and healthy), judged with hysteresis
//! ([`paddock_core::observe::health::Hysteresis`]), feeding `/readyz`; and the signal that ends open
//! watches when the upstream is lost.
//!
//! Thresholds (docs/operations.md "Upstream faults"): a probe is `GET /readyz` upstream with
//! paddock's own credential, bounded by [`PROBE_TIMEOUT`]; [`FALL`] failed probes in a row
//! (3-6 s while tenants use the replica; up to 10 s more when it was idle: the first
//! failure brings back the 1 s pace) make the replica unready, [`RISE`] good ones in a row (about 2 s) ready again. One
//! slow call, or one failed probe, changes nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use paddock_core::observe::health::Hysteresis;
use tokio_util::sync::CancellationToken;

/// Time between two probes while tenants use the replica or the upstream is in doubt.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// Time between two probes while the replica is idle and the upstream settled healthy
/// (`paddock_core::observe::health::probe_due`).
pub const IDLE_PROBE_INTERVAL: Duration = Duration::from_secs(10);
/// Longest a probe may take before it counts as failed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Failed probes in a row that make the upstream count as lost.
pub const FALL: u32 = 3;
/// Good probes in a row that make it count as answering again.
pub const RISE: u32 = 2;

/// The upstream's health as this replica sees it.
pub struct UpstreamHealth {
    judge: parking_lot::Mutex<Hysteresis>,
    healthy: AtomicBool,
    /// Cancelled when the upstream is lost; replaced by a fresh token each time. A watch takes
    /// the current one when it starts.
    lost: ArcSwap<CancellationToken>,
}

impl Default for UpstreamHealth {
    fn default() -> Self {
        Self::new()
    }
}

impl UpstreamHealth {
    /// Unknown until the first probe (counted as not answering).
    pub fn new() -> Self {
        UpstreamHealth {
            judge: parking_lot::Mutex::new(Hysteresis::new(FALL, RISE)),
            healthy: AtomicBool::new(false),
            lost: ArcSwap::from_pointee(CancellationToken::new()),
        }
    }

    /// Healthy with no failure in doubt (the prober may slow down when idle).
    pub fn is_settled(&self) -> bool {
        self.judge.lock().settled()
    }

    /// Whether the upstream currently counts as answering.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    /// A token cancelled the next time the upstream is lost.
    pub fn lost_token(&self) -> CancellationToken {
        (**self.lost.load()).clone()
    }

    /// Records one probe outcome.
    pub fn record(&self, ok: bool) {
        let change = self.judge.lock().record(ok);
        match change {
            Some(true) => {
                self.healthy.store(true, Ordering::Release);
                tracing::info!("upstream answers again: ready");
            }
            Some(false) => {
                self.healthy.store(false, Ordering::Release);
                let old = self.lost.swap(Arc::new(CancellationToken::new()));
                old.cancel();
                tracing::warn!(
                    failed_probes = FALL,
                    "upstream stopped answering: not ready; open watches end with an ERROR event"
                );
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losing_the_upstream_cancels_the_watch_token_once() {
        let h = UpstreamHealth::new();
        h.record(true);
        assert!(h.is_healthy());
        let t = h.lost_token();
        h.record(false);
        h.record(false);
        assert!(!t.is_cancelled(), "two failures are not enough");
        h.record(false);
        assert!(t.is_cancelled());
        assert!(!h.is_healthy());
        let t2 = h.lost_token();
        assert!(
            !t2.is_cancelled(),
            "watches started later get a fresh token"
        );
        h.record(true);
        h.record(true);
        assert!(h.is_healthy());
    }
}
