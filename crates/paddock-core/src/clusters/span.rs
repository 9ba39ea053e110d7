//! A tenant spanning several clusters (docs/clusters.md "Spanning tenants"): which cluster a
//! request of it goes to, and where a new namespace of it is placed. Pure; the map itself
//! lives in the store and the gateway's registry.

use serde_json::Value;

use crate::catalog::kinds;

/// The namespace label that chooses a spanning tenant's namespace's cluster at creation. It
/// stays on the namespace (upstream and in the tenant's view), saying where it lives.
pub const CLUSTER_LABEL: &str = "paddock.io/cluster";

/// The namespaces guard's rule for [`CLUSTER_LABEL`] (one validation of the upstream
/// `ValidatingAdmissionPolicy` paddock installs on every cluster): a tenant's update may not
/// change, add or remove it. The namespace map decides where a namespace lives, and the label
/// must keep saying so; a namespace never moves between clusters by a label change. Refused
/// upstream, so the same holds for the tenant identity straight at any apiserver.
pub fn guard_validation() -> Value {
    let l = CLUSTER_LABEL;
    serde_json::json!({
        "expression": format!(
            "request.operation != 'UPDATE' || ((('{l}' in variables.newLabels) == ('{l}' in variables.oldLabels)) && \
             (!('{l}' in variables.newLabels) || variables.newLabels['{l}'] == variables.oldLabels['{l}']))"
        ),
        "message": format!("paddock: the {l} label records the cluster a namespace was placed on; it cannot be changed, added or removed (a namespace does not move between clusters)")
    })
}

/// Where a request of a spanning tenant goes, decided from its method and path alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpanTarget<'a> {
    /// Inside namespace `.0` (or the namespace object `.0` itself): its cluster.
    Namespace(&'a str),
    /// `POST /api/v1/namespaces`: placed first, then created on its cluster.
    CreateNamespace,
    /// `GET /api/v1/namespaces` (list or watch): merged from every cluster.
    ListNamespaces,
    /// Anything else without a namespace (cluster-scoped kinds, discovery, `-A` reads): the
    /// gateway decides by kind.
    ClusterWide,
}

/// Classifies a request path (`/api/v1/namespaces/<ns>/...`,
/// `/apis/<group>/<version>/namespaces/<ns>/...`).
pub fn span_target<'a>(method: &str, path: &'a str) -> SpanTarget<'a> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segs.as_slice() {
        ["api", _v, rest @ ..] => rest,
        ["apis", _g, _v, rest @ ..] => rest,
        _ => return SpanTarget::ClusterWide,
    };
    let core = segs[0] == "api";
    match rest {
        ["namespaces", ns, ..] if !ns.is_empty() => SpanTarget::Namespace(ns),
        ["namespaces"] if core && method == "POST" => SpanTarget::CreateNamespace,
        ["namespaces"] if core && method == "GET" => SpanTarget::ListNamespaces,
        _ => SpanTarget::ClusterWide,
    }
}

/// Whether a CRD (as upstream answers it) is established: its resources are served.
pub fn crd_established(crd: &Value) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True")
}

/// Why a namespace cannot be placed (a 400 `Status`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpanError {
    #[error(
        "label {CLUSTER_LABEL}={0:?} does not name a cluster of this tenant (its clusters: {1})"
    )]
    NotTenantCluster(String, String),
    #[error("label {CLUSTER_LABEL} must be a string")]
    NotAString,
}

/// The label the tenant set on a namespace it creates (`metadata.labels`), checked to be a
/// string.
pub fn requested_cluster(namespace: &Value) -> Result<Option<&str>, SpanError> {
    match namespace
        .pointer("/metadata/labels")
        .and_then(|l| l.get(CLUSTER_LABEL))
    {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(SpanError::NotAString),
    }
}

/// The cluster a new namespace is placed on: the one its label names (which must be one of
/// the tenant's), else among the tenant's clusters that can take it (`available`, in the
/// tenant's order, the home first) the one holding fewest of the tenant's namespaces (ties:
/// the first in the tenant's order). `None`: no cluster of the tenant is available.
pub fn place_namespace(
    requested: Option<&str>,
    tenant_clusters: &[&str],
    available: &[(&str, usize)],
) -> Result<Option<String>, SpanError> {
    if let Some(want) = requested {
        if !tenant_clusters.contains(&want) {
            return Err(SpanError::NotTenantCluster(
                want.to_string(),
                tenant_clusters.join(", "),
            ));
        }
        return Ok(Some(want.to_string()));
    }
    let best = tenant_clusters
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            available
                .iter()
                .find(|(n, _)| n == c)
                .map(|(_, count)| (*count, i, *c))
        })
        .min();
    Ok(best.map(|(_, _, c)| c.to_string()))
}

/// Cluster-scoped kinds every cluster of a spanning tenant carries its own copy of (written
/// to all, home first; read from the home): the kind table's `replicated` rows, which
/// `span_resync` also keeps the same.
pub fn replicated_kind(group: &str, resource: &str) -> bool {
    kinds::find(group, resource).is_some_and(|k| k.replicated)
}

/// Whether a request is a get of one object of a shared read-only kind by name
/// (`GET /api/v1/nodes/<name>`, `GET /apis/storage.k8s.io/<v>/storageclasses/<name>`): for a
/// spanning tenant it is answered by the first of its clusters (home first) that has it, as
/// its list shows the object whichever cluster it is on.
pub fn shared_object_get(method: &str, path: &str) -> bool {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    method == "GET"
        && match segs.as_slice() {
            ["api", "v1", resource, name] => merged_shared_kind("", resource) && !name.is_empty(),
            ["apis", group, _version, resource, name] => {
                merged_shared_kind(group, resource) && !name.is_empty()
            }
            _ => false,
        }
}

/// Shared read-only kinds a spanning tenant sees merged from all its clusters.
pub fn merged_shared_kind(group: &str, resource: &str) -> bool {
    kinds::find(group, resource).is_some_and(|k| k.merged_when_spanning)
}

/// Prefix of a merged list's resourceVersion (a vector of the clusters' own).
const VERSIONS_PREFIX: &str = "span.";

/// A merged list's resourceVersion: each cluster's resourceVersion, which cannot be compared
/// with another cluster's, in one opaque string (`span.` and the hex of a JSON map). Clients
/// treat resourceVersions as opaque; paddock decodes it when the client watches from it.
pub fn encode_versions(versions: &std::collections::BTreeMap<String, String>) -> String {
    let json = serde_json::to_vec(versions).unwrap_or_default();
    format!("{VERSIONS_PREFIX}{}", hex::encode(json))
}

/// The clusters' resourceVersions in a merged list's resourceVersion; `None` if it is not one.
pub fn decode_versions(rv: &str) -> Option<std::collections::BTreeMap<String, String>> {
    let raw = hex::decode(rv.strip_prefix(VERSIONS_PREFIX)?).ok()?;
    serde_json::from_slice(&raw).ok()
}

/// What a merged read across clusters starts from, by the client's `resourceVersion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergedFrom {
    /// None, or `0` (any): each cluster as it is.
    Any,
    /// A merged list's vector: each cluster from its own.
    Versions(std::collections::BTreeMap<String, String>),
    /// One cluster's resourceVersion (an object's, or from elsewhere): it orders nothing on
    /// the other clusters, so the read is refused as expired (410) and the client lists again.
    Foreign,
}

/// Reads the client's `resourceVersion` of a merged read.
pub fn merged_from(rv: Option<&str>) -> MergedFrom {
    match rv {
        None | Some("") | Some("0") => MergedFrom::Any,
        Some(v) => decode_versions(v).map_or(MergedFrom::Foreign, MergedFrom::Versions),
    }
}

/// One repair of a replicated kind on a cluster that is not the tenant's home.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncStep {
    /// Create or update it to the home's content (server-side apply of this object).
    Apply(String, Value),
    /// On this cluster only: remove it.
    Delete(String),
}

/// What a replicated object is, for comparing clusters: everything but its status and the
/// metadata a cluster assigns (uid, resourceVersion, timestamps, managed fields).
fn replicated_content(obj: &Value, api_version: &str, kind: &str) -> Value {
    let mut out = obj.clone();
    if let Some(m) = out.as_object_mut() {
        m.remove("status");
        m.insert("apiVersion".into(), Value::String(api_version.into()));
        m.insert("kind".into(), Value::String(kind.into()));
        if let Some(meta) = m.get("metadata").and_then(Value::as_object) {
            let kept: serde_json::Map<String, Value> = meta
                .iter()
                .filter(|(k, _)| matches!(k.as_str(), "name" | "labels" | "annotations"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            m.insert("metadata".into(), Value::Object(kept));
        }
    }
    out
}

/// The repairs that make `have` (a cluster's objects of one replicated kind of the tenant)
/// equal to `want` (the home's): missing or different ones applied, extra ones deleted.
pub fn sync_steps(api_version: &str, kind: &str, want: &[Value], have: &[Value]) -> Vec<SyncStep> {
    let name = |o: &Value| {
        o.pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let theirs: std::collections::BTreeMap<String, Value> = have
        .iter()
        .filter_map(|o| Some((name(o)?, replicated_content(o, api_version, kind))))
        .collect();
    let mut steps = Vec::new();
    let mut wanted = std::collections::BTreeSet::new();
    for o in want {
        let Some(n) = name(o) else { continue };
        let content = replicated_content(o, api_version, kind);
        if theirs.get(&n) != Some(&content) {
            steps.push(SyncStep::Apply(n.clone(), content));
        }
        wanted.insert(n);
    }
    for n in theirs.keys().filter(|n| !wanted.contains(*n)) {
        steps.push(SyncStep::Delete(n.clone()));
    }
    steps
}

#[cfg(test)]
mod shared_get_tests {
    use super::*;

    #[test]
    fn a_get_of_one_node_or_storage_class_by_name_is_a_shared_object_get() {
        assert!(shared_object_get("GET", "/api/v1/nodes/n1"));
        assert!(shared_object_get(
            "GET",
            "/apis/storage.k8s.io/v1/storageclasses/fast"
        ));
        assert!(!shared_object_get("GET", "/api/v1/nodes"));
        assert!(!shared_object_get("GET", "/api/v1/nodes/n1/proxy"));
        assert!(!shared_object_get("PUT", "/api/v1/nodes/n1"));
        assert!(!shared_object_get("GET", "/api/v1/namespaces/web"));
        assert!(!shared_object_get(
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/x"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_crd_is_established_by_its_condition() {
        let crd = |status: &str| {
            json!({"status": {"conditions": [
                {"type": "NamesAccepted", "status": "True"},
                {"type": "Established", "status": status}]}})
        };
        assert!(crd_established(&crd("True")));
        assert!(!crd_established(&crd("False")));
        assert!(!crd_established(&json!({"status": {}})));
        assert!(!crd_established(&json!({"kind": "Status", "code": 404})));
    }

    #[test]
    fn targets() {
        use SpanTarget::*;
        assert_eq!(
            span_target("GET", "/api/v1/namespaces/web/pods"),
            Namespace("web")
        );
        assert_eq!(
            span_target("DELETE", "/api/v1/namespaces/web"),
            Namespace("web")
        );
        assert_eq!(
            span_target("GET", "/apis/apps/v1/namespaces/db/deployments/x"),
            Namespace("db")
        );
        assert_eq!(span_target("POST", "/api/v1/namespaces"), CreateNamespace);
        assert_eq!(span_target("GET", "/api/v1/namespaces"), ListNamespaces);
        assert_eq!(span_target("GET", "/api/v1/pods"), ClusterWide);
        assert_eq!(span_target("GET", "/api/v1/nodes"), ClusterWide);
        assert_eq!(span_target("GET", "/apis/apps/v1"), ClusterWide);
        assert_eq!(span_target("GET", "/version"), ClusterWide);
        assert_eq!(span_target("GET", "/api"), ClusterWide);
        // Only the core group has namespace objects.
        assert_eq!(span_target("POST", "/apis/x.io/v1/namespaces"), ClusterWide);
    }

    #[test]
    fn the_label_names_one_of_the_tenants_clusters() {
        let ns = json!({"metadata": {"name": "web", "labels": {CLUSTER_LABEL: "east"}}});
        assert_eq!(requested_cluster(&ns), Ok(Some("east")));
        assert_eq!(requested_cluster(&json!({"metadata": {}})), Ok(None));
        let bad = json!({"metadata": {"labels": {CLUSTER_LABEL: 3}}});
        assert_eq!(requested_cluster(&bad), Err(SpanError::NotAString));
        let mine = ["default", "east"];
        let all = [("default", 0), ("east", 0)];
        assert_eq!(
            place_namespace(Some("east"), &mine, &all),
            Ok(Some("east".into()))
        );
        let err = place_namespace(Some("west"), &mine, &all).unwrap_err();
        assert_eq!(
            err.to_string(),
            "label paddock.io/cluster=\"west\" does not name a cluster of this tenant (its clusters: default, east)"
        );
    }

    #[test]
    fn unlabelled_namespaces_go_to_the_emptiest_available_cluster() {
        let mine = ["default", "east"];
        assert_eq!(
            place_namespace(None, &mine, &[("default", 2), ("east", 1)]),
            Ok(Some("east".into()))
        );
        // Ties: the home (first) wins.
        assert_eq!(
            place_namespace(None, &mine, &[("east", 1), ("default", 1)]),
            Ok(Some("default".into()))
        );
        // A cluster down is not available; another tenant's cluster never counts.
        assert_eq!(
            place_namespace(None, &mine, &[("east", 5), ("west", 0)]),
            Ok(Some("east".into()))
        );
        assert_eq!(place_namespace(None, &mine, &[("west", 0)]), Ok(None));
    }

    #[test]
    fn merged_resource_versions_round_trip() {
        let v: std::collections::BTreeMap<String, String> = [
            ("default".to_string(), "120".to_string()),
            ("east".to_string(), "7".to_string()),
        ]
        .into();
        let rv = encode_versions(&v);
        assert!(rv.starts_with("span."));
        assert_eq!(merged_from(Some(&rv)), MergedFrom::Versions(v));
        assert_eq!(merged_from(None), MergedFrom::Any);
        assert_eq!(merged_from(Some("0")), MergedFrom::Any);
        assert_eq!(merged_from(Some("4711")), MergedFrom::Foreign);
        assert_eq!(merged_from(Some("span.zz")), MergedFrom::Foreign);
    }

    #[test]
    fn resync_applies_missing_and_changed_and_deletes_extra() {
        let obj = |n: &str, verb: &str, rv: &str| {
            json!({"metadata": {"name": n, "uid": rv, "resourceVersion": rv, "labels": {"a": "b"}},
                   "rules": [{"verbs": [verb]}]})
        };
        let want = [
            obj("same", "get", "1"),
            obj("changed", "list", "2"),
            obj("missing", "get", "3"),
        ];
        let have = [
            obj("same", "get", "9"),
            obj("changed", "get", "8"),
            obj("extra", "get", "7"),
        ];
        let steps = sync_steps("rbac.authorization.k8s.io/v1", "ClusterRole", &want, &have);
        let names: Vec<String> = steps
            .iter()
            .map(|s| match s {
                SyncStep::Apply(n, _) => format!("apply {n}"),
                SyncStep::Delete(n) => format!("delete {n}"),
            })
            .collect();
        assert_eq!(names, ["apply changed", "apply missing", "delete extra"]);
        let SyncStep::Apply(_, body) = &steps[0] else {
            panic!("{steps:?}")
        };
        assert_eq!(body["kind"], "ClusterRole");
        assert!(body["metadata"].get("uid").is_none(), "{body}");
        assert!(sync_steps("v1", "X", &want, &want).is_empty());
    }

    #[test]
    fn kinds() {
        assert!(replicated_kind(
            "apiextensions.k8s.io",
            "customresourcedefinitions"
        ));
        assert!(replicated_kind(
            "rbac.authorization.k8s.io",
            "clusterrolebindings"
        ));
        assert!(!replicated_kind(
            "rbac.authorization.k8s.io",
            "rolebindings"
        ));
        assert!(merged_shared_kind("", "nodes"));
        assert!(!merged_shared_kind("", "pods"));
    }
}
