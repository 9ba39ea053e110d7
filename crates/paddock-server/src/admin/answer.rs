//! Whole JSON answers of paddock's own APIs (admin, policy, quota, usage).

use http::{Response, StatusCode, header};
use serde::Serialize;

use paddock_upstream::body::full;
use paddock_upstream::error::ServerError;
use paddock_upstream::res_body::ResBody;

/// A JSON document (a `serde_json::Value` or a type of paddock-api) as a whole response with
/// `code`.
pub(crate) fn json_response<T: Serialize + ?Sized>(
    code: StatusCode,
    v: &T,
) -> Result<Response<ResBody>, ServerError> {
    let body = serde_json::to_vec(v).map_err(|e| ServerError::Internal(e.to_string()))?;
    let mut r = Response::new(full(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(r)
}
