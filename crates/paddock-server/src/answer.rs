//! Whole JSON answers of paddock's own APIs (admin, policy, quota, usage).

use http::{Response, StatusCode, header};
use serde_json::Value;

use crate::body::{ResBody, full};
use crate::error::ServerError;

/// A JSON document as a whole response with `code`.
pub(crate) fn json_response(code: StatusCode, v: &Value) -> Result<Response<ResBody>, ServerError> {
    let body = serde_json::to_vec(v).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = Response::new(full(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(r)
}
