//! Cluster-wide semantics inside a tenant without cluster-wide grants upstream.
//!
//! - **Two identities per tenant caller.** The *real* identity (`paddock:<tid>:<user>`, groups
//!   `paddock:<tid>:<g>`, `paddock:tenant:<tid>`, `system:authenticated`) is used for every
//!   namespaced request; it holds rights only through RoleBindings inside the tenant's
//!   namespaces. The *cluster shadow* identity (`paddock:cluster:<tid>:<real identity>`) is
//!   asserted by paddock only on requests for cluster-scoped objects, whose names paddock
//!   prefixes and whose lists it label-filters; no credential of anyone else can carry it. The
//!   admission guard applies to both (both carry `paddock:tenant:<tid>`).
//! - **Tenant ClusterRoleBindings are inert upstream.** Their subjects are stored in the shadow
//!   form (paddock-core maps them), so they grant nothing to any real identity. Their namespaced
//!   meaning is produced here: one mirror RoleBinding per tenant ClusterRoleBinding in every
//!   namespace of the tenant, kept in step when either side changes (the request path, and the
//!   watch-driven resync, `resync.rs`).
//! - **Tenant custom resources.** A per-tenant ClusterRole grants the admins' shadow group the
//!   tenant's own CRD groups (cluster-scoped custom resources; written compare-and-swap from a
//!   fresh read, `crd_grant.rs`); namespaced ones are covered by the admins' RoleBinding in
//!   each namespace.

use std::collections::{BTreeMap, BTreeSet};

use paddock_core::identity::{SA_USER, cluster_unshadow};
use paddock_core::{TENANT_LABEL, TenantId};
use serde_json::{Value, json};

use paddock_core::provision::resync::Watched;
use paddock_core::provision::tenant_cluster_role_name;
use paddock_core::tenant::MANAGED_FOR_LABEL;
use paddock_upstream::error::ServerError;

use paddock_upstream::upjson;
use paddock_upstream::upstream::Upstream;

/// Name prefix of the mirror RoleBindings: `paddock:crb:<upstream ClusterRoleBinding name>`.
pub const MIRROR_PREFIX: &str = "paddock:crb:";
/// Label marking mirror RoleBindings (with `paddock.io/managed-for`).
pub use paddock_core::provision::resync::MIRROR_LABEL;

/// A tenant's ClusterRoleBinding (upstream form) -> the subjects of its mirrors (real
/// identities of the tenant); subjects that are not the tenant's shadows are left out.
pub fn mirror_subjects(t: &TenantId, crb: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for s in crb["subjects"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let kind = s["kind"].as_str().unwrap_or("");
        let Some(real) = s["name"].as_str().and_then(|n| cluster_unshadow(t, n)) else {
            continue;
        };
        let own = format!("paddock:{}:", t.as_str());
        match kind {
            "User" => {
                if let Some((ns, sa)) = real.strip_prefix(SA_USER).and_then(|r| r.split_once(':')) {
                    if t.strip(ns).is_some() && !sa.is_empty() && !sa.contains(':') {
                        out.push(json!({"kind": "ServiceAccount", "name": sa, "namespace": ns}));
                    }
                } else if real.starts_with(&own) {
                    out.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": real}));
                }
            }
            "Group" => {
                let sa_group = real
                    .strip_prefix("system:serviceaccounts:")
                    .is_some_and(|ns| t.strip(ns).is_some());
                if real.starts_with(&own) || sa_group {
                    out.push(json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": real}));
                }
            }
            _ => {}
        }
    }
    out
}

/// The mirror RoleBinding of `crb` in `upstream_ns`, or None when the binding is not a
/// well-formed tenant ClusterRoleBinding.
pub fn mirror_binding(t: &TenantId, crb: &Value, upstream_ns: &str) -> Option<(String, Value)> {
    let name = crb["metadata"]["name"].as_str()?;
    t.strip(name)?;
    if crb["metadata"]["labels"][TENANT_LABEL].as_str() != Some(t.as_str()) {
        return None;
    }
    let role = crb["roleRef"]["name"].as_str()?;
    if crb["roleRef"]["kind"].as_str() != Some("ClusterRole") || t.strip(role).is_none() {
        return None;
    }
    let subjects = mirror_subjects(t, crb);
    let rb_name = format!("{MIRROR_PREFIX}{name}");
    Some((
        rb_name.clone(),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": rb_name, "namespace": upstream_ns,
                         "labels": {MANAGED_FOR_LABEL: t.as_str(), MIRROR_LABEL: "cluster-role-binding",
                                    "app.kubernetes.io/managed-by": "paddock"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects
        }),
    ))
}

/// The tenant's own ClusterRoleBindings (labelled and prefixed).
fn own_crbs(t: &TenantId, items: Vec<Value>) -> Vec<Value> {
    items
        .into_iter()
        .filter(|c| {
            c["metadata"]["name"]
                .as_str()
                .is_some_and(|n| t.strip(n).is_some())
        })
        .collect()
}

async fn tenant_crbs(up: &Upstream, t: &TenantId) -> Result<Vec<Value>, ServerError> {
    let items = upjson::list(
        up,
        &format!(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?labelSelector={}",
            upjson::query_escape(&t.tenant_label_selector())
        ),
    )
    .await?;
    Ok(own_crbs(t, items))
}

/// Label selector (escaped) of the mirror RoleBindings of one tenant, or of all tenants.
fn mirror_selector(t: Option<&TenantId>) -> String {
    upjson::query_escape(&Watched::Mirrors.selector(t))
}

async fn sync_namespace_with(
    up: &Upstream,
    t: &TenantId,
    upstream_ns: &str,
    crbs: &[Value],
) -> Result<(), ServerError> {
    let existing = upjson::list(
        up,
        &format!(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/{upstream_ns}/rolebindings?labelSelector={}",
            mirror_selector(Some(t))
        ),
    )
    .await?;
    reconcile_mirrors(up, t, upstream_ns, crbs, &existing).await
}

/// Writes the difference between the mirrors `crbs` call for in `upstream_ns` and `existing`
/// (the tenant's mirrors found there); writes nothing when they agree.
async fn reconcile_mirrors(
    up: &Upstream,
    t: &TenantId,
    upstream_ns: &str,
    crbs: &[Value],
    existing: &[Value],
) -> Result<(), ServerError> {
    let desired: BTreeMap<String, Value> = crbs
        .iter()
        .filter_map(|c| mirror_binding(t, c, upstream_ns))
        .collect();
    let base = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{upstream_ns}/rolebindings");
    for (name, rb) in &desired {
        let same = existing.iter().any(|e| {
            e["metadata"]["name"].as_str() == Some(name)
                && e["roleRef"] == rb["roleRef"]
                && e["subjects"] == rb["subjects"]
        });
        if same {
            continue;
        }
        // roleRef is immutable: a changed one needs a new object.
        if existing
            .iter()
            .any(|e| e["metadata"]["name"].as_str() == Some(name) && e["roleRef"] != rb["roleRef"])
        {
            upjson::delete(up, &format!("{base}/{}", pct(name))).await?;
        }
        upjson::apply(up, &format!("{base}/{}", pct(name)), rb).await?;
    }
    for e in existing {
        if let Some(name) = e["metadata"]["name"].as_str()
            && name.starts_with(MIRROR_PREFIX)
            && !desired.contains_key(name)
        {
            upjson::delete(up, &format!("{base}/{}", pct(name))).await?;
        }
    }
    Ok(())
}

fn pct(s: &str) -> String {
    s.replace('%', "%25").replace(':', "%3A")
}

/// Brings the mirrors in one (new) namespace of the tenant in step.
pub async fn sync_namespace(
    up: &Upstream,
    t: &TenantId,
    upstream_ns: &str,
) -> Result<(), ServerError> {
    let crbs = tenant_crbs(up, t).await?;
    sync_namespace_with(up, t, upstream_ns, &crbs).await
}

/// Everything upstream that what [`sync_tenant`] derives depends on, for one tenant.
#[derive(Default)]
pub(crate) struct TenantView {
    /// The tenant's ClusterRoleBindings.
    crbs: Vec<Value>,
    /// The tenant's namespaces.
    namespaces: Vec<Value>,
    /// The tenant's mirror RoleBindings, by namespace.
    mirrors: BTreeMap<String, Vec<Value>>,
    /// The groups of the tenant's CRDs.
    crd_groups: BTreeSet<String>,
    /// Its custom-resources ClusterRole and ClusterRoleBinding, if present.
    custom_role: Option<Value>,
    custom_binding: Option<Value>,
}

impl TenantView {
    /// The tenant's upstream namespaces as the resync read them (billing restamps from them).
    pub(crate) fn namespaces(&self) -> &[Value] {
        &self.namespaces
    }

    fn add_mirror(&mut self, rb: Value) {
        let ns = rb["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        self.mirrors.entry(ns).or_default().push(rb);
    }

    fn add_crd(&mut self, t: &TenantId, crd: &Value) {
        if let Some(g) = crd["spec"]["group"]
            .as_str()
            .filter(|g| t.strip(g).is_some())
        {
            self.crd_groups.insert(g.to_owned());
        }
    }
}

/// Lists behind [`TenantView`], of one tenant or of all: read upstream for the sync of one
/// tenant (a tenant's RBAC write), taken from the reflectors' caches by the resync.
pub(crate) struct ViewLists {
    crbs: Vec<Value>,
    namespaces: Vec<Value>,
    mirrors: Vec<Value>,
    crds: Vec<Value>,
    managed_roles: Vec<Value>,
    managed_bindings: Vec<Value>,
}

impl ViewLists {
    /// The six lists, of one tenant or of all: the collections and selectors the resync's
    /// reflectors watch (`paddock_core::provision::resync::Watched`), read once.
    pub(crate) async fn fetch(up: &Upstream, t: Option<&TenantId>) -> Result<Self, ServerError> {
        let paths = [
            Watched::TenantBindings,
            Watched::Namespaces,
            Watched::Mirrors,
            Watched::Crds,
            Watched::ManagedRoles,
            Watched::ManagedBindings,
        ]
        .map(|w| {
            format!(
                "{}?labelSelector={}",
                w.collection(),
                upjson::query_escape(&w.selector(t))
            )
        });
        let (crbs, namespaces, mirrors, crds, managed_roles, managed_bindings) = tokio::try_join!(
            upjson::list(up, &paths[0]),
            upjson::list(up, &paths[1]),
            upjson::list(up, &paths[2]),
            upjson::list(up, &paths[3]),
            upjson::list(up, &paths[4]),
            upjson::list(up, &paths[5]),
        )?;
        Ok(Self {
            crbs,
            namespaces,
            mirrors,
            crds,
            managed_roles,
            managed_bindings,
        })
    }

    /// The lists as the resync's caches hold them: each object with the collection it was
    /// watched in (FlowSchemas are no part of a view).
    pub(crate) fn from_cached<'a>(objects: impl Iterator<Item = (Watched, &'a Value)>) -> Self {
        let mut v = ViewLists {
            crbs: Vec::new(),
            namespaces: Vec::new(),
            mirrors: Vec::new(),
            crds: Vec::new(),
            managed_roles: Vec::new(),
            managed_bindings: Vec::new(),
        };
        for (w, o) in objects {
            let list = match w {
                Watched::TenantBindings => &mut v.crbs,
                Watched::Namespaces => &mut v.namespaces,
                Watched::Mirrors => &mut v.mirrors,
                Watched::Crds => &mut v.crds,
                Watched::ManagedRoles => &mut v.managed_roles,
                Watched::ManagedBindings => &mut v.managed_bindings,
                Watched::FlowSchemas => continue,
            };
            list.push(o.clone());
        }
        v
    }

    /// Sorts everything by tenant (the label's value); objects of ids that are not valid
    /// tenant ids are left out.
    pub(crate) fn by_tenant(self) -> BTreeMap<TenantId, TenantView> {
        let mut views: BTreeMap<TenantId, TenantView> = BTreeMap::new();
        for c in self.crbs {
            if let Some(t) = Watched::TenantBindings.owner(&c) {
                views.entry(t).or_default().crbs.push(c);
            }
        }
        for n in self.namespaces {
            if let Some(t) = Watched::Namespaces.owner(&n) {
                views.entry(t).or_default().namespaces.push(n);
            }
        }
        for rb in self.mirrors {
            if let Some(t) = Watched::Mirrors.owner(&rb) {
                views.entry(t).or_default().add_mirror(rb);
            }
        }
        for crd in &self.crds {
            if let Some(t) = Watched::Crds.owner(crd) {
                views.entry(t.clone()).or_default().add_crd(&t, crd);
            }
        }
        for (objs, w) in [
            (self.managed_roles, Watched::ManagedRoles),
            (self.managed_bindings, Watched::ManagedBindings),
        ] {
            for o in objs {
                let Some(t) = w.owner(&o) else {
                    continue;
                };
                if o["metadata"]["name"].as_str() != Some(&tenant_cluster_role_name(&t)) {
                    continue;
                }
                let v = views.entry(t).or_default();
                if w == Watched::ManagedRoles {
                    v.custom_role = Some(o);
                } else {
                    v.custom_binding = Some(o);
                }
            }
        }
        for (t, v) in views.iter_mut() {
            v.crbs = own_crbs(t, std::mem::take(&mut v.crbs));
        }
        views
    }
}

/// Brings everything derived from the tenant's RBAC and CRDs in step: the mirrors in every
/// namespace, and the tenant's custom-resources role.
pub async fn sync_tenant(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    let mut views = ViewLists::fetch(up, Some(t)).await?.by_tenant();
    let view = views.remove(t).unwrap_or_default();
    reconcile_tenant(up, t, &view).await
}

/// Writes what `view` shows to be missing or stale for tenant `t`; nothing when all agrees.
pub(crate) async fn reconcile_tenant(
    up: &Upstream,
    t: &TenantId,
    view: &TenantView,
) -> Result<(), ServerError> {
    let none = Vec::new();
    for n in view
        .namespaces
        .iter()
        .filter(|n| n["metadata"]["deletionTimestamp"].is_null())
    {
        let Some(ns) = n["metadata"]["name"]
            .as_str()
            .filter(|x| t.strip(x).is_some())
        else {
            continue;
        };
        // A namespace that missed its setup (created while paddock was down, or by a request
        // paddock did not recognise): the whole setup, mirrors included.
        // (A level the tenant chose counts as set up: it is kept.)
        let level = n["metadata"]["labels"][paddock_core::provision::PSA_ENFORCE_LABEL].as_str();
        let existing = view.mirrors.get(ns).unwrap_or(&none);
        let mirrors = reconcile_mirrors(up, t, ns, &view.crbs, existing);
        if !paddock_core::provision::keeps_namespace_level(level) {
            crate::provision::set_up_namespace(up, t, ns, mirrors).await?;
        } else {
            mirrors.await?;
        }
    }
    crate::crd_grant::reconcile(
        up,
        t,
        &view.crd_groups,
        view.custom_role.as_ref(),
        view.custom_binding.as_ref(),
    )
    .await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn t() -> TenantId {
        TenantId::parse("foofoo").unwrap()
    }

    #[test]
    fn one_cluster_read_is_sorted_by_tenant() {
        let lists = ViewLists {
            crbs: vec![
                json!({"metadata": {"name": "foofoo-b", "labels": {TENANT_LABEL: "foofoo"}}}),
                // Labelled for foofoo but not prefixed: not foofoo's.
                json!({"metadata": {"name": "barbar-b", "labels": {TENANT_LABEL: "foofoo"}}}),
                json!({"metadata": {"name": "barbar-b", "labels": {TENANT_LABEL: "barbar"}}}),
                // Not a tenant id at all.
                json!({"metadata": {"name": "x", "labels": {TENANT_LABEL: "Not An Id"}}}),
            ],
            namespaces: vec![
                json!({"metadata": {"name": "foofoo-web", "labels": {TENANT_LABEL: "foofoo"}}}),
            ],
            mirrors: vec![
                json!({"metadata": {"name": "paddock:crb:foofoo-b", "namespace": "foofoo-web", "labels": {MANAGED_FOR_LABEL: "foofoo"}}}),
                json!({"metadata": {"name": "paddock:crb:barbar-b", "namespace": "barbar-a", "labels": {MANAGED_FOR_LABEL: "barbar"}}}),
            ],
            crds: vec![
                json!({"metadata": {"labels": {TENANT_LABEL: "foofoo"}}, "spec": {"group": "foofoo-x.example.com"}}),
                json!({"metadata": {"labels": {TENANT_LABEL: "foofoo"}}, "spec": {"group": "barbar-x.example.com"}}),
            ],
            managed_roles: vec![
                json!({"metadata": {"name": "paddock:tenant:foofoo:custom-resources", "labels": {MANAGED_FOR_LABEL: "foofoo"}}}),
                // Another tenant's role name under foofoo's label: ignored.
                json!({"metadata": {"name": "paddock:tenant:barbar:custom-resources", "labels": {MANAGED_FOR_LABEL: "foofoo"}}}),
            ],
            managed_bindings: vec![],
        };
        let views = lists.by_tenant();
        let foo = &views[&t()];
        assert_eq!(foo.crbs.len(), 1);
        assert_eq!(foo.namespaces.len(), 1);
        assert_eq!(foo.mirrors["foofoo-web"].len(), 1);
        assert!(!foo.mirrors.contains_key("barbar-a"));
        assert_eq!(
            foo.crd_groups.iter().collect::<Vec<_>>(),
            ["foofoo-x.example.com"]
        );
        assert!(foo.custom_role.is_some() && foo.custom_binding.is_none());
        let bar = &views[&TenantId::parse("barbar").unwrap()];
        assert_eq!(bar.crbs.len(), 1);
        assert_eq!(bar.mirrors["barbar-a"].len(), 1);
        assert!(bar.custom_role.is_none());
        assert_eq!(views.len(), 2);
    }

    #[test]
    fn cached_objects_make_the_same_view_as_the_lists() {
        let ns = json!({"metadata": {"name": "foofoo-web", "labels": {TENANT_LABEL: "foofoo"}}});
        let crb = json!({"metadata": {"name": "foofoo-b", "labels": {TENANT_LABEL: "foofoo"}}});
        let rb = json!({"metadata": {"name": "paddock:crb:foofoo-b", "namespace": "foofoo-web", "labels": {MANAGED_FOR_LABEL: "foofoo"}}});
        let fs = json!({"metadata": {"name": "paddock-tenants-foofoo-flow", "labels": {MANAGED_FOR_LABEL: "foofoo"}}});
        let cached = [
            (Watched::Namespaces, &ns),
            (Watched::TenantBindings, &crb),
            (Watched::Mirrors, &rb),
            // Not part of a view.
            (Watched::FlowSchemas, &fs),
        ];
        let views = ViewLists::from_cached(cached.into_iter()).by_tenant();
        let foo = &views[&t()];
        assert_eq!(foo.namespaces(), [ns]);
        assert_eq!(foo.crbs, [crb]);
        assert_eq!(foo.mirrors["foofoo-web"], [rb]);
        assert!(foo.custom_role.is_none() && foo.crd_groups.is_empty());
        assert_eq!(views.len(), 1);
    }

    #[test]
    fn mirrors_only_name_the_tenant() {
        let crb = json!({"metadata": {"name": "foofoo-b", "labels": {TENANT_LABEL: "foofoo"}},
        "roleRef": {"kind": "ClusterRole", "name": "foofoo-reader"},
        "subjects": [
            {"kind": "User", "name": "paddock:cluster:foofoo:paddock:foofoo:alice"},
            {"kind": "User", "name": "paddock:cluster:foofoo:system:serviceaccount:foofoo-ci:b"},
            {"kind": "Group", "name": "paddock:cluster:foofoo:system:serviceaccounts:foofoo-ci"},
            {"kind": "User", "name": "paddock:cluster:foofoo:paddock:barbar:bob"},
            {"kind": "User", "name": "paddock:cluster:foofoo:system:serviceaccount:kube-system:x"},
            {"kind": "Group", "name": "system:masters"},
            {"kind": "User", "name": "paddock:foofoo:alice"}
        ]});
        let (name, rb) = mirror_binding(&t(), &crb, "foofoo-web").unwrap();
        assert_eq!(name, "paddock:crb:foofoo-b");
        assert_eq!(
            rb["subjects"],
            json!([
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "paddock:foofoo:alice"},
                {"kind": "ServiceAccount", "name": "b", "namespace": "foofoo-ci"},
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:serviceaccounts:foofoo-ci"}
            ])
        );
        // Bindings to roles that are not the tenant's are never mirrored.
        let mut bad = crb.clone();
        bad["roleRef"]["name"] = json!("cluster-admin");
        assert!(mirror_binding(&t(), &bad, "foofoo-web").is_none());
        let mut other = crb;
        other["metadata"]["name"] = json!("barbar-b");
        assert!(mirror_binding(&t(), &other, "foofoo-web").is_none());
    }
}
