//! The pure half of the watch-driven tenant resync (paddock-reconciler `resync.rs`,
//! docs/operations.md "Leadership"): which collections it watches and with which selectors,
//! which tenant a watched object belongs to, an index from tenant to its watched objects (so
//! one tenant's view is read from the caches without a scan of them all), and whether a
//! tenant's FlowSchema has drifted from what paddock sets.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::reflect::Key;
use crate::tenant::{MANAGED_FOR_LABEL, TENANT_LABEL, TenantId};

/// Label marking the mirror RoleBindings of tenant ClusterRoleBindings (with
/// [`MANAGED_FOR_LABEL`]); paddock-reconciler `rbac_sync` writes them.
pub const MIRROR_LABEL: &str = "paddock.io/mirror";

/// A collection the resync watches: the six it derives the tenants' RBAC, namespace setup and
/// billing stamps from, and the tenants' own FlowSchemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Watched {
    /// The tenants' ClusterRoleBindings.
    TenantBindings,
    /// The tenants' namespaces.
    Namespaces,
    /// The mirror RoleBindings, in every namespace.
    Mirrors,
    /// The tenants' CRDs.
    Crds,
    /// ClusterRoles paddock manages for a tenant (its custom-resources role).
    ManagedRoles,
    /// ClusterRoleBindings paddock manages for a tenant (its custom-resources binding).
    ManagedBindings,
    /// FlowSchemas paddock manages for a tenant (its own, `tenant_own_flow_schema`).
    FlowSchemas,
}

impl Watched {
    /// Every watched collection; a reflector's id is the index here.
    pub const ALL: [Watched; 7] = [
        Watched::TenantBindings,
        Watched::Namespaces,
        Watched::Mirrors,
        Watched::Crds,
        Watched::ManagedRoles,
        Watched::ManagedBindings,
        Watched::FlowSchemas,
    ];

    /// The index in [`Watched::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The collection path, cluster-wide.
    pub fn collection(self) -> &'static str {
        match self {
            Watched::TenantBindings | Watched::ManagedBindings => {
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
            }
            Watched::Namespaces => "/api/v1/namespaces",
            Watched::Mirrors => "/apis/rbac.authorization.k8s.io/v1/rolebindings",
            Watched::Crds => "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Watched::ManagedRoles => "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            Watched::FlowSchemas => "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
        }
    }

    /// The label naming the tenant an object of this collection belongs to.
    pub fn owner_label(self) -> &'static str {
        match self {
            Watched::TenantBindings | Watched::Namespaces | Watched::Crds => TENANT_LABEL,
            Watched::Mirrors
            | Watched::ManagedRoles
            | Watched::ManagedBindings
            | Watched::FlowSchemas => MANAGED_FOR_LABEL,
        }
    }

    /// The label selector (unescaped) of the objects of tenant `t`, or of every tenant.
    pub fn selector(self, t: Option<&TenantId>) -> String {
        let owner = match t {
            Some(t) => format!("{}={}", self.owner_label(), t.as_str()),
            None => self.owner_label().to_owned(),
        };
        if self == Watched::Mirrors {
            format!("{owner},{MIRROR_LABEL}")
        } else {
            owner
        }
    }

    /// The tenant `o` belongs to, by its owner label; none when the label is absent or not a
    /// tenant id.
    pub fn owner(self, o: &Value) -> Option<TenantId> {
        o["metadata"]["labels"][self.owner_label()]
            .as_str()
            .and_then(|v| TenantId::parse(v).ok())
    }
}

/// Which tenant each cached object belongs to, both ways: a change to an object concerns its
/// owner before and after (an owner label edited moves it), and one tenant's objects are
/// found without reading every cache.
#[derive(Debug, Default)]
pub struct OwnerIndex {
    by_key: BTreeMap<(Watched, Key), TenantId>,
    by_tenant: BTreeMap<TenantId, BTreeSet<(Watched, Key)>>,
}

impl OwnerIndex {
    /// Records that object `key` of `w` now belongs to `owner` (`None`: gone from the cache,
    /// or without a tenant). Returns the tenants the change concerns: the owner before (if
    /// any) and the owner now (if any), each once.
    pub fn set(&mut self, w: Watched, key: Key, owner: Option<TenantId>) -> Vec<TenantId> {
        let entry = (w, key);
        let before = self.by_key.remove(&entry);
        if let Some(b) = &before
            && let Some(keys) = self.by_tenant.get_mut(b)
        {
            keys.remove(&entry);
            if keys.is_empty() {
                self.by_tenant.remove(b);
            }
        }
        if let Some(o) = &owner {
            self.by_tenant
                .entry(o.clone())
                .or_default()
                .insert(entry.clone());
            self.by_key.insert(entry, o.clone());
        }
        let mut out: Vec<TenantId> = before.into_iter().collect();
        if let Some(o) = owner
            && !out.contains(&o)
        {
            out.push(o);
        }
        out
    }

    /// The objects of tenant `t`, by collection and key.
    pub fn of<'a>(&'a self, t: &TenantId) -> impl Iterator<Item = &'a (Watched, Key)> {
        self.by_tenant.get(t).into_iter().flatten()
    }

    /// The tenants with at least one object.
    pub fn tenants(&self) -> impl Iterator<Item = &TenantId> {
        self.by_tenant.keys()
    }
}

/// Whether every field of `desired` is in `actual` with the same value: objects by key (keys
/// only in `actual`, such as the apiserver's defaults, are ignored), arrays element by element
/// and of the same length (an added or removed rule is a difference), anything else equal.
pub fn contained_in(desired: &Value, actual: &Value) -> bool {
    match (desired, actual) {
        (Value::Object(d), Value::Object(a)) => d
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| contained_in(v, av))),
        (Value::Array(d), Value::Array(a)) => {
            d.len() == a.len() && d.iter().zip(a).all(|(dv, av)| contained_in(dv, av))
        }
        _ => desired == actual,
    }
}

/// Whether the object upstream (`actual`, as the watch saw it: a FlowSchema, a priority level,
/// a role, an admission policy) still is what paddock applied (`desired`): its labels and every
/// other top-level field (`spec`, `rules`, `roleRef`, `subjects`...), on the fields paddock
/// sets. A missing one, or one being deleted, is not in step.
pub fn spec_in_step(desired: &Value, actual: Option<&Value>) -> bool {
    actual.is_some_and(|a| {
        a["metadata"]["deletionTimestamp"].is_null()
            && contained_in(&desired["metadata"]["labels"], &a["metadata"]["labels"])
            && desired.as_object().is_some_and(|d| {
                d.iter()
                    .filter(|(k, _)| {
                        !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status")
                    })
                    .all(|(k, v)| contained_in(v, &a[k.as_str()]))
            })
    })
}

#[cfg(test)]
#[path = "resync_tests.rs"]
mod tests;
