//! The tenant request pipeline: parse, plan (translation core), translate the body, send
//! upstream as the impersonated tenant user, rewrite the response as a stream.

use std::sync::Arc;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use paddock_core::{Plan, ResponseKind, TenantContext, TenantId};

use crate::body::{ResBody, RewriteBody, collect_limited, empty, full, passthrough};
use crate::error::ServerError;
use crate::fanout;
use crate::state::AppState;
use crate::upstream::Route;
use crate::upstream::UpBody;

/// Request headers that are copied upstream as they are. Everything else is dropped: hop-by-hop
/// headers, the client's Authorization, and above all any `Impersonate-*` header.
const FORWARDED_REQUEST_HEADERS: &[HeaderName] = &[header::USER_AGENT, header::CONTENT_ENCODING];

/// Extra request headers forwarded only on upgrade requests (exec, attach, port-forward).
const UPGRADE_HEADERS: &[&str] = &[
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "sec-websocket-extensions",
    "x-stream-protocol-version",
];

/// Response headers copied back to the client.
const FORWARDED_RESPONSE_HEADERS: &[&str] = &[
    "content-type",
    "audit-id",
    "cache-control",
    "x-kubernetes-pf-flowschema-uid",
    "x-kubernetes-pf-prioritylevel-uid",
    "retry-after",
];
const UPGRADE_RESPONSE_HEADERS: &[&str] = &[
    "connection",
    "upgrade",
    "sec-websocket-accept",
    "sec-websocket-protocol",
    "x-stream-protocol-version",
];

/// Largest discovery or OpenAPI document paddock buffers to filter.
const MAX_DOCUMENT_BYTES: usize = 128 << 20;

/// Serves one tenant request.
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
    let catalog = state.catalog().await?;
    let mut ctx = TenantContext {
        tenant: tenant.clone(),
        catalog,
    };
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    let parsed = paddock_core::parse_request(&method, &path, query.as_deref())?;
    let mut plan = match paddock_core::plan(&ctx, parsed) {
        Ok(p) => p,
        Err(e) if e.http_code() == 404 => {
            // Maybe a CRD the tenant has just created: re-read discovery once and retry.
            ctx.catalog = state.catalogs.refresh(&state.upstream).await?;
            paddock_core::plan(
                &ctx,
                paddock_core::parse_request(&method, &path, query.as_deref())?,
            )?
        }
        Err(e) if e.http_code() == 403 => {
            // A write to a shared read-only object that does not exist is a NotFound.
            let parsed = paddock_core::parse_request(&method, &path, query.as_deref())?;
            let verb = method_verb(req.method());
            return match crate::absent::answer_if_shared_object_absent(
                state, &ctx, &parsed, user, groups,
            )
            .await?
            {
                Some(resp) => Ok((resp, verb)),
                None => Err(e.into()),
            };
        }
        Err(e) => return Err(e.into()),
    };
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let if_none_match = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    plan.response = paddock_core::response_kind_for(&plan, accept.as_deref());
    let verb = verb_name(&plan);

    if fanout::is_cluster_wide_namespaced(&plan) {
        let resp = fanout::serve(state, &ctx, &plan, user, groups, accept.as_deref()).await?;
        return Ok((resp, verb));
    }

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
            header_value(&paddock_core::upstream_accept(accept.as_deref()))?,
        );
    }
    // Which upstream identity: the real one (namespaced), or the cluster shadow (cluster-scoped
    // objects); see rbac_sync. Decided below once the body is translated.
    let mut who = crate::rbac_sync::identity_for(&plan, None);
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
        let (mut translated, up_ct) =
            paddock_core::translate_request_body(&ctx, &plan, &content_type, &raw)?;
        if is_namespace_write(&plan) {
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
        translated = crate::reviews::normalize_self_review(&ctx, &plan, translated);
        if crate::reviews::is_self_review(&plan) {
            rules_namespace = paddock_core::review::rules_review_namespace(&translated);
        }
        who = crate::rbac_sync::identity_for(&plan, Some(&translated));
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
    add_impersonation_as(headers, tenant, user, groups, who)?;
    let up_req = up
        .body(up_body)
        .map_err(|e| ServerError::Internal(format!("building upstream request: {e}")))?;
    // Watches go to the watch pool (HTTP/2, many per connection); the stream slot lives as
    // long as the response body (it goes into the body's on_finish below).
    let is_watch = matches!(
        plan.response,
        ResponseKind::Watch | ResponseKind::TableWatch
    ) && !plan.upgrade;
    let mut slot = None;
    // Short requests are bounded as a whole (headers and a body read whole) by
    // `upstream_timeout`; watches and other long-running requests only until their headers.
    let deadline = state.upstream.deadline();
    let sent = if is_watch {
        state.upstream.send_watch(up_req).await.map(|(r, s)| {
            slot = Some(s);
            r
        })
    } else {
        let route = if plan.long_running || plan.upgrade {
            Route::Stream
        } else if matches!(plan.request.verb, paddock_core::Verb::List) {
            Route::Bulk
        } else {
            Route::Short
        };
        state.upstream.send_until(up_req, route, deadline).await
    };
    let mut resp = match sent {
        Ok(r) => r,
        Err(e) => {
            state.metrics.upstream_error(match e {
                ServerError::UpstreamTimeout(..) => "timeout",
                _ => "connect",
            });
            return Err(e);
        }
    };
    let status = resp.status();
    if status.is_server_error() {
        state.metrics.upstream_error("status_5xx");
    }
    if status == StatusCode::FORBIDDEN
        && let Some(answer) =
            crate::absent::answer_if_absent_namespace(state, &ctx, &plan, user, groups).await?
    {
        // Rights in a namespace come from RoleBindings inside it: in a namespace that does
        // not exist a cluster admin gets an empty list or a NotFound, not a refusal.
        crate::body::drain(resp.into_body()).await;
        return Ok((answer, verb));
    }
    if status.is_success() && crate::rbac_sync::needs_sync(&plan) {
        // A ClusterRoleBinding or CRD changed: its namespaced mirrors (and the tenant's
        // custom-resources role) follow before the answer, so the change is usable at once.
        if let Err(e) = crate::rbac_sync::sync_tenant(&state.upstream, tenant).await {
            tracing::warn!(tenant = %tenant, error = %e, "RBAC mirror sync failed; the periodic resync will retry");
        }
    }
    if status.is_success() && crate::reviews::is_self_review(&plan) {
        // Upstream's answer (JSON, whatever the request's encoding) shows the attributes; it
        // is turned into the answer for the tenant's cluster (reviews.rs).
        let raw = state
            .upstream
            .collect_until(resp.into_body(), 1 << 20, deadline)
            .await?;
        let raw = crate::reviews::answer_for_tenant(
            state,
            &ctx,
            &plan,
            user,
            groups,
            who,
            rules_namespace.as_deref(),
            raw,
        )
        .await?;
        let doc = rewrite_whole(&ctx, &plan, status, "application/json", &raw)?;
        let mut out = Response::builder().status(status);
        if let Some(h) = out.headers_mut() {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        return Ok((
            out.body(full(doc))
                .map_err(|e| ServerError::Internal(e.to_string()))?,
            verb,
        ));
    }
    if status.is_success() && is_namespace_create(&plan) {
        // The tenant's admins get full rights in every namespace of theirs; done before
        // answering so the namespace is usable at once. The name comes from upstream's answer
        // (the request may have used generateName or a protobuf body).
        let ct = content_type_of(&resp);
        let raw = state
            .upstream
            .collect_until(resp.into_body(), 1 << 20, deadline)
            .await?;
        if let Some(ns) = serde_json::from_slice::<serde_json::Value>(&raw)
            .ok()
            .and_then(|v| v["metadata"]["name"].as_str().map(str::to_string))
            && ns.starts_with(&tenant.prefix())
        {
            crate::provision::ensure_namespace_binding(&state.upstream, tenant, &ns).await?;
        }
        let doc = rewrite_whole(&ctx, &plan, status, &ct, &raw)?;
        let mut out = Response::builder().status(status);
        if let Some(h) = out.headers_mut() {
            h.insert(header::CONTENT_TYPE, header_value(&ct)?);
        }
        return Ok((
            out.body(full(doc))
                .map_err(|e| ServerError::Internal(e.to_string()))?,
            verb,
        ));
    }

    if plan.upgrade && status == StatusCode::SWITCHING_PROTOCOLS {
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
        let mut out = Response::builder().status(status);
        if let Some(h) = out.headers_mut() {
            copy_response_headers(resp.headers(), h, UPGRADE_RESPONSE_HEADERS);
        }
        return Ok((
            out.body(empty())
                .map_err(|e| ServerError::Internal(e.to_string()))?,
            verb,
        ));
    }

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
        let mut doc = rewrite_whole(&ctx, &plan, status, &content_type, &raw)?;
        if matches!(plan.request.path, paddock_core::ApiPath::Apis)
            && let Some(with_paddock) = crate::admin::add_tenant_group(&doc)
        {
            doc = with_paddock;
        }
        let etag = format!("\"{}\"", paddock_core::etag(&doc));
        out_headers.insert(header::ETAG, header_value(&etag)?);
        out_headers.insert(header::VARY, HeaderValue::from_static("Accept"));
        if if_none_match.as_deref() == Some(etag.as_str()) {
            // The ETag is computed over this tenant's document, so a 304 can never hand a
            // client another tenant's cached view.
            out_headers.remove(header::CONTENT_TYPE);
            let resp = out
                .status(StatusCode::NOT_MODIFIED)
                .body(empty())
                .map_err(|e| ServerError::Internal(e.to_string()))?;
            return Ok((resp, verb));
        }
        full(doc)
    } else if let Some(len) = small_complete_body(&plan, resp.headers()) {
        // A small answer of known length (a GET of one object, a write's answer, a Status):
        // read it whole and answer with headers and body together. Streamed, the headers
        // would leave first and the body in a second write, after another wake-up.
        let raw = state
            .upstream
            .collect_until(resp.into_body(), len, deadline)
            .await?;
        full(rewrite_whole(&ctx, &plan, status, &content_type, &raw)?)
    } else {
        let rw = paddock_core::response_rewriter(&ctx, &plan, status.as_u16(), &content_type);
        let on_finish: Option<Box<dyn FnOnce() + Send>> = if matches!(
            plan.response,
            ResponseKind::Watch | ResponseKind::TableWatch
        ) {
            let guard = crate::metrics::WatchGuard::open(state.metrics.clone());
            Some(Box::new(move || {
                drop(guard);
                drop(slot);
            }))
        } else {
            None
        };
        let long = matches!(
            plan.response,
            ResponseKind::Watch | ResponseKind::TableWatch
        );
        let body = RewriteBody::new(resp.into_body(), rw, on_finish);
        if long {
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
    };
    let resp = out
        .body(body)
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    Ok((resp, verb))
}

/// Largest upstream answer read whole before it is rewritten (see [`small_complete_body`]).
const SMALL_BODY_BYTES: usize = 64 * 1024;

/// The length of an upstream answer small enough to be read whole: announced by
/// Content-Length, at most [`SMALL_BODY_BYTES`], and not a watch (whose events must leave as
/// they come). Lists of any length stay streamed unless they are this small.
fn small_complete_body(plan: &paddock_core::Plan, h: &HeaderMap) -> Option<usize> {
    if matches!(
        plan.response,
        ResponseKind::Watch | ResponseKind::TableWatch
    ) || plan.long_running
    {
        return None;
    }
    h.get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse::<usize>()
        .ok()
        .filter(|&n| n <= SMALL_BODY_BYTES)
}

/// A whole upstream answer rewritten for the tenant.
pub fn rewrite_whole(
    ctx: &TenantContext,
    plan: &paddock_core::Plan,
    status: StatusCode,
    content_type: &str,
    raw: &[u8],
) -> Result<Vec<u8>, ServerError> {
    let mut rw = paddock_core::response_rewriter(ctx, plan, status.as_u16(), content_type);
    let mut doc = Vec::with_capacity(raw.len() + raw.len() / 8);
    rw.feed(raw, &mut doc)?;
    rw.finish(&mut doc)?;
    Ok(doc)
}

/// The Content-Type of a response ("" when absent or not text).
pub fn content_type_of<B>(resp: &Response<B>) -> String {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

fn parts_content_type(h: &HeaderMap) -> Option<HeaderValue> {
    h.get(header::CONTENT_TYPE).cloned()
}

/// Splices an upgraded exec/attach WebSocket: client to upstream as it is, upstream to client
/// through [`paddock_core::wsframe::ErrorChannelRewriter`] (error channel names rewritten down).
async fn splice_rewriting_errors<C, U>(
    client: C,
    upstream: U,
    ctx: TenantContext,
) -> std::io::Result<()>
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    U: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut cr, mut cw) = tokio::io::split(client);
    let (mut ur, mut uw) = tokio::io::split(upstream);
    let up = async {
        tokio::io::copy(&mut cr, &mut uw).await?;
        uw.shutdown().await
    };
    let down = async {
        let mut rw = paddock_core::wsframe::ErrorChannelRewriter::new(|p: &[u8]| {
            paddock_core::wsframe::error_payload_down(&ctx, p)
        });
        let mut buf = vec![0u8; 32 * 1024];
        let mut out = Vec::with_capacity(32 * 1024);
        loop {
            out.clear();
            let n = ur.read(&mut buf).await?;
            if n == 0 {
                rw.finish(&mut out);
                cw.write_all(&out).await?;
                return cw.shutdown().await;
            }
            rw.feed(&buf[..n], &mut out);
            if !out.is_empty() {
                cw.write_all(&out).await?;
                cw.flush().await?;
            }
        }
    };
    tokio::try_join!(up, down).map(|_| ())
}

fn header_value(s: &str) -> Result<HeaderValue, ServerError> {
    HeaderValue::from_str(s)
        .map_err(|_| ServerError::BadRequest(format!("invalid header value {s:?}")))
}

fn copy_request_headers(from: &HeaderMap, to: &mut HeaderMap, upgrade: bool) {
    for name in FORWARDED_REQUEST_HEADERS {
        for v in from.get_all(name) {
            to.append(name.clone(), v.clone());
        }
    }
    if let Some(ct) = from.get(header::CONTENT_TYPE) {
        to.insert(header::CONTENT_TYPE, ct.clone());
    }
    if upgrade {
        for name in UPGRADE_HEADERS {
            for v in from.get_all(*name) {
                if let Ok(n) = HeaderName::from_bytes(name.as_bytes()) {
                    to.append(n, v.clone());
                }
            }
        }
    }
}

fn copy_response_headers(from: &HeaderMap, to: &mut HeaderMap, names: &[&str]) {
    for name in names {
        for v in from.get_all(*name) {
            if let Ok(n) = HeaderName::from_bytes(name.as_bytes()) {
                to.append(n, v.clone());
            }
        }
    }
}

/// Adds paddock's impersonation of the tenant user (its real identity).
pub fn add_impersonation(
    h: &mut HeaderMap,
    tenant: &TenantId,
    user: &str,
    groups: &[String],
) -> Result<(), ServerError> {
    add_impersonation_as(h, tenant, user, groups, crate::rbac_sync::As::Real)
}

/// Adds paddock's impersonation of the tenant user as the real or the cluster-shadow identity.
pub fn add_impersonation_as(
    h: &mut HeaderMap,
    tenant: &TenantId,
    user: &str,
    groups: &[String],
    who: crate::rbac_sync::As,
) -> Result<(), ServerError> {
    let imp = crate::rbac_sync::impersonation(tenant, user, groups, who);
    h.insert("impersonate-user", header_value(&imp.user)?);
    for g in &imp.groups {
        h.append("impersonate-group", header_value(g)?);
    }
    for (k, v) in &imp.extra {
        let name = format!("impersonate-extra-{}", percent_encode_header_key(k));
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ServerError::Internal(format!("bad extra key {k:?}")))?;
        h.append(name, header_value(v)?);
    }
    Ok(())
}

/// Impersonate-Extra keys are percent-encoded (RFC 3986 unreserved chars stay).
fn percent_encode_header_key(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    for b in k.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b.to_ascii_lowercase() as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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

/// Verb name for logs and metrics.
pub fn verb_name(plan: &Plan) -> &'static str {
    use paddock_core::Verb;
    match plan.request.verb {
        Verb::Get => "get",
        Verb::List => "list",
        Verb::Watch => "watch",
        Verb::Create => "create",
        Verb::Update => "update",
        Verb::Patch => "patch",
        Verb::Delete => "delete",
        Verb::DeleteCollection => "deletecollection",
        Verb::Connect => "connect",
    }
}

/// The method as a verb before planning (for errors that happen earlier).
pub fn method_verb(m: &Method) -> &'static str {
    match *m {
        Method::GET => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "other",
    }
}
