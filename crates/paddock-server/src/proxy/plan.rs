//! The first step: `kubectl --as`, then parse and plan (paddock-core). A 404 from planning
//! re-reads discovery once (a CRD the tenant has just created); a write refused (403) to a
//! shared read-only object that does not exist is answered with its NotFound (`absent.rs`).

use std::future::Future;
use std::sync::Arc;

use http::request::Parts;
use http::{HeaderMap, Request, Response, header};
use paddock_core::{Catalog, ParsedRequest, Plan, TenantContext};

use super::{Job, Planned, Step, TenantUser, pipeline_layer};
use crate::observe::metrics::{method_verb, verb_name};
use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::rare::boxed;
use paddock_upstream::res_body::ResBody;

/// What planning asks of the replica (its state; a fake in the unit tests).
pub trait Planning: Send + Sync + 'static {
    /// `kubectl --as`: the identity the caller acts as, when it may.
    fn acting(
        &self,
        caller: &TenantUser,
        headers: &HeaderMap,
    ) -> impl Future<Output = Result<Option<(String, Vec<String>)>, ServerError>> + Send;
    /// The discovery catalog as it is.
    fn catalog(&self) -> impl Future<Output = Result<Arc<Catalog>, ServerError>> + Send;
    /// The discovery catalog read again.
    fn refreshed(&self) -> impl Future<Output = Result<Arc<Catalog>, ServerError>> + Send;
    /// The NotFound of a refused write to a shared read-only object that does not exist.
    fn shared_object_absent(
        &self,
        ctx: &TenantContext,
        parsed: &ParsedRequest,
        caller: &TenantUser,
    ) -> impl Future<Output = Result<Option<Response<ResBody>>, ServerError>> + Send;
}

impl Planning for AppState {
    async fn acting(
        &self,
        c: &TenantUser,
        headers: &HeaderMap,
    ) -> Result<Option<(String, Vec<String>)>, ServerError> {
        // Rare (`kubectl --as`), and its future holds an upstream access review: boxed, and
        // not entered at all without an Impersonate-* header.
        if !headers
            .keys()
            .any(|k| k.as_str().starts_with("impersonate-"))
        {
            return Ok(None);
        }
        boxed(|| {
            crate::proxy::impersonate::acting_identity(self, &c.tenant, &c.user, &c.groups, headers)
        })
        .await
    }
    async fn catalog(&self) -> Result<Arc<Catalog>, ServerError> {
        AppState::catalog(self).await
    }
    async fn refreshed(&self) -> Result<Arc<Catalog>, ServerError> {
        self.catalogs.refresh(&self.upstream).await
    }
    async fn shared_object_absent(
        &self,
        ctx: &TenantContext,
        parsed: &ParsedRequest,
        c: &TenantUser,
    ) -> Result<Option<Response<ResBody>>, ServerError> {
        crate::proxy::absent::answer_if_shared_object_absent(self, ctx, parsed, &c.user, &c.groups)
            .await
    }
}

pipeline_layer!(PlanLayer, PlanStep);

impl<S, P, B> Step<(TenantUser, Request<B>)> for PlanStep<'_, S, P>
where
    P: Planning,
    B: Send + 'static,
    S: Step<Planned<B>, Response = Response<ResBody>>,
{
    type Response = (Response<ResBody>, &'static str);

    async fn run(
        &self,
        (caller, req): (TenantUser, Request<B>),
    ) -> Result<(Response<ResBody>, &'static str), ServerError> {
        let state = &**self.state;
        // Only the head is looked at across the awaits below; the body is passed on.
        let (head, body) = req.into_parts();
        // `kubectl --as`: the identity is swapped for a tenant identity the caller may act
        // as; the client's Impersonate-* headers themselves are never forwarded.
        let acting = state.acting(&caller, &head.headers).await?;
        let caller = match acting {
            Some((user, groups)) => TenantUser {
                user: user.into(),
                groups: groups.into(),
                ..caller
            },
            None => caller,
        };
        let (ctx, mut plan) = match plan_request(state, &caller, &head).await? {
            Ok(planned) => planned,
            Err(answer) => return Ok((answer, method_verb(&head.method))),
        };
        let accept = header_string(&head, header::ACCEPT);
        plan.response = paddock_core::response_kind_for(&plan, accept.as_deref());
        let verb = verb_name(&plan);
        let job = Arc::new(Job {
            ctx,
            plan,
            caller,
            if_none_match: header_string(&head, header::IF_NONE_MATCH),
            accept,
        });
        let req = Request::from_parts(head, body);
        let resp = self.inner.run(Planned { job, req }).await?;
        Ok((resp, verb))
    }
}

fn header_string(head: &Parts, name: header::HeaderName) -> Option<String> {
    head.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Parses and plans the request; a CRD the tenant has just created is found by re-reading
/// discovery once. `Err(answer)`: answered already (a write to a shared read-only object that
/// does not exist is a NotFound, not a refusal).
async fn plan_request<P: Planning>(
    state: &P,
    caller: &TenantUser,
    head: &Parts,
) -> Result<Result<(TenantContext, Plan), Response<ResBody>>, ServerError> {
    let mut ctx = TenantContext {
        tenant: caller.tenant.clone(),
        catalog: state.catalog().await?,
    };
    let (method, path, query) = (head.method.as_str(), head.uri.path(), head.uri.query());
    let parse = || paddock_core::parse_request(method, path, query);
    // Parsed again on the rare error paths rather than copied on every request.
    let plan = match paddock_core::plan(&ctx, parse()?) {
        Ok(p) => p,
        Err(e) if e.http_code() == 404 => {
            // Maybe a CRD the tenant has just created: re-read discovery once and retry.
            // (Boxed, as the branch below: rare, and kept out of every request's future.)
            ctx.catalog = boxed(|| state.refreshed()).await?;
            paddock_core::plan(&ctx, parse()?)?
        }
        Err(e) if e.http_code() == 403 => {
            let parsed = parse()?;
            let absent = boxed(|| state.shared_object_absent(&ctx, &parsed, caller)).await?;
            return absent.map(Err).ok_or_else(|| e.into());
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Ok((ctx, plan)))
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
