//! The in-cluster path's endpoints when paddock runs in the cluster (docs/inside.md): the
//! leader watches the EndpointSlices of paddock's own Service (`in_cluster_service`,
//! `<namespace>/<name>`) and keeps the `kubernetes` Endpoints and EndpointSlice of every
//! tenant's `default` namespace on its ready addresses. A replica rolled, added or removed
//! moves them all: one apply per object and tenant when the set of addresses changes, nothing
//! while it does not (the watch is all this sends at idle). New tenants get the current set at
//! creation (`provision::in_cluster_endpoints`).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use paddock_core::TenantId;
use paddock_core::provision::reflect::{Cache, backoff};
use paddock_core::provision::{api_service_objects, ready_endpoints};
use paddock_upstream::reflector::{self, Source};
use paddock_upstream::upjson;
use tokio::sync::mpsc;

use crate::{Reconciler, provision};

/// The longest time between two real re-lists.
const RELIST_AFTER: Duration = Duration::from_secs(3600);

/// While this replica leads: every tenant's `kubernetes` endpoints on the ready addresses of
/// Service `name` in `namespace`.
pub async fn mirror_loop(state: Arc<Reconciler>, namespace: String, name: String) {
    let leadership = state.leadership.clone();
    leadership
        .while_leader("in-cluster endpoints", &state.shutdown, || {
            mirror_leading(state.clone(), namespace.clone(), name.clone())
        })
        .await;
}

async fn mirror_leading(state: Arc<Reconciler>, namespace: String, name: String) {
    let stop = state.shutdown.child_token();
    let _stop_reflector = stop.clone().drop_guard();
    let source = Source::new(
        format!("/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices"),
        &format!("kubernetes.io/service-name={name}"),
        RELIST_AFTER,
    );
    let (tx, mut rx) = mpsc::channel(16);
    let up = state.upstream.clone();
    tokio::spawn(async move { reflector::run(&up, &source, 0, tx, stop).await });
    let mut cache = Cache::default();
    // The set every tenant in `done` was last brought to. A leadership starts from nothing, so
    // its first synced view is applied to every tenant once (a replica that led before may
    // have died between two tenants); a tenant created meanwhile (whose creation may have read
    // the set before the first list) is found by the next tick.
    let mut applied: Vec<SocketAddr> = Vec::new();
    let mut done: BTreeSet<TenantId> = BTreeSet::new();
    let mut failures = 0u32;
    let mut warned_empty = false;
    loop {
        tokio::select! {
            f = rx.recv() => match f {
                Some((_, feed)) => { feed.into_cache(&mut cache); }
                None => return,
            },
            _ = tokio::time::sleep(if failures > 0 { backoff(failures, 0.5) } else { TICK }) => {}
        }
        if !cache.synced {
            continue;
        }
        let wanted = ready_endpoints(cache.values());
        if wanted.is_empty() {
            // No ready replica (a rollout's first moment, or the Service is gone): keep the
            // addresses tenants have rather than leave them none.
            if !warned_empty {
                tracing::warn!(service = %format!("{namespace}/{name}"), "in-cluster endpoints: no ready address; tenants keep theirs");
                warned_empty = true;
            }
            continue;
        }
        warned_empty = false;
        if wanted != applied {
            provision::set_in_cluster_endpoints(wanted.clone());
            applied = wanted;
            done.clear();
        }
        let todo: Vec<TenantId> = crate::resync::active_tenants(&state)
            .into_iter()
            .filter(|t| !done.contains(t))
            .collect();
        if todo.is_empty() {
            continue;
        }
        let mut failed = false;
        for t in todo {
            match apply(&state, &t, &applied).await {
                Ok(()) => {
                    done.insert(t);
                }
                Err(e) => {
                    failed = true;
                    tracing::warn!(tenant = %t, error = %e, "in-cluster endpoints: apply failed; retrying");
                }
            }
            if state.shutdown.is_cancelled() {
                return;
            }
        }
        failures = if failed {
            failures.saturating_add(1)
        } else {
            0
        };
        tracing::info!(tenants = done.len(), endpoints = ?applied, "in-cluster endpoints in step");
    }
}

/// How often tenants created since the last look are brought in step.
const TICK: Duration = Duration::from_secs(5);

/// Applies one tenant's `kubernetes` Service, Endpoints and EndpointSlice.
async fn apply(
    state: &Reconciler,
    t: &TenantId,
    endpoints: &[SocketAddr],
) -> Result<(), paddock_upstream::error::ServerError> {
    let default_ns = t.upstream_name("default");
    for (path, object) in api_service_objects(t, &default_ns, endpoints) {
        upjson::apply(&state.upstream, &path, &object).await?;
    }
    Ok(())
}
