//! A namespaced kind read across all namespaces (`get pods -A`): tenants hold no
//! cluster-wide rights upstream, so the request goes to `fanout` (one request per tenant
//! namespace, merged) instead of down the stack.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Response;
use tower::Service;

use super::{Job, LayerFuture, Planned, pipeline_layer};
use crate::body::ResBody;
use crate::error::ServerError;
use crate::state::AppState;

pipeline_layer!(FanOutLayer, FanOut);

/// What the fan-out step asks of the replica.
pub trait FanningOut: Send + Sync + 'static {
    /// Serves a namespaced kind read across the tenant's namespaces (`fanout`).
    fn fan_out(
        self: Arc<Self>,
        job: Arc<Job>,
    ) -> impl Future<Output = Result<Response<ResBody>, ServerError>> + Send;
}

impl FanningOut for AppState {
    async fn fan_out(self: Arc<Self>, job: Arc<Job>) -> Result<Response<ResBody>, ServerError> {
        let c = &job.caller;
        let accept = job.accept.as_deref();
        crate::fanout::serve(&self, &job.ctx, &job.plan, &c.user, &c.groups, accept).await
    }
}

impl<S, P, B> Service<Planned<B>> for FanOut<S, P>
where
    P: FanningOut,
    S: Service<Planned<B>, Response = Response<ResBody>, Error = ServerError>,
    S::Future: Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = ServerError;
    type Future = futures_util::future::Either<S::Future, LayerFuture<Response<ResBody>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServerError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, planned: Planned<B>) -> Self::Future {
        if !planned.job.plan.actions.fan_out {
            return futures_util::future::Either::Left(self.inner.call(planned));
        }
        // The request's body (none: a read) is not needed.
        let job = planned.job;
        futures_util::future::Either::Right(Box::pin(self.state.clone().fan_out(job)))
    }
}

#[cfg(test)]
#[path = "fan_out_tests.rs"]
mod tests;
