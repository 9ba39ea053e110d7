//! `TenantUser` (`tenants/<id>/users`): who is who in a tenant (docs/security.md "Who is
//! who"). One item per identity — a user name signed in one way (certificate, OIDC, a pod's
//! service account) — with its groups, the certificates issued to that name, and when it
//! last acted through paddock. Read-only: certificates are issued and revoked through
//! `issuedcertificates`, OIDC users come and go at their identity provider.

use serde::{Deserialize, Serialize};

/// The kind's name.
pub const KIND: &str = "TenantUser";
/// The kind of a list of tenant users.
pub const LIST_KIND: &str = "TenantUserList";

/// One identity of a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantUser {
    /// Always [`crate::GROUP_VERSION`].
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`].
    #[serde(default)]
    pub kind: String,
    /// Its name.
    pub metadata: UserMeta,
    /// What paddock knows of it.
    pub status: TenantUserStatus,
}

/// A tenant user's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMeta {
    /// `<signIn>:<user>`: unique in the tenant.
    pub name: String,
}

/// What paddock knows of one identity of a tenant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantUserStatus {
    /// The tenant.
    pub tenant: String,
    /// The user name, as the tenant's RBAC names it.
    pub user: String,
    /// `certificate`, `oidc` or `serviceaccount`.
    pub sign_in: String,
    /// Its groups: those it last acted with, else those of its newest certificate.
    #[serde(default)]
    pub groups: Vec<String>,
    /// When it last acted through paddock (RFC 3339; at most a minute old while it acts);
    /// absent when never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<String>,
    /// What identified its credential the last time it acted (a certificate's serial, an
    /// OIDC token's subject).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// The certificates issued to this name, newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub certificates: Vec<UserCertificate>,
}

/// A certificate issued to a tenant user.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserCertificate {
    /// The serial, lowercase hex.
    pub serial: String,
    /// RFC 3339.
    pub not_after: String,
    /// Whether it was revoked.
    #[serde(default)]
    pub revoked: bool,
}
