//! paddock as the upstream's authenticating front proxy (`upstream_identity_mode =
//! "front-proxy"`): a request that asserts a tenant identity goes on a connection with the
//! front-proxy client certificate, the identity in `X-Remote-*` headers, which the apiserver's
//! request-header authenticator takes as they are, without the impersonation filter's
//! authorization checks (one per user, group and extra value).
//!
//! The server builds every identity once, in the impersonation names
//! (`paddock_core::identity::headers::identity_fields`); [`assert_as_front_proxy`] renames
//! them where the connection is picked (`Upstream::pools_for`), so that a request never
//! carries `X-Remote-*` on paddock's own connection (where the apiserver ignores them and the
//! request would run as paddock) nor `Impersonate-*` on the front-proxy one.

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};
use paddock_core::identity::headers::{FRONT_PROXY, IMPERSONATE, renamed};

use crate::error::ServerError;

/// Turns `h`'s impersonation headers into front-proxy headers, in their order; true when the
/// request asserts an identity (an `Impersonate-User`), false when it is paddock's own (then
/// `h` is unchanged). Any `X-Remote-*` header already there is dropped first: only what paddock
/// built is asserted. An impersonation header with no front-proxy form (`Impersonate-Uid`,
/// which paddock never sends) is an error, not dropped: the identity would change.
pub fn assert_as_front_proxy(h: &mut HeaderMap) -> Result<bool, ServerError> {
    if !h.contains_key(IMPERSONATE.user) {
        strip_front_proxy(h);
        return Ok(false);
    }
    strip_front_proxy(h);
    let mut fields: Vec<(HeaderName, HeaderValue)> = Vec::new();
    // A header map has no rename: take the identity fields out, put them back renamed.
    let names: Vec<HeaderName> = h
        .keys()
        .filter(|k| k.as_str().starts_with(IMPERSONATE.prefix))
        .cloned()
        .collect();
    for name in names {
        let to = renamed(name.as_str(), &IMPERSONATE, &FRONT_PROXY).ok_or_else(|| {
            ServerError::Internal(format!("{name} cannot be asserted by a front proxy"))
        })?;
        let to = HeaderName::from_bytes(to.as_bytes())
            .map_err(|_| ServerError::Internal(format!("bad front-proxy header {to:?}")))?;
        if let http::header::Entry::Occupied(e) = h.entry(&name) {
            let (_, values) = e.remove_entry_mult();
            fields.extend(values.map(|v| (to.clone(), v)));
        }
    }
    for (name, value) in fields {
        h.append(name, value);
    }
    Ok(true)
}

/// Removes every `X-Remote-*` header.
fn strip_front_proxy(h: &mut HeaderMap) {
    while let Some(k) = h
        .keys()
        .find(|k| k.as_str().starts_with(FRONT_PROXY.prefix))
        .cloned()
    {
        h.remove(&k);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn map(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(HeaderName::from_static(n), HeaderValue::from_static(v));
        }
        h
    }

    fn pairs(h: &HeaderMap) -> Vec<(String, String)> {
        h.iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    #[test]
    fn the_identity_is_renamed_and_nothing_else_is_asserted() {
        let mut h = map(&[
            ("x-remote-user", "system:admin"),
            ("impersonate-user", "paddock:foofoo:alice"),
            ("accept", "application/json"),
            ("impersonate-group", "paddock:foofoo:dev"),
            ("x-remote-group", "system:masters"),
            ("impersonate-group", "paddock:tenant:foofoo"),
            ("impersonate-extra-paddock.io%2ftenant", "foofoo"),
        ]);
        assert!(assert_as_front_proxy(&mut h).unwrap());
        let mut got = pairs(&h);
        got.sort();
        let mut want: Vec<(String, String)> = [
            ("accept", "application/json"),
            ("x-remote-user", "paddock:foofoo:alice"),
            ("x-remote-group", "paddock:foofoo:dev"),
            ("x-remote-group", "paddock:tenant:foofoo"),
            ("x-remote-extra-paddock.io%2ftenant", "foofoo"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        want.sort();
        assert_eq!(got, want);
        // Groups keep their order.
        let groups: Vec<&str> = h
            .get_all("x-remote-group")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(groups, ["paddock:foofoo:dev", "paddock:tenant:foofoo"]);
    }

    #[test]
    fn paddocks_own_requests_assert_nothing() {
        let mut h = map(&[("accept", "*/*"), ("x-remote-user", "system:admin")]);
        assert!(!assert_as_front_proxy(&mut h).unwrap());
        assert_eq!(pairs(&h), [("accept".to_owned(), "*/*".to_owned())]);
    }

    #[test]
    fn what_a_front_proxy_cannot_assert_is_an_error() {
        let mut h = map(&[("impersonate-user", "u"), ("impersonate-uid", "1")]);
        assert!(assert_as_front_proxy(&mut h).is_err());
    }
}
