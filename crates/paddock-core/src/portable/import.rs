//! An archive read for an import: every object parsed, matched against its manifest entry,
//! its kind resolved in the target's catalog (or defined by a CRD the archive carries) and
//! allowed to a tenant, and placed in apply order. Any failure refuses the whole archive
//! before the server writes anything.

use serde_json::Value;

use super::PortableError;
use super::archive::Archive;
use super::objects::{apply_rank, exported_kinds, identity};
use crate::catalog::{Catalog, ResourceInfo, Scope, split_api_version};
use crate::tenant::TenantId;

/// One object to create, in the tenant's names.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The collection it is created in, as the tenant writes it
    /// (`/api/v1/namespaces/default/configmaps`).
    pub collection: String,
    /// Its name.
    pub name: String,
    pub kind: String,
    pub namespace: Option<String>,
    /// The object to send.
    pub object: Value,
    /// A CRD: the import waits for it to be established before going on.
    pub crd: bool,
    /// A Namespace: one that exists already in the target (its four default namespaces)
    /// is kept as it is.
    pub namespace_object: bool,
    /// Defined by a CRD in the archive, not served by the target yet: its server-side
    /// dry-run waits for the CRD.
    pub new_kind: bool,
}

/// A kind defined by a CRD of the archive: (group, version, kind) -> (plural, scope).
struct NewKind {
    group: String,
    versions: Vec<String>,
    kind: String,
    plural: String,
    scope: Scope,
}

/// The archive's objects as steps in apply order, or why the archive is refused.
pub fn plan(
    archive: &Archive,
    catalog: &Catalog,
    tenant: &TenantId,
) -> Result<Vec<Step>, PortableError> {
    let importable = exported_kinds(catalog, tenant);
    let mut objects = Vec::with_capacity(archive.files.len());
    for (entry, bytes) in archive.manifest.entries.iter().zip(&archive.files) {
        let v: Value = serde_norway::from_slice(bytes)
            .map_err(|e| PortableError::Damaged(format!("{}: {e}", entry.file)))?;
        let (av, kind, ns, name) = identity(&v);
        if (av.as_str(), kind.as_str(), ns.as_deref(), name.as_str())
            != (
                entry.api_version.as_str(),
                entry.kind.as_str(),
                entry.namespace.as_deref(),
                entry.name.as_str(),
            )
        {
            return Err(PortableError::Damaged(format!(
                "{}: holds {kind} {name:?}, the manifest says {} {:?}",
                entry.file, entry.kind, entry.name
            )));
        }
        objects.push(v);
    }
    let new_kinds: Vec<NewKind> = objects.iter().filter_map(new_kind).collect();
    let mut refused = Vec::new();
    let mut steps = Vec::with_capacity(objects.len());
    for v in objects {
        let (av, kind, ns, name) = identity(&v);
        let (info, new) = match resolve(&importable, &new_kinds, &av, &kind) {
            Some(found) => found,
            None => {
                refused.push(format!("{kind} ({av})"));
                continue;
            }
        };
        check_name(&name)?;
        let namespace = match (info.scope, ns) {
            (Scope::Namespaced, Some(n)) => {
                check_name(&n)?;
                Some(n)
            }
            (Scope::Cluster, None) => None,
            (Scope::Namespaced, None) => {
                return Err(PortableError::Damaged(format!(
                    "{kind} {name:?} is namespaced and names no namespace"
                )));
            }
            (Scope::Cluster, Some(_)) => {
                return Err(PortableError::Damaged(format!(
                    "{kind} {name:?} is cluster-scoped and names a namespace"
                )));
            }
        };
        let rank = apply_rank(&info);
        steps.push((
            rank,
            Step {
                collection: collection(&info, namespace.as_deref()),
                name,
                kind,
                namespace,
                crd: info.is_crd(),
                namespace_object: info.group.is_empty() && info.resource == "namespaces",
                new_kind: new,
                object: v,
            },
        ));
    }
    if !refused.is_empty() {
        refused.sort();
        refused.dedup();
        return Err(PortableError::Refused(format!(
            "{}: not a kind a tenant may create on this paddock, and not defined by a CRD in the archive",
            refused.join(", ")
        )));
    }
    // Stable: the archive's order within a kind.
    steps.sort_by_key(|(rank, _)| *rank);
    Ok(steps.into_iter().map(|(_, s)| s).collect())
}

/// The kind's resource for a tenant: one the target serves and a tenant may export and
/// import, or one a CRD of the archive defines. The flag: defined by the archive only.
fn resolve(
    importable: &[ResourceInfo],
    new_kinds: &[NewKind],
    av: &str,
    kind: &str,
) -> Option<(ResourceInfo, bool)> {
    let (g, v) = split_api_version(av);
    let served = importable
        .iter()
        .find(|i| i.group == g && i.kind == kind)
        .map(|i| {
            let mut i = i.clone();
            i.version = v.to_owned();
            (i, false)
        });
    served.or_else(|| {
        new_kinds
            .iter()
            .find(|n| n.group == g && n.kind == kind && n.versions.iter().any(|x| x == v))
            .map(|n| {
                (
                    ResourceInfo {
                        group: n.group.clone(),
                        version: v.to_owned(),
                        resource: n.plural.clone(),
                        kind: n.kind.clone(),
                        scope: n.scope,
                        policy: crate::catalog::Policy::TenantOwned,
                        verbs: Vec::new(),
                        subresources: Vec::new(),
                        tenant_crd: true,
                        upstream_group: String::new(),
                        builtin: None,
                    },
                    true,
                )
            })
    })
}

fn new_kind(v: &Value) -> Option<NewKind> {
    if v["apiVersion"] != "apiextensions.k8s.io/v1" || v["kind"] != "CustomResourceDefinition" {
        return None;
    }
    let spec = &v["spec"];
    Some(NewKind {
        group: spec["group"].as_str()?.to_owned(),
        versions: spec["versions"]
            .as_array()?
            .iter()
            .filter_map(|x| x["name"].as_str().map(str::to_owned))
            .collect(),
        kind: spec["names"]["kind"].as_str()?.to_owned(),
        plural: spec["names"]["plural"].as_str()?.to_owned(),
        scope: if spec["scope"] == "Namespaced" {
            Scope::Namespaced
        } else {
            Scope::Cluster
        },
    })
}

/// A name or namespace that can go into a path as it is.
fn check_name(n: &str) -> Result<(), PortableError> {
    let ok = !n.is_empty()
        && n.len() <= 253
        && n != "."
        && n != ".."
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':' | b'@'));
    if ok {
        Ok(())
    } else {
        Err(PortableError::Damaged(format!(
            "{n:?} is not a name an object can have"
        )))
    }
}

/// The collection path of a kind, in the tenant's names.
pub fn collection(info: &ResourceInfo, namespace: Option<&str>) -> String {
    let base = if info.group.is_empty() {
        format!("/api/{}", info.version)
    } else {
        format!("/apis/{}/{}", info.group, info.version)
    };
    match namespace {
        Some(ns) => format!("{base}/namespaces/{ns}/{}", info.resource),
        None => format!("{base}/{}", info.resource),
    }
}
