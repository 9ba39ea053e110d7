//! The request headers that carry a tenant identity upstream. kube-apiserver accepts an
//! identity two ways: impersonation (`Impersonate-User`, `Impersonate-Group`,
//! `Impersonate-Extra-<key>`, sent with paddock's own credential, each value authorized by the
//! apiserver) and an authenticating front proxy (its `--requestheader-*` authenticator:
//! `X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-<key>`, trusted because the connection
//! presents a client certificate of the request-header CA). The identity is the same
//! [`Impersonation`] in both ([`super::impersonation`] declares it once); the two differ only
//! in these names and in which upstream connection carries the request.

use super::Impersonation;

/// How paddock asserts tenant identities upstream (`upstream_identity_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpstreamIdentityMode {
    /// `Impersonate-*` headers with paddock's own credential (the default: managed clusters
    /// do not hand out their request-header CA).
    #[default]
    Impersonate,
    /// `X-Remote-*` headers on a connection with the front-proxy client certificate.
    FrontProxy,
}

impl UpstreamIdentityMode {
    /// The setting's value.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamIdentityMode::Impersonate => "impersonate",
            UpstreamIdentityMode::FrontProxy => "front-proxy",
        }
    }

    /// The header names of this mode.
    pub fn headers(self) -> &'static IdentityHeaders {
        match self {
            UpstreamIdentityMode::Impersonate => &IMPERSONATE,
            UpstreamIdentityMode::FrontProxy => &FRONT_PROXY,
        }
    }
}

impl std::str::FromStr for UpstreamIdentityMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "impersonate" => Ok(UpstreamIdentityMode::Impersonate),
            "front-proxy" => Ok(UpstreamIdentityMode::FrontProxy),
            other => Err(format!(
                "{other:?} is neither \"impersonate\" nor \"front-proxy\""
            )),
        }
    }
}

/// The header names (lower case) of one way of asserting an identity.
#[derive(Debug, PartialEq, Eq)]
pub struct IdentityHeaders {
    pub user: &'static str,
    /// Repeated, one value per group.
    pub group: &'static str,
    /// Followed by the percent-encoded extra key ([`percent_encode_header_key`]).
    pub extra_prefix: &'static str,
    /// The prefix every header of this way shares: no header with it is ever copied from a
    /// client (a client's own `Impersonate-*` or `X-Remote-*` would be an identity claim).
    pub prefix: &'static str,
}

/// kube-apiserver's impersonation headers.
pub const IMPERSONATE: IdentityHeaders = IdentityHeaders {
    user: "impersonate-user",
    group: "impersonate-group",
    extra_prefix: "impersonate-extra-",
    prefix: "impersonate-",
};

/// The front-proxy headers, as the test bed and kubeadm configure the apiserver
/// (`--requestheader-username-headers=X-Remote-User`, `--requestheader-group-headers=
/// X-Remote-Group`, `--requestheader-extra-headers-prefix=X-Remote-Extra-`).
pub const FRONT_PROXY: IdentityHeaders = IdentityHeaders {
    user: "x-remote-user",
    group: "x-remote-group",
    extra_prefix: "x-remote-extra-",
    prefix: "x-remote-",
};

/// Whether a (lower-case) header name claims an identity in either way.
pub fn is_identity_header(name: &str) -> bool {
    name.starts_with(IMPERSONATE.prefix) || name.starts_with(FRONT_PROXY.prefix)
}

/// The header fields of `imp` in the names of `h`: the user first, then every sent group
/// ([`Impersonation::sent_groups`]), then the extras. Both modes take their fields from here.
pub fn identity_fields(imp: &Impersonation, h: &IdentityHeaders) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(2 + imp.groups.len() + imp.extra.len());
    out.push((h.user.to_owned(), imp.user.clone()));
    for g in imp.sent_groups() {
        out.push((h.group.to_owned(), g.to_owned()));
    }
    for (k, v) in &imp.extra {
        let name = format!("{}{}", h.extra_prefix, percent_encode_header_key(k));
        out.push((name, v.clone()));
    }
    out
}

/// The name `name` (lower case, of `from`) has in `to`; None when it is not one of `from`'s
/// identity headers. Extra keys stay as they are: both ways percent-encode them alike.
pub fn renamed(name: &str, from: &IdentityHeaders, to: &IdentityHeaders) -> Option<String> {
    if name == from.user {
        Some(to.user.to_owned())
    } else if name == from.group {
        Some(to.group.to_owned())
    } else {
        name.strip_prefix(from.extra_prefix)
            .filter(|k| !k.is_empty())
            .map(|k| format!("{}{k}", to.extra_prefix))
    }
}

/// Extra keys in header names are percent-encoded, lower case (RFC 3986 unreserved characters
/// stay), as kube-apiserver decodes both `Impersonate-Extra-` and `X-Remote-Extra-` keys.
pub fn percent_encode_header_key(k: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{As, impersonation};
    use crate::tenant::TenantId;

    /// The two modes assert the same identity values, in the same order; only the names
    /// differ, and renaming one mode's fields gives the other's.
    #[test]
    fn both_modes_carry_the_same_identity() {
        let t = TenantId::parse("foofoo").unwrap();
        let groups = vec!["dev".to_owned(), "tenant-admins".to_owned()];
        for user in ["alice", "system:serviceaccount:web:ci"] {
            for who in [As::Real, As::Shadow] {
                let imp = impersonation(&t, user, &groups, who);
                let a = identity_fields(&imp, &IMPERSONATE);
                let b = identity_fields(&imp, &FRONT_PROXY);
                let values = |f: &[(String, String)]| -> Vec<String> {
                    f.iter().map(|(_, v)| v.clone()).collect()
                };
                assert_eq!(values(&a), values(&b), "{user} {who:?}");
                let moved: Vec<(String, String)> = a
                    .iter()
                    .map(|(n, v)| (renamed(n, &IMPERSONATE, &FRONT_PROXY).unwrap(), v.clone()))
                    .collect();
                assert_eq!(moved, b, "{user} {who:?}");
                assert_eq!(b[0], ("x-remote-user".to_owned(), imp.user.clone()));
                assert!(b.iter().all(|(n, _)| is_identity_header(n)));
            }
        }
    }

    #[test]
    fn names_and_keys() {
        assert_eq!(
            percent_encode_header_key("paddock.io/tenant"),
            "paddock.io%2Ftenant"
        );
        assert_eq!(
            renamed(
                "impersonate-extra-paddock.io%2Ftenant",
                &IMPERSONATE,
                &FRONT_PROXY
            )
            .as_deref(),
            Some("x-remote-extra-paddock.io%2Ftenant")
        );
        for not in [
            "impersonate-uid",
            "impersonate-extra-",
            "impersonate",
            "accept",
        ] {
            assert_eq!(renamed(not, &IMPERSONATE, &FRONT_PROXY), None, "{not}");
        }
        for claim in [
            "impersonate-user",
            "x-remote-group",
            "x-remote-extra-scopes",
        ] {
            assert!(is_identity_header(claim), "{claim}");
        }
        assert!(!is_identity_header("x-request-id"));
        assert_eq!("front-proxy".parse(), Ok(UpstreamIdentityMode::FrontProxy));
        assert_eq!(
            UpstreamIdentityMode::FrontProxy.headers().user,
            "x-remote-user"
        );
        assert!("frontproxy".parse::<UpstreamIdentityMode>().is_err());
    }
}
