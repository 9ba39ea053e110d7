//! Cluster-wide reads of namespaced kinds (`kubectl get pods -A`, `get pods -A -w`).
//!
//! Tenants hold no cluster-wide rights upstream, so a cluster-wide list cannot simply be sent
//! up. paddock lists the tenant's namespaces (label-filtered, with its own credential) and
//! sends one request per namespace as the impersonated tenant user, so the tenant's own RBAC
//! still decides: a namespace the user may not read fails the whole request, as a missing
//! cluster-wide grant would on a real cluster. Lists are merged; watches are multiplexed onto
//! one response stream.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use paddock_core::{Plan, ResponseKind, Scope, TenantContext, Verb};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::body::{ResBody, collect_limited};
use crate::error::{BoxError, ServerError};
use crate::proxy::{add_impersonation, content_type_of, rewrite_whole};
use crate::state::AppState;
use crate::upjson::query_escape;

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
    let list = crate::upjson::call(&state.upstream, Method::GET, &path, None, None).await?;
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

/// Serves the fan-out.
pub async fn serve(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    user: &str,
    groups: &[String],
    accept: Option<&str>,
) -> Result<Response<ResBody>, ServerError> {
    let listed = tenant_namespaces(state, ctx).await?;
    let mut plans = Vec::with_capacity(listed.names.len());
    for up_ns in &listed.names {
        let Some(ns) = ctx.tenant.strip(up_ns) else {
            continue;
        };
        plans.push(part_plan(ctx, plan, ns, None, accept)?);
    }
    let upstream_accept = paddock_core::upstream_accept(accept);
    if matches!(plan.request.verb, Verb::Watch) {
        let caller = WatchCaller {
            user,
            groups,
            upstream_accept: &upstream_accept,
            client_accept: accept,
        };
        return serve_watch(state, ctx, plan, listed, plans, caller).await;
    }
    serve_list(state, ctx, plan, plans, user, groups, &upstream_accept).await
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
        Response<hyper::body::Incoming>,
        Option<crate::upstream::StreamSlot>,
    ),
    ServerError,
> {
    let mut req = Request::builder()
        .method(Method::GET)
        .uri(state.upstream.uri(&p.upstream_path_and_query)?)
        .header(header::ACCEPT, accept)
        .body(crate::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    add_impersonation(req.headers_mut(), tenant, user, groups)?;
    if watch {
        // The watch pool; the slot lives as long as the stream.
        let (resp, slot) = state.upstream.send_watch(req).await?;
        return Ok((resp, Some(slot)));
    }
    Ok((
        state
            .upstream
            .send(req, crate::upstream::Route::Bulk)
            .await?,
        None,
    ))
}

/// Per-namespace requests of one fan-out in flight at once. The answer keeps namespace order.
const FANOUT_CONCURRENCY: usize = 8;

/// A fan-out list is held back until it is complete (so a refusal in any namespace answers
/// with its own Status, as a missing cluster-wide grant would) up to this many bytes; a bigger
/// one starts streaming, and a refusal after that point ends the stream with an error.
const FANOUT_HOLD_BYTES: usize = 8 << 20;

/// One namespace's part of a fan-out list, rewritten for the tenant and split into items.
struct ListPart {
    status: StatusCode,
    content_type: String,
    /// The rewritten upstream answer.
    doc: Vec<u8>,
}

/// The pieces of a rewritten list (or Table) that the merge needs; items stay raw JSON.
#[derive(serde::Deserialize)]
struct ListPieces<'a> {
    #[serde(borrow)]
    kind: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, rename = "apiVersion")]
    api_version: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    metadata: ListMeta,
    #[serde(borrow, rename = "columnDefinitions")]
    column_definitions: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    items: Vec<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    rows: Vec<&'a serde_json::value::RawValue>,
}

#[derive(serde::Deserialize, Default)]
struct ListMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
}

async fn fetch_part(
    state: &AppState,
    ctx: &TenantContext,
    p: &Plan,
    user: &str,
    groups: &[String],
    accept: &str,
) -> Result<ListPart, ServerError> {
    let (resp, _) = send_one(state, p, &ctx.tenant, user, groups, accept, false).await?;
    let status = resp.status();
    let content_type = content_type_of(&resp);
    let raw = collect_limited(resp.into_body(), MAX_NAMESPACE_LIST_BYTES).await?;
    if matches!(status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND)
        && namespace_going(state, ctx, p).await
    {
        // Deleted (or started terminating, its RoleBindings going first) after the namespaces
        // were listed: a cluster admin's list would simply not show it any more.
        let table = matches!(p.response, ResponseKind::Table);
        let doc = serde_json::to_vec(&empty_list(p, table))
            .map_err(|e| ServerError::Internal(e.to_string()))?;
        return Ok(ListPart {
            status: StatusCode::OK,
            content_type: "application/json".into(),
            doc,
        });
    }
    let doc = rewrite_whole(ctx, p, status, &content_type, &raw)?;
    Ok(ListPart {
        status,
        content_type,
        doc,
    })
}

/// Is the namespace of this part gone or terminating upstream (asked as paddock itself)?
async fn namespace_going(state: &AppState, ctx: &TenantContext, p: &Plan) -> bool {
    let Some(ns) = p.namespace() else {
        return false;
    };
    let path = format!("/api/v1/namespaces/{}", ctx.tenant.upstream_name(ns));
    match crate::upjson::call(&state.upstream, Method::GET, &path, None, None).await {
        Ok(a) if a.status == StatusCode::NOT_FOUND => true,
        Ok(a) if a.status.is_success() => !a.body["metadata"]["deletionTimestamp"].is_null(),
        _ => false,
    }
}

/// The merged list being written: the envelope from the first part, the items of every part
/// in namespace order, and `metadata` last, once the resourceVersion is known.
struct Merger {
    table: bool,
    started: bool,
    first_item: bool,
    /// The smallest resourceVersion of the parts: a watch from it may repeat an event of a
    /// namespace listed later, but never misses one of a namespace listed earlier.
    resource_version: Option<(u64, String)>,
    /// A resourceVersion that is not a number (never seen from kube-apiserver): the first one.
    opaque_version: Option<String>,
}

impl Merger {
    fn new(table: bool) -> Self {
        Merger {
            table,
            started: false,
            first_item: true,
            resource_version: None,
            opaque_version: None,
        }
    }

    /// Appends one successful part's items to `out` (the envelope first, from the first part).
    fn push(&mut self, doc: &[u8], out: &mut Vec<u8>) -> Result<(), ServerError> {
        let pieces: ListPieces<'_> = serde_json::from_slice(doc)
            .map_err(|e| ServerError::Internal(format!("merging lists: {e}")))?;
        if !self.started {
            self.started = true;
            out.push(b'{');
            if let Some(k) = pieces.kind {
                out.extend_from_slice(b"\"kind\":");
                out.extend_from_slice(k.get().as_bytes());
                out.push(b',');
            }
            if let Some(a) = pieces.api_version {
                out.extend_from_slice(b"\"apiVersion\":");
                out.extend_from_slice(a.get().as_bytes());
                out.push(b',');
            }
            if self.table {
                out.extend_from_slice(b"\"columnDefinitions\":");
                out.extend_from_slice(
                    pieces
                        .column_definitions
                        .map_or("[]", |c| c.get())
                        .as_bytes(),
                );
                out.extend_from_slice(b",\"rows\":[");
            } else {
                out.extend_from_slice(b"\"items\":[");
            }
        }
        if let Some(rv) = pieces.metadata.resource_version {
            match rv.parse::<u64>() {
                Ok(n) if self.resource_version.as_ref().is_none_or(|(m, _)| n < *m) => {
                    self.resource_version = Some((n, rv));
                }
                Ok(_) => {}
                Err(_) => {
                    self.opaque_version.get_or_insert(rv);
                }
            }
        }
        let items = if self.table {
            &pieces.rows
        } else {
            &pieces.items
        };
        for item in items {
            if !self.first_item {
                out.push(b',');
            }
            self.first_item = false;
            out.extend_from_slice(item.get().as_bytes());
        }
        Ok(())
    }

    /// Closes the items and writes `metadata`.
    fn finish(self, out: &mut Vec<u8>) {
        let rv = self
            .opaque_version
            .or(self.resource_version.map(|(_, s)| s))
            .unwrap_or_else(|| "0".to_string());
        out.extend_from_slice(b"],\"metadata\":{\"resourceVersion\":");
        // A resourceVersion is a plain string; serde_json quotes and escapes it.
        out.extend_from_slice(
            serde_json::to_string(&rv)
                .unwrap_or_else(|_| "\"0\"".to_string())
                .as_bytes(),
        );
        out.extend_from_slice(b"}}");
    }
}

fn status_response(part: ListPart) -> Response<ResBody> {
    let mut r = Response::new(crate::body::full(part.doc));
    *r.status_mut() = part.status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

async fn serve_list(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    plans: Vec<Plan>,
    user: &str,
    groups: &[String],
    accept: &str,
) -> Result<Response<ResBody>, ServerError> {
    use futures_util::StreamExt;
    let table = matches!(plan.response, ResponseKind::Table);
    if plans.is_empty() {
        let body = serde_json::to_vec(&empty_list(plan, table))
            .map_err(|e| ServerError::Internal(e.to_string()))?;
        return Ok(json_response(body, "application/json"));
    }
    // The parts are fetched FANOUT_CONCURRENCY at a time and come out in namespace order.
    let state_for_parts = state.clone();
    let ctx_for_parts = ctx.clone();
    let (user, groups, accept) = (user.to_string(), groups.to_vec(), accept.to_string());
    let mut parts = futures_util::stream::iter(plans)
        .map(move |p| {
            let (state, ctx) = (state_for_parts.clone(), ctx_for_parts.clone());
            let (user, groups, accept) = (user.clone(), groups.clone(), accept.clone());
            async move { fetch_part(&state, &ctx, &p, &user, &groups, &accept).await }
        })
        .buffered(FANOUT_CONCURRENCY)
        .boxed();
    let mut merger = Merger::new(table);
    let mut held: Vec<u8> = Vec::new();
    let mut content_type = String::from("application/json");
    // Held back until complete, or until it grows past FANOUT_HOLD_BYTES.
    while held.len() <= FANOUT_HOLD_BYTES {
        let Some(part) = parts.next().await else {
            merger.finish(&mut held);
            return Ok(json_response(held, &content_type));
        };
        let part = part?;
        if !part.status.is_success() {
            // The first refusal answers for the whole request, as a missing cluster-wide
            // grant would.
            return Ok(status_response(part));
        }
        content_type = part.content_type.clone();
        merger.push(&part.doc, &mut held)?;
    }
    // Too big to hold: stream what is held, then each part as it arrives.
    let (tx, rx) = mpsc::channel::<Result<Bytes, BoxError>>(4);
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        if tx.send(Ok(Bytes::from(held))).await.is_err() {
            return;
        }
        loop {
            let next = tokio::select! {
                n = parts.next() => n,
                _ = shutdown.cancelled() => return,
                _ = tx.closed() => return,
            };
            let mut out = Vec::new();
            let step = match next {
                None => {
                    merger.finish(&mut out);
                    let _ = tx.send(Ok(Bytes::from(out))).await;
                    return;
                }
                Some(Ok(part)) if part.status.is_success() => merger.push(&part.doc, &mut out),
                Some(Ok(part)) => Err(ServerError::Forbidden(format!(
                    "a namespace of the cluster-wide list answered {} after the list had started: {}",
                    part.status,
                    String::from_utf8_lossy(&part.doc)
                ))),
                Some(Err(e)) => Err(e),
            };
            match step {
                Ok(()) => {
                    if !out.is_empty() && tx.send(Ok(Bytes::from(out))).await.is_err() {
                        return;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cluster-wide list ended early");
                    // The body ends with an error: the client sees a broken list, never a
                    // short one that looks complete.
                    let _ = tx.send(Err(Box::new(e))).await;
                    return;
                }
            }
        }
    });
    let body = http_body_util::StreamBody::new(ChannelStream { rx }.map_frames());
    let mut r = Response::new(BodyExt::boxed_unsync(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_str(&content_type)
            .unwrap_or(http::HeaderValue::from_static("application/json")),
    );
    Ok(r)
}

fn json_response(body: Vec<u8>, content_type: &str) -> Response<ResBody> {
    let mut r = Response::new(crate::body::full(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_str(content_type)
            .unwrap_or(http::HeaderValue::from_static("application/json")),
    );
    r
}

fn empty_list(plan: &Plan, table: bool) -> Value {
    if table {
        return serde_json::json!({
            "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "0"},
            "columnDefinitions": [{"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}],
            "rows": []
        });
    }
    let (api_version, kind) = match &plan.resource {
        Some(r) => (
            if r.group.is_empty() {
                r.version.clone()
            } else {
                format!("{}/{}", r.group, r.version)
            },
            format!("{}List", r.kind),
        ),
        None => ("v1".to_string(), "List".to_string()),
    };
    serde_json::json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": "0"}, "items": []})
}

/// How often a watch of a namespace created after the fan-out watch started is retried when
/// upstream refuses it (the namespace's RoleBinding is written just after the namespace).
const NEW_NAMESPACE_WATCH_ATTEMPTS: u32 = 10;
const NEW_NAMESPACE_WATCH_BACKOFF: std::time::Duration = std::time::Duration::from_millis(200);

/// What the parts of a fan-out watch share.
#[derive(Clone)]
struct WatchShared {
    state: Arc<AppState>,
    ctx: TenantContext,
    user: String,
    groups: Vec<String>,
    /// Accept sent upstream.
    accept: String,
    /// The client's own Accept (decides Table or not for new namespaces' parts).
    client_accept: Option<String>,
    tx: mpsc::Sender<Result<Bytes, BoxError>>,
    /// Cancelled when any part ends: the whole stream then ends and the client watches again
    /// from the last resourceVersion it saw. A part that ended alone would silently stop
    /// the events of its namespace.
    end: tokio_util::sync::CancellationToken,
    guard: Arc<crate::metrics::WatchGuard>,
}

/// Opens one namespace's watch; a refusal comes back as the rewritten Status.
async fn open_part(
    sh: &WatchShared,
    p: &Plan,
) -> Result<
    Result<(Response<hyper::body::Incoming>, crate::upstream::StreamSlot), ListPart>,
    ServerError,
> {
    let (resp, slot) = send_one(
        &sh.state,
        p,
        &sh.ctx.tenant,
        &sh.user,
        &sh.groups,
        &sh.accept,
        true,
    )
    .await?;
    let status = resp.status();
    if status.is_success() {
        let slot =
            slot.ok_or_else(|| ServerError::Internal("watch without a stream slot".into()))?;
        return Ok(Ok((resp, slot)));
    }
    let ct = content_type_of(&resp);
    let raw = collect_limited(resp.into_body(), 1 << 20).await?;
    let doc = rewrite_whole(&sh.ctx, p, status, &ct, &raw)?;
    Ok(Err(ListPart {
        status,
        content_type: ct,
        doc,
    }))
}

/// Forwards one namespace's events, rewritten, until it ends, the client goes, or the whole
/// fan-out ends. Its end ends the whole fan-out (see [`WatchShared::end`]).
fn spawn_part(
    sh: WatchShared,
    p: Plan,
    resp: Response<hyper::body::Incoming>,
    slot: crate::upstream::StreamSlot,
) {
    let ct = content_type_of(&resp);
    let mut rw = paddock_core::response_rewriter(&sh.ctx, &p, resp.status().as_u16(), &ct);
    // The upstream lost (health.rs) or this part's stream broken: the whole watch ends with
    // an ERROR event, as a namespaced watch does (proxy.rs), not with a reset stream.
    let lost = sh.state.health.lost_token();
    tokio::spawn(async move {
        let _guard = sh.guard.clone();
        let _slot = slot;
        let mut body = resp.into_body();
        let mut interrupted = false;
        loop {
            let frame = tokio::select! {
                f = body.frame() => f,
                _ = sh.state.shutdown.cancelled() => break,
                _ = sh.end.cancelled() => break,
                _ = sh.tx.closed() => break,
                _ = lost.cancelled() => { interrupted = true; break }
            };
            let frame = match frame {
                Some(Ok(f)) => f,
                Some(Err(_)) => {
                    interrupted = true;
                    break;
                }
                None => break,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let mut out = Vec::new();
            if let Err(e) = rw.feed(&data, &mut out) {
                let _ = sh.tx.send(Err(Box::new(e))).await;
                break;
            }
            if !out.is_empty() && sh.tx.send(Ok(Bytes::from(out))).await.is_err() {
                break;
            }
        }
        // The first part to notice sends the event; the others see the end and stop.
        if interrupted && !sh.end.is_cancelled() {
            sh.end.cancel();
            let _ = sh
                .tx
                .send(Ok(crate::error::watch_interrupted_event()))
                .await;
        }
        sh.end.cancel();
    });
}

/// Who asks for a fan-out watch, and in what form.
struct WatchCaller<'a> {
    user: &'a str,
    groups: &'a [String],
    upstream_accept: &'a str,
    client_accept: Option<&'a str>,
}

async fn serve_watch(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    listed: TenantNamespaces,
    plans: Vec<Plan>,
    caller: WatchCaller<'_>,
) -> Result<Response<ResBody>, ServerError> {
    use futures_util::StreamExt;
    let (tx, rx) = mpsc::channel::<Result<Bytes, BoxError>>(64);
    let sh = WatchShared {
        state: state.clone(),
        ctx: ctx.clone(),
        user: caller.user.to_string(),
        groups: caller.groups.to_vec(),
        accept: caller.upstream_accept.to_string(),
        client_accept: caller.client_accept.map(str::to_string),
        tx,
        end: state.shutdown.child_token(),
        guard: Arc::new(crate::metrics::WatchGuard::open(state.metrics.clone())),
    };
    // The namespaces' watches are opened FANOUT_CONCURRENCY at a time; the first refusal
    // answers for the whole request.
    let opened: Vec<_> = futures_util::stream::iter(plans)
        .map(|p| {
            let sh = sh.clone();
            async move { open_part(&sh, &p).await.map(|r| (p, r)) }
        })
        .buffered(FANOUT_CONCURRENCY)
        .collect()
        .await;
    let mut content_type = String::from("application/json");
    let mut ready = Vec::with_capacity(opened.len());
    for o in opened {
        match o {
            Err(e) => {
                sh.end.cancel();
                return Err(e);
            }
            Ok((_, Err(refusal))) => {
                sh.end.cancel();
                return Ok(status_response(refusal));
            }
            Ok((p, Ok((resp, slot)))) => {
                content_type = content_type_of(&resp);
                ready.push((p, resp, slot));
            }
        }
    }
    for (p, resp, slot) in ready {
        spawn_part(sh.clone(), p, resp, slot);
    }
    // Namespaces the tenant creates while the watch runs join it.
    tokio::spawn(follow_new_namespaces(sh.clone(), plan.clone(), listed));
    drop(sh);
    let body = http_body_util::StreamBody::new(ChannelStream { rx }.map_frames());
    let mut r = Response::new(BodyExt::boxed_unsync(body));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_str(&content_type)
            .unwrap_or(http::HeaderValue::from_static("application/json")),
    );
    Ok(r)
}

/// Watches the tenant's namespaces upstream (paddock's own credential, label-selected, from
/// the resourceVersion of the list the fan-out started from) and adds a part for each
/// namespace created since, watched from the namespace's own resourceVersion so that nothing
/// created in it is missed. If that fails, or the namespace watch ends, the whole fan-out
/// ends and the client watches again (and lists, if it must).
async fn follow_new_namespaces(sh: WatchShared, plan: Plan, listed: TenantNamespaces) {
    let result = follow_inner(&sh, &plan, listed).await;
    if let Err(e) = result {
        tracing::warn!(tenant = %sh.ctx.tenant, error = %e, "cluster-wide watch: following new namespaces failed; ending the watch");
    }
    sh.end.cancel();
}

async fn follow_inner(
    sh: &WatchShared,
    plan: &Plan,
    listed: TenantNamespaces,
) -> Result<(), ServerError> {
    let path = format!(
        "/api/v1/namespaces?watch=true&allowWatchBookmarks=true&labelSelector={}&resourceVersion={}",
        query_escape(&sh.ctx.tenant.tenant_label_selector()),
        query_escape(&listed.resource_version)
    );
    let req = Request::builder()
        .method(Method::GET)
        .uri(sh.state.upstream.uri(&path)?)
        .header(header::ACCEPT, "application/json")
        .body(crate::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let (resp, _slot) = sh.state.upstream.send_watch(req).await?;
    if !resp.status().is_success() {
        return Err(ServerError::Upstream(format!(
            "watching the tenant's namespaces upstream: {}",
            resp.status()
        )));
    }
    let mut known: std::collections::HashSet<String> = listed.names.into_iter().collect();
    let prefix = sh.ctx.tenant.prefix();
    let mut body = resp.into_body();
    let mut line: Vec<u8> = Vec::new();
    loop {
        let frame = tokio::select! {
            f = body.frame() => f,
            _ = sh.end.cancelled() => return Ok(()),
            _ = sh.tx.closed() => return Ok(()),
        };
        let Some(frame) = frame else {
            return Ok(());
        };
        let frame = frame.map_err(|e| ServerError::Upstream(format!("namespace watch: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        line.extend_from_slice(&data);
        if line.len() > MAX_NAMESPACE_EVENT_BYTES {
            return Err(ServerError::Upstream(
                "namespace watch event too large".into(),
            ));
        }
        while let Some(nl) = line.iter().position(|&b| b == b'\n') {
            let event: Vec<u8> = line.drain(..=nl).collect();
            let v: Value = serde_json::from_slice(&event)
                .map_err(|e| ServerError::Upstream(format!("namespace watch event: {e}")))?;
            match v["type"].as_str() {
                Some("ADDED") => {}
                Some("ERROR") => {
                    return Err(ServerError::Upstream(format!(
                        "namespace watch: {}",
                        v["object"]["message"].as_str().unwrap_or("error event")
                    )));
                }
                _ => continue,
            }
            let meta = &v["object"]["metadata"];
            let (Some(up_ns), Some(rv)) = (meta["name"].as_str(), meta["resourceVersion"].as_str())
            else {
                continue;
            };
            if !up_ns.starts_with(&prefix) || !known.insert(up_ns.to_string()) {
                continue;
            }
            let Some(ns) = sh.ctx.tenant.strip(up_ns) else {
                continue;
            };
            let p = part_plan(&sh.ctx, plan, ns, Some(rv), sh.client_accept.as_deref())?;
            add_new_part(sh, p).await?;
        }
    }
}

/// Largest namespace watch event paddock reads.
const MAX_NAMESPACE_EVENT_BYTES: usize = 4 << 20;

async fn add_new_part(sh: &WatchShared, p: Plan) -> Result<(), ServerError> {
    for attempt in 1..=NEW_NAMESPACE_WATCH_ATTEMPTS {
        match open_part(sh, &p).await? {
            Ok((resp, slot)) => {
                spawn_part(sh.clone(), p, resp, slot);
                return Ok(());
            }
            Err(refusal) if attempt < NEW_NAMESPACE_WATCH_ATTEMPTS => {
                tracing::debug!(status = %refusal.status, attempt, "watch of a new namespace refused; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(NEW_NAMESPACE_WATCH_BACKOFF) => {}
                    _ = sh.end.cancelled() => return Ok(()),
                }
            }
            Err(refusal) => {
                return Err(ServerError::Upstream(format!(
                    "watch of a new namespace refused: {}",
                    refusal.status
                )));
            }
        }
    }
    Ok(())
}

struct ChannelStream {
    rx: mpsc::Receiver<Result<Bytes, BoxError>>,
}

impl ChannelStream {
    fn map_frames(
        self,
    ) -> impl futures_util::Stream<Item = Result<http_body::Frame<Bytes>, BoxError>> + Send {
        futures_util::stream::unfold(self.rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|item| (item.map(http_body::Frame::data), rx))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(table: bool, parts: &[&str]) -> Value {
        let mut m = Merger::new(table);
        let mut out = Vec::new();
        for p in parts {
            m.push(p.as_bytes(), &mut out).expect("push");
        }
        m.finish(&mut out);
        serde_json::from_slice(&out).expect("the merged list is JSON")
    }

    #[test]
    fn merges_items_in_order_with_the_smallest_resource_version() {
        let v = merged(
            false,
            &[
                r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"120"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#,
                r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[]}"#,
                r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"130","continue":"x"},"items":[{"metadata":{"name":"c"}}]}"#,
            ],
        );
        assert_eq!(v["kind"], "ConfigMapList");
        assert_eq!(v["apiVersion"], "v1");
        // The smallest: a watch from it can repeat an event, never miss one.
        assert_eq!(v["metadata"], serde_json::json!({"resourceVersion": "100"}));
        let names: Vec<&str> = v["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn merges_table_rows_under_the_first_column_definitions() {
        let v = merged(
            true,
            &[
                r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":[{"name":"Name"}],"rows":[{"cells":["a"]}]}"#,
                r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"columnDefinitions":[{"name":"Name"}],"rows":[{"cells":["b"]}]}"#,
            ],
        );
        assert_eq!(v["kind"], "Table");
        assert_eq!(
            v["columnDefinitions"],
            serde_json::json!([{"name": "Name"}])
        );
        assert_eq!(
            v["rows"],
            serde_json::json!([{"cells": ["a"]}, {"cells": ["b"]}])
        );
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert!(v.get("items").is_none());
    }

    #[test]
    fn refuses_a_part_that_is_not_a_list() {
        let mut m = Merger::new(false);
        let mut out = Vec::new();
        assert!(m.push(b"{not json", &mut out).is_err());
    }
}
