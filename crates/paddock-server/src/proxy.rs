//! The tenant request pipeline: parse, plan (translation core), translate the body, send
//! upstream as the impersonated tenant user, rewrite the response as a stream.

use std::sync::Arc;

use http::header::{self, HeaderValue};
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use paddock_core::{Plan, ResponseKind, TenantContext, TenantId};

use crate::body::{ResBody, RewriteBody, empty, full, passthrough};
use crate::error::ServerError;
use crate::fanout;
use crate::limit::collect_limited;
use crate::state::AppState;
use crate::upstream::{Route, StreamSlot, UpBody};

// Moved out of the pipeline; re-exported for callers of the old paths.
pub use crate::metrics::{method_verb, verb_name};
use crate::outbound::*;
pub use crate::outbound::{add_impersonation, add_impersonation_as};
use crate::rewrite::*;
pub use crate::rewrite::{content_type_of, rewrite_whole};

/// A tenant caller as the request path sees it (after `kubectl --as`).
struct TenantUser<'a> {
    tenant: &'a TenantId,
    user: &'a str,
    groups: &'a [String],
}

/// The upstream request, and what its sending decided for the steps after it.
struct Outbound {
    request: Request<UpBody>,
    /// The upstream identity it carries.
    who: paddock_core::identity::As,
    /// The namespace of a SelfSubjectRulesReview (its answer is rewritten for the tenant).
    rules_namespace: Option<String>,
    /// The client side of an upgrade (exec, attach, port-forward).
    client_upgrade: Option<hyper::upgrade::OnUpgrade>,
}

/// Serves one tenant request: plan it, build and send the upstream request, run the
/// follow-ups of a successful write, and rewrite the answer for the tenant.
pub async fn serve_tenant(
    state: &Arc<AppState>,
    tenant: &TenantId,
    user: &str,
    groups: &[String],
    req: Request<Incoming>,
) -> Result<(Response<ResBody>, &'static str), ServerError> {
    // `kubectl --as`: the identity is swapped for a tenant identity the caller may act as;
    // the client's Impersonate-* headers themselves are never forwarded.
    let acting =
        crate::impersonate::acting_identity(state, tenant, user, groups, req.headers()).await?;
    let (user, groups): (&str, &[String]) = match &acting {
        Some((u, g)) => (u.as_str(), g.as_slice()),
        None => (user, groups),
    };
    let caller = TenantUser {
        tenant,
        user,
        groups,
    };
    let (ctx, mut plan) = match plan_request(state, &caller, &req).await? {
        Ok(planned) => planned,
        Err(answer) => return Ok((answer, method_verb(req.method()))),
    };
    let accept = header_string(&req, header::ACCEPT);
    let if_none_match = header_string(&req, header::IF_NONE_MATCH);
    plan.response = paddock_core::response_kind_for(&plan, accept.as_deref());
    let verb = verb_name(&plan);

    if fanout::is_cluster_wide_namespaced(&plan) {
        let resp = fanout::serve(state, &ctx, &plan, user, groups, accept.as_deref()).await?;
        return Ok((resp, verb));
    }
    let outbound = upstream_request(state, &ctx, &plan, &caller, accept.as_deref(), req).await?;
    // Short requests are bounded as a whole (headers and a body read whole) by
    // `upstream_timeout`; watches and other long-running requests only until their headers.
    let deadline = state.upstream.deadline();
    let (resp, slot) = send_upstream(state, &plan, outbound.request, deadline).await?;
    let follow = FollowUp {
        who: outbound.who,
        rules_namespace: outbound.rules_namespace.as_deref(),
        deadline,
    };
    let resp = match follow_ups(state, &ctx, &plan, &caller, follow, resp).await? {
        Ok(answer) => return Ok((answer, verb)),
        Err(resp) => resp,
    };
    if plan.upgrade && resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        return Ok((
            splice_upgrade(&ctx, &plan, outbound.client_upgrade, resp)?,
            verb,
        ));
    }
    let asks = ClientAsks {
        accept,
        if_none_match,
    };
    let out = rewrite_response(state, &ctx, &plan, resp, slot, deadline, asks).await?;
    Ok((out, verb))
}

fn header_string(req: &Request<Incoming>, name: header::HeaderName) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Parses and plans the request; a CRD the tenant has just created is found by re-reading
/// discovery once. `Err(answer)`: answered already (a write to a shared read-only object that
/// does not exist is a NotFound, not a refusal).
async fn plan_request(
    state: &Arc<AppState>,
    caller: &TenantUser<'_>,
    req: &Request<Incoming>,
) -> Result<Result<(TenantContext, Plan), Response<ResBody>>, ServerError> {
    let catalog = state.catalog().await?;
    let mut ctx = TenantContext {
        tenant: caller.tenant.clone(),
        catalog,
    };
    let method = req.method().as_str();
    let path = req.uri().path();
    let query = req.uri().query();
    let parsed = paddock_core::parse_request(method, path, query)?;
    let plan = match paddock_core::plan(&ctx, parsed) {
        Ok(p) => p,
        Err(e) if e.http_code() == 404 => {
            // Maybe a CRD the tenant has just created: re-read discovery once and retry.
            ctx.catalog = state.catalogs.refresh(&state.upstream).await?;
            paddock_core::plan(&ctx, paddock_core::parse_request(method, path, query)?)?
        }
        Err(e) if e.http_code() == 403 => {
            let parsed = paddock_core::parse_request(method, path, query)?;
            return match crate::absent::answer_if_shared_object_absent(
                state,
                &ctx,
                &parsed,
                caller.user,
                caller.groups,
            )
            .await?
            {
                Some(resp) => Ok(Err(resp)),
                None => Err(e.into()),
            };
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Ok((ctx, plan)))
}

/// Builds the upstream request: translated path, forwarded headers, the translated body, and
/// the upstream identity (the real one, or the cluster shadow for cluster-scoped objects;
/// decided once the body is translated).
async fn upstream_request(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    caller: &TenantUser<'_>,
    accept: Option<&str>,
    req: Request<Incoming>,
) -> Result<Outbound, ServerError> {
    let (parts, body) = req.into_parts();
    let mut up = Request::builder()
        .method(parts.method.clone())
        .uri(state.upstream.uri(&plan.upstream_path_and_query)?);
    let headers = up
        .headers_mut()
        .ok_or_else(|| ServerError::Internal("request builder".into()))?;
    copy_request_headers(&parts.headers, headers, plan.upgrade);
    // Upgrades (exec, attach, port-forward) get an Accept only if the client sent one: the
    // apiserver hands the request's headers on to the kubelet, whose go-restful routes answer
    // an Accept they do not produce with 406 (kwok does; kubectl sends none).
    if !plan.upgrade || accept.is_some() {
        headers.insert(
            header::ACCEPT,
            header_value(&paddock_core::upstream_accept(accept))?,
        );
    }
    let mut who = crate::rbac_sync::identity_for(plan, None);
    let mut rules_namespace = None;
    let mut client_upgrade = None;
    let up_body: UpBody = if plan.needs_body_translation {
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json")
            .to_string();
        let raw = collect_limited(body, state.config.max_body_bytes).await?;
        if let Some(slot) = parts.extensions.get::<crate::audit::AuditBody>() {
            let _ = slot.0.set(raw.clone());
        }
        let (mut translated, up_ct) =
            paddock_core::translate_request_body(ctx, plan, &content_type, &raw)?;
        if is_namespace_write(plan) {
            translated = crate::provision::lock_namespace_labels(translated, &up_ct)?;
            if matches!(plan.request.verb, paddock_core::Verb::Create) {
                let dry_run = plan.upstream_path_and_query.contains("dryRun=");
                crate::quota::admit_namespace_create(
                    state,
                    &ctx.tenant,
                    &translated,
                    &up_ct,
                    dry_run,
                )
                .await?;
            }
        }
        translated = crate::reviews::normalize_self_review(ctx, plan, translated);
        if crate::reviews::is_self_review(plan) {
            rules_namespace = paddock_core::review::rules_review_namespace(&translated);
        }
        who = crate::rbac_sync::identity_for(plan, Some(&translated));
        headers.insert(header::CONTENT_TYPE, header_value(&up_ct)?);
        crate::body::full_up(translated)
    } else if plan.upgrade {
        let mut client_req = Request::from_parts(parts, body);
        client_upgrade = Some(hyper::upgrade::on(&mut client_req));
        crate::body::empty_up()
    } else {
        // Requests without a body to translate (GET, DELETE without options, CONNECT): the
        // body, if any (DeleteOptions), is small and carries no names.
        let raw = collect_limited(body, state.config.max_body_bytes).await?;
        if raw.is_empty() {
            crate::body::empty_up()
        } else {
            if let Some(ct) = parts_content_type(headers) {
                headers.insert(header::CONTENT_TYPE, ct);
            }
            crate::body::full_up(raw)
        }
    };
    add_impersonation_as(headers, caller.tenant, caller.user, caller.groups, who)?;
    let request = up
        .body(up_body)
        .map_err(|e| ServerError::Internal(format!("building upstream request: {e}")))?;
    Ok(Outbound {
        request,
        who,
        rules_namespace,
        client_upgrade,
    })
}

/// Sends the request through the pool its plan calls for. Watches go to the watch pool
/// (HTTP/2, many per connection); their stream slot lives as long as the response body.
async fn send_upstream(
    state: &Arc<AppState>,
    plan: &Plan,
    up_req: Request<UpBody>,
    deadline: tokio::time::Instant,
) -> Result<(Response<Incoming>, Option<StreamSlot>), ServerError> {
    let is_watch = matches!(
        plan.response,
        ResponseKind::Watch | ResponseKind::TableWatch
    ) && !plan.upgrade;
    let sent = if is_watch {
        state
            .upstream
            .send_watch(up_req)
            .await
            .map(|(r, s)| (r, Some(s)))
    } else {
        let route = if plan.long_running || plan.upgrade {
            Route::Stream
        } else if matches!(plan.request.verb, paddock_core::Verb::List) {
            Route::Bulk
        } else {
            Route::Short
        };
        state
            .upstream
            .send_until(up_req, route, deadline)
            .await
            .map(|r| (r, None))
    };
    match sent {
        Ok((resp, slot)) => {
            if resp.status().is_server_error() {
                state.metrics.upstream_error("status_5xx");
            }
            Ok((resp, slot))
        }
        Err(e) => {
            state.metrics.upstream_error(match e {
                ServerError::UpstreamTimeout(..) => "timeout",
                _ => "connect",
            });
            Err(e)
        }
    }
}

/// What [`follow_ups`] needs from the sending of the request.
struct FollowUp<'a> {
    who: paddock_core::identity::As,
    rules_namespace: Option<&'a str>,
    deadline: tokio::time::Instant,
}

/// The steps after upstream answered, before the answer is rewritten: a refusal in a
/// namespace that does not exist, the RBAC mirrors of a changed ClusterRoleBinding or CRD, a
/// self review's answer, a new namespace's setup. `Ok(Err(resp))`: nothing to do; the answer
/// is rewritten as it is.
async fn follow_ups(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    caller: &TenantUser<'_>,
    follow: FollowUp<'_>,
    resp: Response<Incoming>,
) -> Result<Result<Response<ResBody>, Response<Incoming>>, ServerError> {
    let status = resp.status();
    let tenant = caller.tenant;
    if status == StatusCode::FORBIDDEN
        && let Some(answer) =
            crate::absent::answer_if_absent_namespace(state, ctx, plan, caller.user, caller.groups)
                .await?
    {
        // Rights in a namespace come from RoleBindings inside it: in a namespace that does
        // not exist a cluster admin gets an empty list or a NotFound, not a refusal.
        crate::body::drain(resp.into_body()).await;
        return Ok(Ok(answer));
    }
    if status.is_success() && crate::rbac_sync::needs_sync(plan) {
        // A ClusterRoleBinding or CRD changed: its namespaced mirrors (and the tenant's
        // custom-resources role) follow before the answer, so the change is usable at once.
        if let Err(e) = crate::rbac_sync::sync_tenant(&state.upstream, tenant).await {
            tracing::warn!(tenant = %tenant, error = %e, "RBAC mirror sync failed; the periodic resync will retry");
        }
    }
    if status.is_success() && crate::reviews::is_self_review(plan) {
        // Upstream's answer (JSON, whatever the request's encoding) shows the attributes; it
        // is turned into the answer for the tenant's cluster (reviews.rs).
        let raw = state
            .upstream
            .collect_until(resp.into_body(), 1 << 20, follow.deadline)
            .await?;
        let raw = crate::reviews::answer_for_tenant(
            state,
            ctx,
            plan,
            caller.user,
            caller.groups,
            follow.who,
            follow.rules_namespace,
            raw,
        )
        .await?;
        let doc = rewrite_whole(ctx, plan, status, "application/json", &raw)?;
        return whole_answer(status, "application/json", doc).map(Ok);
    }
    if status.is_success() && is_namespace_create(plan) {
        // The tenant's admins get full rights in every namespace of theirs; done before
        // answering so the namespace is usable at once. The name comes from upstream's answer
        // (the request may have used generateName or a protobuf body).
        let ct = content_type_of(&resp);
        let raw = state
            .upstream
            .collect_until(resp.into_body(), 1 << 20, follow.deadline)
            .await?;
        if let Some(ns) = serde_json::from_slice::<serde_json::Value>(&raw)
            .ok()
            .and_then(|v| v["metadata"]["name"].as_str().map(str::to_string))
            && ns.starts_with(&tenant.prefix())
        {
            crate::lifecycle::ensure_namespace_binding(&state.upstream, tenant, &ns).await?;
            if let Some(rec) = state.cache.tenant(tenant.as_str())
                && !rec.billing.is_empty()
            {
                crate::billing::stamp_namespace(&state.upstream, &rec.billing, &ns).await?;
            }
        }
        let doc = rewrite_whole(ctx, plan, status, &ct, &raw)?;
        return whole_answer(status, &ct, doc).map(Ok);
    }
    Ok(Err(resp))
}

fn whole_answer(
    status: StatusCode,
    content_type: &str,
    doc: Vec<u8>,
) -> Result<Response<ResBody>, ServerError> {
    let mut out = Response::builder().status(status);
    if let Some(h) = out.headers_mut() {
        h.insert(header::CONTENT_TYPE, header_value(content_type)?);
    }
    out.body(full(doc))
        .map_err(|e| ServerError::Internal(e.to_string()))
}

/// Joins the client's and upstream's upgraded connections (exec, attach, port-forward).
fn splice_upgrade(
    ctx: &TenantContext,
    plan: &Plan,
    client_upgrade: Option<hyper::upgrade::OnUpgrade>,
    mut resp: Response<Incoming>,
) -> Result<Response<ResBody>, ServerError> {
    let Some(client_upgrade) = client_upgrade else {
        return Err(ServerError::BadRequest(
            "upgrade response without an upgrade request".into(),
        ));
    };
    let upstream_upgrade = hyper::upgrade::on(&mut resp);
    // exec/attach over WebSocket: the error channel carries a Status from the apiserver or
    // the kubelet that may name upstream objects (`pod "foofoo-streams/web-1"`); it is
    // rewritten, every other frame passes as it is. SPDY streams pass unchanged.
    let rewrite_errors = matches!(plan.subresource(), Some("exec" | "attach"))
        && resp
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok())
            .is_some_and(paddock_core::wsframe::is_channel_protocol);
    let stream_ctx = ctx.clone();
    tokio::spawn(async move {
        match (client_upgrade.await, upstream_upgrade.await) {
            (Ok(c), Ok(u)) => {
                let mut c = hyper_util::rt::TokioIo::new(c);
                let mut u = hyper_util::rt::TokioIo::new(u);
                let r = if rewrite_errors {
                    splice_rewriting_errors(c, u, stream_ctx).await
                } else {
                    tokio::io::copy_bidirectional(&mut c, &mut u)
                        .await
                        .map(|_| ())
                };
                if let Err(e) = r {
                    tracing::debug!(error = %e, "upgraded stream ended");
                }
            }
            (Err(e), _) | (_, Err(e)) => tracing::warn!(error = %e, "upgrade failed"),
        }
    });
    let mut out = Response::builder().status(resp.status());
    if let Some(h) = out.headers_mut() {
        copy_response_headers(resp.headers(), h, UPGRADE_RESPONSE_HEADERS);
    }
    out.body(empty())
        .map_err(|e| ServerError::Internal(e.to_string()))
}

/// What the client asked of the answer's form (its Accept and If-None-Match headers).
struct ClientAsks {
    accept: Option<String>,
    if_none_match: Option<String>,
}

/// The answer for the tenant: passed through, rewritten whole (documents, small answers), or
/// rewritten as a stream (lists, watches, logs).
async fn rewrite_response(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    resp: Response<Incoming>,
    slot: Option<StreamSlot>,
    deadline: tokio::time::Instant,
    asks: ClientAsks,
) -> Result<Response<ResBody>, ServerError> {
    let ClientAsks {
        accept,
        if_none_match,
    } = asks;
    let status = resp.status();
    let content_type = content_type_of(&resp);
    let mut out = Response::builder().status(status);
    let out_headers = out
        .headers_mut()
        .ok_or_else(|| ServerError::Internal("response builder".into()))?;
    copy_response_headers(resp.headers(), out_headers, FORWARDED_RESPONSE_HEADERS);

    let buffered = matches!(
        plan.response,
        ResponseKind::Discovery | ResponseKind::OpenApi
    );
    let body = if matches!(plan.response, ResponseKind::PassThrough) && status.is_success() {
        passthrough(resp.into_body())
    } else if buffered && status.is_success() {
        let raw = state
            .upstream
            .collect_until(resp.into_body(), MAX_DOCUMENT_BYTES, deadline)
            .await?;
        let mut doc = rewrite_whole(ctx, plan, status, &content_type, &raw)?;
        if matches!(plan.request.path, paddock_core::ApiPath::Apis)
            && let Some(with_paddock) = crate::admin::add_tenant_group(&doc)
        {
            doc = with_paddock;
        }
        // As kube-openapi: one ETag for both encodings of the same document (Vary: Accept).
        let etag = format!("\"{}\"", paddock_core::etag(&doc));
        out_headers.insert(header::ETAG, header_value(&etag)?);
        out_headers.insert(header::VARY, HeaderValue::from_static("Accept"));
        if if_none_match.as_deref() == Some(etag.as_str()) {
            // The ETag is computed over this tenant's document, so a 304 can never hand a
            // client another tenant's cached view.
            out_headers.remove(header::CONTENT_TYPE);
            return out
                .status(StatusCode::NOT_MODIFIED)
                .body(empty())
                .map_err(|e| ServerError::Internal(e.to_string()));
        }
        if matches!(plan.request.path, paddock_core::ApiPath::OpenApiV2)
            && paddock_core::openapi_pb::wants_openapi_v2_protobuf(accept.as_deref())
        {
            doc = paddock_core::openapi_pb::openapi_v2_protobuf(&doc)?;
            out_headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(paddock_core::openapi_pb::OPENAPI_V2_PROTOBUF),
            );
        }
        full(doc)
    } else if let Some(len) = small_complete_body(plan, resp.headers()) {
        // A small answer of known length (a GET of one object, a write's answer, a Status):
        // read it whole and answer with headers and body together. Streamed, the headers
        // would leave first and the body in a second write, after another wake-up.
        let raw = state
            .upstream
            .collect_until(resp.into_body(), len, deadline)
            .await?;
        full(rewrite_whole(ctx, plan, status, &content_type, &raw)?)
    } else {
        stream_body(state, ctx, plan, resp, slot, &content_type, deadline)
    };
    out.body(body)
        .map_err(|e| ServerError::Internal(e.to_string()))
}

/// A list, watch or log answer rewritten chunk by chunk as it arrives.
fn stream_body(
    state: &Arc<AppState>,
    ctx: &TenantContext,
    plan: &Plan,
    resp: Response<Incoming>,
    slot: Option<StreamSlot>,
    content_type: &str,
    deadline: tokio::time::Instant,
) -> ResBody {
    let status = resp.status();
    let rw = paddock_core::response_rewriter(ctx, plan, status.as_u16(), content_type);
    let watch = matches!(
        plan.response,
        ResponseKind::Watch | ResponseKind::TableWatch
    );
    let on_finish: Option<Box<dyn FnOnce() + Send>> = if watch {
        let guard = crate::metrics::WatchGuard::open(state.metrics.clone());
        Some(Box::new(move || {
            drop(guard);
            drop(slot);
        }))
    } else {
        None
    };
    let body = RewriteBody::new(resp.into_body(), rw, on_finish);
    if watch {
        // Ends cleanly at shutdown; with an ERROR event when the upstream is lost.
        body.until(state.shutdown.clone())
            .interrupt_on(
                state.health.lost_token(),
                crate::error::watch_interrupted_event(),
            )
            .boxed()
    } else if plan.long_running {
        // `logs -f` and the like: what arrives leaves at once.
        body.boxed()
    } else {
        body.batched().deadline(deadline).boxed()
    }
}

fn is_namespace_write(plan: &Plan) -> bool {
    matches!(
        plan.request.verb,
        paddock_core::Verb::Create | paddock_core::Verb::Update
    ) && plan.subresource().is_none()
        && plan
            .resource
            .as_ref()
            .is_some_and(|r| r.group.is_empty() && r.resource == "namespaces")
}

/// A namespace create, or a patch that may have created one (server-side apply).
fn is_namespace_create(plan: &Plan) -> bool {
    (matches!(plan.request.verb, paddock_core::Verb::Create)
        || (matches!(plan.request.verb, paddock_core::Verb::Patch) && plan.subresource().is_none()))
        && plan
            .resource
            .as_ref()
            .is_some_and(|r| r.group.is_empty() && r.resource == "namespaces")
}
