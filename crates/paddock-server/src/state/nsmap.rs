//! This replica's copy of the namespace map of tenants spanning clusters (docs/clusters.md):
//! plain data, kept apart from `clusters` so that the replica's state can hold it without
//! a module cycle.

use std::collections::{BTreeMap, HashMap};

/// This replica's copy of the namespace map: tenant → (namespace → cluster). Refreshed from
/// the store with the cluster records (`clusters::sync`) and written through on each
/// placement made here.
#[derive(Default)]
pub struct NamespaceMap {
    inner: parking_lot::RwLock<HashMap<String, BTreeMap<String, String>>>,
}

impl NamespaceMap {
    pub(crate) fn get(&self, tenant: &str, ns: &str) -> Option<String> {
        self.inner
            .read()
            .get(tenant)
            .and_then(|m| m.get(ns))
            .cloned()
    }

    pub(crate) fn insert(&self, tenant: &str, ns: &str, cluster: &str) {
        self.inner
            .write()
            .entry(tenant.to_string())
            .or_default()
            .insert(ns.to_string(), cluster.to_string());
    }

    pub(crate) fn remove(&self, tenant: &str, ns: &str) {
        if let Some(m) = self.inner.write().get_mut(tenant) {
            m.remove(ns);
        }
    }

    /// Replaces the whole copy with the store's.
    pub fn replace(&self, all: BTreeMap<String, BTreeMap<String, String>>) {
        *self.inner.write() = all.into_iter().collect();
    }

    /// How many of the tenant's namespaces each cluster holds.
    pub(crate) fn counts(&self, tenant: &str) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        if let Some(m) = self.inner.read().get(tenant) {
            for c in m.values() {
                *out.entry(c.clone()).or_insert(0) += 1;
            }
        }
        out
    }
}
