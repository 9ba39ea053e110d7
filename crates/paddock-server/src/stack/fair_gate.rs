//! The tenant path's admission under the tenant's fair-share limits.

use http::{Method, Request, Uri, header};
use paddock_core::TenantId;
use paddock_core::fair::share::{RequestClass, clamp_list_limit, classify};
use paddock_core::fair::weight::{seats, watch_seats};

use crate::fair::limits::Permit;
use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// The tenant path's admission, the one call at its start: classifies the request, lowers a
/// LIST's `limit` to the tenant's `maxList`, and admits it under the tenant's limits (the
/// configured defaults with the tenant record's overrides).
pub fn admit_request<B>(
    state: &AppState,
    tenant: &TenantId,
    req: &mut Request<B>,
) -> Result<Option<Permit>, ServerError> {
    let record = state.cache.tenant(tenant.as_str());
    let limits = state
        .config
        .limits
        .with(record.as_ref().and_then(|r| r.limits.as_ref()));
    let upgrade = req.headers().contains_key(header::UPGRADE);
    let class = classify(req.method().as_str(), req.uri().query(), upgrade);
    if class == RequestClass::Read
        && req.method() == Method::GET
        && let Some(q) = req.uri().query()
        && let Some(clamped) = clamp_list_limit(q, limits.max_list)
    {
        let pq = format!("{}?{clamped}", req.uri().path());
        let mut parts = req.uri().clone().into_parts();
        parts.path_and_query = Some(
            pq.parse()
                .map_err(|e| ServerError::BadRequest(format!("request URI: {e}")))?,
        );
        *req.uri_mut() = Uri::from_parts(parts)
            .map_err(|e| ServerError::BadRequest(format!("request URI: {e}")))?;
    }
    let (path, query) = (req.uri().path(), req.uri().query());
    let seats = match class {
        RequestClass::Watch => watch_seats(path, query, limits.max_list, limits.max_inflight),
        _ => seats(class, path, query, limits.max_list, limits.max_inflight),
    };
    let r = state.limiter.admit_weighted(tenant, &limits, class, seats);
    if let Err(ServerError::TooManyRequests(refusal)) = &r {
        state.metrics.limit_refused(refusal.limit);
    }
    r
}
