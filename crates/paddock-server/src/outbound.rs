//! The upstream request's headers: what is forwarded either way, and the impersonation
//! headers that carry the tenant caller's upstream identity.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use paddock_core::TenantId;
use paddock_core::identity::{As, impersonation};

use crate::error::ServerError;

/// Request headers that are copied upstream as they are. Everything else is dropped: hop-by-hop
/// headers, the client's Authorization, and above all any `Impersonate-*` header.
pub(crate) const FORWARDED_REQUEST_HEADERS: &[HeaderName] =
    &[header::USER_AGENT, header::CONTENT_ENCODING];

/// Extra request headers forwarded only on upgrade requests (exec, attach, port-forward).
pub(crate) static UPGRADE_HEADERS: [HeaderName; 7] = [
    HeaderName::from_static("connection"),
    HeaderName::from_static("upgrade"),
    HeaderName::from_static("sec-websocket-key"),
    HeaderName::from_static("sec-websocket-version"),
    HeaderName::from_static("sec-websocket-protocol"),
    HeaderName::from_static("sec-websocket-extensions"),
    HeaderName::from_static("x-stream-protocol-version"),
];

/// Response headers copied back to the client.
pub(crate) static FORWARDED_RESPONSE_HEADERS: [HeaderName; 6] = [
    HeaderName::from_static("content-type"),
    HeaderName::from_static("audit-id"),
    HeaderName::from_static("cache-control"),
    HeaderName::from_static("x-kubernetes-pf-flowschema-uid"),
    HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid"),
    HeaderName::from_static("retry-after"),
];
pub(crate) static UPGRADE_RESPONSE_HEADERS: [HeaderName; 5] = [
    HeaderName::from_static("connection"),
    HeaderName::from_static("upgrade"),
    HeaderName::from_static("sec-websocket-accept"),
    HeaderName::from_static("sec-websocket-protocol"),
    HeaderName::from_static("x-stream-protocol-version"),
];

pub(crate) fn header_value(s: &str) -> Result<HeaderValue, ServerError> {
    HeaderValue::from_str(s)
        .map_err(|_| ServerError::BadRequest(format!("invalid header value {s:?}")))
}

pub(crate) fn copy_request_headers(from: &HeaderMap, to: &mut HeaderMap, upgrade: bool) {
    for name in FORWARDED_REQUEST_HEADERS {
        for v in from.get_all(name) {
            to.append(name.clone(), v.clone());
        }
    }
    if let Some(ct) = from.get(header::CONTENT_TYPE) {
        to.insert(header::CONTENT_TYPE, ct.clone());
    }
    if upgrade {
        for name in &UPGRADE_HEADERS {
            for v in from.get_all(name) {
                to.append(name.clone(), v.clone());
            }
        }
    }
}

pub(crate) fn copy_response_headers(from: &HeaderMap, to: &mut HeaderMap, names: &[HeaderName]) {
    for name in names {
        for v in from.get_all(name) {
            to.append(name.clone(), v.clone());
        }
    }
}

/// Adds paddock's impersonation of the tenant user (its real identity).
pub fn add_impersonation(
    h: &mut HeaderMap,
    tenant: &TenantId,
    user: &str,
    groups: &[String],
) -> Result<(), ServerError> {
    add_impersonation_as(h, tenant, user, groups, As::Real)
}

/// Adds paddock's impersonation of the tenant user as the real or the cluster-shadow identity.
pub fn add_impersonation_as(
    h: &mut HeaderMap,
    tenant: &TenantId,
    user: &str,
    groups: &[String],
    who: As,
) -> Result<(), ServerError> {
    let imp = impersonation(tenant, user, groups, who);
    h.insert("impersonate-user", header_value(&imp.user)?);
    // Not the group the apiserver adds itself (one impersonation check less per request).
    for g in imp.sent_groups() {
        h.append("impersonate-group", header_value(g)?);
    }
    for (k, v) in &imp.extra {
        let name = format!("impersonate-extra-{}", percent_encode_header_key(k));
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ServerError::Internal(format!("bad extra key {k:?}")))?;
        h.append(name, header_value(v)?);
    }
    Ok(())
}

/// Impersonate-Extra keys are percent-encoded (RFC 3986 unreserved chars stay).
pub(crate) fn percent_encode_header_key(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    for b in k.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b.to_ascii_lowercase() as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
