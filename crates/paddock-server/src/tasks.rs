//! Background tasks of one replica that read and write its shared state.

use std::sync::Arc;

use crate::health::{PROBE_INTERVAL, PROBE_TIMEOUT};
use crate::state::AppState;

/// Probes the upstream until shutdown.
pub async fn probe_loop(state: Arc<AppState>) {
    let mut tick = tokio::time::interval(PROBE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = state.shutdown.cancelled() => return,
        }
        let ok = state.upstream.probe(PROBE_TIMEOUT).await;
        state.health.record(ok);
        state
            .metrics
            .upstream_up
            .set(i64::from(state.health.is_healthy()));
    }
}
