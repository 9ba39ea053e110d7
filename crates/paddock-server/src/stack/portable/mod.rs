//! A tenant's objects carried out and back in (issue 41; docs/operations.md "Export, import
//! and move"): `GET tenants/<id>/export`, `POST tenants/<id>/import`, `POST tenants/<id>/move`
//! of the admin API. Here, in the stack, because every object is read and written as the
//! tenant's own admin through the tenant's own stack ([`TenantCall`]): the rewriters that
//! answer the tenant are the export's one translation, and an import meets every guard,
//! quota, policy and fair-share limit the tenant's own `kubectl apply` would. The choices
//! (which objects, in which order, what is cleaned, what a valid archive is) are pure, in
//! `paddock_core::portable`.

pub mod export;
pub mod import;
pub mod moving;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use paddock_core::TenantId;
use paddock_core::identity::Caller;
use serde_json::Value;

use crate::body::ReqBody;
use crate::clusters::span::PreRead;
use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;

/// The user the export and import act as, in the tenant's admins group.
pub const ACTING_USER: &str = "paddock-portable";
/// Most bytes of one answer read (a list of one kind) and of an archive.
pub const MAX_BYTES: usize = 512 << 20;
/// How long a refusal that asks to wait (429, 503) is waited out, at most, per request.
const RETRY_FOR: Duration = Duration::from_secs(120);

/// Whether an admin request is one of this module's (`tenants/<id>/export|import|move`).
pub fn is_portable(segs: &[&str]) -> bool {
    use paddock_api::portable::{EXPORT, IMPORT, MOVE};
    matches!(segs, ["tenants", _, EXPORT | IMPORT | MOVE])
}

/// Serves `tenants/<id>/export|import|move` for a platform admin.
pub async fn serve(
    state: &Arc<AppState>,
    caller: &Caller,
    id: &str,
    sub: &str,
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    use paddock_api::portable::{EXPORT, IMPORT, MOVE};
    let tenant = TenantId::parse(id).map_err(|e| ServerError::BadRequest(e.to_string()))?;
    let query = req.uri().query().unwrap_or("").to_owned();
    let flag = |name: &str| {
        query
            .split('&')
            .any(|kv| kv.split_once('=') == Some((name, "true")))
    };
    match (req.method().clone(), sub) {
        (Method::GET, EXPORT) => {
            let tar = export::export(state, &tenant, flag("secrets")).await?;
            tracing::info!(admin = caller.user(), %tenant, bytes = tar.len(), "tenant exported");
            let mut r = Response::new(paddock_upstream::body::full(tar));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(paddock_api::portable::ARCHIVE_TYPE),
            );
            Ok(r)
        }
        (Method::POST, IMPORT) => {
            let dry_run = flag("dryRun");
            let body = paddock_upstream::limit::collect_limited(req.into_body(), MAX_BYTES).await?;
            let summary = import::import(state, &tenant, &body, dry_run).await?;
            tracing::info!(admin = caller.user(), %tenant, dry_run, created = summary.created,
                source = %summary.source_tenant, "tenant import");
            let code = if dry_run {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            crate::admin::answer::json_response(code, &summary)
        }
        (Method::POST, MOVE) => {
            let body = paddock_upstream::limit::collect_limited(req.into_body(), 1 << 20).await?;
            let ask: paddock_api::portable::MoveRequest = serde_json::from_slice(&body)
                .map_err(|e| ServerError::BadRequest(format!("the move request: {e}")))?;
            let summary = moving::move_tenant(state, &tenant, &ask.to).await?;
            tracing::info!(admin = caller.user(), %tenant, from = %summary.from, to = %summary.to,
                objects = summary.objects, "tenant moved");
            crate::admin::answer::json_response(StatusCode::OK, &summary)
        }
        (m, _) => Err(ServerError::NotFound(format!(
            "{m} tenants/{id}/{sub} is not part of the admin API"
        ))),
    }
}

/// How long a moving tenant's writes are asked to wait (`Retry-After`): client-go and kubectl
/// retry a 503 that carries it, up to 10 times, so a pause of up to about 20 s goes unseen.
pub const MOVE_RETRY_AFTER: u64 = 2;

/// In the extensions of a request this module sends: it is paddock's own, past the doors
/// that hold the tenant's writes during a move, and routed to `0` when set (the cluster a
/// move imports into). Requests from the network never carry it.
#[derive(Clone)]
pub struct Internal(pub Option<Arc<AppState>>);

/// A write of a tenant being moved (not one of the move's own): held with a 503.
pub fn paused<B>(state: &AppState, tenant: &TenantId, req: &Request<B>) -> bool {
    req.extensions().get::<Internal>().is_none()
        && paddock_core::lifecycle::door::writes(req.method().as_str(), req.uri().path())
        && state
            .cache
            .tenant(tenant.as_str())
            .is_some_and(|r| r.moving.is_some())
}

/// The refusal of a held write: a 503 with `Retry-After` naming the move.
pub fn paused_refusal(tenant: &TenantId) -> ServerError {
    ServerError::RetryLater(
        format!(
            "tenant {tenant} is being moved to another cluster: writes are held for a few seconds; retry after {MOVE_RETRY_AFTER}s"
        ),
        MOVE_RETRY_AFTER,
    )
}

/// An answer of the tenant's stack, read whole.
pub struct Answer {
    pub status: StatusCode,
    pub body: Bytes,
}

impl Answer {
    /// The body as JSON (Null when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// A `Status` answer's message, or the status.
    pub fn message(&self) -> String {
        self.json()["message"]
            .as_str()
            .map_or_else(|| self.status.to_string(), str::to_owned)
    }

    /// A `Status` answer's `details.kind`.
    pub fn details_kind(&self) -> Option<String> {
        self.json()["details"]["kind"].as_str().map(str::to_owned)
    }
}

/// Requests sent as the tenant's admin through the tenant's stack (`super::serve`): the same
/// layers as the tenant's own requests, from the access log to the upstream.
pub struct TenantCall {
    state: Arc<AppState>,
    caller: Arc<Caller>,
    /// The cluster state the requests go to; the tenant's home when `None`.
    to: Option<Arc<AppState>>,
}

impl TenantCall {
    pub fn new(state: &Arc<AppState>, tenant: &TenantId) -> Self {
        TenantCall {
            state: state.clone(),
            caller: Arc::new(Caller::Tenant {
                tenant: tenant.clone(),
                user: Arc::from(ACTING_USER),
                groups: Arc::from(vec![paddock_core::identity::TENANT_ADMIN_GROUP.to_owned()]),
                // Empty: no credential; `SignIn::of_serial` tells paddock's own calls apart.
                serial: String::new(),
            }),
            to: None,
        }
    }

    /// The same, sending to the cluster of `to` instead of the tenant's home.
    pub fn routed_to(mut self, to: Arc<AppState>) -> Self {
        self.to = Some(to);
        self
    }

    /// Sends one request; a 429 or 503 is retried after its `Retry-After` (or a second)
    /// for up to [`RETRY_FOR`], as client-go would.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, ServerError> {
        let bytes = match body {
            Some(v) => Bytes::from(
                serde_json::to_vec(v).map_err(|e| ServerError::Internal(e.to_string()))?,
            ),
            None => Bytes::new(),
        };
        let until = tokio::time::Instant::now() + RETRY_FOR;
        loop {
            let mut b = Request::builder()
                .method(method.clone())
                .uri(path)
                .header(header::ACCEPT, "application/json");
            if body.is_some() {
                b = b.header(header::CONTENT_TYPE, "application/json");
            }
            let mut req = b
                .body(ReqBody::read_already())
                .map_err(|e| ServerError::Internal(format!("an internal request: {e}")))?;
            if body.is_some() {
                req.extensions_mut().insert(PreRead(bytes.clone()));
            }
            req.extensions_mut().insert(Internal(self.to.clone()));
            // Erased: the stack's future holds this one (an admin request), which holds the
            // stack's again; a concrete type would contain itself.
            let inner: Pin<Box<dyn Future<Output = Response<ResBody>> + Send>> =
                Box::pin(super::serve(&self.state, self.caller.clone(), req));
            let resp = inner.await;
            let status = resp.status();
            let wait = retry_after(&resp);
            let body =
                paddock_upstream::limit::collect_limited(resp.into_body(), MAX_BYTES).await?;
            let waits = matches!(
                status,
                StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
            );
            if waits && tokio::time::Instant::now() + wait < until {
                tokio::time::sleep(wait).await;
                continue;
            }
            return Ok(Answer { status, body });
        }
    }
}

fn retry_after(resp: &Response<ResBody>) -> Duration {
    let secs = resp
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(1);
    Duration::from_secs(secs.clamp(1, 10))
}
