//! The usage figures kept from watches (docs/metering.md "Cost"): which collections are
//! watched, what is kept of each object (a few fields, and only of tenant objects), and the
//! figures tallied from those caches. Nothing here reads upstream; the server's reflectors
//! feed the caches, and a snapshot is a fold over them, so when nothing changes the figures
//! cost the apiserver nothing but the open watches.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::catalog::Scope;
use crate::catalog::kinds::Kind;
use crate::tenant::{TENANT_LABEL, tenant_of};

use super::usage::{UsageTally, counted_objects};

/// One watched collection and how its objects count.
#[derive(Debug, Clone, Copy)]
pub enum UsageCollection {
    /// The tenant namespaces (by the tenant label): whose namespace is whose.
    Namespaces,
    /// Pods, with their containers' requests and limits.
    Pods,
    /// PersistentVolumeClaims, with their storage request.
    Claims,
    /// Another counted namespaced resource: metadata only.
    Namespaced(&'static Kind),
    /// A counted cluster-scoped resource, by the tenant label: metadata only (CRDs in full:
    /// their owner is decided by `spec.group`).
    Cluster(&'static Kind),
}

/// What a reflector of one collection asks for.
#[derive(Debug, Clone)]
pub struct WatchSpec {
    pub collection: String,
    /// Label selector, empty for none.
    pub selector: &'static str,
    pub metadata_only: bool,
    /// What is kept of each object (`None`: not a tenant's, dropped).
    pub shape: fn(Value) -> Option<Value>,
}

impl UsageCollection {
    /// Every collection the figures need, namespaces first.
    pub fn all() -> Vec<UsageCollection> {
        let mut v = vec![
            UsageCollection::Namespaces,
            UsageCollection::Pods,
            UsageCollection::Claims,
        ];
        v.extend(counted_objects(Scope::Namespaced).map(UsageCollection::Namespaced));
        v.extend(counted_objects(Scope::Cluster).map(UsageCollection::Cluster));
        v
    }

    pub fn watch(self) -> WatchSpec {
        let (collection, selector, metadata_only, shape): (String, _, _, fn(_) -> _) = match self {
            UsageCollection::Namespaces => (
                "/api/v1/namespaces".into(),
                TENANT_LABEL,
                true,
                shape_namespace,
            ),
            UsageCollection::Pods => ("/api/v1/pods".into(), "", false, shape_pod),
            UsageCollection::Claims => (
                "/api/v1/persistentvolumeclaims".into(),
                "",
                false,
                shape_claim,
            ),
            UsageCollection::Namespaced(k) => (k.list_path(), "", true, shape_namespaced),
            UsageCollection::Cluster(k) if is_crd(k) => {
                (k.list_path(), TENANT_LABEL, false, shape_cluster)
            }
            UsageCollection::Cluster(k) => (k.list_path(), TENANT_LABEL, true, shape_cluster),
        };
        WatchSpec {
            collection,
            selector,
            metadata_only,
            shape,
        }
    }

    /// How the figures name the collection (`uncounted` lists these).
    pub fn path(self) -> String {
        self.watch().collection
    }
}

fn is_crd(k: &Kind) -> bool {
    k.resource == "customresourcedefinitions"
}

/// The metadata every kept object carries: its cache key and resourceVersion, and the tenant
/// label when `labelled`.
fn metadata(o: &Value, labelled: bool) -> Map<String, Value> {
    let m = &o["metadata"];
    let mut out = Map::new();
    for k in ["name", "namespace", "resourceVersion"] {
        if let Some(v) = m.get(k).filter(|v| v.is_string()) {
            out.insert(k.into(), v.clone());
        }
    }
    if labelled && let Some(t) = m["labels"].get(TENANT_LABEL) {
        out.insert("labels".into(), json!({ TENANT_LABEL: t }));
    }
    out
}

/// Whether `o` lives in a namespace with a tenant prefix (whose exactly, the namespaces
/// cache decides when the figures are tallied).
fn in_tenant_namespace(o: &Value) -> bool {
    o["metadata"]["namespace"]
        .as_str()
        .and_then(tenant_of)
        .is_some()
}

fn shape_namespace(o: Value) -> Option<Value> {
    Some(json!({ "metadata": metadata(&o, true) }))
}

fn shape_pod(o: Value) -> Option<Value> {
    if !in_tenant_namespace(&o) {
        return None;
    }
    let containers: Vec<Value> = o["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| json!({ "resources": c["resources"] }))
        .collect();
    Some(json!({
        "metadata": metadata(&o, false),
        "spec": { "containers": containers },
        "status": { "phase": o["status"]["phase"] },
    }))
}

fn shape_claim(o: Value) -> Option<Value> {
    if !in_tenant_namespace(&o) {
        return None;
    }
    let storage = &o["spec"]["resources"]["requests"]["storage"];
    Some(json!({
        "metadata": metadata(&o, false),
        "spec": { "resources": { "requests": { "storage": storage } } },
    }))
}

fn shape_namespaced(o: Value) -> Option<Value> {
    in_tenant_namespace(&o).then(|| json!({ "metadata": metadata(&o, false) }))
}

fn shape_cluster(o: Value) -> Option<Value> {
    let mut kept = json!({ "metadata": metadata(&o, true) });
    if let Some(g) = o["spec"].get("group") {
        kept["spec"] = json!({ "group": g });
    }
    Some(kept)
}

/// Kept objects of one collection by namespace and name (a reflector's cache; the reflector's
/// own `provision::reflect::Cache` is not used here so that `observe` needs nothing of
/// `provision`).
#[derive(Debug, Default)]
struct Kept {
    objects: BTreeMap<(String, String), Value>,
    synced: bool,
}

fn key_of(o: &Value) -> Option<(String, String)> {
    let m = &o["metadata"];
    Some((
        m["namespace"].as_str().unwrap_or("").to_string(),
        m["name"].as_str()?.to_string(),
    ))
}

/// The caches of every counted collection, in `UsageCollection::all()`'s order.
#[derive(Debug)]
pub struct UsageCaches {
    collections: Vec<UsageCollection>,
    caches: Vec<Kept>,
    /// Per collection: the status of the last refused list (403, 404), while refused.
    refused: Vec<Option<u16>>,
}

impl Default for UsageCaches {
    fn default() -> Self {
        let collections = UsageCollection::all();
        let n = collections.len();
        UsageCaches {
            collections,
            caches: (0..n).map(|_| Kept::default()).collect(),
            refused: vec![None; n],
        }
    }
}

impl UsageCaches {
    /// The collections, by the index the feeds use.
    pub fn collections(&self) -> &[UsageCollection] {
        &self.collections
    }

    /// A (re-)list of collection `i`: its objects become `items`.
    pub fn listed(&mut self, i: usize, items: Vec<Value>) {
        if let Some(c) = self.caches.get_mut(i) {
            c.objects = items
                .into_iter()
                .filter_map(|o| Some((key_of(&o)?, o)))
                .collect();
            c.synced = true;
            self.refused[i] = None;
        }
    }

    /// An object of collection `i` added or changed (a watch event).
    pub fn upsert(&mut self, i: usize, o: Value) {
        if let (Some(c), Some(k)) = (self.caches.get_mut(i), key_of(&o)) {
            c.objects.insert(k, o);
        }
    }

    /// An object of collection `i` deleted (a watch event).
    pub fn remove(&mut self, i: usize, o: &Value) {
        if let (Some(c), Some(k)) = (self.caches.get_mut(i), key_of(o)) {
            c.objects.remove(&k);
        }
    }

    /// Collection `i` may not be listed (or is not served): its figures are missing.
    pub fn refused(&mut self, i: usize, code: u16) {
        if let Some(c) = self.caches.get_mut(i) {
            c.objects.clear();
            c.synced = true;
            // A kind the cluster does not serve has nothing to count; a refused one is unknown.
            self.refused[i] = (code != 404).then_some(code);
        }
    }

    /// Whether every collection has been listed (or refused) once: before that, the figures
    /// would undercount.
    pub fn synced(&self) -> bool {
        self.caches.iter().all(|c| c.synced)
    }

    /// The figures of every tenant, and the collections paddock's credential may not list.
    pub fn tally(&self) -> (UsageTally, Vec<String>) {
        let mut tally = UsageTally::default();
        for (counted, cache) in self.collections.iter().zip(&self.caches) {
            let resource = match counted {
                UsageCollection::Namespaced(k) | UsageCollection::Cluster(k) => k.qualified(),
                _ => String::new(),
            };
            for o in cache.objects.values() {
                match counted {
                    UsageCollection::Namespaces => tally.add_namespace(o),
                    UsageCollection::Pods => tally.add_pod(o),
                    UsageCollection::Claims => tally.add_pvc(o),
                    UsageCollection::Namespaced(_) => tally.add_namespaced(&resource, o),
                    UsageCollection::Cluster(_) => tally.add_cluster(&resource, o),
                }
            }
        }
        let uncounted = self
            .collections
            .iter()
            .zip(&self.refused)
            .filter(|(_, r)| r.is_some())
            .map(|(c, _)| c.path())
            .collect();
        (tally, uncounted)
    }
}

#[cfg(test)]
#[path = "usage_cache_tests.rs"]
mod tests;
