//! `TenantPolicy` (`tenants/<id>/policy`): the policy in force for a tenant, its own or the
//! configured default (docs/policy.md). The policy's vocabulary belongs to the admission
//! webhook (paddock-core's `admission`): the spec is carried as JSON and judged by the
//! server. A `PATCH` sends a JSON merge patch of the spec, `DELETE` resets it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind's name.
pub const KIND: &str = "TenantPolicy";

/// A tenant's policy as the server answers it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantPolicy {
    /// Always [`crate::GROUP_VERSION`].
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`].
    #[serde(default)]
    pub kind: String,
    /// The tenant.
    pub metadata: PolicyMeta,
    /// The policy in force.
    pub spec: Value,
    /// Where it comes from.
    pub status: PolicyStatus,
}

/// The policy's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyMeta {
    /// The tenant id.
    pub name: String,
}

/// Where the policy in force comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyStatus {
    /// The tenant's own, or the configured default.
    pub source: PolicySource,
}

/// The tenant's own policy, or the configured default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicySource {
    /// Set for the tenant.
    Tenant,
    /// The server's `default_policy`.
    #[default]
    Default,
}

impl TenantPolicy {
    /// The answer for tenant `id`.
    pub fn new(id: &str, spec: Value, source: PolicySource) -> TenantPolicy {
        TenantPolicy {
            api_version: crate::GROUP_VERSION.to_string(),
            kind: KIND.to_string(),
            metadata: PolicyMeta {
                name: id.to_string(),
            },
            spec,
            status: PolicyStatus { source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::round_trip;

    #[test]
    fn an_answer_has_the_shape_the_server_wrote() {
        // As `admin/policy.rs` wrote it with `json!`.
        round_trip::<TenantPolicy>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"TenantPolicy","metadata":{"name":"acme01"},"spec":{"services":{"allowNodePort":true}},"status":{"source":"tenant"}}"#,
        );
        round_trip::<TenantPolicy>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"TenantPolicy","metadata":{"name":"acme01"},"spec":{},"status":{"source":"default"}}"#,
        );
    }
}
