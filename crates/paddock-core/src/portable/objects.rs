//! Which of a tenant's objects an export carries, in which order an import applies them, and
//! what is taken out of each (docs/operations.md "Export, import and move"). The objects
//! arrive here already in the tenant's names: the server reads them through the tenant's own
//! pipeline, whose rewriters are the one translation (`rules`); this module only chooses and
//! cleans.

use serde_json::{Map, Value};

use crate::catalog::{Catalog, Policy, ResourceInfo, Scope};
use crate::tenant::TenantId;

/// Kinds Kubernetes makes and keeps by itself: left out of every export, (group, resource).
pub const LEFT_OUT_KINDS: &[(&str, &str)] = &[
    ("", "events"),
    ("events.k8s.io", "events"),
    // Kept by the endpoints controllers from Services (and by paddock for the tenant's
    // `kubernetes` Service); those of a Service without a selector are left out too.
    ("", "endpoints"),
    ("discovery.k8s.io", "endpointslices"),
    // Held by running controllers; a new copy would claim a leadership nobody holds.
    ("coordination.k8s.io", "leases"),
    // Revision history of DaemonSets and StatefulSets, written by their controllers.
    ("apps", "controllerrevisions"),
    // Storage of the source cluster (volumes' data is out of scope): a claim imported
    // without its `volumeName` gets a new volume from its class.
    ("", "persistentvolumes"),
];

/// Objects every namespace gets from Kubernetes: (resource, name), left out.
pub const LEFT_OUT_OBJECTS: &[(&str, &str)] = &[
    ("configmaps", "kube-root-ca.crt"),
    ("serviceaccounts", "default"),
];

/// Namespaced built-in kinds applied before the others (in this order): what pods and
/// bindings refer to.
const NAMESPACED_FIRST: &[&str] = &[
    "serviceaccounts",
    "roles",
    "rolebindings",
    "configmaps",
    "secrets",
    "resourcequotas",
    "limitranges",
    "persistentvolumeclaims",
    "services",
];

/// Server fields of `metadata`, removed.
const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
];

/// paddock's own labels and annotations (`paddock.io/...`: a suspension's and a sleep's marks
/// on workloads, the templates and billing stamps on namespaces) are the source tenant's
/// state, written by paddock; the target's paddock writes its own, and its guard refuses a
/// tenant writing them.
const PADDOCK_KEYS: &str = "paddock.io/";

/// The Secret type whose objects the token controller fills; left out.
const SA_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";

/// Every kind of the tenant an export lists, in apply order: its CRDs, its namespaces, its
/// other cluster-scoped kinds, its namespaced built-in kinds, then its own custom kinds. Each
/// at its group's preferred version.
pub fn exported_kinds(catalog: &Catalog, tenant: &TenantId) -> Vec<ResourceInfo> {
    let mut kinds: Vec<ResourceInfo> = catalog
        .upstream_groups()
        .filter_map(|g| Some((g, catalog.upstream_versions(g).first()?.clone())))
        .flat_map(|(g, v)| {
            catalog
                .all_upstream()
                .filter(move |(ug, uv, r)| *ug == g && *uv == v && !r.contains('/'))
                .filter_map(|(ug, uv, r)| catalog.resolve_upstream(tenant, ug, uv, r))
                .collect::<Vec<_>>()
        })
        .filter(is_exported)
        .collect();
    kinds.sort_by_key(apply_rank);
    kinds
}

fn is_exported(i: &ResourceInfo) -> bool {
    let can = |v: &str| i.verbs.iter().any(|x| x == v);
    i.policy == Policy::TenantOwned
        && can("list")
        && can("create")
        && !i.is_review()
        // Their lists show the platform's objects beside the tenant's, the same in the
        // tenant's names: a tenant's FlowSchemas are not exported (docs).
        && !i.lists_platform_objects()
        && !LEFT_OUT_KINDS
            .iter()
            .any(|(g, r)| *g == i.upstream_group && *r == i.resource)
}

/// Where a kind goes in the apply order (smaller first); ties keep the catalog's order.
pub fn apply_rank(i: &ResourceInfo) -> (u8, usize) {
    if i.is_crd() {
        return (0, 0);
    }
    if i.group.is_empty() && i.resource == "namespaces" {
        return (1, 0);
    }
    match (i.scope, i.tenant_crd) {
        (Scope::Cluster, false) => (2, table_place(i)),
        (Scope::Namespaced, false) => {
            let builtin_group =
                matches!(i.upstream_group.as_str(), "" | "rbac.authorization.k8s.io");
            match NAMESPACED_FIRST
                .iter()
                .position(|r| builtin_group && *r == i.resource)
            {
                Some(p) => (3, p),
                None => (4, table_place(i)),
            }
        }
        // Custom resources last: their CRDs must be established first.
        (Scope::Cluster, true) => (5, 0),
        (Scope::Namespaced, true) => (6, 0),
    }
}

fn table_place(i: &ResourceInfo) -> usize {
    crate::catalog::kinds::KINDS
        .iter()
        .position(|k| k.group == i.upstream_group && k.resource == i.resource)
        .unwrap_or(usize::MAX)
}

/// Why an object is not exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOut {
    /// Kubernetes made it (`kube-root-ca.crt`, the `default` ServiceAccount, a token Secret).
    Kubernetes,
    /// Its controller made it (a controller owner reference) and makes it again.
    Controlled,
    /// paddock made it (its `paddock.io/managed-for` label, a namespace template's
    /// `paddock.io/template`): the target's paddock makes its own.
    Paddock,
    /// A Secret, and the export did not ask for Secrets.
    Secret,
    /// Being deleted.
    Deleting,
}

/// The object as an import should apply it, or why it is left out. `obj` is one item of a
/// list in the tenant's names, `kind` the resource it was listed as.
pub fn clean(kind: &ResourceInfo, obj: &Value, secrets: bool) -> Result<Value, LeftOut> {
    let meta = obj.get("metadata").and_then(Value::as_object);
    let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str);
    let labels = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    let builtin_core = kind.group.is_empty() && !kind.tenant_crd;
    if builtin_core
        && LEFT_OUT_OBJECTS
            .iter()
            .any(|(r, n)| *r == kind.resource && Some(*n) == name)
    {
        return Err(LeftOut::Kubernetes);
    }
    if builtin_core && kind.resource == "secrets" {
        if obj.get("type").and_then(Value::as_str) == Some(SA_TOKEN_TYPE) {
            return Err(LeftOut::Kubernetes);
        }
        if !secrets {
            return Err(LeftOut::Secret);
        }
    }
    if meta.is_some_and(|m| m.contains_key("deletionTimestamp")) {
        return Err(LeftOut::Deleting);
    }
    let controlled = meta
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["controller"] == Value::Bool(true)));
    if controlled {
        return Err(LeftOut::Controlled);
    }
    if labels.is_some_and(|l| {
        l.contains_key(crate::tenant::MANAGED_FOR_LABEL)
            || l.contains_key(crate::templates::TEMPLATE_LABEL)
    }) {
        return Err(LeftOut::Paddock);
    }
    let mut out = obj.clone();
    let Some(o) = out.as_object_mut() else {
        return Err(LeftOut::Kubernetes);
    };
    o.insert("apiVersion".into(), Value::String(kind.api_version()));
    o.insert("kind".into(), Value::String(kind.kind.clone()));
    o.remove("status");
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in SERVER_METADATA {
            m.remove(*f);
        }
        strip_paddock_keys(m, kind.group.is_empty() && kind.resource == "namespaces");
    }
    if !kind.tenant_crd {
        strip_assigned(kind, o);
    }
    Ok(out)
}

fn strip_paddock_keys(m: &mut Map<String, Value>, namespace: bool) {
    for field in ["labels", "annotations"] {
        let Some(a) = m.get_mut(field).and_then(Value::as_object_mut) else {
            continue;
        };
        a.retain(|k, _| !k.starts_with(PADDOCK_KEYS));
        if namespace && field == "labels" {
            // Set from the target tenant's policy, locked against the tenant.
            a.remove(crate::provision::PSA_ENFORCE_LABEL);
        }
        if a.is_empty() {
            m.remove(field);
        }
    }
}

/// Fields the cluster assigned, which a new cluster assigns anew (and could refuse as they
/// are: a Service's IP from another range, a node port taken, a volume that is not there).
fn strip_assigned(kind: &ResourceInfo, o: &mut Map<String, Value>) {
    let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    match (kind.group.as_str(), kind.resource.as_str()) {
        ("", "services") => {
            let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
            if !headless {
                spec.remove("clusterIP");
                spec.remove("clusterIPs");
            }
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                    p.remove("nodePort");
                }
            }
            spec.remove("healthCheckNodePort");
        }
        ("", "persistentvolumeclaims") => {
            spec.remove("volumeName");
        }
        ("", "pods") => {
            spec.remove("nodeName");
        }
        ("batch", "jobs") if spec.get("manualSelector") != Some(&Value::Bool(true)) => {
            // The Job controller's selector and labels name the old Job's uid: a create that
            // carries them is refused.
            spec.remove("selector");
            if let Some(labels) = spec
                .get_mut("template")
                .and_then(|t| t.get_mut("metadata"))
                .and_then(|m| m.get_mut("labels"))
                .and_then(Value::as_object_mut)
            {
                for l in [
                    "controller-uid",
                    "batch.kubernetes.io/controller-uid",
                    "job-name",
                    "batch.kubernetes.io/job-name",
                ] {
                    labels.remove(l);
                }
            }
        }
        _ => {}
    }
}

/// The identity of an object in the archive: (apiVersion, kind, namespace, name).
pub fn identity(obj: &Value) -> (String, String, Option<String>, String) {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let meta = obj.get("metadata");
    (
        s(obj.get("apiVersion")),
        s(obj.get("kind")),
        meta.and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        s(meta.and_then(|m| m.get("name"))),
    )
}

#[cfg(test)]
#[path = "objects_tests.rs"]
mod tests;
