//! Tenant ids and the name prefix `<tid>-` that moves a tenant's names into its upstream space.

use std::fmt;

use crate::error::TranslateError;

/// The label paddock stamps on every namespace, cluster-scoped object and CRD it creates for a
/// tenant. Tenants can neither set nor see it.
pub const TENANT_LABEL: &str = "paddock.io/tenant";

/// Label on objects paddock manages for a tenant that are not the tenant's own objects.
pub const MANAGED_FOR_LABEL: &str = "paddock.io/managed-for";

/// The label the apiserver sets on every namespace to its own name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Length of a tenant id; the prefix is one longer (`-`).
pub const TENANT_ID_LEN: usize = 6;

/// Why a string is not a tenant id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid tenant id {0:?}: must be exactly 6 characters of [a-z0-9], starting with a letter"
)]
pub struct TenantIdError(pub String);

/// A validated tenant id: exactly 6 of `[a-z0-9]`, first a letter. Held inline: every
/// request copies its tenant's id several times, and a copy should not allocate.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantId([u8; TENANT_ID_LEN]);

impl TenantId {
    /// Validates `s`. The alphabet has no characters that need escaping in JSON, URLs or label
    /// values, which is what lets the response side splice prefixes as raw bytes.
    ///
    /// `tenant` is reserved: the group `paddock:tenant:<tid>` marks every user of tenant `<tid>`
    /// upstream, and tenant `tenant`'s own group `<tid>` would map to exactly that string.
    pub fn parse(s: &str) -> Result<TenantId, TenantIdError> {
        if is_tenant_id(s) && s != "tenant" {
            let mut id = [0; TENANT_ID_LEN];
            id.copy_from_slice(s.as_bytes());
            Ok(TenantId(id))
        } else {
            Err(TenantIdError(s.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        // ASCII by construction (`parse`), so this never takes the fallback.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// `"<tid>-"`.
    pub fn prefix(&self) -> String {
        format!("{}-", self.as_str())
    }

    /// `"<tid>-<name>"`.
    pub fn upstream_name(&self, name: &str) -> String {
        let mut up = String::with_capacity(TENANT_ID_LEN + 1 + name.len());
        self.push_upstream_name(&mut up, name);
        up
    }

    /// Appends `"<tid>-<name>"` to `out` (no string of its own).
    pub fn push_upstream_name(&self, out: &mut String, name: &str) {
        out.push_str(self.as_str());
        out.push('-');
        out.push_str(name);
    }

    /// The tenant's name for an upstream name carrying exactly this tenant's prefix. An empty
    /// remainder is not a name, so `"<tid>-"` alone gives None.
    pub fn strip<'a>(&self, upstream: &'a str) -> Option<&'a str> {
        let rest = upstream.strip_prefix(self.as_str())?.strip_prefix('-')?;
        if rest.is_empty() { None } else { Some(rest) }
    }

    /// `"paddock.io/tenant=<tid>"`.
    pub fn tenant_label_selector(&self) -> String {
        format!("{TENANT_LABEL}={}", self.as_str())
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TenantId").field(&self.as_str()).finish()
    }
}

impl std::str::FromStr for TenantId {
    type Err = TenantIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TenantId::parse(s)
    }
}

impl serde::Serialize for TenantId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for TenantId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        TenantId::parse(&s).map_err(serde::de::Error::custom)
    }
}

fn is_tenant_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == TENANT_ID_LEN
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// Would `upstream` (any name) belong to *some* tenant's prefix form `^[a-z][a-z0-9]{5}-`?
/// Something must follow the dash for it to be a name.
pub fn looks_tenant_prefixed(upstream: &str) -> bool {
    tenant_of(upstream).is_some()
}

/// The 6-character id in front of an upstream name of the tenant form, if any.
pub fn tenant_of(upstream: &str) -> Option<&str> {
    let b = upstream.as_bytes();
    if b.len() > TENANT_ID_LEN + 1
        && b[TENANT_ID_LEN] == b'-'
        && is_tenant_id(&upstream[..TENANT_ID_LEN])
    {
        Some(&upstream[..TENANT_ID_LEN])
    } else {
        None
    }
}

/// Which Kubernetes length limit a name is subject to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// DNS-1123 label (namespaces): 63.
    Namespace,
    /// DNS-1123 subdomain (most cluster-scoped names, CRD groups): 253.
    DnsSubdomain,
    /// Label value: 63.
    LabelValue,
}

impl NameKind {
    /// The Kubernetes limit.
    pub fn upstream_limit(self) -> usize {
        match self {
            NameKind::Namespace | NameKind::LabelValue => 63,
            NameKind::DnsSubdomain => 253,
        }
    }
    /// The limit a tenant sees: the Kubernetes one minus `<tid>-`.
    pub fn tenant_limit(self) -> usize {
        self.upstream_limit() - (TENANT_ID_LEN + 1)
    }
    fn what(self) -> &'static str {
        match self {
            NameKind::Namespace => "namespace names",
            NameKind::DnsSubdomain => "names",
            NameKind::LabelValue => "label values naming namespaces",
        }
    }
}

/// Checks a tenant-written name against the Kubernetes limit after prefixing; errors name the
/// tenant's own limit ("namespace names may be at most 56 characters in this cluster").
pub fn check_prefixed_len(kind: NameKind, tenant_name: &str) -> Result<(), TranslateError> {
    let limit = kind.tenant_limit();
    if tenant_name.len() > limit {
        return Err(TranslateError::invalid(format!(
            "{} may be at most {} characters in this cluster: {:?} has {}",
            kind.what(),
            limit,
            tenant_name,
            tenant_name.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> TenantId {
        TenantId::parse("foofoo").unwrap()
    }

    #[test]
    fn tenant_id_valid_and_invalid() {
        assert!(TenantId::parse("foofoo").is_ok());
        assert!(TenantId::parse("a12345").is_ok());
        for bad in [
            "tenant", "", "foo", "foofoo1", "1foofo", "Foofoo", "foo-fo", "fo_foo", "fööfoo",
        ] {
            assert!(TenantId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prefix_strip_and_selector() {
        let t = t();
        assert_eq!(t.prefix(), "foofoo-");
        assert_eq!(t.upstream_name("default"), "foofoo-default");
        assert_eq!(t.strip("foofoo-default"), Some("default"));
        assert_eq!(t.strip("foofoo-"), None);
        assert_eq!(t.strip("foofoodefault"), None);
        assert_eq!(t.strip("barbar-default"), None);
        assert_eq!(t.tenant_label_selector(), "paddock.io/tenant=foofoo");
    }

    #[test]
    fn looks_prefixed() {
        assert!(looks_tenant_prefixed("barbar-x"));
        assert!(looks_tenant_prefixed("a1b2c3-x"));
        assert!(!looks_tenant_prefixed("kube-system"));
        assert!(!looks_tenant_prefixed("cert-manager"));
        assert!(!looks_tenant_prefixed("barbar-"));
        assert!(!looks_tenant_prefixed("1arbar-x"));
        assert_eq!(tenant_of("barbar-x"), Some("barbar"));
    }

    #[test]
    fn length_limits_name_the_tenant_limit() {
        assert!(check_prefixed_len(NameKind::Namespace, &"a".repeat(56)).is_ok());
        let e = check_prefixed_len(NameKind::Namespace, &"a".repeat(57)).unwrap_err();
        assert_eq!(e.http_code(), 422);
        assert!(
            e.message()
                .contains("namespace names may be at most 56 characters")
        );
        assert!(check_prefixed_len(NameKind::DnsSubdomain, &"a".repeat(246)).is_ok());
        assert!(check_prefixed_len(NameKind::DnsSubdomain, &"a".repeat(247)).is_err());
        assert!(check_prefixed_len(NameKind::LabelValue, &"a".repeat(57)).is_err());
    }

    #[test]
    fn serde_as_string() {
        let s = serde_json::to_string(&t()).unwrap();
        assert_eq!(s, "\"foofoo\"");
        let back: TenantId = serde_json::from_str(&s).unwrap();
        assert_eq!(back, t());
        assert!(serde_json::from_str::<TenantId>("\"FOO\"").is_err());
    }
}
