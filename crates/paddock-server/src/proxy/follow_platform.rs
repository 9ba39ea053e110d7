//! The follow-up of a 404 of a GET of a FlowSchema or PriorityLevelConfiguration: the
//! platform's object of that name (paddock_core::request::platform_get decides and judges; this module
//! reads). Both reads carry the request's own upstream identity, which may read these kinds
//! anyway (their lists show the platform's objects); the answer is kept only if the first read
//! shows a platform object, so for another tenant's object or paddock's plumbing the answer
//! stays the 404.

use http::{Method, Request, Response, StatusCode, header};
use paddock_core::request::platform_get::is_platform_object;
use paddock_upstream::answer_body::AnswerBody;

use super::Sent;
use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// Largest platform object read to judge it.
const PLATFORM_OBJECT_BYTES: usize = 1 << 20;

/// Upstream's answer for `path` in the encoding the client asked for, if the object there is
/// the platform's; None when it is absent, not readable, or not the platform's.
pub async fn platform_object(
    state: &AppState,
    sent: &Sent,
    path: &str,
) -> Result<Option<Response<AnswerBody>>, ServerError> {
    let judged = read(state, sent, path, "application/json").await?;
    if judged.status() != StatusCode::OK {
        paddock_upstream::body::drain(judged.into_body()).await;
        return Ok(None);
    }
    let raw = state
        .upstream
        .collect_until(judged.into_body(), PLATFORM_OBJECT_BYTES, sent.deadline)
        .await?;
    let platform =
        serde_json::from_slice::<serde_json::Value>(&raw).is_ok_and(|v| is_platform_object(&v));
    if !platform {
        return Ok(None);
    }
    // Read again as the client asked (a Table for kubectl, protobuf for client-go); the
    // rewrite step then applies its own rules to it as to any answer. (A write is refused on
    // the strength of the first read; the second is then only drained.)
    let accept = sent.job.accept.as_deref().unwrap_or("application/json");
    let resp = read(state, sent, path, accept).await?;
    if resp.status() != StatusCode::OK {
        paddock_upstream::body::drain(resp.into_body()).await;
        return Ok(None);
    }
    Ok(Some(resp))
}

async fn read(
    state: &AppState,
    sent: &Sent,
    path: &str,
    accept: &str,
) -> Result<Response<AnswerBody>, ServerError> {
    let mut r = Request::builder()
        .method(Method::GET)
        .uri(state.upstream.uri(path)?)
        .header(header::ACCEPT, accept)
        .body(paddock_upstream::body::empty_up())
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let c = &sent.job.caller;
    crate::proxy::outbound::add_impersonation_as(
        r.headers_mut(),
        &c.tenant,
        &c.user,
        &c.groups,
        sent.with.who,
    )?;
    state
        .upstream
        .send_until(r, paddock_upstream::upstream::Route::Short, sent.deadline)
        .await
}
