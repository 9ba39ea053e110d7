//! A namespaced kind read across all namespaces (`get pods -A`): tenants hold no
//! cluster-wide rights upstream, so the request goes to `fanout` (one request per tenant
//! namespace, merged) instead of down the stack.

use std::task::{Context, Poll};

use http::Response;
use tower::Service;

use super::{LayerFuture, Planned, pipeline_layer};
use crate::body::ResBody;
use crate::error::ServerError;

pipeline_layer!(FanOutLayer, FanOut);

impl<S> Service<Planned> for FanOut<S>
where
    S: Service<Planned, Response = Response<ResBody>, Error = ServerError>,
    S::Future: Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = ServerError;
    type Future = futures_util::future::Either<S::Future, LayerFuture<Response<ResBody>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ServerError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, planned: Planned) -> Self::Future {
        let job = &planned.job;
        let merged = || crate::clusters::span::merged_read(&self.state, &job.ctx.tenant, &job.plan);
        if !job.plan.actions.fan_out && !merged() {
            return futures_util::future::Either::Left(self.inner.call(planned));
        }
        let state = self.state.clone();
        futures_util::future::Either::Right(Box::pin(async move {
            let job = &planned.job;
            let c = &job.caller;
            let accept = job.accept.as_deref();
            crate::fanout::serve(&state, &job.ctx, &job.plan, &c.user, &c.groups, accept).await
        }))
    }
}
