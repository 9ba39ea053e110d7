//! The first step: `kubectl --as`, then parse and plan (paddock-core). A 404 from planning
//! re-reads discovery once (a CRD the tenant has just created); a write refused (403) to a
//! shared read-only object that does not exist is answered with its NotFound (`absent.rs`).

use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response, header};
use hyper::body::Incoming;
use paddock_core::{Plan, TenantContext};
use tower::Service;

use super::{Job, LayerFuture, Planned, TenantUser, pipeline_layer};
use crate::body::ResBody;
use crate::error::ServerError;
use crate::metrics::{method_verb, verb_name};
use crate::state::AppState;

pipeline_layer!(PlanLayer, PlanStep);

impl<S> Service<(TenantUser, Request<Incoming>)> for PlanStep<S>
where
    S: Service<Planned, Response = Response<ResBody>, Error = ServerError> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = (Response<ResBody>, &'static str);
    type Error = ServerError;
    type Future = LayerFuture<(Response<ResBody>, &'static str)>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServerError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, (caller, req): (TenantUser, Request<Incoming>)) -> Self::Future {
        let state = self.state.clone();
        // The inner service was polled ready; the clone takes its place (tower's idiom).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            // `kubectl --as`: the identity is swapped for a tenant identity the caller may
            // act as; the client's Impersonate-* headers themselves are never forwarded.
            let acting = crate::impersonate::acting_identity(
                &state,
                &caller.tenant,
                &caller.user,
                &caller.groups,
                req.headers(),
            )
            .await?;
            let caller = match acting {
                Some((user, groups)) => TenantUser {
                    user,
                    groups,
                    ..caller
                },
                None => caller,
            };
            let (ctx, mut plan) = match plan_request(&state, &caller, &req).await? {
                Ok(planned) => planned,
                Err(answer) => return Ok((answer, method_verb(req.method()))),
            };
            let accept = header_string(&req, header::ACCEPT);
            plan.response = paddock_core::response_kind_for(&plan, accept.as_deref());
            let verb = verb_name(&plan);
            let job = Arc::new(Job {
                ctx,
                plan,
                caller,
                if_none_match: header_string(&req, header::IF_NONE_MATCH),
                accept,
            });
            let resp = inner.call(Planned { job, req }).await?;
            Ok((resp, verb))
        })
    }
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
    caller: &TenantUser,
    req: &Request<Incoming>,
) -> Result<Result<(TenantContext, Plan), Response<ResBody>>, ServerError> {
    let mut ctx = TenantContext {
        tenant: caller.tenant.clone(),
        catalog: state.catalog().await?,
    };
    let (method, path, query) = (req.method().as_str(), req.uri().path(), req.uri().query());
    let parse = || paddock_core::parse_request(method, path, query);
    // Parsed again on the rare error paths rather than copied on every request.
    let plan = match paddock_core::plan(&ctx, parse()?) {
        Ok(p) => p,
        Err(e) if e.http_code() == 404 => {
            // Maybe a CRD the tenant has just created: re-read discovery once and retry.
            ctx.catalog = state.catalogs.refresh(&state.upstream).await?;
            paddock_core::plan(&ctx, parse()?)?
        }
        Err(e) if e.http_code() == 403 => {
            let parsed = parse()?;
            let absent = crate::absent::answer_if_shared_object_absent(
                state,
                &ctx,
                &parsed,
                &caller.user,
                &caller.groups,
            )
            .await?;
            return absent.map(Err).ok_or_else(|| e.into());
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Ok((ctx, plan)))
}
