//! Usage per tenant (docs/metering.md): the current figures, kept from watches with
//! paddock's own credential, and the report of `GET tenants/<id>/usage`.
//!
//! Cost: every replica keeps one reflector per counted collection (the tenant namespaces by
//! label, pods and PersistentVolumeClaims, the other counted namespaced resources as
//! `PartialObjectMetadata`, the cluster-scoped ones by the tenant label): 21 watches, whatever
//! the number of tenants. What they keep is a few fields of each tenant object
//! (`paddock_core::observe::usage_cache`); a snapshot is a fold over those caches, taken at
//! most once per `usage_refresh`, and reads nothing upstream. When nothing changes, the
//! figures cost the apiserver only the open watches (and a re-list at most hourly).

use std::sync::Arc;
use std::time::{Duration, Instant};

use paddock_api::usage::{
    CurrentUsage, OrderedMap, QuotaUsage, ReplicaUsage, ScopedQuotaUsage, TenantUsage, UsageMeta,
};
use paddock_core::provision::reflect::WatchEvent;
use paddock_store::TenantRecord;
use paddock_upstream::reflector::{self, Feed, Source};
use tokio::sync::mpsc;

use crate::observe::metering::{TenantLabel, UsageSnapshot, VERBS};
use crate::state::AppState;
use paddock_upstream::error::ServerError;

const CLASSES: &[&str] = &["2xx", "3xx", "4xx", "5xx"];

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
    state.metrics.tenant.figures.store(Some(snap.clone()));
    Ok(snap)
}

fn tally_if_synced(
    state: &AppState,
) -> Option<(paddock_core::observe::usage::UsageTally, Vec<String>)> {
    let caches = state.metrics.tenant.caches.lock().ok()?;
    caches.synced().then(|| caches.tally())
}

/// The snapshot, refreshed first when it is older than `usage_refresh`.
pub async fn current(state: &AppState) -> Result<Arc<UsageSnapshot>, ServerError> {
    let fresh = |s: &Option<Arc<UsageSnapshot>>| {
        s.as_ref()
            .filter(|s| s.at.elapsed() < state.config.usage_refresh)
            .cloned()
    };
    if let Some(s) = fresh(&state.metrics.tenant.figures.load_full()) {
        return Ok(s);
    }
    let _one = state.metrics.tenant.refresh_lock.lock().await;
    // Another report may have refreshed while this one waited.
    if let Some(s) = fresh(&state.metrics.tenant.figures.load_full()) {
        return Ok(s);
    }
    refresh(state).await
}

/// Keeps the caches from the reflectors' feeds, and `/metrics`' figures at most
/// `usage_refresh` old.
pub async fn refresh_loop(state: Arc<AppState>) {
    let (tx, mut rx) = mpsc::channel(CHANNEL);
    let collections = state
        .metrics
        .tenant
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
    let Ok(mut caches) = state.metrics.tenant.caches.lock() else {
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

/// The usage report of one tenant.
pub async fn report(state: &Arc<AppState>, rec: &TenantRecord) -> Result<TenantUsage, ServerError> {
    let snap = current(state).await?;
    let f = snap.tally.figures(rec.id.as_str());
    let current = CurrentUsage {
        namespaces: f.namespaces,
        pods: f.pods,
        running_pods: f.running_pods,
        cpu_requests_millicores: f.cpu_requests_millicores,
        cpu_limits_millicores: f.cpu_limits_millicores,
        memory_requests_bytes: f.memory_requests_bytes,
        memory_limits_bytes: f.memory_limits_bytes,
        storage_requests_bytes: f.storage_requests_bytes,
        objects: f.objects,
        observed_at: snap.observed_at.clone(),
        uncounted: snap.uncounted.clone(),
    };
    // The tenant quota's hard limits and the ledger's used figures (docs/quota.md); null when
    // the tenant has no quota.
    let views = crate::webhook::quota::status(state, &rec.id).await?;
    let shown = |u| paddock_core::quota::display_map(u);
    let quota = views.first().map(|base| QuotaUsage {
        hard: shown(&base.hard),
        used: shown(&base.used),
        scoped: views[1..]
            .iter()
            .map(|v| {
                let s = ScopedQuotaUsage {
                    scopes: v.scopes.clone(),
                    hard: shown(&v.hard),
                    used: shown(&v.used),
                };
                (v.name.clone(), s)
            })
            .collect(),
    });
    Ok(TenantUsage {
        api_version: paddock_api::GROUP_VERSION.into(),
        kind: paddock_api::usage::KIND.into(),
        metadata: UsageMeta {
            name: rec.id.as_str().into(),
        },
        current,
        replica: replica_usage(state, rec),
        quota,
    })
}

/// What the tenant does through this replica.
fn replica_usage(state: &AppState, rec: &TenantRecord) -> ReplicaUsage {
    let t = rec.id.as_str();
    let m = &state.metrics;
    let mut requests = OrderedMap::default();
    for verb in VERBS {
        let mut classes = OrderedMap::default();
        for class in CLASSES {
            let labels = crate::observe::metrics::RequestLabels {
                tenant: t.into(),
                verb,
                code: class,
            };
            if let Some(c) = m.requests.get(&labels) {
                classes.push(class, c.get());
            }
        }
        if !classes.is_empty() {
            requests.push(verb, classes);
        }
    }
    let label = TenantLabel { tenant: t.into() };
    let counter = |f: &prometheus_client::metrics::family::Family<
        TenantLabel,
        prometheus_client::metrics::counter::Counter,
    >| f.get(&label).map_or(0, |c| c.get());
    let (connections, inflight, watches) = state.limiter.usage(&rec.id);
    ReplicaUsage {
        open_connections: connections.into(),
        inflight_requests: inflight.into(),
        open_watches: watches.into(),
        requests,
        request_bytes: counter(&m.tenant.request_bytes),
        response_bytes: counter(&m.tenant.response_bytes),
        watch_seconds: m.tenant.watch_seconds.get(&label).map_or(0.0, |c| c.get()),
    }
}
