//! Tenant-wide quota (docs/quota.md): the ledger in the store, changed only by
//! compare-and-swap (exact across replicas); admission of creates against it (the webhook,
//! and paddock's own path for namespaces); the recount that replaces the ledger's count with
//! what exists upstream and returns reservations whose object never appeared; the tenant's
//! read-only `TenantQuota` view. The decisions are `paddock_core::quota`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use paddock_api::quota::{QuotaSpec, TenantQuota};
use paddock_core::TenantId;
use paddock_core::quota::{
    self, Admission, ChargedKind, Hard, Ledger, QUOTA_NAME, Quotas, ScopedSpec, Usage, display_map,
};
use serde_json::{Value, json};

use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// Swap attempts of one admission before it gives up (503): every lost swap means another
/// writer changed the ledger, so this only runs out under a pathological write storm.
pub(super) const SWAP_ATTEMPTS: usize = 200;

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The tenant's quotas: `tenant-quota` and its scoped entries (none: no tenant quota).
pub fn quotas_of(state: &AppState, tid: &TenantId) -> Result<Option<Quotas>, ServerError> {
    let Some(rec) = state.cache.tenant(tid.as_str()) else {
        return Ok(None);
    };
    Quotas::parse(rec.quota.as_ref(), &rec.scoped_quota)
        .map_err(|e| ServerError::Internal(format!("tenant {tid}: stored quota: {e}")))
}

/// Checks `tenant-quota` limits alone (the configured default) before they are used.
pub fn validate_hard(hard: &BTreeMap<String, String>) -> Result<(), ServerError> {
    validate_quotas(hard, &BTreeMap::new())
}

/// Checks an admin's quota before it is stored.
pub fn validate_quotas(
    hard: &BTreeMap<String, String>,
    scoped: &BTreeMap<String, ScopedSpec>,
) -> Result<(), ServerError> {
    Quotas::parse(Some(hard), scoped)
        .map(|_| ())
        .map_err(|e| ServerError::BadRequest(e.to_string()))
}

/// One create to charge: the upstream group and resource, the upstream namespace (`""` for
/// cluster-scoped objects) and name, and the object as admission sees it.
pub struct Create<'a> {
    pub upstream_group: &'a str,
    pub resource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub object: &'a Value,
    /// A dry run is decided but never reserved.
    pub dry_run: bool,
}

/// The ledger key of an object: reservations and recounted objects meet on it. A name, not a
/// uid: a create refused later with AlreadyExists, or re-created under the same name, is
/// still one object.
pub fn object_key(upstream_group: &str, resource: &str, namespace: &str, name: &str) -> String {
    format!("{resource}.{upstream_group}/{namespace}/{name}")
}

/// The four namespaces every tenant has from the start are the platform's, not the
/// tenant's: they do not count against `namespaces` (docs/quota.md).
pub(super) fn is_default_namespace(tid: &TenantId, upstream_name: &str) -> bool {
    tid.strip(upstream_name)
        .is_some_and(|n| paddock_core::provision::DEFAULT_NAMESPACES.contains(&n))
}

/// Admits (reserving its charge in the ledger) or refuses one create of the tenant's.
pub async fn admit_create(
    state: &AppState,
    tid: &TenantId,
    c: &Create<'_>,
) -> Result<(), ServerError> {
    let Some(quotas) = quotas_of(state, tid)? else {
        return Ok(());
    };
    if c.upstream_group.is_empty()
        && c.resource == "namespaces"
        && is_default_namespace(tid, c.name)
    {
        return Ok(());
    }
    let group = tid.strip(c.upstream_group).unwrap_or(c.upstream_group);
    let kind = ChargedKind {
        group,
        resource: c.resource,
    };
    let charge = quotas
        .charge(&kind, c.object)
        .map_err(|e| ServerError::BadRequest(format!("{}: {e}", quota::count_resource(&kind))))?;
    if let Some(message) = quotas.missing_resources(&kind, c.object) {
        return Err(ServerError::Forbidden(message));
    }
    // A Namespace's review carries its own name as its namespace; its key has none, as in
    // paddock's own path and the recount.
    let namespace = if group.is_empty() && c.resource == "namespaces" {
        ""
    } else {
        c.namespace
    };
    let key = object_key(c.upstream_group, c.resource, namespace, c.name);
    let what = format!("{} {namespace}/{}", c.resource, c.name);
    let lock = state.quota_locks.of(tid);
    let _serial = lock.lock().await;
    for _ in 0..SWAP_ATTEMPTS {
        let cur = state.store.get_quota_ledger(tid).await?;
        match quota::admit_entries(&quotas, &cur.ledger, &key, &what, &charge, now_ms()) {
            Admission::Untouched => return Ok(()),
            Admission::Exceeded(msg) => {
                state.metrics.quota_refused.inc();
                return Err(ServerError::Forbidden(msg));
            }
            Admission::Reserve(_) if c.dry_run => return Ok(()),
            Admission::Reserve(next) => {
                if state
                    .store
                    .swap_quota_ledger(tid, &next, cur.version)
                    .await?
                {
                    return Ok(());
                }
                state.metrics.quota_swap_conflicts.inc();
            }
        }
    }
    Err(ServerError::Unavailable(format!(
        "tenant {tid}: the quota ledger kept changing; retry"
    )))
}

/// What a recount adds up: the charge of every object found, and their keys.
#[derive(Debug, Default)]
pub(super) struct Count {
    pub usage: Usage,
    pub seen: BTreeSet<String>,
}

impl Count {
    /// Adds what another cluster holds (upstream namespaces are unique across clusters, so
    /// the seen keys never collide).
    pub(super) fn absorb(&mut self, other: Count) {
        for (k, v) in other.usage {
            let slot = self.usage.entry(k).or_default();
            *slot = slot.plus(v);
        }
        self.seen.extend(other.seen);
    }

    /// Adds one object of `resource` (tenant-view `group`, upstream `upstream_group`) in
    /// upstream namespace `ns` (`""` when cluster-scoped), in every entry of `quotas` it
    /// matches.
    pub(super) fn charge(
        &mut self,
        quotas: &Quotas,
        group: &str,
        upstream_group: &str,
        resource: &str,
        ns: &str,
        obj: &Value,
    ) {
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        self.seen
            .insert(object_key(upstream_group, resource, ns, name));
        let kind = ChargedKind { group, resource };
        // An object upstream accepted but whose quantities paddock cannot read charges
        // its count only.
        let u = quotas
            .charge(&kind, obj)
            .unwrap_or_else(|_| [(quota::count_resource(&kind), quota::Milli::units(1))].into());
        for (k, v) in u {
            let slot = self.usage.entry(k).or_default();
            *slot = slot.plus(v);
        }
    }
}

/// One of a tenant's quotas as shown: its name, its spec as the admin wrote it (scopes, as a
/// ResourceQuota's), hard and used.
pub struct QuotaView {
    pub name: String,
    pub scoped: Option<ScopedSpec>,
    /// The scopes as shown (`BestEffort`, `PriorityClass In (high)`); empty when unscoped.
    pub scopes: Vec<String>,
    pub hard: Hard,
    pub used: Usage,
}

/// The tenant's quotas, `tenant-quota` first (present even when it limits nothing, when the
/// tenant has scoped entries), with what is used of each; empty without a quota. For the
/// tenant's view and the usage report.
pub async fn status(state: &AppState, tid: &TenantId) -> Result<Vec<QuotaView>, ServerError> {
    let Some(quotas) = quotas_of(state, tid)? else {
        return Ok(Vec::new());
    };
    let ledger: Ledger = state.store.get_quota_ledger(tid).await?.ledger;
    let rec = state.cache.tenant(tid.as_str());
    let mut out = Vec::new();
    if quotas.unscoped_entry().is_none() {
        out.push(QuotaView {
            name: QUOTA_NAME.into(),
            scoped: None,
            scopes: Vec::new(),
            hard: Hard::new(),
            used: Usage::new(),
        });
    }
    for e in &quotas.entries {
        out.push(QuotaView {
            name: e.name.clone(),
            scoped: rec
                .as_ref()
                .and_then(|r| r.scoped_quota.get(&e.name).cloned()),
            scopes: e.describe(),
            hard: e.hard.clone(),
            used: quota::used_of(e, &ledger),
        });
    }
    Ok(out)
}

/// The API form of a scoped entry's spec (scopes and selector; `hard` as written).
pub fn api_spec(spec: &ScopedSpec) -> QuotaSpec {
    QuotaSpec {
        hard: spec.hard.clone(),
        scopes: spec.scopes.clone(),
        scope_selector: spec
            .scope_selector
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .and_then(|v| serde_json::from_value(v).ok()),
        ..QuotaSpec::default()
    }
}

/// A `TenantQuota` object (cluster-scoped, read-only, `paddock.io/v1alpha1`).
pub fn tenant_quota_object(created: &str, view: &QuotaView) -> TenantQuota {
    let mut o = TenantQuota::new(
        &view.name,
        created,
        display_map(&view.hard),
        display_map(&view.used),
    );
    if let Some(spec) = &view.scoped {
        let api = api_spec(spec);
        o.spec.scopes = api.scopes;
        o.spec.scope_selector = api.scope_selector;
    }
    o
}

/// `kubectl get tenantquotas` columns, as for ResourceQuotas (`REQUEST: pods: 3/10, ...`).
pub fn tenant_quota_table(objects: &[TenantQuota]) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let pairs: Vec<String> = o
                .status
                .hard
                .iter()
                .map(|(k, h)| {
                    let u = o.status.used.get(k).map_or("0", String::as_str);
                    format!("{k}: {u}/{h}")
                })
                .collect();
            json!({
                "cells": [o.metadata.name, o.metadata.creation_timestamp, pairs.join(", ")],
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o.metadata}
            })
        })
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0},
            {"name": "Created", "type": "string", "format": "", "description": "Since", "priority": 0},
            {"name": "Used/Hard", "type": "string", "format": "", "description": "Usage of each limited resource over all the tenant's namespaces", "priority": 0}
        ],
        "rows": rows
    })
}

/// paddock's own path: a tenant's namespace create is charged before it goes upstream (the
/// webhook then finds it reserved). A body whose name paddock cannot read (protobuf) is only
/// checked here; the webhook reserves it.
pub async fn admit_namespace_create(
    state: &AppState,
    tid: &TenantId,
    body: &[u8],
    content_type: &str,
    dry_run: bool,
) -> Result<(), ServerError> {
    let obj: Value = if content_type.starts_with("application/json") {
        serde_json::from_slice(body).unwrap_or(Value::Null)
    } else if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        let name = paddock_core::wire::pb_label::protobuf_name(body)?;
        json!({"metadata": {"name": name}})
    } else {
        Value::Null
    };
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    admit_create(
        state,
        tid,
        &Create {
            upstream_group: "",
            resource: "namespaces",
            namespace: "",
            name,
            object: &obj,
            dry_run: dry_run || name.is_empty(),
        },
    )
    .await
}

#[cfg(test)]
mod object_tests {
    use super::*;

    #[test]
    fn the_quota_object_is_answered_as_before() {
        let asked: BTreeMap<String, String> = [
            ("pods".to_string(), "10".to_string()),
            ("requests.memory".to_string(), "1Gi".to_string()),
        ]
        .into();
        let hard = quota::parse_hard(&asked).unwrap_or_default();
        let used: Usage = hard.iter().map(|(k, v)| (k.clone(), *v)).take(1).collect();
        // As the `json!` this replaced wrote it.
        let before = json!({
            "apiVersion": paddock_api::GROUP_VERSION,
            "kind": "TenantQuota",
            "metadata": {"name": QUOTA_NAME, "creationTimestamp": "2026-01-02T03:04:05Z"},
            "spec": {"hard": display_map(&hard)},
            "status": {"hard": display_map(&hard), "used": display_map(&used)}
        });
        let view = QuotaView {
            name: QUOTA_NAME.into(),
            scoped: None,
            scopes: Vec::new(),
            hard,
            used,
        };
        let now = tenant_quota_object("2026-01-02T03:04:05Z", &view);
        assert_eq!(
            serde_json::to_string(&now).unwrap_or_default(),
            before.to_string()
        );
    }

    #[test]
    fn a_scoped_entry_shows_its_scopes_as_a_resource_quota_does() {
        let spec: ScopedSpec = serde_json::from_value(json!({"hard": {"pods": "3"},
            "scopes": ["BestEffort"],
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "DoesNotExist"}]}}))
        .unwrap_or_default();
        let view = QuotaView {
            name: "besteffort".into(),
            hard: [("pods".to_string(), quota::Milli::units(3))].into(),
            used: Usage::new(),
            scopes: vec!["BestEffort".into()],
            scoped: Some(spec),
        };
        let o = serde_json::to_value(tenant_quota_object("t", &view)).unwrap_or_default();
        assert_eq!(
            o["spec"],
            json!({"hard": {"pods": "3"}, "scopes": ["BestEffort"],
                "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "DoesNotExist"}]}})
        );
        assert_eq!(o["metadata"]["name"], "besteffort");
        assert_eq!(o["status"]["used"], json!({}));
    }
}
