//! Store upkeep: records that can no longer matter are pruned, at start and then hourly, so
//! the store does not grow for ever (see `paddock_store::Store::prune` for what goes).
//! The leader prunes (docs/operations.md "Leadership"); the deletes are conditional all the
//! same, so two replicas that both believe they lead for a moment agree.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::Reconciler;

/// Between two prune passes.
pub const PRUNE_INTERVAL: Duration = Duration::from_secs(3600);

/// While this replica leads: prunes at each gain of the leadership and every
/// [`PRUNE_INTERVAL`], until shutdown.
pub async fn prune_loop(state: Arc<Reconciler>) {
    let leadership = state.leadership.clone();
    leadership
        .while_leader("prune", &state.shutdown, || prune_leading(state.clone()))
        .await;
}

async fn prune_leading(state: Arc<Reconciler>) {
    let mut tick = tokio::time::interval(PRUNE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = state.shutdown.cancelled() => return,
        }
        match state
            .store
            .prune(SystemTime::now(), state.prune_grace)
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                pruned = n,
                grace_secs = state.prune_grace.as_secs(),
                "pruned certificate records expired longer than the grace period"
            ),
            Err(e) => tracing::warn!(error = %e, "pruning the store failed; trying again later"),
        }
    }
}
