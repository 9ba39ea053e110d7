//! Errors of the server, and the one place where any error becomes a Kubernetes `Status`.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};

use crate::body::{ResBody, full};

/// Boxed error used in body streams.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

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
    /// The upstream apiserver could not be reached.
    #[error("{0}")]
    Upstream(String),
    /// Not ready yet (discovery or store not synced).
    #[error("{0}")]
    Unavailable(String),
    /// Over a fair-share limit (429 with `Retry-After`).
    #[error("{message}")]
    TooManyRequests {
        /// Names the tenant, the limit and its value.
        message: String,
        /// Seconds, for `Retry-After` and the Status' `details.retryAfterSeconds`.
        retry_after: u64,
        /// The limit's field name (metrics).
        limit: &'static str,
    },
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
            ServerError::Unavailable(_) => (503, "ServiceUnavailable"),
            ServerError::TooManyRequests { .. } => (429, "TooManyRequests"),
            ServerError::HeadersTooLarge(_) => (431, "RequestHeaderFieldsTooLarge"),
        }
    }

    /// The error as a `Status` response.
    pub fn into_response(self) -> Response<ResBody> {
        let (code, reason) = self.code_and_reason();
        if let ServerError::TooManyRequests {
            message,
            retry_after,
            ..
        } = &self
        {
            let body = paddock_core::status::status_body_retry(code, reason, message, *retry_after);
            let mut resp = json_response(code, body);
            resp.headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from(*retry_after));
            return resp;
        }
        status_response(code, reason, &self.to_string())
    }
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
