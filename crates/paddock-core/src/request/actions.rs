//! What a plan makes the server do besides forwarding: the upstream identity a request is
//! sent as, and whether a successful write changes what the RBAC sync derives.

use serde_json::Value;

use crate::catalog::Scope;
use crate::identity::As;
use crate::request::plan::Plan;

/// Does this request go upstream as the shadow identity? Cluster-scoped objects (not the
/// review kinds) and self access reviews of cluster-wide attributes do; a path that addresses
/// anything inside a namespace never does (defence in depth against a planning bug).
pub fn identity_for(plan: &Plan, translated_body: Option<&[u8]>) -> As {
    let Some(info) = &plan.resource else {
        return As::Real;
    };
    let path = plan.upstream_path_and_query.split('?').next().unwrap_or("");
    let in_namespace = match path.strip_prefix("/api/v1/namespaces/") {
        // `/api/v1/namespaces/<ns>[/status|/finalize]` is the namespace object itself.
        Some(rest) => {
            !(info.group.is_empty()
                && info.resource == "namespaces"
                && rest.split('/').count() <= 2)
        }
        None => path.contains("/namespaces/"),
    };
    if in_namespace {
        return As::Real;
    }
    if info.is_review() {
        if info.upstream_group == "authorization.k8s.io"
            && info.resource == "selfsubjectaccessreviews"
        {
            let body: Value = translated_body
                .and_then(|b| serde_json::from_slice(b).ok())
                .unwrap_or(Value::Null);
            let spec = &body["spec"];
            let cluster_wide = spec
                .get("nonResourceAttributes")
                .is_some_and(|v| !v.is_null())
                || spec["resourceAttributes"].is_object()
                    && spec["resourceAttributes"]["namespace"]
                        .as_str()
                        .unwrap_or("")
                        .is_empty();
            if cluster_wide {
                return As::Shadow;
            }
        }
        // A SubjectAccessReview is cluster-scoped: only the shadow of an admin (or of a holder
        // of a tenant ClusterRoleBinding granting it) may create one.
        if info.upstream_group == "authorization.k8s.io" && info.resource == "subjectaccessreviews"
        {
            return As::Shadow;
        }
        return As::Real;
    }
    if info.scope == Scope::Cluster {
        As::Shadow
    } else {
        As::Real
    }
}

/// Does a successful request change what [`sync_tenant`] derives (a ClusterRoleBinding or a
/// CRD written)?
pub fn needs_sync(plan: &Plan) -> bool {
    use crate::request::parse::Verb;
    let Some(info) = &plan.resource else {
        return false;
    };
    let write = !matches!(
        plan.request.verb,
        Verb::Get | Verb::List | Verb::Watch | Verb::Connect
    );
    write
        && ((info.upstream_group == "rbac.authorization.k8s.io"
            && info.resource == "clusterrolebindings")
            || info.is_crd())
}
