//! `TenantQuota` (`tenantquotas.paddock.io/v1alpha1`, cluster-scoped, read-only): a tenant's
//! quota over all its namespaces with what it uses (docs/quota.md). Platform admins read it
//! at `tenants/<id>/quota` and change it with a [`QuotaPatch`]; a tenant reads its own one
//! object at `tenantquotas`. Quantities are Kubernetes quantity strings, as the server shows
//! them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The kind's name.
pub const KIND: &str = "TenantQuota";
/// The kind of a list of tenant quotas (a tenant's list holds its one quota).
pub const LIST_KIND: &str = "TenantQuotaList";
/// The resource a tenant reads (`tenantquotas`).
pub const RESOURCE: &str = "tenantquotas";

/// Resource name to quantity (`pods: "10"`, `requests.cpu: "2"`).
pub type Quantities = BTreeMap<String, String>;

/// A tenant's quota as the server answers it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantQuota {
    /// Always [`crate::GROUP_VERSION`].
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`].
    #[serde(default)]
    pub kind: String,
    /// Its one name and the tenant's creation time.
    pub metadata: QuotaMeta,
    /// The limits.
    pub spec: QuotaSpec,
    /// The limits and what is used of them.
    pub status: QuotaStatus,
}

/// The quota's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaMeta {
    /// Always the one name (paddock-core's `QUOTA_NAME`).
    pub name: String,
    /// When the tenant was created.
    pub creation_timestamp: String,
}

/// The limits; also `spec.quota` of a `Tenant` (absent `hard`: the server's default). A
/// scoped quota has `scopes` and/or a `scopeSelector`, as a ResourceQuota (docs/quota.md
/// "Scopes"); a tenant's `spec.quota` holds its scoped entries under `scoped`, by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaSpec {
    /// Resource to most allowed.
    pub hard: Quantities,
    /// `BestEffort`, `NotBestEffort`, `Terminating`, `NotTerminating`, `PriorityClass`,
    /// `CrossNamespacePodAffinity`: the pods this quota charges (all must match).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Requirements on the scopes, e.g. `PriorityClass In (high)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope_selector: Option<ScopeSelector>,
    /// On a tenant: its scoped entries by name (each a `QuotaSpec` with scopes).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scoped: BTreeMap<String, QuotaSpec>,
}

/// A ResourceQuota's `spec.scopeSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeSelector {
    /// Every requirement must match.
    #[serde(default)]
    pub match_expressions: Vec<ScopeSelectorRequirement>,
}

/// One requirement of a scope selector.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeSelectorRequirement {
    /// A scope name (`PriorityClass`, `BestEffort`, ...).
    pub scope_name: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist` (only `Exists` for scopes other than
    /// `PriorityClass`).
    pub operator: String,
    /// The values of `In` and `NotIn`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// The limits and the usage of each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaStatus {
    /// Resource to most allowed.
    pub hard: Quantities,
    /// Resource to what the tenant uses of it.
    pub used: Quantities,
}

/// The body of `PATCH tenants/<id>/quota`, a JSON merge patch: a quantity sets a limit,
/// `null` removes it; under `scoped`, a scoped entry's name with a merge patch of its
/// `QuotaSpec` (`hard` merged, `scopes` and `scopeSelector` replaced), or `null` to remove
/// the entry. An entry left without limits is removed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuotaPatch {
    /// Resource to new limit, or `None` to remove it.
    #[serde(default)]
    pub hard: BTreeMap<String, Option<String>>,
    /// Scoped entry name to the patch of its spec, or `None` to remove it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scoped: BTreeMap<String, Option<serde_json::Value>>,
}

impl TenantQuota {
    /// The quota object of a tenant created at `created`, named `name`.
    pub fn new(name: &str, created: &str, hard: Quantities, used: Quantities) -> TenantQuota {
        TenantQuota {
            api_version: crate::GROUP_VERSION.to_string(),
            kind: KIND.to_string(),
            metadata: QuotaMeta {
                name: name.to_string(),
                creation_timestamp: created.to_string(),
            },
            spec: QuotaSpec {
                hard: hard.clone(),
                ..QuotaSpec::default()
            },
            status: QuotaStatus { hard, used },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::round_trip;

    #[test]
    fn answers_have_the_shape_the_server_wrote() {
        // As `webhook/quota.rs` and `admin/quota.rs` wrote them with `json!`.
        let one = r#"{"apiVersion":"paddock.io/v1alpha1","kind":"TenantQuota","metadata":{"name":"tenant-quota","creationTimestamp":"2026-01-02T03:04:05Z"},"spec":{"hard":{"pods":"10","requests.memory":"1Gi"}},"status":{"hard":{"pods":"10","requests.memory":"1Gi"},"used":{"pods":"3","requests.memory":"256Mi"}}}"#;
        round_trip::<TenantQuota>(one);
        round_trip::<crate::List<TenantQuota>>(&format!(
            r#"{{"apiVersion":"paddock.io/v1alpha1","kind":"TenantQuotaList","metadata":{{}},"items":[{one}]}}"#
        ));
        // Without a quota: empty.
        round_trip::<TenantQuota>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"TenantQuota","metadata":{"name":"tenant-quota","creationTimestamp":""},"spec":{"hard":{}},"status":{"hard":{},"used":{}}}"#,
        );
    }

    #[test]
    fn a_patch_and_a_tenants_quota_have_the_shape_the_cli_wrote() {
        round_trip::<QuotaPatch>(r#"{"hard":{"pods":"10","services":null}}"#);
        round_trip::<QuotaPatch>(
            r#"{"hard":{},"scoped":{"be":{"hard":{"pods":"3"},"scopes":["BestEffort"]},"old":null}}"#,
        );
        round_trip::<QuotaSpec>(
            r#"{"hard":{"pods":"3"},"scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["high"]}]}}"#,
        );
        round_trip::<QuotaSpec>(
            r#"{"hard":{},"scoped":{"be":{"hard":{"pods":"3"},"scopes":["BestEffort"]}}}"#,
        );
        round_trip::<QuotaSpec>(r#"{"hard":{"pods":"10","requests.cpu":"2"}}"#);
        assert!(serde_json::from_str::<QuotaPatch>(r#"{"hard":{"pods":10}}"#).is_err());
        assert!(serde_json::from_str::<QuotaPatch>(r#"{"pods":"10"}"#).is_err());
    }
}
