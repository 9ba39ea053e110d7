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
    /// An RBAC object or a CRD: the tenant's mirrors and custom-resources role follow there.
    rbac: bool,
    /// A CRD created: its (upstream) name, to wait until it is established there too.
    new_crd: Option<String>,
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
    let new_crd = (info.is_crd() && *method == Method::POST)
        .then(|| serde_json::from_slice::<serde_json::Value>(&body).ok())
        .flatten()
        .and_then(|v| v["metadata"]["name"].as_str().map(str::to_owned));
    Some(Replay {
        tenant: tenant.clone(),
        method: method.clone(),
        path_and_query: plan.upstream_path_and_query.clone(),
        headers: headers.clone(),
        body,
        rbac: info.group == "rbac.authorization.k8s.io" || info.is_crd(),
        new_crd,
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
    let body = body_for(r, name)?;
    let mut req = Request::builder()
        .method(r.method.clone())
        .uri(state.upstream.uri(&r.path_and_query)?)
        .body(paddock_upstream::body::full_up(body.clone()))
        .map_err(|e| ServerError::Internal(format!("building a replayed write: {e}")))?;
    *req.headers_mut() = r.headers.clone();
    req.headers_mut().insert(
        http::header::CONTENT_LENGTH,
        http::HeaderValue::from(body.len()),
    );
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
        // The mirrors of the tenant's ClusterRoleBindings in its namespaces there, and its
        // custom-resources role.
        paddock_reconciler::rbac_sync::sync_tenant(&state.upstream, &r.tenant).await?;
    }
    if let Some(crd) = &r.new_crd {
        // The tenant may create its resources in a namespace there as soon as the home's
        // answer arrives (issue 39: no window after a CRD is created).
        established(&state, crd).await?;
    }
    Ok(())
}

/// The body to send to cluster `name`: the home's, except that a webhook configuration's
/// relayed client configs name the tenant's Service again on a cluster without the relay
/// (only the default cluster's apiserver calls paddock's relay:
/// `webhook_relay::unrelay_configuration`). A body that is not a JSON object naming relayed
/// webhooks (a patch, protobuf) is left to the resync, which applies the home's objects
/// read back and so un-relayed.
fn body_for(r: &Replay, name: &str) -> Result<Bytes, ServerError> {
    let relayed = r.path_and_query.contains("webhookconfigurations")
        && name != paddock_core::clusters::cluster::DEFAULT_CLUSTER
        && !r.body.is_empty();
    if !relayed {
        return Ok(r.body.clone());
    }
    let mut obj: serde_json::Value = serde_json::from_slice(&r.body).map_err(|_| {
        ServerError::Upstream("a webhook configuration not in JSON: left to the resync".into())
    })?;
    if !obj.is_object() {
        return Err(ServerError::Upstream(
            "a patch of a webhook configuration: left to the resync".into(),
        ));
    }
    if !paddock_core::catalog::webhook_relay::unrelay_configuration(&mut obj) {
        return Ok(r.body.clone());
    }
    serde_json::to_vec(&obj)
        .map(Bytes::from)
        .map_err(|e| ServerError::Internal(e.to_string()))
}

/// The longest a CRD create's answer waits for the CRD to be established on another cluster
/// of the tenant.
const ESTABLISH_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits (bounded) until the CRD `name` is established on the cluster of `state` (read by a
/// list of that one name: paddock's rights on CRDs are `list`, not `get`).
async fn established(state: &AppState, name: &str) -> Result<(), ServerError> {
    use paddock_upstream::upjson::{list, query_escape};
    let path = format!(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?fieldSelector={}",
        query_escape(&format!("metadata.name={name}"))
    );
    let started = tokio::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(10);
    loop {
        let items = list(&state.upstream, &path).await?;
        if items
            .iter()
            .any(paddock_core::clusters::span::crd_established)
        {
            return Ok(());
        }
        if started.elapsed() + pause > ESTABLISH_WAIT {
            return Err(ServerError::Upstream(format!(
                "CRD {name} is not established after {ESTABLISH_WAIT:?}"
            )));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(std::time::Duration::from_millis(200));
    }
}
