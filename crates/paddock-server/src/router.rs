//! Top-level dispatch: health endpoints, authentication, then the admin API or the tenant
//! pipeline. Every error becomes a `Status` here, and every request is logged and counted here.

use std::sync::Arc;
use std::time::Instant;

use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use paddock_pki::PeerCert;

use crate::body::{ResBody, full};
use crate::caller::Caller;
use crate::error::ServerError;
use crate::state::AppState;

/// Handles one request; never fails (errors are `Status` responses).
pub async fn handle(
    state: Arc<AppState>,
    peer: Option<Arc<PeerCert>>,
    mut req: Request<Incoming>,
) -> Response<ResBody> {
    let start = Instant::now();
    let audit_info = state
        .audit
        .as_ref()
        .map(|_| crate::audit::RequestInfo::of(&req, start));
    if let Some(i) = &audit_info {
        req.extensions_mut().insert(i.body.clone());
    }
    let path = req.uri().path().to_string();
    let method = req.method().clone();
    match path.as_str() {
        "/healthz" | "/livez" => return text(StatusCode::OK, "ok"),
        "/readyz" => return readyz(&state),
        _ => {}
    }
    let caller = match crate::auth::authenticate_request(&state, peer.as_ref(), req.headers()).await
    {
        Ok(c) => c,
        Err(e) => {
            let resp = e.into_response();
            log_request(
                &state,
                "_anonymous",
                "-",
                crate::metrics::method_verb(&method),
                &path,
                resp.status().as_u16(),
                start,
            );
            state.metrics.observe(
                "_anonymous",
                crate::metrics::method_verb(&method),
                resp.status().as_u16(),
                start.elapsed().as_secs_f64(),
            );
            return resp;
        }
    };
    // A body announced larger than the limit is refused before it is read (a client that
    // sent `Expect: 100-continue` then never sends it), rather than cut off midway.
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(len) = announced
        && len > state.config.max_body_bytes
    {
        // The body is drained (bounded) in the background while the 413 goes out: an HTTP/2
        // stream whose body is dropped unread is reset, and the client then sees a framing
        // error instead of this Status.
        tokio::spawn(crate::body::drain(req.into_body()));
        let resp = ServerError::TooLarge(format!(
            "request body of {len} bytes is larger than the limit of {} bytes",
            state.config.max_body_bytes
        ))
        .into_response();
        log_request(
            &state,
            caller.tenant_label(),
            caller.user(),
            crate::metrics::method_verb(&method),
            &path,
            413,
            start,
        );
        state.metrics.observe(
            caller.tenant_label(),
            crate::metrics::method_verb(&method),
            413,
            start.elapsed().as_secs_f64(),
        );
        audit(&state, &caller, audit_info.as_ref(), 413);
        return resp;
    }
    // A fair-share slot, held until the response body has been sent.
    let mut permit = None;
    let (result, verb) = match &caller {
        Caller::Admin { .. } => (
            crate::admin::serve_admin(&state, &caller, req).await,
            crate::metrics::method_verb(&method),
        ),
        Caller::Tenant {
            tenant,
            user,
            groups,
            ..
        } => match crate::fair_gate::admit_request(&state, tenant, &mut req) {
            Err(e) => (Err(e), crate::metrics::method_verb(&method)),
            Ok(p) => {
                permit = p;
                serve_tenant(&state, tenant, user, groups, &path, req).await
            }
        },
    };
    let resp = match result {
        Ok(r) => r,
        Err(e) => {
            if matches!(e, ServerError::Internal(_) | ServerError::Upstream(_))
                || e.is_upstream_fault()
            {
                tracing::warn!(tenant = caller.tenant_label(), error = %e, %path, "request failed");
            }
            e.into_response()
        }
    };
    let code = resp.status().as_u16();
    log_request(
        &state,
        caller.tenant_label(),
        caller.user(),
        verb,
        &path,
        code,
        start,
    );
    state.metrics.observe(
        caller.tenant_label(),
        verb,
        code,
        start.elapsed().as_secs_f64(),
    );
    audit(&state, &caller, audit_info.as_ref(), code);
    let resp = match &caller {
        Caller::Tenant { tenant, .. } => {
            let t = tenant.as_str();
            state
                .metrics
                .tenant
                .request(t, announced.unwrap_or(0) as u64);
            let watch = verb == "watch" && code < 300;
            resp.map(|b| crate::metering::meter_response(b, &state.metrics.tenant, t, watch))
        }
        _ => resp,
    };
    match permit {
        Some(p) => resp.map(|b| crate::limits::hold(b, p)),
        None => resp,
    }
}

/// The tenant path after admission: paddock's own API group or the proxy.
async fn serve_tenant(
    state: &Arc<AppState>,
    tenant: &paddock_core::TenantId,
    user: &str,
    groups: &[String],
    path: &str,
    req: Request<Incoming>,
) -> (Result<Response<ResBody>, ServerError>, &'static str) {
    let method = req.method().clone();
    if path == "/apis/paddock.io" || path.starts_with("/apis/paddock.io/") {
        (
            crate::admin::serve_tenant_self(state, tenant, req).await,
            crate::metrics::method_verb(&method),
        )
    } else {
        // The one place a tenant request picks its cluster's state (docs/clusters.md).
        let state = match crate::clusters::route(state, tenant) {
            Ok(s) => s,
            Err(e) => return (Err(e), crate::metrics::method_verb(&method)),
        };
        match crate::proxy::serve_tenant(&state, tenant, user, groups, req).await {
            Ok((resp, verb)) => (Ok(resp), verb),
            Err(e) => (Err(e), crate::metrics::method_verb(&method)),
        }
    }
}

fn audit(state: &AppState, caller: &Caller, info: Option<&crate::audit::RequestInfo>, code: u16) {
    if let (Some(a), Some(i)) = (&state.audit, info) {
        crate::audit::record_request(a, caller, i, code);
    }
}

/// `/readyz`: 200 only when the store cache is synced, discovery read, the platform objects
/// installed, the upstream answers (with hysteresis, see health.rs) and no shutdown is under
/// way. Load balancers health-check this.
fn readyz(state: &AppState) -> Response<ResBody> {
    use std::sync::atomic::Ordering;
    if state.draining.load(Ordering::Acquire) {
        return text(StatusCode::SERVICE_UNAVAILABLE, "not ready: shutting down");
    }
    let store = state.cache.is_synced();
    let discovery = state.catalogs.is_synced();
    let boot = state.bootstrapped.load(Ordering::Acquire);
    let upstream = state.health.is_healthy();
    let clusters = crate::clusters::readiness(state);
    if clusters.len() > 1 {
        return crate::clusters::readyz_answer(store, &clusters);
    }
    if store && discovery && boot && upstream {
        text(StatusCode::OK, "ok")
    } else {
        text(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "not ready: store cache synced={store}, upstream discovery synced={discovery}, upstream bootstrap done={boot}, upstream answers={upstream}"
            ),
        )
    }
}

fn log_request(
    state: &AppState,
    tenant: &str,
    user: &str,
    verb: &str,
    path: &str,
    status: u16,
    start: Instant,
) {
    state.access_log.record(&crate::access_log::Entry {
        tenant,
        user,
        verb,
        path,
        status,
        latency: start.elapsed(),
    });
}

/// A plain-text response.
pub fn text(code: StatusCode, body: &str) -> Response<ResBody> {
    let mut r = Response::new(full(body.to_string()));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}
