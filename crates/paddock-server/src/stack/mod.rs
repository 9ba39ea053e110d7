//! The gateway's request path as a stack of tower layers, one concern each (outermost
//! first), the way linkerd2-proxy's inbound server pushes one layer per concern:
//!
//! | layer | module | what it does |
//! |---|---|---|
//! | access log and metrics | [`access`] | logs, counts, audits and meters every answer; turns every error into its `Status` |
//! | header refusal | [`refuse`] | 413 for a body announced over the limit, before it is read |
//! | fair-share gate | [`fair`] | admits a tenant's request under its limits; the slot lives as long as the answer's body |
//! | dispatch | [`gateway`] | the admin API, paddock's own group for tenants, or the tenant pipeline (a namespace create read first: [`namespace_create`]) |
//!
//! The tenant pipeline (`proxy`) is a stack of its own: catalog retry, fan-out, response
//! rewrite, follow-ups, body translation, send (docs/architecture.md).
//!
//! Layers are generic over what they wrap and over a narrow port to the replica (`Observe`,
//! `Admit`, implemented by [`AppState`]; fakes in the unit tests), and their futures are named
//! types: no layer boxes a request or a future.

pub mod access;
pub mod fair;
pub mod fair_gate;
pub mod namespace_create;
pub mod portable;
pub mod refuse;
pub mod router;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use crate::body::ReqBody;
use http::{Request, Response};
use paddock_core::TenantId;
use tower::{Layer, ServiceExt};

use crate::fair::limits::Permit;
use crate::state::AppState;
use access::{AccessLogLayer, Done, Observe};
use fair::{Admit, FairShareLayer};
use paddock_core::identity::Caller;
use paddock_upstream::error::ServerError;
use paddock_upstream::rare::boxed;
use paddock_upstream::res_body::ResBody;
use refuse::RefuseLayer;

/// In a response's extensions: the Kubernetes verb the request was served as (the plan's,
/// which the method alone does not tell: `list` or `watch`).
#[derive(Clone, Copy)]
pub struct Answered {
    pub verb: &'static str,
}

/// Serves one authenticated request through the stack; never fails (errors are `Status`
/// answers).
pub fn serve(
    state: &Arc<AppState>,
    caller: Arc<Caller>,
    req: Request<ReqBody>,
) -> impl Future<Output = Response<ResBody>> + Send + 'static {
    // The stack is made for this request, so its caller is given to the layers that need it
    // as they are made (not carried in the request's extensions: three allocations).
    let svc = AccessLogLayer::new(state.clone(), Some(caller.clone())).layer(
        RefuseLayer::new(state.config.max_body_bytes).layer(
            FairShareLayer::new(state.clone(), &caller).layer(tower::service_fn({
                let state = state.clone();
                // Boxed where it is made: the layers' futures then hold a pointer, not the
                // pipeline's state (about 12 KB), which each layer's `call` would move again.
                move |req| boxed(|| gateway(state.clone(), caller.clone(), req))
            })),
        ),
    );
    futures_util::FutureExt::map(svc.oneshot(req), unrefused)
}

/// Answers a request refused before its caller is known (authentication), logged and counted
/// as every other answer.
pub fn refuse_anonymous(
    state: &Arc<AppState>,
    req: Request<ReqBody>,
    error: ServerError,
) -> impl Future<Output = Response<ResBody>> + Send + 'static {
    let mut error = Some(error);
    let refusal = tower::service_fn(move |_req: Request<ReqBody>| {
        let e = error
            .take()
            .unwrap_or_else(|| ServerError::Internal("refused twice".into()));
        std::future::ready(Err::<Response<ResBody>, _>(e))
    });
    let svc = AccessLogLayer::new(state.clone(), None).layer(refusal);
    futures_util::FutureExt::map(svc.oneshot(req), unrefused)
}

fn unrefused(r: Result<Response<ResBody>, Infallible>) -> Response<ResBody> {
    match r {
        Ok(resp) => resp,
        Err(never) => match never {},
    }
}

/// The innermost service: the admin API for admins; for tenants paddock's own API group or
/// the tenant pipeline.
async fn gateway(
    state: Arc<AppState>,
    caller: Arc<Caller>,
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    let state = &state;
    // Who acted in the tenant, for `paddock user list` (docs/security.md "Who is who").
    crate::auth::seen::note(state, &caller);
    // A tenant's activity noted, a sleeping tenant woken; its writes wait for the wake
    // (docs/operations.md "Sleep and wake").
    if let Caller::Tenant { tenant, user, .. } = &*caller
        && crate::lifecycle::sleep::noted(
            state,
            tenant,
            user,
            (
                req.method().as_str(),
                req.uri().path(),
                access::asks_watch(req.uri()),
            ),
        )
    {
        boxed(|| crate::lifecycle::sleep::wait_awake(state, tenant)).await?;
    }
    // The admin API, paddock's own group and a spanning tenant's routing are rare next to a
    // tenant's requests and have large futures of their own: boxed, so that the state machine
    // of every tenant request (the pipeline's steps, unboxed) does not carry theirs.
    match &*caller {
        Caller::Admin { .. } => {
            // Export, import and move act through the tenant's stack (portable/).
            let segs: Vec<&str> = req
                .uri()
                .path()
                .strip_prefix(paddock_api::BASE)
                .unwrap_or("")
                .split('/')
                .filter(|s| !s.is_empty())
                .collect();
            if portable::is_portable(&segs) {
                let (id, sub) = (segs[1].to_owned(), segs[2].to_owned());
                return boxed(|| portable::serve(state, &caller, &id, &sub, req)).await;
            }
            boxed(|| crate::admin::serve_admin(state, &caller, req)).await
        }
        // A suspended tenant's writes (docs/operations.md "Suspend, protection and TTL").
        Caller::Tenant { tenant, .. }
            if crate::lifecycle::refused(state, tenant, req.method(), req.uri().path()) =>
        {
            Err(paddock_core::lifecycle::door::suspended_refusal(tenant).into())
        }
        // A tenant being moved: its writes wait (docs/operations.md "Export, import and move").
        Caller::Tenant { tenant, .. } if portable::paused(state, tenant, &req) => {
            Err(portable::paused_refusal(tenant))
        }
        Caller::Tenant { tenant, .. } if is_paddock_group(req.uri().path()) => {
            boxed(|| crate::admin::serve_tenant_self(state, tenant, req)).await
        }
        Caller::Tenant {
            tenant,
            user,
            groups,
            ..
        } => {
            if namespace_create::is_namespace_create(&req) {
                return boxed(|| namespace_create::serve(state, tenant, user, groups, req)).await;
            }
            serve_routed(state, tenant, user, groups, req).await
        }
    }
}

/// A tenant request routed to its cluster and served by the tenant pipeline.
async fn serve_routed(
    state: &Arc<AppState>,
    tenant: &TenantId,
    user: &Arc<str>,
    groups: &Arc<[String]>,
    req: Request<ReqBody>,
) -> Result<Response<ResBody>, ServerError> {
    // What the access layer makes of the request's verb without a plan.
    let unplanned = crate::observe::metrics::unplanned_verb(
        req.method(),
        req.uri().path(),
        crate::stack::access::asks_watch(req.uri()),
    );
    // The one place a tenant request picks its cluster's state (docs/clusters.md);
    // a tenant spanning clusters by the request's namespace (clusters/span.rs).
    let mut req = req;
    let to = req
        .extensions()
        .get::<portable::Internal>()
        .and_then(|i| i.0.clone());
    let (routed, after) = match (to, crate::clusters::span::spanning_clusters(state, tenant)) {
        // A move's import, to the cluster the tenant is moving to (portable/moving.rs).
        (Some(to), _) => (to, crate::clusters::span::After::Nothing),
        (None, Some(cs)) => {
            boxed(|| crate::clusters::span::route(state, tenant, &cs, &mut req)).await?
        }
        (None, None) => (
            crate::clusters::route(state, tenant)?,
            crate::clusters::span::After::Nothing,
        ),
    };
    let served = crate::proxy::serve_tenant(&routed, tenant, user, groups, req).await;
    let status = served
        .as_ref()
        .map_or(http::StatusCode::INTERNAL_SERVER_ERROR, |r| r.0.status());
    if !matches!(after, crate::clusters::span::After::Nothing) {
        boxed(|| after.answered(state, tenant, status)).await;
    }
    let (mut resp, verb) = served?;
    // Only where the plan says otherwise (a connect, a deletecollection, ...): an
    // answer's first extension costs three allocations.
    if verb != unplanned {
        resp.extensions_mut().insert(Answered { verb });
    }
    Ok(resp)
}

fn is_paddock_group(path: &str) -> bool {
    path == paddock_api::GROUP_PATH
        || path
            .strip_prefix(paddock_api::GROUP_PATH)
            .is_some_and(|rest| rest.starts_with('/'))
}

impl Observe for AppState {
    type Note = Option<crate::observe::audit::RequestInfo>;

    fn begin<B>(&self, req: &mut Request<B>, start: Instant) -> Self::Note {
        let info = self
            .audit
            .as_ref()
            .map(|_| crate::observe::audit::RequestInfo::of(req, start))?;
        req.extensions_mut().insert(info.body.clone());
        Some(info)
    }

    fn answered(
        &self,
        note: Self::Note,
        d: &Done<'_>,
        resp: Response<ResBody>,
    ) -> Response<ResBody> {
        let tenant = d.caller.map_or("_anonymous", Caller::tenant_label);
        let user = d.caller.map_or("-", Caller::user);
        // Error answers only (a few of them): their message, when paddock holds the body whole.
        let answer = (d.code >= 400)
            .then(|| resp.body().complete_bytes())
            .flatten()
            .and_then(|b| crate::observe::access_log::status_message(b));
        self.access_log.record(&crate::observe::access_log::Entry {
            tenant,
            user,
            verb: d.verb,
            path: d.path,
            status: d.code,
            latency: d.elapsed,
            answer: answer.as_deref(),
        });
        self.metrics
            .observe(tenant, d.verb, d.code, d.elapsed.as_secs_f64());
        if matches!(d.caller, Some(Caller::Tenant { .. })) {
            self.metrics
                .finished
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let resp = match (&self.audit, &note, d.caller) {
            (Some(a), Some(i), Some(c)) => {
                crate::observe::audit_answer::audit_answer(a, c, i, resp)
            }
            _ => resp,
        };
        match d.caller {
            // A body refused unread (413) was never received: not metered.
            Some(Caller::Tenant { tenant, .. }) if d.code != 413 => {
                let t = tenant.as_str();
                self.metrics.tenant.request(t, d.announced);
                let watch = d.verb == "watch" && d.code < 300;
                resp.map(|b| {
                    crate::observe::metering::meter_response(b, &self.metrics.tenant, t, watch)
                })
            }
            _ => resp,
        }
    }
}

impl Admit for AppState {
    fn admit<B>(
        &self,
        tenant: &TenantId,
        req: &mut Request<B>,
    ) -> Result<Option<Permit>, ServerError> {
        crate::stack::fair_gate::admit_request(self, tenant, req)
    }

    fn work_queue(&self) -> Option<&Arc<crate::fair::queue::WorkQueue>> {
        self.work_queue.as_ref()
    }
}
