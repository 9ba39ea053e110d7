//! Usage per tenant (docs/metering.md): the current figures, taken upstream with paddock's own
//! credential, and the report of `GET tenants/<id>/usage`.
//!
//! Cost: one refresh reads the cluster with a fixed set of lists (the tenant namespaces by
//! label, pods and PersistentVolumeClaims in full, the other counted resources as
//! `PartialObjectMetadataList`, the cluster-scoped ones by the tenant label): 21 lists
//! whatever the number of tenants, in pages folded into the tally one at a time (a refresh
//! never holds the cluster's pods at once). A replica refreshes at most once per `usage_refresh`
//! (background loop for `/metrics`; a usage report older than that refreshes first, and
//! concurrent reports share that one refresh).

use std::sync::Arc;
use std::time::Instant;

use paddock_api::usage::{
    CurrentUsage, OrderedMap, QuotaUsage, ReplicaUsage, TenantUsage, UsageMeta,
};
use paddock_core::TENANT_LABEL;
use paddock_core::catalog::Scope;
use paddock_core::observe::usage::{UsageTally, counted_objects};
use paddock_store::TenantRecord;
use serde_json::Value;

use crate::observe::metering::{TenantLabel, UsageSnapshot, VERBS};
use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;

const METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

const CLASSES: &[&str] = &["2xx", "3xx", "4xx", "5xx"];

/// Objects per page of the refresh's lists: a page of 5 KB pods parsed is a few MiB, the most
/// a refresh holds at once.
const REFRESH_PAGE: usize = 100;

/// Hands every object of `path` to `visit`, a page at a time. A kind the upstream does not
/// serve (404) has nothing to count; a list paddock's credential may not make (403: its least
/// ClusterRole, rights.rs, holds no `list` on most workload kinds) is noted in `uncounted`
/// rather than failing the whole refresh.
async fn visit_or_none(
    state: &AppState,
    path: &str,
    accept: &str,
    uncounted: &mut Vec<String>,
    mut visit: impl FnMut(Value),
) -> Result<(), ServerError> {
    let pages = upjson::visit_pages(&state.upstream, path, accept, REFRESH_PAGE, |page| {
        page.into_iter().for_each(&mut visit);
    });
    match pages.await {
        Ok(()) => Ok(()),
        Err(ServerError::Upstream(m)) if m.contains("(404") => Ok(()),
        Err(ServerError::Upstream(m)) if m.contains("(403") => {
            uncounted.push(path.split('?').next().unwrap_or(path).to_string());
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Reads the cluster once and replaces the snapshot.
pub async fn refresh(state: &AppState) -> Result<Arc<UsageSnapshot>, ServerError> {
    let mut tally = UsageTally::default();
    let mut uncounted = Vec::new();
    let namespaces = upjson::list(
        &state.upstream,
        &format!("/api/v1/namespaces?labelSelector={TENANT_LABEL}"),
    )
    .await?;
    namespaces.iter().for_each(|n| tally.add_namespace(n));
    // Pods and PVCs in full, folded into the tally a page at a time (never the whole list).
    let pods = "/api/v1/pods";
    visit_or_none(state, pods, "application/json", &mut uncounted, |p| {
        tally.add_pod(&p);
    })
    .await?;
    let pvcs = "/api/v1/persistentvolumeclaims";
    visit_or_none(state, pvcs, "application/json", &mut uncounted, |p| {
        tally.add_pvc(&p);
    })
    .await?;
    for kind in counted_objects(Scope::Namespaced) {
        let resource = kind.qualified();
        visit_or_none(
            state,
            &kind.list_path(),
            METADATA_LIST,
            &mut uncounted,
            |o| {
                tally.add_namespaced(&resource, &o);
            },
        )
        .await?;
    }
    for kind in counted_objects(Scope::Cluster) {
        let resource = kind.qualified();
        let labelled = format!("{}?labelSelector={TENANT_LABEL}", kind.list_path());
        // CRDs in full: their owner is decided by spec.group.
        let accept = if resource.starts_with("customresourcedefinitions.") {
            "application/json"
        } else {
            METADATA_LIST
        };
        visit_or_none(state, &labelled, accept, &mut uncounted, |o| {
            tally.add_cluster(&resource, &o);
        })
        .await?;
    }
    if !uncounted.is_empty() {
        tracing::warn!(
            ?uncounted,
            "usage refresh: paddock's credential may not list these; their figures are missing"
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

/// Refreshes every `usage_refresh` so that `/metrics` has current figures.
pub async fn refresh_loop(state: Arc<AppState>) {
    loop {
        if let Err(e) = current(&state).await {
            tracing::warn!(error = %e, "usage refresh failed; /metrics keeps the last figures");
        }
        tokio::select! {
            _ = tokio::time::sleep(state.config.usage_refresh) => {}
            _ = state.shutdown.cancelled() => return,
        }
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
    let quota = crate::webhook::quota::status(state, &rec.id)
        .await?
        .map(|(hard, used)| QuotaUsage {
            hard: paddock_core::quota::display_map(&hard),
            used: paddock_core::quota::display_map(&used),
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
