//! Suspension, deletion protection and time-to-live of a tenant (docs/operations.md "Suspend,
//! protection and TTL"): what `paddock tenant suspend|resume|protect|ttl` send.
//!
//! - `POST tenants/<id>/suspension` with a [`SuspendRequest`] suspends the tenant (again:
//!   `stopWorkloads` can be added); `DELETE tenants/<id>/suspension` resumes it. Both answer
//!   the `Tenant`.
//! - `POST tenants/<id>/sleep` puts the tenant to sleep, `DELETE tenants/<id>/sleep` wakes it
//!   (docs/operations.md "Sleep and wake"); both answer the `Tenant` once the leader has done
//!   it (or after a minute, with the phase it has reached).
//! - `PATCH tenants/<id>/protection` with a [`ProtectionPatch`] (a JSON merge patch: a field
//!   left out is unchanged, `"ttl": null` removes the TTL) answers the `Tenant`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The subresource that suspends (POST) and resumes (DELETE) a tenant.
pub const SUSPENSION: &str = "suspension";
/// The subresource of a tenant's deletion protection and TTL (PATCH).
pub const PROTECTION: &str = "protection";
/// The subresource that puts a tenant to sleep (POST) and wakes it (DELETE).
pub const SLEEP: &str = "sleep";

/// `tenants/<id>/<subresource>`.
pub fn tenant_path(id: &str, subresource: &str) -> String {
    format!("{}/{id}/{subresource}", crate::paths::TENANTS)
}

/// What `tenant suspend` asks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuspendRequest {
    /// Also stop the tenant's workloads (scaled to zero, suspended), brought back at resume.
    #[serde(default)]
    pub stop_workloads: bool,
}

/// A suspended tenant's `status.suspension`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    /// When it was suspended (RFC 3339).
    pub since: String,
    /// Whether its workloads were stopped.
    #[serde(default)]
    pub stop_workloads: bool,
}

/// A sleeping tenant's `status.sleep` (absent while it is awake).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SleepStatus {
    /// `FallingAsleep` (its workloads being stopped), `Asleep`, or `Waking` (being brought
    /// back).
    pub phase: String,
    /// When it was asked to fall asleep (RFC 3339).
    pub since: String,
}

/// What `tenant protect` and `tenant ttl` change (a JSON merge patch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProtectionPatch {
    /// Refuse `tenant delete` (true) or allow it again (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_protection: Option<bool>,
    /// A TTL counted from now (`30m`, `2h`), or `null` to remove it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub ttl: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_have_the_shape_the_cli_writes() {
        crate::tests::round_trip::<SuspendRequest>(r#"{"stopWorkloads":true}"#);
        let empty: SuspendRequest = serde_json::from_str("{}").unwrap_or(SuspendRequest {
            stop_workloads: true,
        });
        assert!(!empty.stop_workloads);
        crate::tests::round_trip::<ProtectionPatch>(r#"{"deletionProtection":true}"#);
        crate::tests::round_trip::<ProtectionPatch>(r#"{"ttl":"30m"}"#);
        // `null` removes the TTL: present, unlike a field left out.
        let clear: ProtectionPatch =
            serde_json::from_value(json!({"ttl": null})).unwrap_or_default();
        assert_eq!(clear.ttl, Some(Value::Null));
        assert_eq!(clear.deletion_protection, None);
        assert_eq!(
            tenant_path("acme01", SUSPENSION),
            "/apis/paddock.io/v1alpha1/tenants/acme01/suspension"
        );
    }
}
