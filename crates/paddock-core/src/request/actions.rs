//! What a plan makes the server do besides forwarding, decided once at planning and carried
//! by the [`Plan`](super::plan::Plan) as data: the pool of upstream connections a request
//! takes ([`Route`]), the upstream identity it carries ([`Identity`]), and the steps before
//! and after sending ([`Actions`]). The server executes them and decides nothing.

use serde_json::Value;

use super::parse::{ParsedRequest, Verb};
use crate::catalog::{ResourceInfo, Scope};
use crate::identity::As;

/// The pool of upstream connections a request goes through (docs/performance.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Small requests: one shared HTTP/2 connection, bounded by `upstream_timeout`.
    Short,
    /// Lists: HTTP/1.1 keep-alive connections of their own.
    Bulk,
    /// Long-running requests other than watches (logs -f, exec, attach, port-forward, proxy).
    Stream,
    /// Watches: HTTP/2 connections of their own, many watches each.
    Watch,
}

impl Route {
    /// The route of a request of `verb`.
    pub fn of(verb: Verb, long_running: bool, upgrade: bool) -> Route {
        if verb == Verb::Watch && !upgrade {
            Route::Watch
        } else if long_running || upgrade {
            Route::Stream
        } else if verb == Verb::List {
            Route::Bulk
        } else {
            Route::Short
        }
    }
}

/// Which upstream identity a request carries, as far as it is known before its body is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// The tenant user's own impersonated identity.
    Real,
    /// The user's cluster shadow (cluster-scoped objects, SubjectAccessReviews).
    Shadow,
    /// A SelfSubjectAccessReview: the shadow when its translated body asks about cluster-wide
    /// attributes, the real identity otherwise.
    SelfAccessReview,
}

impl Identity {
    /// Does this request go upstream as the shadow identity? Cluster-scoped objects (not the
    /// review kinds) and self access reviews of cluster-wide attributes do; a path that
    /// addresses anything inside a namespace never does (defence in depth against a planning
    /// bug).
    pub fn decide(info: Option<&ResourceInfo>, upstream_path_and_query: &str) -> Identity {
        let Some(info) = info else {
            return Identity::Real;
        };
        let path = upstream_path_and_query.split('?').next().unwrap_or("");
        let in_namespace = match path.strip_prefix("/api/v1/namespaces/") {
            // `/api/v1/namespaces/<ns>[/status|/finalize]` is the namespace object itself.
            Some(rest) => !(is_core_namespaces(info) && rest.split('/').count() <= 2),
            None => path.contains("/namespaces/"),
        };
        let authorization = info.upstream_group == "authorization.k8s.io";
        if in_namespace {
            Identity::Real
        } else if info.is_review() {
            match info.resource.as_str() {
                "selfsubjectaccessreviews" if authorization => Identity::SelfAccessReview,
                // A SubjectAccessReview is cluster-scoped: only the shadow of an admin (or of
                // a holder of a tenant ClusterRoleBinding granting it) may create one.
                "subjectaccessreviews" if authorization => Identity::Shadow,
                // A TokenReview likewise: only the shadow holds `create tokenreviews`
                // upstream, so only paddock, which confines the answer, can ask one.
                "tokenreviews" if !authorization => Identity::Shadow,
                _ => Identity::Real,
            }
        } else if info.scope == Scope::Cluster {
            Identity::Shadow
        } else {
            Identity::Real
        }
    }

    /// The identity, once the translated body (of a self access review) is known.
    pub fn resolve(self, translated_body: Option<&[u8]>) -> As {
        match self {
            Identity::Real => As::Real,
            Identity::Shadow => As::Shadow,
            Identity::SelfAccessReview if asks_cluster_wide(translated_body) => As::Shadow,
            Identity::SelfAccessReview => As::Real,
        }
    }
}

/// Does a SelfSubjectAccessReview ask about non-resource or cluster-wide attributes?
fn asks_cluster_wide(translated_body: Option<&[u8]>) -> bool {
    let body: Value = translated_body
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or(Value::Null);
    let spec = &body["spec"];
    spec.get("nonResourceAttributes")
        .is_some_and(|v| !v.is_null())
        || spec["resourceAttributes"].is_object()
            && spec["resourceAttributes"]["namespace"]
                .as_str()
                .unwrap_or("")
                .is_empty()
}

fn is_core_namespaces(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.resource == "namespaces"
}

/// The steps the server runs around forwarding a request, decided at planning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Actions {
    /// A namespaced kind read across all namespaces (`get pods -A`): one request per tenant
    /// namespace, merged (the `fanout` module), instead of one upstream request.
    pub fan_out: bool,
    /// A namespace written whole (create, update): its pod-security label is held at the
    /// level paddock allows before it is sent.
    pub lock_namespace_labels: bool,
    /// A namespace created: counted against the tenant's quota before it is sent.
    pub admit_namespace_quota: bool,
    /// A namespace written (create, update, patch, apply; not a subresource): for a tenant
    /// whose policy allows `privileged` pod security, sent with the tenant's privileged group,
    /// which the admission guard requires of a namespace labelled `privileged`
    /// (crate::admission::podsecurity::privileged_group).
    pub namespace_write: bool,
    /// An access review: the body is normalised for the tenant's cluster before it is sent,
    /// and a successful answer is answered again for the tenant (`reviews`).
    pub self_review: bool,
    /// A successful write changes what the RBAC mirrors derive (a ClusterRoleBinding or a
    /// CRD): the tenant's mirrors are synced before the answer.
    pub sync_rbac: bool,
    /// A namespace that a successful answer may have created (create, or a server-side apply
    /// patch): the tenant admins' RoleBinding and the billing key go in before the answer.
    pub bind_namespace: bool,
}

impl Actions {
    /// The actions of a resource request (`info` resolved, `cluster_wide` from planning).
    pub fn decide(request: &ParsedRequest, info: &ResourceInfo, cluster_wide: bool) -> Actions {
        let verb = request.verb;
        let subresource = match &request.path {
            super::parse::ApiPath::Resource(r) => r.subresource.as_deref(),
            _ => None,
        };
        let namespaces = is_core_namespaces(info);
        let whole_write = matches!(verb, Verb::Create | Verb::Update) && subresource.is_none();
        let write = !matches!(verb, Verb::Get | Verb::List | Verb::Watch | Verb::Connect);
        Actions {
            fan_out: cluster_wide,
            lock_namespace_labels: namespaces && whole_write,
            admit_namespace_quota: namespaces && whole_write && verb == Verb::Create,
            namespace_write: namespaces
                && matches!(verb, Verb::Create | Verb::Update | Verb::Patch)
                && subresource.is_none(),
            self_review: info.upstream_group == "authorization.k8s.io"
                && matches!(
                    info.resource.as_str(),
                    "selfsubjectaccessreviews"
                        | "selfsubjectrulesreviews"
                        | "subjectaccessreviews"
                        | "localsubjectaccessreviews"
                ),
            sync_rbac: write
                && ((info.upstream_group == "rbac.authorization.k8s.io"
                    && info.resource == "clusterrolebindings")
                    || info.is_crd()),
            // Not for a server-side dry run: nothing was created, and setting up the
            // namespace would create it (its RoleBinding and stamps are applied).
            bind_namespace: namespaces
                && !request.query.iter().any(|(k, _)| k == "dryRun")
                && (verb == Verb::Create || (verb == Verb::Patch && subresource.is_none())),
        }
    }
}

#[cfg(test)]
#[path = "actions_tests.rs"]
mod tests;
