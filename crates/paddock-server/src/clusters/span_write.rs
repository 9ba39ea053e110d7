//! A spanning tenant's cluster-scoped objects (CRDs, ClusterRoles, ClusterRoleBindings) on
//! every cluster it spans (docs/clusters.md "Spanning tenants"): a write is sent to the home
//! first, and its answer is the tenant's; once the home accepted it, the same translated
//! request is sent to each other cluster. A cluster that fails it (down, or refusing) is
//! brought in line by the resync (`span_resync.rs`).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use paddock_core::{Plan, TenantId};

use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::upstream::Route;

/// A write to replay on the tenant's other clusters, carried in the upstream request's
/// extensions from the body translation to the send.
#[derive(Clone)]
pub struct Replay {
    tenant: TenantId,
    method: Method,
    path_and_query: String,
    headers: HeaderMap,
    body: Bytes,
    rbac: bool,
}

/// The replay of a planned write, if it is a replicated kind of a spanning tenant. `body`:
/// the translated body sent to the home (empty for a DELETE).
pub fn replay_of(
    state: &AppState,
    tenant: &TenantId,
    plan: &Plan,
    method: &Method,
    headers: &HeaderMap,
    body: Bytes,
) -> Option<Replay> {
    if !matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        return None;
    }
    let info = plan.resource.as_ref()?;
    if !paddock_core::clusters::span::replicated_kind(&info.group, &info.resource) {
        return None;
    }
    super::span::spanning_clusters(state, tenant)?;
    Some(Replay {
        tenant: tenant.clone(),
        method: method.clone(),
        path_and_query: plan.upstream_path_and_query.clone(),
        headers: headers.clone(),
        body,
        rbac: info.group == "rbac.authorization.k8s.io",
    })
}

/// Sends the write the home accepted to every other cluster of the tenant; failures are
/// logged (the resync repairs them).
pub async fn replay(home: &Arc<AppState>, r: Replay) {
    let Some(clusters) = super::span::spanning_clusters(home, &r.tenant) else {
        return;
    };
    for name in &clusters[1..] {
        if let Err(e) = replay_on(home, &r, name).await {
            tracing::warn!(tenant = %r.tenant, cluster = name, path = r.path_and_query, error = %e,
                "a cluster-scoped write was not copied to a cluster of the tenant; the resync repairs it");
        }
    }
}

async fn replay_on(home: &Arc<AppState>, r: &Replay, name: &str) -> Result<(), ServerError> {
    let state = super::span::state_of(home, &r.tenant, name)?;
    let mut req = Request::builder()
        .method(r.method.clone())
        .uri(state.upstream.uri(&r.path_and_query)?)
        .body(paddock_upstream::body::full_up(r.body.clone()))
        .map_err(|e| ServerError::Internal(format!("building a replayed write: {e}")))?;
    *req.headers_mut() = r.headers.clone();
    let resp = state.upstream.send(req, Route::Short).await?;
    let status = resp.status();
    let raw = paddock_upstream::limit::collect_limited(resp.into_body(), 1 << 20).await?;
    // Already there (created before) or already gone: the state the home has.
    let same = (r.method == Method::POST && status == http::StatusCode::CONFLICT)
        || (r.method == Method::DELETE && status == http::StatusCode::NOT_FOUND);
    if !status.is_success() && !same {
        return Err(ServerError::Upstream(format!(
            "{status}: {}",
            String::from_utf8_lossy(&raw[..raw.len().min(300)])
        )));
    }
    if r.rbac {
        // The mirrors of the tenant's ClusterRoleBindings in its namespaces there.
        paddock_reconciler::rbac_sync::sync_tenant(&state.upstream, &r.tenant).await?;
    }
    Ok(())
}
