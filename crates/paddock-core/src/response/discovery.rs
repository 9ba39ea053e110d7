//! Discovery documents in the tenant's view.
//!
//! Legacy (`/api` APIVersions, `/apis` APIGroupList, `/apis/<g>` APIGroup, `/api/v1` and
//! `/apis/<g>/<v>` APIResourceList) and aggregated (`apidiscovery.k8s.io` v2 and v2beta1
//! APIGroupDiscoveryList) are filtered by the same rules, so kubectl sees the same cluster
//! whichever it asks for:
//!
//! - the tenant's own CRD groups appear un-prefixed (`foofoo-example.com` -> `example.com`);
//! - other tenants' groups (any tenant-prefixed group not ours) never appear;
//! - built-in resources whose catalog policy is Forbidden stay listed, as upstream advertises
//!   them: discovery of a real cluster is the same for every user whatever their rights (the
//!   conformance Discovery and AggregatedDiscovery tests expect `apiservices`, `tokenreviews`,
//!   `certificatesigningrequests`), and a request on one is refused with a Status naming the
//!   policy. Forbidden resources of platform groups (not built in) are hidden, and a group or
//!   version left with nothing visible is hidden too; `preferredVersion` is fixed accordingly;
//! - shared read-only resources advertise only the read verbs.
//!
//! Documents are small, so they are parsed whole. serde_json keeps key order
//! (`preserve_order`), so the output is a deterministic function of the input and the tenant,
//! which is what per-tenant ETags need.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::catalog::{Catalog, Policy, is_builtin_group, subresource_forbidden};
use crate::error::TranslateError;
use crate::tenant::TenantId;

const READ_VERBS: &[&str] = &["get", "list", "watch"];

/// Rewrites one discovery document (any of the kinds above) into the tenant's view.
pub fn discovery_down(
    tenant: &TenantId,
    catalog: &Catalog,
    body: &[u8],
) -> Result<Vec<u8>, TranslateError> {
    let mut doc: Value = serde_json::from_slice(body)
        .map_err(|e| TranslateError::Upstream(format!("discovery document: {e}")))?;
    let f = Filter::new(tenant, catalog);
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    match kind {
        // `/api`: the list of core versions; nothing tenant-specific in it.
        "APIVersions" => {}
        "APIGroupList" => f.group_list(&mut doc)?,
        "APIGroup" => {
            if !f.group(&mut doc)? {
                return Err(TranslateError::NotFound(
                    "the server could not find the requested resource".into(),
                ));
            }
        }
        "APIResourceList" => f.resource_list(&mut doc)?,
        "APIGroupDiscoveryList" => f.aggregated_list(&mut doc)?,
        other => {
            return Err(TranslateError::Upstream(format!(
                "unexpected discovery document kind {other:?}"
            )));
        }
    }
    serde_json::to_vec(&doc).map_err(|e| TranslateError::Internal(format!("discovery: {e}")))
}

/// What a tenant may do with one upstream (group, version, resource).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Vis {
    Hidden,
    ReadOnly,
    Full,
}

struct Filter<'a> {
    tenant: &'a TenantId,
    catalog: &'a Catalog,
    /// (upstream group, version) -> has a visible resource, from the catalog (for the legacy
    /// group documents, which list no resources).
    gv_visible: HashMap<(&'a str, &'a str), bool>,
}

impl<'a> Filter<'a> {
    fn new(tenant: &'a TenantId, catalog: &'a Catalog) -> Self {
        let mut gv_visible: HashMap<(&str, &str), bool> = HashMap::new();
        for (g, v, r) in catalog.all_upstream() {
            let vis = resource_vis(tenant, catalog, g, v, r) != Vis::Hidden;
            let e = gv_visible.entry((g, v)).or_default();
            *e = *e || vis;
        }
        Filter {
            tenant,
            catalog,
            gv_visible,
        }
    }

    /// The tenant's name for an upstream group, None when the tenant must not see it.
    fn group_name(&self, upstream: &str) -> Option<String> {
        self.catalog.tenant_group_view(self.tenant, upstream)
    }

    /// Legacy group-version visibility. A tenant's own CRD group is visible even before the
    /// catalog has caught up with a CRD created a moment ago.
    fn gv_visible(&self, group: &str, version: &str) -> bool {
        self.tenant.strip(group).is_some()
            || self
                .gv_visible
                .get(&(group, version))
                .copied()
                .unwrap_or(false)
    }

    fn group_list(&self, doc: &mut Value) -> Result<(), TranslateError> {
        if let Some(groups) = doc.get_mut("groups").and_then(Value::as_array_mut) {
            let mut kept = Vec::with_capacity(groups.len());
            for mut g in groups.drain(..) {
                if self.group(&mut g)? {
                    kept.push(g);
                }
            }
            *groups = kept;
        }
        Ok(())
    }

    /// One legacy APIGroup (an element of APIGroupList or the `/apis/<g>` document). Returns
    /// false when the tenant must not see the group.
    fn group(&self, g: &mut Value) -> Result<bool, TranslateError> {
        let Some(obj) = g.as_object_mut() else {
            return Ok(false);
        };
        let upstream = str_of(obj, "name").to_owned();
        let Some(name) = self.group_name(&upstream) else {
            return Ok(false);
        };
        let mut first_kept = None;
        if let Some(versions) = obj.get_mut("versions").and_then(Value::as_array_mut) {
            versions.retain(|v| self.gv_visible(&upstream, str_of_v(v, "version")));
            for v in versions.iter_mut() {
                let ver = str_of_v(v, "version").to_owned();
                set_gv(v, &name, &ver);
                first_kept.get_or_insert(ver);
            }
        }
        let Some(first_kept) = first_kept else {
            return Ok(false);
        };
        obj.insert("name".into(), Value::String(name.clone()));
        if let Some(pv) = obj.get_mut("preferredVersion") {
            let pref = str_of_v(pv, "version").to_owned();
            let ver = if self.gv_visible(&upstream, &pref) {
                pref
            } else {
                first_kept
            };
            set_gv(pv, &name, &ver);
        }
        Ok(true)
    }

    /// `/api/v1` or `/apis/<g>/<v>`.
    fn resource_list(&self, doc: &mut Value) -> Result<(), TranslateError> {
        let gv = doc
            .get("groupVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let (ug, ver) = split_gv(&gv);
        let Some(name) = self.group_name(ug) else {
            return Err(TranslateError::NotFound(
                "the server could not find the requested resource".into(),
            ));
        };
        if let Some(obj) = doc.as_object_mut() {
            obj.insert("groupVersion".into(), Value::String(join_gv(&name, ver)));
        }
        if let Some(res) = doc.get_mut("resources").and_then(Value::as_array_mut) {
            let mut kept = Vec::with_capacity(res.len());
            for mut r in res.drain(..) {
                let full = str_of_v(&r, "name").to_owned();
                let (parent, sub) = match full.split_once('/') {
                    Some((p, s)) => (p, Some(s)),
                    None => (full.as_str(), None),
                };
                let mut vis = resource_vis(self.tenant, self.catalog, ug, ver, parent);
                if let Some(sub) = sub
                    && subresource_forbidden(ug, parent, sub)
                {
                    vis = Vis::Hidden;
                }
                if vis == Vis::Hidden {
                    continue;
                }
                let Some(o) = r.as_object_mut() else { continue };
                // Subresources of another group (deployments/scale -> autoscaling) name it.
                if !self.rename_group_field(o, "group") {
                    continue;
                }
                if vis == Vis::ReadOnly && !restrict_verbs(o) {
                    continue;
                }
                kept.push(r);
            }
            *res = kept;
        }
        Ok(())
    }

    /// `group` member holding an upstream group: renamed into the tenant's view. Returns false
    /// when it names a group the tenant must not see.
    fn rename_group_field(&self, o: &mut Map<String, Value>, key: &str) -> bool {
        let Some(g) = o.get(key).and_then(Value::as_str) else {
            return true;
        };
        if g.is_empty() {
            return true;
        }
        match self.group_name(g) {
            Some(n) => {
                o.insert(key.into(), Value::String(n));
                true
            }
            None => false,
        }
    }

    /// apidiscovery.k8s.io v2 / v2beta1 APIGroupDiscoveryList.
    fn aggregated_list(&self, doc: &mut Value) -> Result<(), TranslateError> {
        let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) else {
            return Ok(());
        };
        let mut kept = Vec::with_capacity(items.len());
        for mut item in items.drain(..) {
            if self.aggregated_group(&mut item) {
                kept.push(item);
            }
        }
        *items = kept;
        Ok(())
    }

    fn aggregated_group(&self, item: &mut Value) -> bool {
        let upstream = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(name) = self.group_name(&upstream) else {
            return false;
        };
        // The core group has no name (`metadata: {}`); leave it without one.
        if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut)
            && !upstream.is_empty()
        {
            meta.insert("name".into(), Value::String(name));
        }
        let Some(versions) = item.get_mut("versions").and_then(Value::as_array_mut) else {
            return false;
        };
        versions.retain_mut(|v| {
            let ver = str_of_v(v, "version").to_owned();
            let Some(res) = v.get_mut("resources").and_then(Value::as_array_mut) else {
                return false;
            };
            res.retain_mut(|r| self.aggregated_resource(&upstream, &ver, r));
            !res.is_empty()
        });
        !versions.is_empty()
    }

    fn aggregated_resource(&self, ug: &str, ver: &str, r: &mut Value) -> bool {
        let resource = str_of_v(r, "resource").to_owned();
        let vis = resource_vis(self.tenant, self.catalog, ug, ver, &resource);
        if vis == Vis::Hidden {
            return false;
        }
        let Some(o) = r.as_object_mut() else {
            return false;
        };
        if let Some(rk) = o.get_mut("responseKind").and_then(Value::as_object_mut)
            && !self.rename_group_field(rk, "group")
        {
            return false;
        }
        if vis == Vis::ReadOnly && !restrict_verbs(o) {
            return false;
        }
        if let Some(subs) = o.get_mut("subresources").and_then(Value::as_array_mut) {
            subs.retain_mut(|s| {
                let sub = str_of_v(s, "subresource").to_owned();
                if subresource_forbidden(ug, &resource, &sub) {
                    return false;
                }
                let Some(so) = s.as_object_mut() else {
                    return false;
                };
                if let Some(rk) = so.get_mut("responseKind").and_then(Value::as_object_mut)
                    && !self.rename_group_field(rk, "group")
                {
                    return false;
                }
                vis != Vis::ReadOnly || restrict_verbs(so)
            });
        }
        true
    }
}

fn resource_vis(tenant: &TenantId, catalog: &Catalog, ug: &str, ver: &str, res: &str) -> Vis {
    if tenant.strip(ug).is_some() {
        // The tenant's own CRD group: everything in it is the tenant's, whether or not the
        // catalog has seen the CRD yet.
        return Vis::Full;
    }
    match catalog.resolve_upstream(tenant, ug, ver, res) {
        None => Vis::Hidden,
        Some(info) => match info.policy {
            Policy::TenantOwned | Policy::PlatformGranted => Vis::Full,
            Policy::SharedReadOnly => Vis::ReadOnly,
            // Built-in kinds are public knowledge (they are the release's); listing them is
            // what a cluster shows every user. Requests on them are refused by the policy.
            Policy::Forbidden if is_builtin_group(ug) => Vis::Full,
            Policy::Forbidden => Vis::Hidden,
        },
    }
}

/// Keeps only read verbs; false when none is left.
fn restrict_verbs(o: &mut Map<String, Value>) -> bool {
    if let Some(verbs) = o.get_mut("verbs").and_then(Value::as_array_mut) {
        verbs.retain(|v| v.as_str().is_some_and(|s| READ_VERBS.contains(&s)));
        return !verbs.is_empty();
    }
    false
}

fn str_of<'v>(o: &'v Map<String, Value>, k: &str) -> &'v str {
    o.get(k).and_then(Value::as_str).unwrap_or_default()
}

fn str_of_v<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

/// Sets `groupVersion` and `version` of a GroupVersionForDiscovery.
fn set_gv(v: &mut Value, group: &str, version: &str) {
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "groupVersion".into(),
            Value::String(join_gv(group, version)),
        );
        o.insert("version".into(), Value::String(version.to_owned()));
    }
}

fn split_gv(gv: &str) -> (&str, &str) {
    match gv.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", gv),
    }
}

fn join_gv(g: &str, v: &str) -> String {
    if g.is_empty() {
        v.to_owned()
    } else {
        format!("{g}/{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn catalog() -> Catalog {
        let core = json!({"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
            {"metadata":{"creationTimestamp":null},"versions":[{"version":"v1","resources":[
                {"resource":"pods","responseKind":{"group":"","version":"","kind":"Pod"},"scope":"Namespaced","singularResource":"pod","verbs":["create","delete","get","list","watch"],"subresources":[{"subresource":"log","responseKind":{"group":"","version":"","kind":"Pod"},"verbs":["get"]}]},
                {"resource":"nodes","responseKind":{"group":"","version":"","kind":"Node"},"scope":"Cluster","singularResource":"node","verbs":["create","delete","get","list","patch","watch"],"subresources":[{"subresource":"proxy","responseKind":{"group":"","version":"","kind":"NodeProxyOptions"},"verbs":["create","get"]},{"subresource":"status","responseKind":{"group":"","version":"","kind":"Node"},"verbs":["get","patch"]}]},
                {"resource":"componentstatuses","responseKind":{"group":"","version":"","kind":"ComponentStatus"},"scope":"Cluster","singularResource":"componentstatus","verbs":["get","list"]}
            ],"freshness":"Current"}]}
        ]});
        let apis = json!({"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
            {"metadata":{"name":"apps","creationTimestamp":null},"versions":[{"version":"v1","resources":[
                {"resource":"deployments","responseKind":{"group":"","version":"","kind":"Deployment"},"scope":"Namespaced","singularResource":"deployment","verbs":["get","list"],"subresources":[{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get"]}]}
            ],"freshness":"Current"}]},
            {"metadata":{"name":"apiregistration.k8s.io","creationTimestamp":null},"versions":[{"version":"v1","resources":[
                {"resource":"apiservices","responseKind":{"group":"","version":"","kind":"APIService"},"scope":"Cluster","singularResource":"apiservice","verbs":["get","list"]}
            ],"freshness":"Current"}]},
            {"metadata":{"name":"foofoo-example.com","creationTimestamp":null},"versions":[
                {"version":"v2","resources":[{"resource":"widgets","responseKind":{"group":"foofoo-example.com","version":"v2","kind":"Widget"},"scope":"Namespaced","singularResource":"widget","verbs":["get","list"]}],"freshness":"Current"},
                {"version":"v1","resources":[{"resource":"widgets","responseKind":{"group":"foofoo-example.com","version":"v1","kind":"Widget"},"scope":"Namespaced","singularResource":"widget","verbs":["get","list"]}],"freshness":"Current"}]},
            {"metadata":{"name":"barbar-example.com","creationTimestamp":null},"versions":[
                {"version":"v1","resources":[{"resource":"widgets","responseKind":{"group":"","version":"","kind":"Widget"},"scope":"Namespaced","singularResource":"widget","verbs":["get","list"]}],"freshness":"Current"}]}
        ]});
        Catalog::from_aggregated(
            &serde_json::to_vec(&core).unwrap(),
            &serde_json::to_vec(&apis).unwrap(),
        )
        .unwrap()
    }

    fn run(doc: Value) -> Value {
        let t = TenantId::parse("foofoo").unwrap();
        let out = discovery_down(&t, &catalog(), &serde_json::to_vec(&doc).unwrap()).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn group_list() {
        let doc = json!({"kind":"APIGroupList","apiVersion":"v1","groups":[
            {"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
            {"name":"apiregistration.k8s.io","versions":[{"groupVersion":"apiregistration.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apiregistration.k8s.io/v1","version":"v1"}},
            {"name":"foofoo-example.com","versions":[{"groupVersion":"foofoo-example.com/v2","version":"v2"},{"groupVersion":"foofoo-example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"foofoo-example.com/v2","version":"v2"}},
            {"name":"barbar-example.com","versions":[{"groupVersion":"barbar-example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"barbar-example.com/v1","version":"v1"}},
            {"name":"unknown.io","versions":[{"groupVersion":"unknown.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"unknown.io/v1","version":"v1"}}
        ]});
        let out = run(doc);
        assert_eq!(
            out,
            json!({"kind":"APIGroupList","apiVersion":"v1","groups":[
                {"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
                // a built-in group of forbidden kinds is listed, as a cluster lists it
                {"name":"apiregistration.k8s.io","versions":[{"groupVersion":"apiregistration.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apiregistration.k8s.io/v1","version":"v1"}},
                {"name":"example.com","versions":[{"groupVersion":"example.com/v2","version":"v2"},{"groupVersion":"example.com/v1","version":"v1"}],"preferredVersion":{"groupVersion":"example.com/v2","version":"v2"}}
            ]})
        );
    }

    #[test]
    fn resource_lists() {
        let doc = json!({"kind":"APIResourceList","groupVersion":"v1","resources":[
            {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["create","get"]},
            {"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]},
            {"name":"nodes","singularName":"node","namespaced":false,"kind":"Node","verbs":["create","delete","get","list","patch","watch"]},
            {"name":"nodes/proxy","singularName":"","namespaced":false,"kind":"NodeProxyOptions","verbs":["create","get"]},
            {"name":"nodes/status","singularName":"","namespaced":false,"kind":"Node","verbs":["patch"]},
            {"name":"componentstatuses","singularName":"componentstatus","namespaced":false,"kind":"ComponentStatus","verbs":["get","list"]}
        ]});
        let out = run(doc);
        let names: Vec<&str> = out["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        // componentstatuses is refused to tenants but listed with its verbs, as upstream;
        // nodes are shared read-only (read verbs only, no proxy, no status writes).
        assert_eq!(names, ["pods", "pods/log", "nodes", "componentstatuses"]);
        assert_eq!(
            out["resources"][2]["verbs"],
            json!(["get", "list", "watch"])
        );
        assert_eq!(out["resources"][3]["verbs"], json!(["get", "list"]));

        let doc = json!({"kind":"APIResourceList","apiVersion":"v1","groupVersion":"foofoo-example.com/v1","resources":[
            {"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["get"]}]});
        let out = run(doc);
        assert_eq!(out["groupVersion"], "example.com/v1");
        assert_eq!(out["resources"][0]["name"], "widgets");

        let t = TenantId::parse("foofoo").unwrap();
        let doc =
            br#"{"kind":"APIResourceList","groupVersion":"barbar-example.com/v1","resources":[]}"#;
        assert!(discovery_down(&t, &catalog(), doc).is_err());
        let doc = br#"{"kind":"APIGroup","name":"barbar-example.com","versions":[]}"#;
        assert!(discovery_down(&t, &catalog(), doc).is_err());
    }

    #[test]
    fn aggregated() {
        let t = TenantId::parse("foofoo").unwrap();
        // The catalog's own inputs, read back through the filter.
        let apis = br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
            {"metadata":{"name":"apiregistration.k8s.io"},"versions":[{"version":"v1","resources":[{"resource":"apiservices","scope":"Cluster","verbs":["get"]}]}]},
            {"metadata":{"name":"foofoo-example.com"},"versions":[{"version":"v1","resources":[{"resource":"widgets","responseKind":{"group":"foofoo-example.com","version":"v1","kind":"Widget"},"scope":"Namespaced","verbs":["get"]}]}]},
            {"metadata":{"name":"barbar-example.com"},"versions":[{"version":"v1","resources":[{"resource":"widgets","scope":"Namespaced","verbs":["get"]}]}]},
            {"metadata":{"name":"apps"},"versions":[{"version":"v1","resources":[{"resource":"deployments","scope":"Namespaced","verbs":["get"],"subresources":[{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get"]}]}]}]}
        ]}"#;
        let out: Value =
            serde_json::from_slice(&discovery_down(&t, &catalog(), apis).unwrap()).unwrap();
        let names: Vec<&str> = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["apiregistration.k8s.io", "example.com", "apps"]);
        assert_eq!(
            out["items"][1]["versions"][0]["resources"][0]["responseKind"]["group"],
            "example.com"
        );
        let s = String::from_utf8(serde_json::to_vec(&out).unwrap()).unwrap();
        assert!(!s.contains("barbar") && !s.contains("foofoo"));

        let core = br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2beta1","metadata":{},"items":[
            {"metadata":{"creationTimestamp":null},"versions":[{"version":"v1","resources":[
              {"resource":"nodes","scope":"Cluster","verbs":["create","get","list","watch"],"subresources":[{"subresource":"proxy","verbs":["get"]},{"subresource":"status","verbs":["get","patch"]}]},
              {"resource":"componentstatuses","scope":"Cluster","verbs":["get","list"]}]}]}]}"#;
        let out: Value =
            serde_json::from_slice(&discovery_down(&t, &catalog(), core).unwrap()).unwrap();
        let r = &out["items"][0]["versions"][0]["resources"];
        assert_eq!(r.as_array().unwrap().len(), 2);
        assert_eq!(r[0]["verbs"], json!(["get", "list", "watch"]));
        assert_eq!(
            r[0]["subresources"],
            json!([{"subresource":"status","verbs":["get"]}])
        );
        assert_eq!(r[1]["resource"], "componentstatuses");
        assert!(out["items"][0]["metadata"].get("name").is_none());
    }

    #[test]
    fn deterministic() {
        let t = TenantId::parse("foofoo").unwrap();
        let doc = br#"{"kind":"APIGroupList","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}]}]}"#;
        assert_eq!(
            discovery_down(&t, &catalog(), doc).unwrap(),
            discovery_down(&t, &catalog(), doc).unwrap()
        );
    }
}
