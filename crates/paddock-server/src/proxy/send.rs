//! The innermost step: the request goes upstream through the pool of its plan's route.
//! Watches go to the watch pool (HTTP/2, many per connection); their stream slot lives as
//! long as the response body.

use std::future::Future;
use std::sync::Arc;

use http::{Request, Response};
use paddock_core::request::Route as PlanRoute;
use paddock_upstream::answer_body::AnswerBody;
use tokio::time::Instant;

use super::{Outbound, Sent, Step};
use crate::clusters::span_write::Replay;
use crate::state::AppState;
use paddock_upstream::body::UpBody;
use paddock_upstream::error::ServerError;
use paddock_upstream::rare::boxed;
use paddock_upstream::upstream::{Route, StreamSlot};

/// Upstream's answer to a request: its headers, the body still to read.
pub type Answer = Result<Response<AnswerBody>, ServerError>;

/// Upstream's answer to a watch, with the stream slot it holds in the watch pool.
pub type WatchAnswer = Result<(Response<AnswerBody>, StreamSlot), ServerError>;

/// What sending asks of the replica: its upstream pools and its error counter.
pub trait Sending: std::marker::Send + Sync + 'static {
    /// When a short request sent now must have its answer.
    fn deadline(&self) -> Instant;
    /// Sends a watch through the watch pool.
    fn send_watch(
        &self,
        request: Request<UpBody>,
    ) -> impl Future<Output = WatchAnswer> + std::marker::Send;
    /// Sends any other request through `pool`, its answer's headers due by `deadline`.
    fn send_until(
        &self,
        request: Request<UpBody>,
        pool: Route,
        deadline: Instant,
    ) -> impl Future<Output = Answer> + std::marker::Send;
    /// Counts an upstream error by kind (`status_5xx`, `timeout`, `connect`).
    fn upstream_error(&self, kind: &'static str);
    /// Replays a cluster-scoped write the home cluster accepted on a spanning tenant's other
    /// clusters.
    fn replay(self: Arc<Self>, r: Replay) -> impl Future<Output = ()> + std::marker::Send;
}

impl Sending for AppState {
    fn deadline(&self) -> Instant {
        self.upstream.deadline()
    }
    async fn send_watch(&self, request: Request<UpBody>) -> WatchAnswer {
        self.upstream.send_watch(request).await
    }
    async fn send_until(&self, request: Request<UpBody>, pool: Route, deadline: Instant) -> Answer {
        self.upstream.send_until(request, pool, deadline).await
    }
    fn upstream_error(&self, kind: &'static str) {
        self.metrics.upstream_error(kind);
    }
    async fn replay(self: Arc<Self>, r: Replay) {
        crate::clusters::span_write::replay(&self, r).await;
    }
}

/// Sends planned requests upstream (see the module).
pub struct Send<'a, P = AppState> {
    state: &'a Arc<P>,
}

impl<'a, P> Send<'a, P> {
    pub fn new(state: &'a Arc<P>) -> Self {
        Send { state }
    }
}

impl<P> Clone for Send<'_, P> {
    fn clone(&self) -> Self {
        Send { state: self.state }
    }
}

impl<P: Sending> Step<Outbound> for Send<'_, P> {
    type Response = Sent;

    async fn run(&self, out: Outbound) -> Result<Sent, ServerError> {
        let state = self.state;
        let deadline = state.deadline();
        let mut request = out.request;
        let replay = request.extensions_mut().remove::<Replay>();
        let (resp, slot) = send(&**state, out.job.plan.route, request, deadline).await?;
        if let Some(r) = replay.filter(|_| resp.status().is_success()) {
            // The home accepted it: the tenant's other clusters get it before the answer
            // (a tenant spanning clusters; rare, so boxed).
            boxed(|| state.clone().replay(r)).await;
        }
        Ok(Sent {
            job: out.job,
            resp,
            slot,
            deadline,
            with: out.sent,
        })
    }
}

async fn send<P: Sending>(
    state: &P,
    route: PlanRoute,
    request: Request<UpBody>,
    deadline: Instant,
) -> Result<(Response<AnswerBody>, Option<StreamSlot>), ServerError> {
    let pool = match route {
        PlanRoute::Watch => None,
        PlanRoute::Stream => Some(Route::Stream),
        PlanRoute::Bulk => Some(Route::Bulk),
        PlanRoute::Short => Some(Route::Short),
    };
    let sent = match pool {
        // Boxed: a watch's future (about 7 KB) would otherwise be part of every request's,
        // copied whole wherever the pipeline's future is moved or boxed.
        None => boxed(|| state.send_watch(request))
            .await
            .map(|(r, s)| (r, Some(s))),
        Some(pool) => state
            .send_until(request, pool, deadline)
            .await
            .map(|r| (r, None)),
    };
    match &sent {
        Ok((resp, _)) if resp.status().is_server_error() => state.upstream_error("status_5xx"),
        Ok(_) => {}
        Err(ServerError::UpstreamTimeout(..)) => state.upstream_error("timeout"),
        Err(_) => state.upstream_error("connect"),
    }
    sent
}

#[cfg(test)]
#[path = "send_tests.rs"]
mod tests;
