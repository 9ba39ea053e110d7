//! The usage report of `GET tenants/<id>/usage` (docs/metering.md): each of the tenant's
//! clusters' figures (kept from watches, `state/usage.rs`) added up, the quota's
//! hard and used figures, and what the tenant does through this replica.

use std::collections::BTreeMap;
use std::sync::Arc;

use paddock_api::usage::{
    CurrentUsage, OrderedMap, QuotaUsage, ReplicaUsage, ScopedQuotaUsage, TenantUsage, UsageMeta,
};
use paddock_core::clusters::cluster::DEFAULT_CLUSTER;
use paddock_core::observe::usage::TenantFigures;
use paddock_store::TenantRecord;

use crate::observe::metering::{TenantLabel, VERBS};
use crate::state::AppState;
use crate::state::usage::current;
use paddock_upstream::error::ServerError;

const CLASSES: &[&str] = &["2xx", "3xx", "4xx", "5xx"];

/// The usage report of one tenant: its figures on each of its clusters, added up
/// (`TenantFigures::add_cluster`); a cluster of the tenant that does not answer is a 503
/// naming it, never a total that looks complete.
pub async fn report(state: &Arc<AppState>, rec: &TenantRecord) -> Result<TenantUsage, ServerError> {
    let names = rec.cluster_names();
    let mut clusters = BTreeMap::new();
    let mut sum: Option<TenantFigures> = None;
    for name in &names {
        let cluster = crate::clusters::span::state_of(state, &rec.id, name)?;
        let snap = current(&cluster).await?;
        let f = snap.tally.figures(rec.id.as_str());
        match &mut sum {
            Some(s) => s.add_cluster(&f),
            None => sum = Some(f.clone()),
        }
        clusters.insert(
            (*name).to_string(),
            current_usage(&f, &snap.observed_at, &snap.uncounted),
        );
    }
    let sum = sum.ok_or_else(|| ServerError::Internal("a tenant on no cluster".into()))?;
    // The oldest observation and every list not made, of any cluster.
    let observed_at = clusters
        .values()
        .map(|c| c.observed_at.clone())
        .min()
        .unwrap_or_default();
    let uncounted: Vec<String> = clusters
        .values()
        .flat_map(|c| c.uncounted.iter().cloned())
        .collect();
    let mut current = current_usage(&sum, &observed_at, &uncounted);
    if names != [DEFAULT_CLUSTER] {
        current.clusters = clusters;
    }
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

/// One set of figures in the report's shape.
fn current_usage(f: &TenantFigures, observed_at: &str, uncounted: &[String]) -> CurrentUsage {
    CurrentUsage {
        namespaces: f.namespaces,
        pods: f.pods,
        running_pods: f.running_pods,
        cpu_requests_millicores: f.cpu_requests_millicores,
        cpu_limits_millicores: f.cpu_limits_millicores,
        memory_requests_bytes: f.memory_requests_bytes,
        memory_limits_bytes: f.memory_limits_bytes,
        storage_requests_bytes: f.storage_requests_bytes,
        objects: f.objects.clone(),
        observed_at: observed_at.to_string(),
        uncounted: uncounted.to_vec(),
        clusters: BTreeMap::new(),
    }
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
