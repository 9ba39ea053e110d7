//! The last step on the way back: upstream's answer rewritten for the tenant. Passed through,
//! rewritten whole (documents, small answers), rewritten as a stream (lists, watches, logs),
//! or spliced (exec, attach, port-forward upgrades).

use std::future::Future;

use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use paddock_core::{Plan, ResponseKind, TenantContext};
use paddock_upstream::answer_body::AnswerBody;
use tokio_util::sync::CancellationToken;

use super::{FollowedUp, Planned, Sent, Step, pipeline_layer};
use crate::proxy::outbound::{
    FORWARDED_RESPONSE_HEADERS, UPGRADE_RESPONSE_HEADERS, copy_response_headers, header_value,
    keep_only,
};
use crate::proxy::whole::{
    MAX_DOCUMENT_BYTES, content_type_of, rewrite_whole, small_complete_body,
    splice_rewriting_errors,
};
use crate::state::AppState;
use paddock_upstream::body::{RewriteBody, empty, full, passthrough};
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;
use paddock_upstream::upstream::StreamSlot;

pipeline_layer!(RewriteLayer, Rewrite);

/// What rewriting asks of the replica.
pub trait Rewriting: Send + Sync + 'static {
    /// Counts an open watch until dropped.
    type WatchGuard: Send + 'static;
    /// Reads an answer's body whole, at most `limit` bytes, by `deadline`.
    fn collect_until(
        &self,
        body: AnswerBody,
        limit: usize,
        deadline: tokio::time::Instant,
    ) -> impl Future<Output = Result<bytes::Bytes, ServerError>> + Send;
    /// Counts an open watch until the guard is dropped.
    fn watch_opened(&self) -> Self::WatchGuard;
    /// Cancelled at shutdown: watches end cleanly.
    fn shutdown(&self) -> CancellationToken;
    /// Cancelled when the upstream is lost: watches end with an ERROR event.
    fn upstream_lost(&self) -> CancellationToken;
}

impl Rewriting for AppState {
    type WatchGuard = crate::observe::metrics::WatchGuard;
    async fn collect_until(
        &self,
        body: AnswerBody,
        limit: usize,
        deadline: tokio::time::Instant,
    ) -> Result<bytes::Bytes, ServerError> {
        self.upstream.collect_until(body, limit, deadline).await
    }
    fn watch_opened(&self) -> crate::observe::metrics::WatchGuard {
        crate::observe::metrics::WatchGuard::open(self.metrics.clone())
    }
    fn shutdown(&self) -> CancellationToken {
        self.shutdown.clone()
    }
    fn upstream_lost(&self) -> CancellationToken {
        self.health.lost_token()
    }
}

impl<S, P, B> Step<Planned<B>> for Rewrite<'_, S, P>
where
    P: Rewriting,
    B: Send,
    S: Step<Planned<B>, Response = FollowedUp>,
{
    type Response = Response<ResBody>;

    async fn run(&self, planned: Planned<B>) -> Result<Response<ResBody>, ServerError> {
        let sent = match self.inner.run(planned).await? {
            FollowedUp::Answered(answer) => return Ok(answer),
            FollowedUp::Upstream(sent) => sent,
        };
        let plan = &sent.job.plan;
        if plan.upgrade && sent.resp.status() == StatusCode::SWITCHING_PROTOCOLS {
            return splice_upgrade(sent);
        }
        rewrite_response(&**self.state, sent).await
    }
}

/// An answer read whole, with its content type.
pub(super) fn whole_answer(
    status: StatusCode,
    content_type: &str,
    doc: Vec<u8>,
) -> Result<Response<ResBody>, ServerError> {
    let mut out = Response::builder().status(status);
    if let Some(h) = out.headers_mut() {
        h.insert(header::CONTENT_TYPE, header_value(content_type)?);
    }
    out.body(full(doc))
        .map_err(|e| ServerError::Internal(e.to_string()))
}

/// Joins the client's and upstream's upgraded connections (exec, attach, port-forward).
fn splice_upgrade(sent: Sent) -> Result<Response<ResBody>, ServerError> {
    let Sent {
        job,
        mut resp,
        with,
        ..
    } = sent;
    let (ctx, plan) = (&job.ctx, &job.plan);
    let Some(client_upgrade) = with.client_upgrade else {
        return Err(ServerError::BadRequest(
            "upgrade response without an upgrade request".into(),
        ));
    };
    let upstream_upgrade = hyper::upgrade::on(&mut resp);
    // exec/attach over WebSocket: the error channel carries a Status from the apiserver or
    // the kubelet that may name upstream objects (`pod "foofoo-streams/web-1"`); it is
    // rewritten, every other frame passes as it is. SPDY streams pass unchanged.
    let rewrite_errors = matches!(plan.subresource(), Some("exec" | "attach"))
        && resp
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok())
            .is_some_and(paddock_core::response::wsframe::is_channel_protocol);
    let stream_ctx = ctx.clone();
    tokio::spawn(async move {
        match (client_upgrade.await, upstream_upgrade.await) {
            (Ok(c), Ok(u)) => {
                let mut c = hyper_util::rt::TokioIo::new(c);
                let mut u = hyper_util::rt::TokioIo::new(u);
                let r = if rewrite_errors {
                    splice_rewriting_errors(c, u, stream_ctx).await
                } else {
                    tokio::io::copy_bidirectional(&mut c, &mut u)
                        .await
                        .map(|_| ())
                };
                if let Err(e) = r {
                    tracing::debug!(error = %e, "upgraded stream ended");
                }
            }
            (Err(e), _) | (_, Err(e)) => tracing::warn!(error = %e, "upgrade failed"),
        }
    });
    let mut out = Response::builder().status(resp.status());
    if let Some(h) = out.headers_mut() {
        copy_response_headers(resp.headers(), h, &UPGRADE_RESPONSE_HEADERS);
    }
    out.body(empty())
        .map_err(|e| ServerError::Internal(e.to_string()))
}

/// The answer for the tenant: passed through, rewritten whole (documents, small answers), or
/// rewritten as a stream (lists, watches, logs).
async fn rewrite_response<P: Rewriting>(
    state: &P,
    sent: Sent,
) -> Result<Response<ResBody>, ServerError> {
    let Sent {
        job,
        mut resp,
        slot,
        deadline,
        ..
    } = sent;
    let (ctx, plan) = (&job.ctx, &job.plan);
    let status = resp.status();
    let content_type = content_type_of(&resp);
    let small = small_complete_body(plan, resp.headers());
    let mut out = Response::builder().status(status);
    let out_headers = out
        .headers_mut()
        .ok_or_else(|| ServerError::Internal("response builder".into()))?;
    // Upstream's own header map becomes the tenant's, with only the forwarded headers left in
    // it: no map is made and no value copied.
    *out_headers = std::mem::take(resp.headers_mut());
    keep_only(out_headers, &FORWARDED_RESPONSE_HEADERS);

    let buffered = matches!(
        plan.response,
        ResponseKind::Discovery | ResponseKind::OpenApi
    );
    let body = if matches!(plan.response, ResponseKind::PassThrough) && status.is_success() {
        passthrough(resp.into_body())
    } else if buffered && status.is_success() {
        let raw = state
            .collect_until(resp.into_body(), MAX_DOCUMENT_BYTES, deadline)
            .await?;
        let mut doc = rewrite_whole(ctx, plan, status, &content_type, &raw)?;
        if matches!(plan.request.path, paddock_core::ApiPath::Apis)
            && let Some(with_paddock) = crate::admin::add_tenant_group(&doc)
        {
            doc = with_paddock;
        }
        // As kube-openapi: one ETag for both encodings of the same document (Vary: Accept).
        let etag = format!("\"{}\"", paddock_core::etag(&doc));
        out_headers.insert(header::ETAG, header_value(&etag)?);
        out_headers.insert(header::VARY, HeaderValue::from_static("Accept"));
        if job.if_none_match.as_deref() == Some(etag.as_str()) {
            // The ETag is computed over this tenant's document, so a 304 can never hand a
            // client another tenant's cached view.
            out_headers.remove(header::CONTENT_TYPE);
            return out
                .status(StatusCode::NOT_MODIFIED)
                .body(empty())
                .map_err(|e| ServerError::Internal(e.to_string()));
        }
        if matches!(plan.request.path, paddock_core::ApiPath::OpenApiV2)
            && paddock_core::response::openapi_pb::wants_openapi_v2_protobuf(job.accept.as_deref())
        {
            doc = paddock_core::response::openapi_pb::openapi_v2_protobuf(&doc)?;
            out_headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(paddock_core::response::openapi_pb::OPENAPI_V2_PROTOBUF),
            );
        }
        full(doc)
    } else if let Some(len) = small {
        // A small answer of known length (a GET of one object, a write's answer, a Status):
        // read it whole and answer with headers and body together. Streamed, the headers
        // would leave first and the body in a second write, after another wake-up.
        let raw = state.collect_until(resp.into_body(), len, deadline).await?;
        full(rewrite_whole(ctx, plan, status, &content_type, &raw)?)
    } else {
        stream_body(state, ctx, plan, resp, slot, &content_type, deadline)
    };
    out.body(body)
        .map_err(|e| ServerError::Internal(e.to_string()))
}

/// A list, watch or log answer rewritten chunk by chunk as it arrives.
fn stream_body<P: Rewriting>(
    state: &P,
    ctx: &TenantContext,
    plan: &Plan,
    resp: Response<AnswerBody>,
    slot: Option<StreamSlot>,
    content_type: &str,
    deadline: tokio::time::Instant,
) -> ResBody {
    let status = resp.status();
    let rw = paddock_core::response_rewriter(ctx, plan, status.as_u16(), content_type);
    let watch = matches!(
        plan.response,
        ResponseKind::Watch | ResponseKind::TableWatch
    );
    let on_finish: Option<Box<dyn FnOnce() + Send>> = if watch {
        let guard = state.watch_opened();
        Some(Box::new(move || {
            drop(guard);
            drop(slot);
        }))
    } else {
        None
    };
    let body = RewriteBody::new(resp.into_body(), rw, on_finish);
    if watch {
        // Ends cleanly at shutdown; with an ERROR event when the upstream is lost.
        body.until(state.shutdown())
            .interrupt_on(
                state.upstream_lost(),
                paddock_upstream::error::watch_interrupted_event(),
            )
            .boxed()
    } else if plan.long_running {
        // `logs -f` and the like: what arrives leaves at once.
        body.boxed()
    } else {
        body.batched().deadline(deadline).boxed()
    }
}

#[cfg(test)]
#[path = "rewrite_tests.rs"]
mod tests;
