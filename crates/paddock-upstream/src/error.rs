//! Errors of the server, and the one place where any error becomes a Kubernetes `Status`.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};

use crate::body::full;
use crate::res_body::ResBody;

/// Everything that can go wrong while serving a request or starting up.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Invalid configuration (startup).
    #[error("{0}")]
    Config(String),
    /// The client could not be authenticated.
    #[error("{0}")]
    Unauthorized(String),
    /// The client is authenticated but not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// Malformed request.
    #[error("{0}")]
    BadRequest(String),
    /// Body too large.
    #[error("{0}")]
    TooLarge(String),
    /// Not found.
    #[error("{0}")]
    NotFound(String),
    /// Conflict (already exists).
    #[error("{0}")]
    Conflict(String),
    /// A translation rule refused the request.
    #[error(transparent)]
    Translate(#[from] paddock_core::TranslateError),
    /// The tenant store refused or is unavailable.
    #[error(transparent)]
    Store(#[from] paddock_store::StoreError),
    /// The upstream apiserver answered something paddock could not use.
    #[error("{0}")]
    Upstream(String),
    /// The upstream apiserver could not be reached, or broke the connection. The detail (which
    /// names the upstream address) is for paddock's log only; a tenant gets
    /// [`UPSTREAM_UNAVAILABLE`].
    #[error("upstream unreachable: {0}")]
    UpstreamUnreachable(String),
    /// The upstream apiserver did not answer within `upstream_timeout`.
    #[error("upstream did not answer within {}s: {detail}", .0.as_secs(), detail = .1)]
    UpstreamTimeout(std::time::Duration, String),
    /// Not ready yet (discovery or store not synced).
    #[error("{0}")]
    Unavailable(String),
    /// Not served now, to be asked again after the given number of seconds: a 503 with
    /// `Retry-After` (client-go and kubectl retry it by themselves), for a state that passes
    /// (a tenant waking up).
    #[error("{0}")]
    RetryLater(String, u64),
    /// Over a limit (429 with `Retry-After`; paddock_core::fair::refusal decides).
    #[error("{}", .0.message)]
    TooManyRequests(paddock_core::fair::refusal::Refusal),
    /// The request's header block is larger than the configured bound.
    #[error("{0}")]
    HeadersTooLarge(String),
    /// A bug or an unexpected condition.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ServerError {
    /// HTTP code and Kubernetes `reason` for this error.
    pub fn code_and_reason(&self) -> (u16, &'static str) {
        match self {
            ServerError::Config(_) | ServerError::Internal(_) => (500, "InternalError"),
            ServerError::Unauthorized(_) => (401, "Unauthorized"),
            ServerError::Forbidden(_) => (403, "Forbidden"),
            ServerError::BadRequest(_) => (400, "BadRequest"),
            ServerError::TooLarge(_) => (413, "RequestEntityTooLarge"),
            ServerError::NotFound(_) => (404, "NotFound"),
            ServerError::Conflict(_) => (409, "AlreadyExists"),
            ServerError::Translate(e) => (e.http_code(), e.reason()),
            ServerError::Store(e) => store_code(e),
            ServerError::Upstream(_) => (502, "ServiceUnavailable"),
            ServerError::UpstreamUnreachable(_) => (503, "ServiceUnavailable"),
            ServerError::UpstreamTimeout(..) => (504, "Timeout"),
            ServerError::Unavailable(_) | ServerError::RetryLater(..) => {
                (503, "ServiceUnavailable")
            }
            ServerError::TooManyRequests(_) => (429, "TooManyRequests"),
            ServerError::HeadersTooLarge(_) => (431, "RequestHeaderFieldsTooLarge"),
        }
    }

    /// The message a client sees: the error's own, except for upstream faults, whose detail
    /// names paddock's internal upstream address and is logged instead.
    pub fn public_message(&self) -> String {
        match self {
            ServerError::UpstreamUnreachable(_) => UPSTREAM_UNAVAILABLE.to_string(),
            ServerError::UpstreamTimeout(after, _) => format!(
                "the cluster is unavailable: its API server did not answer within {}s; try again later",
                after.as_secs()
            ),
            other => other.to_string(),
        }
    }

    /// Whether this is an upstream fault (unreachable or timed out).
    pub fn is_upstream_fault(&self) -> bool {
        matches!(
            self,
            ServerError::UpstreamUnreachable(_) | ServerError::UpstreamTimeout(..)
        )
    }

    /// The error as a `Status` response.
    pub fn into_response(self) -> Response<ResBody> {
        let (code, reason) = self.code_and_reason();
        let (message, retry_after) = match &self {
            ServerError::TooManyRequests(r) => (&r.message, r.retry_after),
            ServerError::RetryLater(message, after) => (message, *after),
            _ => return status_response(code, reason, &self.public_message()),
        };
        let body =
            paddock_core::error::status::status_body_retry(code, reason, message, retry_after);
        let mut resp = json_response(code, body);
        resp.headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from(retry_after));
        resp
    }
}

/// What a tenant is told when the upstream cannot be reached (never its address).
pub const UPSTREAM_UNAVAILABLE: &str =
    "the cluster is unavailable: its API server cannot be reached; try again later";

/// The watch `ERROR` event that ends a watch whose upstream stopped answering: an
/// `InternalError` (500), on which client-go's reflector watches again from its last
/// resourceVersion without a re-list (as after kube-apiserver's own storage errors).
pub fn watch_interrupted_event() -> Bytes {
    Bytes::from(paddock_core::watch_error_event(
        500,
        "InternalError",
        "the cluster is unavailable: the watch was interrupted because its API server stopped answering; watch again from the last resourceVersion",
    ))
}

fn store_code(e: &paddock_store::StoreError) -> (u16, &'static str) {
    use paddock_store::StoreError as S;
    match e {
        S::AlreadyExists(..) => (409, "AlreadyExists"),
        S::NotFound(..) => (404, "NotFound"),
        S::Unavailable(..) => (503, "ServiceUnavailable"),
        S::Invalid(..) => (400, "BadRequest"),
        _ => (500, "InternalError"),
    }
}

/// A `Status` response with the given code, reason and message.
pub fn status_response(code: u16, reason: &str, message: &str) -> Response<ResBody> {
    json_response(code, paddock_core::status_body(code, reason, message))
}

fn json_response(code: u16, body: Vec<u8>) -> Response<ResBody> {
    let mut resp = Response::new(full(Bytes::from(body)));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_faults_never_show_the_address() {
        let e = ServerError::UpstreamUnreachable(
            "https://127.0.0.1:6443: client error (SendRequest)".into(),
        );
        assert_eq!(e.code_and_reason(), (503, "ServiceUnavailable"));
        assert!(!e.public_message().contains("127.0.0.1"));
        assert!(
            e.to_string().contains("127.0.0.1"),
            "the log keeps the detail"
        );
        let t = ServerError::UpstreamTimeout(
            std::time::Duration::from_secs(60),
            "GET https://127.0.0.1:6443/api".into(),
        );
        assert_eq!(t.code_and_reason(), (504, "Timeout"));
        assert!(t.public_message().contains("within 60s"));
        assert!(!t.public_message().contains("127.0.0.1"));
    }

    #[test]
    fn a_passing_state_is_a_503_that_client_go_retries() {
        let r = ServerError::RetryLater("tenant t is waking up".into(), 5).into_response();
        assert_eq!(r.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            r.headers()
                .get(http::header::RETRY_AFTER)
                .map(|v| v.as_bytes()),
            Some(&b"5"[..])
        );
        let plain = ServerError::Unavailable("not ready".into()).into_response();
        assert!(plain.headers().get(http::header::RETRY_AFTER).is_none());
    }
}
