//! `Tenant` (`tenants.paddock.io/v1alpha1`, cluster-scoped): what `paddock tenant create`
//! posts and what the server answers for a tenant. The nested parts whose vocabulary belongs
//! to other parts of paddock (fair-share limits, the billing key, the tenant policy, quota)
//! are carried as JSON values and judged by the server. Such a part written as `null` reads
//! back as `Some(Value::Null)` (and is written again): absent and `null` stay apart.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The kind's name.
pub const KIND: &str = "Tenant";
/// The kind of a list of tenants.
pub const LIST_KIND: &str = "TenantList";

/// A tenant as an object of the admin API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tenant {
    /// Always [`crate::GROUP_VERSION`] when written.
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`] when written.
    #[serde(default)]
    pub kind: String,
    /// Name (the tenant id) and labels.
    #[serde(default)]
    pub metadata: TenantMeta,
    /// What the tenant is to be.
    #[serde(default)]
    pub spec: TenantSpec,
    /// What it is (answers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TenantStatus>,
}

/// The tenant's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantMeta {
    /// The tenant id (six characters, docs/architecture.md "Tenant lifecycle").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When it was created (answers only).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub creation_timestamp: Option<Value>,
    /// The platform's labels of the tenant (placement selects on them).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub labels: Option<Value>,
    /// Changes of the record (answers only).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub generation: Option<Value>,
}

/// The tenant's specification. A field left out of a request takes the server's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantSpec {
    /// Shown by `paddock tenant list`; the id when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Fair-share overrides (docs/fairshare.md).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub limits: Option<Value>,
    /// The billing key (docs/metering.md).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub billing: Option<Value>,
    /// The tenant policy (docs/policy.md); `null` in an answer when there is none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub policy: Option<Value>,
    /// Tenant-wide quota, `{"hard": {...}}` (docs/quota.md).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub quota: Option<Value>,
    /// The clusters the tenant lives on, or how to place it (docs/clusters.md).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub clusters: Option<Value>,
    /// Clusters joining by label (docs/clusters.md "Clusters joining by label"):
    /// `{"selector": "region=eu"}` at creation; answers add `joined` and `draining`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::present"
    )]
    pub span: Option<Value>,
    /// `tenant delete` is refused while true (docs/operations.md "Suspend, protection and
    /// TTL"); answers always write it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_protection: Option<bool>,
    /// Time to live (`30m`, `2h`, `7d`: [`crate::duration`]): the tenant is deleted that long
    /// after it was set (at creation, or by `tenant ttl`); answers write it when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

/// The tenant's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantStatus {
    /// `Active`, `Suspended`, `Terminating`, ...
    pub phase: String,
    /// What a creation or deletion in progress has done so far.
    #[serde(default)]
    pub progress: Value,
    /// While the tenant is suspended: since when, and whether its workloads were stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<crate::lifecycle::Suspension>,
    /// While it sleeps, falls asleep or wakes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep: Option<crate::lifecycle::SleepStatus>,
    /// When its TTL runs out (RFC 3339), with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// Seconds from the answer to `expires` (negative once it has passed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_seconds: Option<i64>,
    /// What the platform should know now: a TTL running out, a deletion held by protection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Tenant {
    /// The object `paddock tenant create` posts: the id, its labels, and what was given.
    pub fn request(id: &str, labels: Map<String, Value>, spec: TenantSpec) -> Tenant {
        Tenant {
            api_version: crate::GROUP_VERSION.to_string(),
            kind: KIND.to_string(),
            metadata: TenantMeta {
                name: Some(id.to_string()),
                labels: Some(Value::Object(labels)),
                ..TenantMeta::default()
            },
            spec,
            status: None,
        }
    }

    /// As JSON (fields in the order above, absent ones left out).
    pub fn to_value(&self) -> Value {
        // A struct of strings and JSON values always serializes.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_writes_only_what_was_given() {
        let mut labels = Map::new();
        labels.insert("team".into(), json!("a"));
        let t = Tenant::request(
            "acme01",
            labels,
            TenantSpec {
                display_name: Some("Acme".into()),
                limits: Some(json!({})),
                billing: Some(json!({})),
                ..TenantSpec::default()
            },
        );
        assert_eq!(
            serde_json::to_string(&t).unwrap_or_default(),
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"Tenant","metadata":{"name":"acme01","labels":{"team":"a"}},"spec":{"displayName":"Acme","limits":{},"billing":{}}}"#
        );
    }

    #[test]
    fn answers_have_the_shape_the_server_wrote() {
        let one = r#"{"apiVersion":"paddock.io/v1alpha1","kind":"Tenant","metadata":{"name":"acme01","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"team":"a"},"generation":3},"spec":{"displayName":"Acme","limits":{"readQPS":20},"billing":{"labels":{"cc":"1"}},"policy":null,"quota":{"hard":{}},"clusters":["default"],"deletionProtection":false},"status":{"phase":"Active","progress":null}}"#;
        crate::tests::round_trip::<Tenant>(one);
        let suspended = r#"{"apiVersion":"paddock.io/v1alpha1","kind":"Tenant","metadata":{"name":"acme01"},"spec":{"deletionProtection":true,"ttl":"2h"},"status":{"phase":"Suspended","progress":null,"suspension":{"since":"2026-01-02T03:04:05Z","stopWorkloads":true},"sleep":{"phase":"Asleep","since":"2026-01-02T03:00:00Z"},"expires":"2026-01-02T05:04:05Z","expiresInSeconds":1800,"warnings":["tenant acme01 is deleted in 30m (TTL 2h)"]}}"#;
        crate::tests::round_trip::<Tenant>(suspended);
        crate::tests::round_trip::<crate::List<Tenant>>(&format!(
            r#"{{"apiVersion":"paddock.io/v1alpha1","kind":"TenantList","metadata":{{}},"items":[{one}]}}"#
        ));
    }

    #[test]
    fn a_request_reads_back_and_tolerates_missing_parts() {
        let t: Tenant =
            serde_json::from_value(json!({"metadata": {"name": "acme01"}})).unwrap_or_default();
        assert_eq!(t.metadata.name.as_deref(), Some("acme01"));
        assert_eq!(t.spec, TenantSpec::default());
        let bad = serde_json::from_value::<Tenant>(json!({"spec": "no"}));
        assert!(bad.is_err());
    }
}
