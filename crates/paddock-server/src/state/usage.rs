//! A cluster's usage figures kept from watches with paddock's own credential (docs/metering.md):
//! every cluster's `AppState` runs [`refresh_loop`] over its own upstream (a registered
//! cluster's ends when it is removed); the usage report (`admin/usage.rs`) and `/metrics`
//! add the clusters up.
//!
//! Cost: every replica keeps one reflector per counted collection and cluster (the tenant
//! namespaces by label, pods and PersistentVolumeClaims, the other counted namespaced
//! resources as `PartialObjectMetadata`, the cluster-scoped ones by the tenant label): 21
//! watches per cluster, whatever the number of tenants. What they keep is a few fields of
//! each tenant object (`paddock_core::observe::usage_cache`); a snapshot is a fold over those
//! caches, taken at most once per `usage_refresh`, and reads nothing upstream. When nothing
//! changes, the figures cost the apiserver only the open watches (and a re-list at most
//! hourly).

use std::sync::Arc;
use std::time::{Duration, Instant};

use paddock_core::provision::reflect::WatchEvent;
use paddock_upstream::error::ServerError;
use paddock_upstream::reflector::{self, Feed, Source};
use tokio::sync::mpsc;

use crate::observe::metering::UsageSnapshot;
use crate::state::AppState;

/// The longest time between two real re-lists of a counted collection.
const RELIST_AFTER: Duration = Duration::from_secs(3600);
/// How long a collection paddock's credential may not list waits before it is asked again
/// (rights granted meanwhile show within this).
const REFUSED_WAIT: Duration = Duration::from_secs(600);
/// The reflectors' channel to the caches.
const CHANNEL: usize = 1024;

/// A snapshot of the caches, replacing the last one. Before every collection has been read
/// once the figures would undercount: a report waits for that (up to `upstream_timeout`).
pub async fn refresh(state: &AppState) -> Result<Arc<UsageSnapshot>, ServerError> {
    let deadline = Instant::now() + state.config.upstream_timeout;
    let (tally, uncounted) = loop {
        if let Some(t) = tally_if_synced(state) {
            break t;
        }
        if Instant::now() >= deadline {
            return Err(ServerError::Unavailable(
                "the usage figures are not read yet (the cluster's collections are still being listed)"
                    .into(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if !uncounted.is_empty() {
        tracing::warn!(
            ?uncounted,
            "usage figures: paddock's credential may not list these; their figures are missing"
        );
    }
    let snap = Arc::new(UsageSnapshot {
        tally,
        uncounted,
        observed_at: paddock_store::now_rfc3339(),
        at: Instant::now(),
    });
    state.usage.figures.store(Some(snap.clone()));
    Ok(snap)
}

fn tally_if_synced(
    state: &AppState,
) -> Option<(paddock_core::observe::usage::UsageTally, Vec<String>)> {
    let caches = state.usage.caches.lock().ok()?;
    caches.synced().then(|| caches.tally())
}

/// The snapshot, refreshed first when it is older than `usage_refresh`.
pub async fn current(state: &AppState) -> Result<Arc<UsageSnapshot>, ServerError> {
    let fresh = |s: &Option<Arc<UsageSnapshot>>| {
        s.as_ref()
            .filter(|s| s.at.elapsed() < state.config.usage_refresh)
            .cloned()
    };
    if let Some(s) = fresh(&state.usage.figures.load_full()) {
        return Ok(s);
    }
    let _one = state.usage.refresh_lock.lock().await;
    // Another report may have refreshed while this one waited.
    if let Some(s) = fresh(&state.usage.figures.load_full()) {
        return Ok(s);
    }
    refresh(state).await
}

/// Keeps the caches from the reflectors' feeds, and `/metrics`' figures at most
/// `usage_refresh` old.
pub async fn refresh_loop(state: Arc<AppState>) {
    let (tx, mut rx) = mpsc::channel(CHANNEL);
    let collections = state
        .usage
        .caches
        .lock()
        .map(|c| c.collections().to_vec())
        .unwrap_or_default();
    for (id, c) in collections.into_iter().enumerate() {
        let w = c.watch();
        let source = Source {
            metadata_only: w.metadata_only,
            shape: w.shape,
            refused_wait: Some(REFUSED_WAIT),
            ..Source::new(w.collection, w.selector, RELIST_AFTER)
        };
        let (st, tx, stop) = (state.clone(), tx.clone(), state.shutdown.child_token());
        tokio::spawn(async move { reflector::run(&st.upstream, &source, id, tx, stop).await });
    }
    drop(tx);
    let mut tick = tokio::time::interval(state.config.usage_refresh);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            fed = rx.recv() => match fed {
                Some((id, feed)) => feed_caches(&state, id, feed),
                None => return,
            },
            _ = tick.tick() => {
                if tally_if_synced(&state).is_some()
                    && let Err(e) = current(&state).await
                {
                    tracing::warn!(error = %e, "usage figures not refreshed; /metrics keeps the last");
                }
            }
            _ = state.shutdown.cancelled() => return,
        }
    }
}

fn feed_caches(state: &AppState, id: usize, feed: Feed) {
    let Ok(mut caches) = state.usage.caches.lock() else {
        return;
    };
    match feed {
        Feed::Listed(items) => caches.listed(id, items),
        Feed::Event(WatchEvent::Added(o) | WatchEvent::Modified(o)) => caches.upsert(id, o),
        Feed::Event(WatchEvent::Deleted(o)) => caches.remove(id, &o),
        Feed::Event(_) => {}
        Feed::Refused(code) => caches.refused(id, code),
    }
}
