//! Background tasks of one replica that read and write its shared state.

pub mod claims_gc;
pub mod platform_grant;
pub mod template_sync;
pub mod templates;

use std::sync::Arc;

use std::sync::atomic::Ordering;

use paddock_core::observe::health::probe_due;

use crate::observe::health::{IDLE_PROBE_INTERVAL, PROBE_INTERVAL, PROBE_TIMEOUT};
use crate::state::AppState;

/// Probes one cluster's apiserver every [`PROBE_INTERVAL`] while tenants use the replica or
/// the upstream is in doubt, else every [`IDLE_PROBE_INTERVAL`], until its shutdown, judged with
/// hysteresis (`observe::health`); a change of reachability is logged and set in
/// `paddock_cluster_up{cluster}`, and the default cluster's also sets `paddock_upstream_up` (a
/// member cluster shares the replica's metrics, so it must not).
pub async fn probe_loop(state: Arc<AppState>, cluster: String, sets_up_metric: bool) {
    let mut tick = tokio::time::interval(PROBE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut was = false;
    let mut last_probe: Option<tokio::time::Instant> = None;
    let mut finished_before = u64::MAX;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = state.shutdown.cancelled() => return,
        }
        let finished = state.metrics.finished.load(Ordering::Relaxed);
        let busy = finished != finished_before || state.metrics.open_watches.get() > 0;
        finished_before = finished;
        let since = last_probe.map_or(IDLE_PROBE_INTERVAL, |t| t.elapsed());
        if !probe_due(state.health.is_settled(), busy, since, IDLE_PROBE_INTERVAL) {
            continue;
        }
        last_probe = Some(tokio::time::Instant::now());
        let ok = state.upstream.probe(PROBE_TIMEOUT).await;
        state.health.record(ok);
        let now = state.health.is_healthy();
        if now != was {
            tracing::info!(cluster = %cluster, reachable = now, "cluster reachability changed");
            was = now;
        }
        if sets_up_metric {
            state.metrics.upstream_up.set(i64::from(now));
        }
        if state.shutdown.is_cancelled() {
            // A removed cluster: its series is gone (clusters::sync), not to be made again.
            return;
        }
        let label = crate::observe::metrics::ClusterLabel {
            cluster: cluster.clone(),
        };
        state
            .metrics
            .cluster_up
            .get_or_create(&label)
            .set(i64::from(now));
    }
}
