//! A namespaced kind read across all namespaces (`get pods -A`): tenants hold no
//! cluster-wide rights upstream, so the request goes to `fanout` (one request per tenant
//! namespace, merged) instead of down the stack.

use std::future::Future;
use std::sync::Arc;

use http::Response;

use super::{Job, Planned, Step, pipeline_layer};
use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::rare::boxed;
use paddock_upstream::res_body::ResBody;

pipeline_layer!(FanOutLayer, FanOut);

/// What the fan-out step asks of the replica.
pub trait FanningOut: Send + Sync + 'static {
    /// Serves a namespaced kind read across the tenant's namespaces (`fanout`).
    fn fan_out(
        self: Arc<Self>,
        job: Arc<Job>,
    ) -> impl Future<Output = Result<Response<ResBody>, ServerError>> + Send;

    /// Whether a read is served by the fan-out step though the plan does not fan out: a read
    /// of a tenant spanning clusters merged from all of them (namespaces, nodes, storage
    /// classes), or a namespace list or watch by a user who is not a tenant admin (each
    /// user's own view, `proxy::views`).
    fn merged_read(&self, job: &Job) -> bool;
}

impl FanningOut for AppState {
    async fn fan_out(self: Arc<Self>, job: Arc<Job>) -> Result<Response<ResBody>, ServerError> {
        if !self.merged_across_clusters(&job) && crate::proxy::views::is_user_view(&job) {
            return crate::proxy::views::serve(&self, job).await;
        }
        let c = &job.caller;
        let accept = job.accept.as_deref();
        crate::proxy::fanout::serve(&self, &job.ctx, &job.plan, &c.user, &c.groups, accept).await
    }

    fn merged_read(&self, job: &Job) -> bool {
        self.merged_across_clusters(job) || crate::proxy::views::is_user_view(job)
    }
}

impl AppState {
    /// A read of a tenant spanning clusters merged from all of them. Such a tenant's
    /// non-admins keep the cluster's answer for namespaces (the user's own view is built for a
    /// tenant on one cluster; docs/security.md "Each user's own view").
    fn merged_across_clusters(&self, job: &Job) -> bool {
        crate::clusters::span::merged_read(self, &job.ctx.tenant, &job.plan)
    }
}

impl<S, P, B> Step<Planned<B>> for FanOut<'_, S, P>
where
    P: FanningOut,
    B: Send,
    S: Step<Planned<B>, Response = Response<ResBody>>,
{
    type Response = Response<ResBody>;

    async fn run(&self, planned: Planned<B>) -> Result<Response<ResBody>, ServerError> {
        if !planned.job.plan.actions.fan_out && !self.state.merged_read(&planned.job) {
            return self.inner.run(planned).await;
        }
        // The request's body (none: a read) is not needed. Boxed: a large future on a rare
        // branch, kept out of every other request's.
        let job = planned.job;
        boxed(|| self.state.clone().fan_out(job)).await
    }
}

#[cfg(test)]
#[path = "fan_out_tests.rs"]
mod tests;
