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
use crate::proxy::add_impersonation;
use crate::state::AppState;

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

/// The tenant's namespaces, as upstream names.
pub async fn tenant_namespaces(
    state: &AppState,
    ctx: &TenantContext,
) -> Result<Vec<String>, ServerError> {
    let path = format!(
        "/api/v1/namespaces?labelSelector={}",
        urlenc(&ctx.tenant.tenant_label_selector())
    );
    let req = Request::builder()
        .method(Method::GET)
        .uri(state.upstream.uri(&path)?)
        .header(header::ACCEPT, "application/json")
        .body(crate::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let resp = state.upstream.send(req, false).await?;
    let status = resp.status();
    let body = collect_limited(resp.into_body(), MAX_NAMESPACE_LIST_BYTES).await?;
    if !status.is_success() {
        return Err(ServerError::Upstream(format!(
            "listing the tenant's namespaces upstream: {status}"
        )));
    }
    let v: Value = serde_json::from_slice(&body)
        .map_err(|e| ServerError::Upstream(format!("namespace list: {e}")))?;
    let prefix = ctx.tenant.prefix();
    let mut names: Vec<String> = v["items"]
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
    Ok(names)
}

fn urlenc(s: &str) -> String {
    form_urlencoded_byte_serialize(s)
}

fn form_urlencoded_byte_serialize(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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
/// returned whole (a continue token cannot span namespaces).
fn per_namespace_query(plan: &Plan) -> String {
    let mut ser = String::new();
    for (k, v) in &plan.request.query {
        if k == "limit" || k == "continue" {
            continue;
        }
        if !ser.is_empty() {
            ser.push('&');
        }
        ser.push_str(&urlenc(k));
        ser.push('=');
        ser.push_str(&urlenc(v));
    }
    ser
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
    let namespaces = tenant_namespaces(state, ctx).await?;
    let query = per_namespace_query(plan);
    let method = plan.request.verb;
    let mut plans = Vec::with_capacity(namespaces.len());
    for up_ns in &namespaces {
        let Some(ns) = ctx.tenant.strip(up_ns) else {
            continue;
        };
        let Some(path) = namespaced_path(plan, ns) else {
            continue;
        };
        let parsed = paddock_core::parse_request("GET", &path, Some(&query))?;
        let mut p = paddock_core::plan(ctx, parsed)?;
        p.response = paddock_core::response_kind_for(&p, accept);
        plans.push(p);
    }
    let upstream_accept = paddock_core::upstream_accept(accept);
    if matches!(method, Verb::Watch) {
        return serve_watch(state, ctx, plans, user, groups, &upstream_accept).await;
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
    Ok((state.upstream.send(req, false).await?, None))
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
    let table = matches!(plan.response, ResponseKind::Table);
    let mut merged: Option<Value> = None;
    let mut collected: Vec<Value> = Vec::new();
    let mut content_type = String::from("application/json");
    for p in &plans {
        let (resp, _) = send_one(state, p, &ctx.tenant, user, groups, accept, false).await?;
        let status = resp.status();
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let raw = collect_limited(resp.into_body(), MAX_NAMESPACE_LIST_BYTES).await?;
        let mut rw = paddock_core::response_rewriter(ctx, p, status.as_u16(), &ct);
        let mut out = Vec::with_capacity(raw.len());
        rw.feed(&raw, &mut out)?;
        rw.finish(&mut out)?;
        if !status.is_success() {
            // The first refusal answers for the whole request, as a missing cluster-wide
            // grant would.
            let mut r = Response::new(crate::body::full(out));
            *r.status_mut() = status;
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            return Ok(r);
        }
        content_type = ct;
        let mut v: Value = serde_json::from_slice(&out)
            .map_err(|e| ServerError::Internal(format!("merging lists: {e}")))?;
        let key = if table { "rows" } else { "items" };
        if let Some(items) = v.get_mut(key).and_then(Value::as_array_mut) {
            collected.append(items);
        }
        match &mut merged {
            None => merged = Some(v),
            Some(m) => {
                if let Some(rv) = v.pointer("/metadata/resourceVersion").cloned() {
                    m["metadata"]["resourceVersion"] = rv;
                }
            }
        }
    }
    let mut result = match merged {
        Some(m) => m,
        None => empty_list(plan, table),
    };
    if let Some(meta) = result.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("continue");
        meta.remove("remainingItemCount");
    }
    result[if table { "rows" } else { "items" }] = Value::Array(collected);
    let body = serde_json::to_vec(&result).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = Response::new(crate::body::full(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_str(&content_type)
            .unwrap_or(http::HeaderValue::from_static("application/json")),
    );
    Ok(r)
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

async fn serve_watch(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plans: Vec<Plan>,
    user: &str,
    groups: &[String],
    accept: &str,
) -> Result<Response<ResBody>, ServerError> {
    let (tx, rx) = mpsc::channel::<Result<Bytes, BoxError>>(64);
    let mut content_type = String::from("application/json");
    let guard = Arc::new(crate::metrics::WatchGuard::open(state.metrics.clone()));
    for p in plans {
        let (resp, slot) = send_one(state, &p, &ctx.tenant, user, groups, accept, true).await?;
        let status = resp.status();
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        if !status.is_success() {
            let raw = collect_limited(resp.into_body(), 1 << 20).await?;
            let mut rw = paddock_core::response_rewriter(ctx, &p, status.as_u16(), &ct);
            let mut out = Vec::new();
            rw.feed(&raw, &mut out)?;
            rw.finish(&mut out)?;
            let mut r = Response::new(crate::body::full(out));
            *r.status_mut() = status;
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            return Ok(r);
        }
        content_type = ct.clone();
        let mut rw = paddock_core::response_rewriter(ctx, &p, status.as_u16(), &ct);
        let tx = tx.clone();
        let guard = guard.clone();
        let shutdown = state.shutdown.clone();
        tokio::spawn(async move {
            let _guard = guard;
            let _slot = slot;
            let mut body = resp.into_body();
            loop {
                let frame = tokio::select! {
                    f = body.frame() => f,
                    _ = shutdown.cancelled() => break,
                    _ = tx.closed() => break,
                };
                let Some(frame) = frame else { break };
                let Ok(frame) = frame else { break };
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                let mut out = Vec::new();
                if let Err(e) = rw.feed(&data, &mut out) {
                    let _ = tx.send(Err(Box::new(e))).await;
                    break;
                }
                if !out.is_empty() && tx.send(Ok(Bytes::from(out))).await.is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
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
