//! `TenantUsage` (`tenants/<id>/usage`, read-only): what a tenant holds upstream, what it
//! does through this replica, and its quota (docs/metering.md). Not a Kubernetes object: no
//! spec or status, three parts.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The kind's name.
pub const KIND: &str = "TenantUsage";

/// A tenant's usage report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantUsage {
    /// Always [`crate::GROUP_VERSION`].
    #[serde(default)]
    pub api_version: String,
    /// Always [`KIND`].
    #[serde(default)]
    pub kind: String,
    /// The tenant.
    pub metadata: UsageMeta,
    /// What upstream holds for the tenant (shared by every replica).
    pub current: CurrentUsage,
    /// What the tenant does through the replica that answered.
    pub replica: ReplicaUsage,
    /// The quota's limits and usage; `null` when the tenant has no quota.
    pub quota: Option<QuotaUsage>,
}

/// The report's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageMeta {
    /// The tenant id.
    pub name: String,
}

/// What upstream holds for the tenant, as last observed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CurrentUsage {
    /// Its namespaces.
    pub namespaces: u64,
    /// Every pod, whatever its phase.
    pub pods: u64,
    /// Pods in phase Running; the CPU and memory figures are theirs.
    pub running_pods: u64,
    /// Sum of the containers' CPU requests.
    pub cpu_requests_millicores: u64,
    /// Sum of the containers' CPU limits.
    pub cpu_limits_millicores: u64,
    /// Sum of the containers' memory requests.
    pub memory_requests_bytes: u64,
    /// Sum of the containers' memory limits.
    pub memory_limits_bytes: u64,
    /// Storage requested by its PersistentVolumeClaims.
    pub storage_requests_bytes: u64,
    /// Objects per counted resource (`configmaps`, `deployments.apps`, ...; 0 when none).
    pub objects: BTreeMap<String, u64>,
    /// When upstream was read (RFC 3339).
    pub observed_at: String,
    /// Lists paddock's credential may not make: their figures are missing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncounted: Vec<String>,
    /// For a tenant on a cluster other than `default`, or on several: the same figures per
    /// cluster, which the figures above add up (the tenant's cluster-scoped objects,
    /// replicated on every cluster of a spanning tenant, count once).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub clusters: BTreeMap<String, CurrentUsage>,
}

/// What the tenant does through one replica (since it started).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaUsage {
    /// Connections open now.
    pub open_connections: u64,
    /// Requests in flight now.
    pub inflight_requests: u64,
    /// Watches open now.
    pub open_watches: u64,
    /// Requests per verb, then per status class (`2xx` ...); only those seen.
    pub requests: OrderedMap<OrderedMap<u64>>,
    /// Bytes of request bodies.
    pub request_bytes: u64,
    /// Bytes of response bodies.
    pub response_bytes: u64,
    /// Seconds of watches.
    pub watch_seconds: f64,
}

/// The quota's limits and what is used of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaUsage {
    /// Resource to most allowed.
    pub hard: crate::quota::Quantities,
    /// Resource to what is used.
    pub used: crate::quota::Quantities,
    /// The quota's scoped entries by name (docs/quota.md "Scopes").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scoped: BTreeMap<String, ScopedQuotaUsage>,
}

/// A scoped entry of the quota: its scopes, limits and what is used of them (a resource not
/// counted under these scopes yet is absent from `used`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopedQuotaUsage {
    /// `BestEffort`, `PriorityClass In (high)`, ...: all must match.
    pub scopes: Vec<String>,
    /// Resource to most allowed.
    pub hard: crate::quota::Quantities,
    /// Resource to what is used.
    pub used: crate::quota::Quantities,
}

/// A JSON object whose keys keep the order they were written in (the server writes verbs and
/// status classes in its own order, not sorted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderedMap<V>(pub Vec<(String, V)>);

impl<V> Default for OrderedMap<V> {
    fn default() -> Self {
        OrderedMap(Vec::new())
    }
}

impl<V> OrderedMap<V> {
    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds `key` last.
    pub fn push(&mut self, key: &str, value: V) {
        self.0.push((key.to_string(), value));
    }
}

impl<V: Serialize> Serialize for OrderedMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Entries<V> {
            type Value = OrderedMap<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = a.next_entry()? {
                    out.push(entry);
                }
                Ok(OrderedMap(out))
            }
        }
        d.deserialize_map(Entries(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::round_trip;

    #[test]
    fn a_report_has_the_shape_the_server_wrote() {
        // As `admin/usage.rs` wrote it with `json!` (`current` from paddock-core's
        // `TenantFigures`, then `observedAt` and `uncounted`).
        round_trip::<TenantUsage>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"TenantUsage","metadata":{"name":"acme01"},"current":{"namespaces":2,"pods":3,"runningPods":2,"cpuRequestsMillicores":450,"cpuLimitsMillicores":900,"memoryRequestsBytes":268435456,"memoryLimitsBytes":536870912,"storageRequestsBytes":1073741824,"objects":{"configmaps":4,"deployments.apps":1,"pods":3},"observedAt":"2026-01-02T03:04:05Z","uncounted":["/apis/apps/v1/daemonsets"]},"replica":{"openConnections":1,"inflightRequests":0,"openWatches":2,"requests":{"list":{"2xx":7,"4xx":1},"watch":{"2xx":2},"create":{"2xx":3}},"requestBytes":1024,"responseBytes":65536,"watchSeconds":12.5},"quota":{"hard":{"pods":"10"},"used":{"pods":"3"}}}"#,
        );
        round_trip::<TenantUsage>(
            r#"{"apiVersion":"paddock.io/v1alpha1","kind":"TenantUsage","metadata":{"name":"acme01"},"current":{"namespaces":0,"pods":0,"runningPods":0,"cpuRequestsMillicores":0,"cpuLimitsMillicores":0,"memoryRequestsBytes":0,"memoryLimitsBytes":0,"storageRequestsBytes":0,"objects":{},"observedAt":""},"replica":{"openConnections":0,"inflightRequests":0,"openWatches":0,"requests":{},"requestBytes":0,"responseBytes":0,"watchSeconds":0.0},"quota":null}"#,
        );
    }
}
