//! Small JSON calls to the upstream apiserver with paddock's own credential (provisioning,
//! deletion, bootstrap). Not on the tenant request path.

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use serde_json::Value;

use crate::error::ServerError;
use crate::limit::collect_limited;
use crate::upstream::Upstream;

/// A JSON answer from upstream.
pub struct UpAnswer {
    /// HTTP status.
    pub status: StatusCode,
    /// Parsed body (Null when empty or not JSON).
    pub body: Value,
}

impl UpAnswer {
    /// The upstream `Status.message`, for errors.
    pub fn message(&self) -> String {
        self.body["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| self.status.to_string())
    }
}

/// Sends one request as paddock itself.
pub async fn call(
    up: &Upstream,
    method: Method,
    path: &str,
    content_type: Option<&str>,
    body: Option<&Value>,
) -> Result<UpAnswer, ServerError> {
    call_accept(up, method, path, content_type, body, "application/json").await
}

/// [`call`] asking for the answer as `accept` (e.g. a `PartialObjectMetadataList`).
pub async fn call_accept(
    up: &Upstream,
    method: Method,
    path: &str,
    content_type: Option<&str>,
    body: Option<&Value>,
    accept: &str,
) -> Result<UpAnswer, ServerError> {
    let bytes = match body {
        Some(v) => {
            Bytes::from(serde_json::to_vec(v).map_err(|e| ServerError::Internal(e.to_string()))?)
        }
        None => Bytes::new(),
    };
    let mut b = Request::builder()
        .method(method)
        .uri(up.uri(path)?)
        .header(header::ACCEPT, accept);
    if let Some(ct) = content_type {
        b = b.header(header::CONTENT_TYPE, ct);
    }
    let req = b
        .body(crate::body::full_up(bytes))
        .map_err(|e| ServerError::Internal(e.to_string()))?;
    let resp = up.send(req, crate::upstream::Route::Short).await?;
    let status = resp.status();
    let raw = collect_limited(resp.into_body(), 64 << 20).await?;
    let body = if raw.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&raw).unwrap_or(Value::Null)
    };
    Ok(UpAnswer { status, body })
}

/// Server-side apply of one object (idempotent create-or-update).
pub async fn apply(up: &Upstream, path: &str, obj: &Value) -> Result<(), ServerError> {
    apply_object(up, path, obj).await.map(drop)
}

/// [`apply`], returning the object as the apiserver holds it after the apply.
pub async fn apply_object(up: &Upstream, path: &str, obj: &Value) -> Result<Value, ServerError> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let p = format!("{path}{sep}fieldManager=paddock&force=true");
    let a = call(
        up,
        Method::PATCH,
        &p,
        Some("application/apply-patch+yaml"),
        Some(obj),
    )
    .await?;
    if a.status.is_success() {
        Ok(a.body)
    } else {
        Err(ServerError::Upstream(format!(
            "applying {path} upstream failed ({}): {}",
            a.status,
            a.message()
        )))
    }
}

/// Deletes one object; a 404 counts as done.
pub async fn delete(up: &Upstream, path: &str) -> Result<(), ServerError> {
    let a = call(up, Method::DELETE, path, None, None).await?;
    if a.status.is_success() || a.status == StatusCode::NOT_FOUND {
        Ok(())
    } else {
        Err(ServerError::Upstream(format!(
            "deleting {path} upstream failed ({}): {}",
            a.status,
            a.message()
        )))
    }
}

/// A query parameter value (or key), percent-encoded: everything but RFC 3986's unreserved
/// characters. Label selectors carry `/`, `=`, `,` and `!`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Lists objects; returns the items.
pub async fn list(up: &Upstream, path: &str) -> Result<Vec<Value>, ServerError> {
    list_accept(up, path, "application/json").await
}

/// [`list`] asking for the pages as `accept`.
pub async fn list_accept(
    up: &Upstream,
    path: &str,
    accept: &str,
) -> Result<Vec<Value>, ServerError> {
    let mut items = Vec::new();
    visit_pages(up, path, accept, LIST_PAGE, |page| items.extend(page)).await?;
    Ok(items)
}

/// Lists `path` in pages of `page` objects asked for as `accept`, handing each page's items
/// to `visit` before the next is read: what is held at once is one page, whatever the size
/// of the cluster (the usage refresh reads every pod in full).
pub async fn visit_pages(
    up: &Upstream,
    path: &str,
    accept: &str,
    page: usize,
    mut visit: impl FnMut(Vec<Value>),
) -> Result<(), ServerError> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut token = String::new();
    // In pages: the periodic RBAC resync lists every tenant's namespaces and bindings at once,
    // and one answer for a large cluster would outgrow `call`'s body limit.
    loop {
        let asked = if token.is_empty() {
            format!("{path}{sep}limit={page}")
        } else {
            format!("{path}{sep}limit={page}&continue={}", query_escape(&token))
        };
        let mut a = call_accept(up, Method::GET, &asked, None, None, accept).await?;
        if !a.status.is_success() {
            return Err(ServerError::Upstream(format!(
                "listing {path} upstream failed ({}): {}",
                a.status,
                a.message()
            )));
        }
        if let Some(Value::Array(v)) = a.body.get_mut("items").map(Value::take) {
            visit(v);
        }
        token = a.body["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if token.is_empty() {
            return Ok(());
        }
    }
}

/// Objects per page of [`list`].
const LIST_PAGE: usize = 500;

#[cfg(test)]
mod tests {
    #[test]
    fn query_escape_keeps_only_unreserved_characters() {
        assert_eq!(
            super::query_escape("paddock.io/tenant=foofoo,a!=b c"),
            "paddock.io%2Ftenant%3Dfoofoo%2Ca%21%3Db%20c"
        );
        assert_eq!(super::query_escape("A-z_0.9~"), "A-z_0.9~");
    }
}
