//! The upstream request's headers: what is forwarded either way, and the impersonation
//! headers that carry the tenant caller's upstream identity.

use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use paddock_core::TenantId;
use paddock_core::identity::headers::{IMPERSONATE, identity_fields};
use paddock_core::identity::{As, impersonation};

use paddock_upstream::error::ServerError;

/// Request headers that are copied upstream as they are. Everything else is dropped: hop-by-hop
/// headers, the client's Authorization, and above all any `Impersonate-*` or `X-Remote-*`
/// header (an identity claim: `paddock_core::identity::headers::is_identity_header`).
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

/// Removes every header but `names` (a header map has no `retain`). An answer has a handful
/// of headers, so rescanning after each removal costs less than listing them first would.
pub(crate) fn keep_only(h: &mut HeaderMap, names: &[HeaderName]) {
    while let Some(drop) = h.keys().find(|k| !names.contains(k)).cloned() {
        h.remove(&drop);
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
/// The headers of an identity are made once per thread ([`made`]) and cloned after that (a
/// reference count each): a tenant's requests repeat the same few identities.
pub fn add_impersonation_as(
    h: &mut HeaderMap,
    tenant: &TenantId,
    user: &str,
    groups: &[String],
    who: As,
) -> Result<(), ServerError> {
    let made = made(tenant, user, groups, who)?;
    let mut fields = made.iter();
    if let Some((name, value)) = fields.next() {
        h.insert(name.clone(), value.clone());
    }
    for (name, value) in fields {
        h.append(name.clone(), value.clone());
    }
    Ok(())
}

/// The impersonation headers of one identity: `impersonate-user` first.
type Made = Arc<[(HeaderName, HeaderValue)]>;

/// An identity and its headers, as remembered by [`made`].
struct Remembered {
    tenant: TenantId,
    user: String,
    groups: Vec<String>,
    who: As,
    headers: Made,
}

/// Identities remembered per thread (direct-mapped by a hash; a collision makes anew).
const REMEMBERED: usize = 256;

thread_local! {
    static REMEMBER: RefCell<Vec<Option<Remembered>>> = const { RefCell::new(Vec::new()) };
}

fn made(tenant: &TenantId, user: &str, groups: &[String], who: As) -> Result<Made, ServerError> {
    let mut hasher = std::hash::DefaultHasher::new();
    (tenant.as_str(), user, groups, who as u8).hash(&mut hasher);
    let slot = (hasher.finish() % REMEMBERED as u64) as usize;
    let hit = REMEMBER.with_borrow(|r| {
        r.get(slot).and_then(Option::as_ref).and_then(|m| {
            let same = m.who == who && m.tenant == *tenant && m.user == user && m.groups == groups;
            same.then(|| m.headers.clone())
        })
    });
    if let Some(headers) = hit {
        return Ok(headers);
    }
    let headers = make(tenant, user, groups, who)?;
    REMEMBER.with_borrow_mut(|r| {
        if r.is_empty() {
            r.resize_with(REMEMBERED, || None);
        }
        r[slot] = Some(Remembered {
            tenant: tenant.clone(),
            user: user.to_owned(),
            groups: groups.to_vec(),
            who,
            headers: headers.clone(),
        });
    });
    Ok(headers)
}

fn make(tenant: &TenantId, user: &str, groups: &[String], who: As) -> Result<Made, ServerError> {
    let imp = impersonation(tenant, user, groups, who);
    // Always the impersonation names: an upstream whose tenant identities go through its
    // front-proxy connection renames them where it picks that connection
    // (`paddock_upstream::front_proxy`), so the identity is built here only.
    identity_fields(&imp, &IMPERSONATE)
        .into_iter()
        .map(|(name, value)| {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ServerError::Internal(format!("bad identity header {name:?}")))?;
            Ok((name, header_value(&value)?))
        })
        .collect::<Result<Vec<_>, ServerError>>()
        .map(Into::into)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn fields(h: &HeaderMap) -> Vec<(String, String)> {
        h.iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    #[test]
    fn keep_only_leaves_the_forwarded_headers_with_all_their_values() {
        let mut h = HeaderMap::new();
        for (n, v) in [
            ("content-type", "application/json"),
            ("x-content-type-options", "nosniff"),
            ("audit-id", "a"),
            ("date", "today"),
            ("retry-after", "1"),
            ("retry-after", "2"),
            ("content-length", "10"),
        ] {
            h.append(HeaderName::from_static(n), HeaderValue::from_static(v));
        }
        keep_only(&mut h, &FORWARDED_RESPONSE_HEADERS);
        let mut kept = fields(&h);
        kept.sort();
        let want = [
            ("audit-id", "a"),
            ("content-type", "application/json"),
            ("retry-after", "1"),
            ("retry-after", "2"),
        ];
        assert_eq!(
            kept,
            want.map(|(n, v)| (n.to_owned(), v.to_owned())).to_vec()
        );
    }

    /// A client's identity claims, in either vocabulary, are never copied upstream (upgrade
    /// or not): upstream only paddock asserts identities.
    #[test]
    fn client_identity_headers_are_never_copied() {
        let mut from = HeaderMap::new();
        for (n, v) in [
            ("impersonate-user", "system:admin"),
            ("impersonate-group", "system:masters"),
            ("impersonate-extra-scopes", "x"),
            ("x-remote-user", "system:admin"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-paddock.io%2ftenant", "bravoo"),
            ("user-agent", "kubectl"),
        ] {
            from.append(HeaderName::from_static(n), HeaderValue::from_static(v));
        }
        for upgrade in [false, true] {
            let mut to = HeaderMap::new();
            copy_request_headers(&from, &mut to, upgrade);
            let names: Vec<String> = to.keys().map(|k| k.to_string()).collect();
            assert_eq!(names, ["user-agent"], "upgrade {upgrade}");
        }
        for name in FORWARDED_REQUEST_HEADERS
            .iter()
            .chain(UPGRADE_HEADERS.iter())
        {
            assert!(!paddock_core::identity::headers::is_identity_header(
                name.as_str()
            ));
        }
    }

    /// The remembered headers are exactly the ones made anew, for every identity, however many
    /// share a slot; and they replace an `impersonate-user` already there.
    #[test]
    fn remembered_impersonation_is_what_is_made() {
        let tenants = [
            TenantId::parse("foofoo").unwrap(),
            TenantId::parse("barbar").unwrap(),
        ];
        for round in 0..2 {
            for t in &tenants {
                for i in 0..400 {
                    let user = format!("user{i}");
                    let groups = vec![format!("g{}", i % 3), "tenant-admins".to_owned()];
                    for who in [As::Real, As::Shadow] {
                        let mut h = HeaderMap::new();
                        h.insert("impersonate-user", HeaderValue::from_static("stale"));
                        add_impersonation_as(&mut h, t, &user, &groups, who).unwrap();
                        let want = make(t, &user, &groups, who).unwrap();
                        let want: Vec<(String, String)> = want
                            .iter()
                            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
                            .collect();
                        let mut got = fields(&h);
                        got.sort();
                        let mut want = want;
                        want.sort();
                        assert_eq!(got, want, "round {round}, {t:?} {user} {who:?}");
                        assert_eq!(h.get_all("impersonate-user").iter().count(), 1);
                    }
                }
            }
        }
    }
}
