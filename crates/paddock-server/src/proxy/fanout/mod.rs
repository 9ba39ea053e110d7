//! Cluster-wide reads of namespaced kinds (`kubectl get pods -A`, `get pods -A -w`).
//!
//! Tenants hold no cluster-wide rights upstream, so a cluster-wide list cannot simply be sent
//! up. paddock lists the tenant's namespaces (label-filtered, with its own credential) and
//! sends one request per namespace as the impersonated tenant user, so the tenant's own RBAC
//! still decides: a namespace the user may not read fails the whole request, as a missing
//! cluster-wide grant would on a real cluster. Lists are merged; watches are multiplexed onto
//! one response stream.

mod list;
mod watch;

use list::serve_list;
use watch::{WatchCaller, serve_watch};

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use paddock_core::clusters::span::MergedFrom;
use paddock_core::{Plan, ResponseKind, Scope, TenantContext, Verb};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::proxy::outbound::add_impersonation_as;
use crate::proxy::whole::{content_type_of, rewrite_whole};
use crate::state::AppState;
use paddock_upstream::body::BoxError;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::upjson::query_escape;

/// Largest answer of one namespace of a fan-out list.
const MAX_NAMESPACE_LIST_BYTES: usize = 256 << 20;

/// Is this a list or watch of a namespaced kind across all namespaces?
pub fn is_cluster_wide_namespaced(plan: &Plan) -> bool {
    let Some(info) = &plan.resource else {
        return false;
    };
    let paddock_core::ApiPath::Resource(rp) = &plan.request.path else {
        return false;
    };
    matches!(info.scope, Scope::Namespaced)
        && rp.namespace.is_none()
        && rp.name.is_none()
        && matches!(plan.request.verb, Verb::List | Verb::Watch)
}

/// The tenant's namespaces upstream, and the resourceVersion of that list (a fan-out watch
/// follows namespaces created after it).
pub struct TenantNamespaces {
    /// Upstream names, sorted.
    pub names: Vec<String>,
    /// The list's resourceVersion.
    pub resource_version: String,
}

/// The tenant's namespaces, as upstream names (listed by label with paddock's own
/// credential; the exact prefix is checked too).
pub async fn tenant_namespaces(
    state: &AppState,
    ctx: &TenantContext,
) -> Result<TenantNamespaces, ServerError> {
    let path = format!(
        "/api/v1/namespaces?labelSelector={}",
        query_escape(&ctx.tenant.tenant_label_selector())
    );
    let list =
        paddock_upstream::upjson::call(&state.upstream, Method::GET, &path, None, None).await?;
    if !list.status.is_success() {
        return Err(ServerError::Upstream(format!(
            "listing the tenant's namespaces upstream: {}",
            list.message()
        )));
    }
    let prefix = ctx.tenant.prefix();
    let mut names: Vec<String> = list.body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                // A terminating namespace is left out: its RoleBindings may already be gone,
                // and one spurious refusal would fail the whole cluster-wide read.
                .filter(|i| i["metadata"]["deletionTimestamp"].is_null())
                .filter_map(|i| i["metadata"]["name"].as_str())
                // The label says tenant; the exact prefix check makes sure.
                .filter(|n| n.starts_with(&prefix))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let resource_version = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    Ok(TenantNamespaces {
        names,
        resource_version,
    })
}

/// The tenant's request path with `/namespaces/<ns>` inserted.
fn namespaced_path(plan: &Plan, ns: &str) -> Option<String> {
    let paddock_core::ApiPath::Resource(rp) = &plan.request.path else {
        return None;
    };
    let base = if rp.group.is_empty() {
        format!("/api/{}", rp.version)
    } else {
        format!("/apis/{}/{}", rp.group, rp.version)
    };
    Some(format!("{base}/namespaces/{ns}/{}", rp.resource))
}

/// Query of the per-namespace requests: paging is dropped because the merged list is
/// returned whole (a continue token cannot span namespaces). `since` (a namespace created after
/// a fan-out watch started) replaces the client's resourceVersion, unless the client asked for
/// initial events, which a new namespace gets anyway.
fn per_namespace_query(plan: &Plan, since: Option<&str>) -> String {
    let initial_events = plan
        .request
        .query
        .iter()
        .any(|(k, v)| k == "sendInitialEvents" && v == "true");
    let replace_version = since.is_some() && !initial_events;
    let mut ser = String::new();
    let mut push = |k: &str, v: &str| {
        if !ser.is_empty() {
            ser.push('&');
        }
        ser.push_str(&query_escape(k));
        ser.push('=');
        ser.push_str(&query_escape(v));
    };
    for (k, v) in &plan.request.query {
        if k == "limit" || k == "continue" {
            continue;
        }
        if replace_version && (k == "resourceVersion" || k == "resourceVersionMatch") {
            continue;
        }
        push(k, v);
    }
    if let (true, Some(rv)) = (replace_version, since) {
        push("resourceVersion", rv);
    }
    ser
}

/// The plan of one namespace's part of a fan-out.
fn part_plan(
    ctx: &TenantContext,
    plan: &Plan,
    ns: &str,
    since: Option<&str>,
    client_accept: Option<&str>,
) -> Result<Plan, ServerError> {
    let path = namespaced_path(plan, ns)
        .ok_or_else(|| ServerError::Internal("fan-out of a path that is not a resource".into()))?;
    let query = per_namespace_query(plan, since);
    let parsed = paddock_core::parse_request("GET", &path, Some(&query))?;
    let mut p = paddock_core::plan(ctx, parsed)?;
    p.response = paddock_core::response_kind_for(&p, client_accept);
    Ok(p)
}

/// One upstream request of a fan-out, and the cluster it goes to (a tenant spanning clusters
/// has namespaces on several; docs/clusters.md "Spanning tenants").
pub(crate) struct Part {
    pub(crate) state: Arc<AppState>,
    pub(crate) plan: Plan,
    /// The cluster's name when the read spans several (it names the cluster in errors).
    pub(crate) cluster: Option<String>,
}

impl Part {
    /// A failure to reach this part's cluster, naming it when the read spans several.
    pub(crate) fn unreachable(&self, ctx: &TenantContext, e: ServerError) -> ServerError {
        match &self.cluster {
            Some(name) => unreachable(name, ctx, e),
            None => e,
        }
    }
}

/// The clusters a fan-out reads, by name; one (the routed state) for a one-cluster tenant.
/// A cluster that does not answer is the error: a merged answer is never partial.
fn clusters_of(
    state: &Arc<AppState>,
    ctx: &TenantContext,
) -> Result<Vec<(String, Arc<AppState>)>, ServerError> {
    match crate::clusters::span::spanning_clusters(state, &ctx.tenant) {
        Some(names) => crate::clusters::span::all_states(state, &ctx.tenant, &names),
        None => Ok(vec![(String::new(), state.clone())]),
    }
}

/// The client's resourceVersion per cluster of a read merged across clusters; `Err`: a
/// resourceVersion of one cluster (the message of the 410 that makes the client list again).
fn versions_of(
    plan: &Plan,
    clusters: &[(String, Arc<AppState>)],
) -> Result<BTreeMap<String, String>, String> {
    let rv = plan
        .request
        .query
        .iter()
        .find(|(k, _)| k == "resourceVersion")
        .map(|(_, v)| v.as_str());
    if clusters.len() < 2 {
        return Ok(BTreeMap::new());
    }
    match paddock_core::clusters::span::merged_from(rv) {
        MergedFrom::Any => Ok(BTreeMap::new()),
        // Every cluster of the tenant has its place in a vector paddock made.
        MergedFrom::Versions(v) if clusters.iter().all(|(n, _)| v.contains_key(n)) => Ok(v),
        MergedFrom::Versions(_) | MergedFrom::Foreign => Err(format!(
            "too old resource version: {} is not a resourceVersion of this tenant's lists merged across its clusters; list again",
            rv.unwrap_or_default()
        )),
    }
}

fn unreachable(name: &str, ctx: &TenantContext, e: ServerError) -> ServerError {
    ServerError::Unavailable(format!(
        "cluster {name:?} of tenant {} cannot be reached; try again later ({e})",
        ctx.tenant
    ))
}

/// Serves the fan-out: a cluster-wide read of a namespaced kind, one part per namespace of
/// the tenant on each of its clusters; or, for a tenant spanning clusters, a read of
/// namespaces or of a shared kind (nodes), one part per cluster.
pub async fn serve(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    user: &str,
    groups: &[String],
    accept: Option<&str>,
) -> Result<Response<ResBody>, ServerError> {
    let clusters = clusters_of(state, ctx)?;
    let multi = clusters.len() > 1;
    let since = match versions_of(plan, &clusters) {
        Ok(v) => v,
        Err(message) => {
            return Ok(status_response(ListPart {
                status: StatusCode::GONE,
                content_type: "application/json".into(),
                doc: paddock_core::error::status::status_body(410, "Expired", &message),
            }));
        }
    };
    let per_namespace = plan.actions.fan_out;
    let mut fallback_version = None;
    let mut listed_all = Vec::new();
    let mut parts = Vec::new();
    let mut versions = BTreeMap::new();
    for (name, cs) in &clusters {
        let from = since.get(name).map(String::as_str);
        let cluster = multi.then(|| name.clone());
        if !per_namespace && !multi {
            parts.push(Part {
                state: cs.clone(),
                plan: cluster_plan(ctx, plan, from, accept)?,
                cluster,
            });
            continue;
        }
        // The tenant's namespaces there; their list's resourceVersion is the cluster's part
        // of a merged list's resourceVersion.
        let listed = tenant_namespaces(cs, ctx)
            .await
            .map_err(|e| if multi { unreachable(name, ctx, e) } else { e })?;
        versions.insert(name.clone(), listed.resource_version.clone());
        fallback_version = Some(listed.resource_version.clone());
        if !per_namespace {
            parts.push(Part {
                state: cs.clone(),
                plan: cluster_plan(ctx, plan, from, accept)?,
                cluster,
            });
            continue;
        }
        for up_ns in &listed.names {
            let Some(ns) = ctx.tenant.strip(up_ns) else {
                continue;
            };
            parts.push(Part {
                state: cs.clone(),
                plan: part_plan(ctx, plan, ns, from, accept)?,
                cluster: cluster.clone(),
            });
        }
        listed_all.push((cs.clone(), listed));
    }
    // Namespace order across clusters, as one cluster's answer would have it.
    parts.sort_by(|a, b| a.plan.namespace().cmp(&b.plan.namespace()));
    let merged_version = multi.then(|| paddock_core::clusters::span::encode_versions(&versions));
    let upstream_accept = paddock_core::upstream_accept(accept);
    if matches!(plan.request.verb, Verb::Watch) {
        let caller = WatchCaller {
            user,
            groups,
            upstream_accept: &upstream_accept,
            client_accept: accept,
        };
        return serve_watch(state, ctx, plan, listed_all, parts, caller).await;
    }
    let caller = list::ListCaller {
        user,
        groups,
        accept: &upstream_accept,
        merged_version,
        fallback_version,
    };
    serve_list(state, ctx, plan, parts, caller).await
}

/// The plan of one cluster's part of a merged read that is not per namespace (namespaces,
/// nodes): the same path, paging dropped, from that cluster's resourceVersion if given.
fn cluster_plan(
    ctx: &TenantContext,
    plan: &Plan,
    since: Option<&str>,
    client_accept: Option<&str>,
) -> Result<Plan, ServerError> {
    let paddock_core::ApiPath::Resource(rp) = &plan.request.path else {
        return Err(ServerError::Internal(
            "merged read of a path that is not a resource".into(),
        ));
    };
    let path = if rp.group.is_empty() {
        format!("/api/{}/{}", rp.version, rp.resource)
    } else {
        format!("/apis/{}/{}/{}", rp.group, rp.version, rp.resource)
    };
    let query = per_namespace_query(plan, since);
    let parsed = paddock_core::parse_request("GET", &path, Some(&query))?;
    let mut p = paddock_core::plan(ctx, parsed)?;
    p.response = paddock_core::response_kind_for(&p, client_accept);
    Ok(p)
}

async fn send_one(
    state: &AppState,
    p: &Plan,
    tenant: &paddock_core::TenantId,
    user: &str,
    groups: &[String],
    accept: &str,
    watch: bool,
) -> Result<
    (
        Response<paddock_upstream::answer_body::AnswerBody>,
        Option<paddock_upstream::upstream::StreamSlot>,
    ),
    ServerError,
> {
    let mut req = Request::builder()
        .method(Method::GET)
        .uri(state.upstream.uri(&p.upstream_path_and_query)?)
        .header(header::ACCEPT, accept)
        .body(paddock_upstream::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    add_impersonation_as(
        req.headers_mut(),
        tenant,
        user,
        groups,
        p.identity.resolve(None),
    )?;
    if watch {
        // The watch pool; the slot lives as long as the stream.
        let (resp, slot) = state.upstream.send_watch(req).await?;
        return Ok((resp, Some(slot)));
    }
    Ok((
        state
            .upstream
            .send(req, paddock_upstream::upstream::Route::Bulk)
            .await?,
        None,
    ))
}

/// Per-namespace requests of one fan-out in flight at once. The answer keeps namespace order.
const FANOUT_CONCURRENCY: usize = 8;

/// One namespace's part of a fan-out list, rewritten for the tenant and split into items.
struct ListPart {
    status: StatusCode,
    content_type: String,
    /// The rewritten upstream answer.
    doc: Vec<u8>,
}

fn status_response(part: ListPart) -> Response<ResBody> {
    let retry_after = retry_after_seconds(part.status, &part.doc);
    let mut r = typed(
        Response::new(paddock_upstream::body::full(part.doc)),
        "application/json",
    );
    *r.status_mut() = part.status;
    if let Some(secs) = retry_after {
        // The part's own answer carried it as a header too; client-go retries a 429 (or a
        // 5xx) only when the header is there (e.g. a CRD's storage still initializing on one
        // cluster of a spanning tenant: `429 storage is (re)initializing`).
        r.headers_mut()
            .insert(header::RETRY_AFTER, http::HeaderValue::from(secs));
    }
    r
}

/// `details.retryAfterSeconds` of a refusal that asks to be retried (429, 503, 504).
fn retry_after_seconds(status: StatusCode, doc: &[u8]) -> Option<u64> {
    if !matches!(status.as_u16(), 429 | 503 | 504) {
        return None;
    }
    let v: Value = serde_json::from_slice(doc).ok()?;
    v["details"]["retryAfterSeconds"]
        .as_u64()
        .filter(|s| *s > 0)
}

/// A response whose body is what the parts' tasks send on `rx`, as they send it.
pub(crate) fn streamed(
    rx: mpsc::Receiver<Result<Bytes, BoxError>>,
    content_type: &str,
) -> Response<ResBody> {
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|item| (item.map(http_body::Frame::data), rx))
    });
    let body = ResBody::boxed(http_body_util::StreamBody::new(frames));
    typed(Response::new(body), content_type)
}

/// `r` with the parts' content type (JSON where that is not a valid header value).
fn typed(mut r: Response<ResBody>, content_type: &str) -> Response<ResBody> {
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_str(content_type)
            .unwrap_or(http::HeaderValue::from_static("application/json")),
    );
    r
}

#[cfg(test)]
mod status_tests {
    use super::*;

    #[test]
    fn a_refusal_that_asks_for_a_retry_keeps_its_retry_after() {
        let doc = br#"{"kind":"Status","code":429,"reason":"TooManyRequests","message":"storage is (re)initializing","details":{"retryAfterSeconds":1}}"#;
        assert_eq!(
            retry_after_seconds(StatusCode::TOO_MANY_REQUESTS, doc),
            Some(1)
        );
        assert_eq!(retry_after_seconds(StatusCode::FORBIDDEN, doc), None);
        assert_eq!(
            retry_after_seconds(StatusCode::TOO_MANY_REQUESTS, br#"{"kind":"Status"}"#),
            None
        );
        assert_eq!(
            retry_after_seconds(StatusCode::SERVICE_UNAVAILABLE, b"\x0a\x02"),
            None
        );
    }
}
