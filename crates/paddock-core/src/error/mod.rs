//! The one error type of the translation core. Every variant maps to an HTTP code and a
//! Kubernetes `Status.reason`, so the server can answer with a proper `metav1.Status` body.

pub mod status;

/// Why a request (or a response) could not be translated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// Malformed input from the tenant: bad JSON, bad selector, bad path segment.
    #[error("{0}")]
    BadRequest(String),
    /// The tenant asked for something outside its space, or a kind/field that policy denies.
    #[error("{0}")]
    Forbidden(String),
    /// Unknown path, resource or group (from the tenant's point of view).
    #[error("{0}")]
    NotFound(String),
    /// The verb is not allowed on this resource (e.g. a write to a shared read-only kind).
    #[error("{0}")]
    MethodNotAllowed(String),
    /// Request body larger than the apiserver's own 3 MiB cap.
    #[error("{0}")]
    TooLarge(String),
    /// Content type we cannot translate (CBOR bodies, protobuf of an unhandled kind).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The body is well-formed but a field value cannot be mapped into the tenant
    /// (name too long after prefixing, reserved label, unmappable identity).
    #[error("{0}")]
    Invalid(String),
    /// The upstream sent something we could not parse; never the tenant's fault.
    #[error("{0}")]
    Upstream(String),
    /// A bug or an impossible state inside paddock.
    #[error("{0}")]
    Internal(String),
}

impl TranslateError {
    /// HTTP status code to answer with.
    pub fn http_code(&self) -> u16 {
        match self {
            TranslateError::BadRequest(_) => 400,
            TranslateError::Forbidden(_) => 403,
            TranslateError::NotFound(_) => 404,
            TranslateError::MethodNotAllowed(_) => 405,
            TranslateError::TooLarge(_) => 413,
            TranslateError::UnsupportedMediaType(_) => 415,
            TranslateError::Invalid(_) => 422,
            TranslateError::Upstream(_) => 502,
            TranslateError::Internal(_) => 500,
        }
    }

    /// `metav1.StatusReason` matching [`Self::http_code`].
    pub fn reason(&self) -> &'static str {
        match self {
            TranslateError::BadRequest(_) => "BadRequest",
            TranslateError::Forbidden(_) => "Forbidden",
            TranslateError::NotFound(_) => "NotFound",
            TranslateError::MethodNotAllowed(_) => "MethodNotAllowed",
            TranslateError::TooLarge(_) => "RequestEntityTooLarge",
            TranslateError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            TranslateError::Invalid(_) => "Invalid",
            // Kubernetes has no reason for 502; InternalError is what clients expect for 5xx.
            TranslateError::Upstream(_) | TranslateError::Internal(_) => "InternalError",
        }
    }

    /// The human-readable message (the `Status.message`).
    pub fn message(&self) -> &str {
        match self {
            TranslateError::BadRequest(m)
            | TranslateError::Forbidden(m)
            | TranslateError::NotFound(m)
            | TranslateError::MethodNotAllowed(m)
            | TranslateError::TooLarge(m)
            | TranslateError::UnsupportedMediaType(m)
            | TranslateError::Invalid(m)
            | TranslateError::Upstream(m)
            | TranslateError::Internal(m) => m,
        }
    }

    /// The full `metav1.Status` JSON body for this error.
    pub fn status_body(&self) -> Vec<u8> {
        crate::error::status::status_body(self.http_code(), self.reason(), self.message())
    }

    pub(crate) fn bad(msg: impl Into<String>) -> Self {
        TranslateError::BadRequest(msg.into())
    }
    pub(crate) fn forbidden(msg: impl Into<String>) -> Self {
        TranslateError::Forbidden(msg.into())
    }
    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        TranslateError::Invalid(msg.into())
    }
    pub(crate) fn not_found(msg: impl Into<String>) -> Self {
        TranslateError::NotFound(msg.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_reasons() {
        let cases = [
            (TranslateError::bad("x"), 400, "BadRequest"),
            (TranslateError::forbidden("x"), 403, "Forbidden"),
            (TranslateError::not_found("x"), 404, "NotFound"),
            (
                TranslateError::MethodNotAllowed("x".into()),
                405,
                "MethodNotAllowed",
            ),
            (
                TranslateError::TooLarge("x".into()),
                413,
                "RequestEntityTooLarge",
            ),
            (
                TranslateError::UnsupportedMediaType("x".into()),
                415,
                "UnsupportedMediaType",
            ),
            (TranslateError::invalid("x"), 422, "Invalid"),
            (TranslateError::Internal("x".into()), 500, "InternalError"),
        ];
        for (e, code, reason) in cases {
            assert_eq!(e.http_code(), code);
            assert_eq!(e.reason(), reason);
            assert_eq!(e.message(), "x");
        }
    }
}
