//! Top-level dispatch: health endpoints, authentication, then the admin API or the tenant
//! pipeline. Every error becomes a `Status` here, and every request is logged and counted here.

use std::sync::Arc;

use crate::auth::Peer;
use crate::body::ReqBody;
use http::{Request, Response, StatusCode, header};

use crate::state::AppState;
use paddock_upstream::body::full;
use paddock_upstream::res_body::ResBody;

/// Handles one request; never fails (errors are `Status` responses). Health endpoints are
/// answered at once; everything else is authenticated and goes through the layers of
/// [`crate::stack`].
pub async fn handle(
    state: Arc<AppState>,
    peer: Option<Arc<Peer>>,
    context: crate::auth::Context,
    req: Request<ReqBody>,
) -> Response<ResBody> {
    match req.uri().path() {
        "/healthz" | "/livez" => return text(StatusCode::OK, "ok"),
        "/readyz" => return readyz(&state),
        _ => {}
    }
    let start = std::time::Instant::now();
    match crate::auth::authenticate_request(&state, peer.as_deref(), &context, req.headers()).await
    {
        Ok(caller) => crate::stack::serve(&state, caller, req).await,
        Err(e) => {
            // Refused before its tenant is known: into the platform audit stream, never a
            // tenant's (docs/audit.md).
            if let Some(a) = &state.audit {
                let info = crate::observe::audit::RequestInfo::of(&req, start);
                let (code, _) = e.code_and_reason();
                let reason = e.to_string();
                crate::observe::audit_answer::audit_refusal(
                    a,
                    peer.as_deref().map(Peer::cert),
                    req.headers(),
                    &info,
                    code,
                    &reason,
                );
            }
            crate::stack::refuse_anonymous(&state, req, e).await
        }
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
