//! The innermost step: the request goes upstream through the pool of its plan's route.
//! Watches go to the watch pool (HTTP/2, many per connection); their stream slot lives as
//! long as the response body.

use std::sync::Arc;
use std::task::{Context, Poll};

use paddock_core::request::Route as PlanRoute;
use tower::Service;

use super::{LayerFuture, Outbound, Sent};
use crate::error::ServerError;
use crate::state::AppState;
use crate::upstream::Route;

/// Sends planned requests upstream (see the module).
#[derive(Clone)]
pub struct Send {
    state: Arc<AppState>,
}

impl Send {
    pub fn new(state: Arc<AppState>) -> Self {
        Send { state }
    }
}

impl Service<Outbound> for Send {
    type Response = Sent;
    type Error = ServerError;
    type Future = LayerFuture<Sent>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ServerError>> {
        // The pools queue for themselves.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, out: Outbound) -> Self::Future {
        let state = self.state.clone();
        Box::pin(async move {
            let deadline = state.upstream.deadline();
            let mut request = out.request;
            let replay = request
                .extensions_mut()
                .remove::<crate::clusters::span_write::Replay>();
            let (resp, slot) = send(&state, out.job.plan.route, request, deadline).await?;
            if let Some(r) = replay.filter(|_| resp.status().is_success()) {
                // The home accepted it: the tenant's other clusters get it before the answer.
                crate::clusters::span_write::replay(&state, r).await;
            }
            Ok(Sent {
                job: out.job,
                resp,
                slot,
                deadline,
                with: out.sent,
            })
        })
    }
}

async fn send(
    state: &AppState,
    route: PlanRoute,
    request: http::Request<crate::body::UpBody>,
    deadline: tokio::time::Instant,
) -> Result<
    (
        http::Response<hyper::body::Incoming>,
        Option<crate::upstream::StreamSlot>,
    ),
    ServerError,
> {
    let up = &state.upstream;
    let pool = match route {
        PlanRoute::Watch => None,
        PlanRoute::Stream => Some(Route::Stream),
        PlanRoute::Bulk => Some(Route::Bulk),
        PlanRoute::Short => Some(Route::Short),
    };
    let sent = match pool {
        None => up.send_watch(request).await.map(|(r, s)| (r, Some(s))),
        Some(pool) => up
            .send_until(request, pool, deadline)
            .await
            .map(|r| (r, None)),
    };
    match &sent {
        Ok((resp, _)) if resp.status().is_server_error() => {
            state.metrics.upstream_error("status_5xx");
        }
        Ok(_) => {}
        Err(ServerError::UpstreamTimeout(..)) => state.metrics.upstream_error("timeout"),
        Err(_) => state.metrics.upstream_error("connect"),
    }
    sent
}
