//! Answers for things that do not exist in the tenant's view, so that a refusal never hides a
//! NotFound.
//!
//! Two cases, both decided here without I/O; the server only supplies the facts it probed:
//!
//! - **A namespace that does not exist.** Upstream, a tenant's rights in a namespace come from
//!   RoleBindings inside it, so every request in a namespace that does not exist is refused
//!   (403), where a cluster admin gets an empty list, `404 namespaces "x" not found` for a
//!   create, and `404 <resource> "<name>" not found` for everything else. When upstream refuses
//!   a request in a namespace, the server checks (with its own credential, and only for the
//!   tenant's own upstream name `<tid>-<ns>`) whether that namespace exists for the tenant, and
//!   whether the caller would hold the right in a namespace of the tenant; if so,
//!   [`absent_namespace_answer`] says what a cluster answers.
//! - **A write to a shared read-only object.** `kubectl delete ingressclass x
//!   --ignore-not-found` must get a NotFound when there is no `x`: [`shared_write_probe`] names
//!   the object to look up, and [`not_found_body`] the answer when it is absent.

use serde_json::{Value, json};

use crate::catalog::context::TenantContext;
use crate::catalog::{Policy, ResourceInfo, Scope};
use crate::request::{ApiPath, ParsedRequest, Plan, ResponseKind, Verb};

/// Longest time a watch in a namespace that does not exist stays open. A cluster keeps such a
/// watch open (it would deliver the events of the namespace once it is created); paddock holds
/// it without events and ends it cleanly after this, so that the client watches again from the
/// resourceVersion it was given, by then in the real namespace if it has been created.
pub const ABSENT_WATCH_MAX_SECONDS: u64 = 60;

/// What a cluster admin gets for a request in a namespace that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AbsentAnswer {
    /// 200 with this JSON body (an empty list or Table): list, deletecollection.
    Ok(Vec<u8>),
    /// A watch that stays open `seconds` without events; `first` (an initial-events-end
    /// bookmark when the client asked for initial events) is sent at once.
    Watch {
        seconds: u64,
        first: Option<Vec<u8>>,
    },
    /// 404 with this `Status` body.
    NotFound(Vec<u8>),
}

/// `<resource>` or `<resource>.<group>`, as Kubernetes names a resource in messages.
fn group_resource(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.resource.clone()
    } else {
        format!("{}.{}", info.resource, info.group)
    }
}

/// The `Status` of a NotFound, shaped as kube-apiserver writes it:
/// `{"message":"<gr> \"<name>\" not found","reason":"NotFound","details":{"name":..,"group":..,"kind":<resource>},"code":404}`.
pub fn not_found_body(group: &str, resource: &str, name: &str) -> Vec<u8> {
    let gr = if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    };
    let mut details = serde_json::Map::new();
    details.insert("name".into(), json!(name));
    if !group.is_empty() {
        details.insert("group".into(), json!(group));
    }
    details.insert("kind".into(), json!(resource));
    let v = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("{gr} \"{name}\" not found"),
        "reason": "NotFound", "details": Value::Object(details), "code": 404
    });
    serde_json::to_vec(&v).unwrap_or_default()
}

fn query_value<'a>(plan: &'a Plan, key: &str) -> Option<&'a str> {
    plan.request
        .query
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// What a cluster answers for `plan` (a request inside a namespace, in the tenant's view)
/// when the namespace does not exist; `resource_version` is the cluster's current one (from
/// the server's probe). None for requests this does not apply to (no namespace in the path,
/// cluster-scoped kinds, the namespace object itself).
pub fn absent_namespace_answer(plan: &Plan, resource_version: &str) -> Option<AbsentAnswer> {
    let info = plan.resource.as_ref()?;
    let ApiPath::Resource(rp) = &plan.request.path else {
        return None;
    };
    let ns = rp.namespace.as_deref()?;
    if info.scope != Scope::Namespaced || plan.cluster_wide {
        return None;
    }
    let verb = plan.request.verb;
    let named =
        |name: &str| AbsentAnswer::NotFound(not_found_body(&info.group, &info.resource, name));
    Some(match (verb, rp.name.as_deref()) {
        // NamespaceLifecycle admission: any create in a namespace that does not exist,
        // subresources (eviction, token) included.
        (Verb::Create, _) => AbsentAnswer::NotFound(not_found_body("", "namespaces", ns)),
        (Verb::List | Verb::DeleteCollection, _) => {
            AbsentAnswer::Ok(empty_list(plan, info, resource_version))
        }
        (Verb::Watch, _) => {
            let asked = query_value(plan, "timeoutSeconds")
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(ABSENT_WATCH_MAX_SECONDS);
            let initial = query_value(plan, "sendInitialEvents")
                .is_some_and(|v| matches!(v, "true" | "1" | "t" | "True"));
            AbsentAnswer::Watch {
                seconds: asked.min(ABSENT_WATCH_MAX_SECONDS),
                first: initial.then(|| initial_events_end(plan, info, resource_version)),
            }
        }
        (_, Some(name)) => named(name),
        // A verb on a collection that is neither of the above does not exist in a cluster.
        (_, None) => return None,
    })
}

fn api_version(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.version.clone()
    } else {
        format!("{}/{}", info.group, info.version)
    }
}

fn empty_list(plan: &Plan, info: &ResourceInfo, rv: &str) -> Vec<u8> {
    let v = if matches!(plan.response, ResponseKind::Table) {
        // kubectl prints "No resources found in <ns> namespace." for a Table without rows.
        json!({
            "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv},
            "columnDefinitions": [{"name": "Name", "type": "string", "format": "name",
                                   "description": "Name must be unique within a namespace.", "priority": 0}],
            "rows": []
        })
    } else {
        json!({"kind": format!("{}List", info.kind), "apiVersion": api_version(info),
               "metadata": {"resourceVersion": rv}, "items": []})
    };
    serde_json::to_vec(&v).unwrap_or_default()
}

/// The bookmark a watch with `sendInitialEvents=true` gets once the (here: no) initial
/// events are sent.
fn initial_events_end(plan: &Plan, info: &ResourceInfo, rv: &str) -> Vec<u8> {
    let object = if matches!(plan.response, ResponseKind::TableWatch) {
        json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1",
               "metadata": {"resourceVersion": rv, "annotations": {"k8s.io/initial-events-end": "true"}},
               "columnDefinitions": [], "rows": []})
    } else {
        json!({"kind": info.kind, "apiVersion": api_version(info),
               "metadata": {"resourceVersion": rv, "annotations": {"k8s.io/initial-events-end": "true"}}})
    };
    let mut out =
        serde_json::to_vec(&json!({"type": "BOOKMARK", "object": object})).unwrap_or_default();
    out.push(b'\n');
    out
}

/// A write the planner refuses because its kind is shared read-only, addressed to one named
/// object: the server looks the object up (`upstream_path`, a GET) and, when it does not
/// exist, answers `not_found` instead of the refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedWriteProbe {
    pub upstream_path: String,
    pub not_found: Vec<u8>,
}

/// See [`SharedWriteProbe`]. None unless `req` is an update, patch, delete or subresource
/// write of one named object of a SharedReadOnly kind (creates are refused as they are: there
/// is nothing to be missing).
pub fn shared_write_probe(ctx: &TenantContext, req: &ParsedRequest) -> Option<SharedWriteProbe> {
    let ApiPath::Resource(rp) = &req.path else {
        return None;
    };
    let name = rp.name.as_deref()?;
    if !matches!(
        req.verb,
        Verb::Update | Verb::Patch | Verb::Delete | Verb::Create
    ) || (req.verb == Verb::Create && rp.subresource.is_none())
    {
        return None;
    }
    let info = ctx
        .catalog
        .resolve(&ctx.tenant, &rp.group, &rp.version, &rp.resource)?;
    if info.policy != Policy::SharedReadOnly || info.scope != Scope::Cluster {
        return None;
    }
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return None;
    }
    let base = if info.upstream_group.is_empty() {
        format!("/api/{}", info.version)
    } else {
        format!("/apis/{}/{}", info.upstream_group, info.version)
    };
    // The name upstream (an APIService's group part mapped): never another tenant's object,
    // whose existence the probe's answer would tell.
    let upstream = crate::rules::apiservice::object_name_up(ctx, &info, name);
    let upstream_name = upstream.as_deref().unwrap_or(name);
    let enc =
        percent_encoding::utf8_percent_encode(upstream_name, percent_encoding::NON_ALPHANUMERIC);
    Some(SharedWriteProbe {
        upstream_path: format!("{base}/{}/{enc}", info.resource),
        not_found: not_found_body(&info.group, &info.resource, name),
    })
}

/// Does a refusal of this plan come from rights held per namespace (so that a namespace that
/// does not exist explains it)? A namespaced kind, inside one namespace, not cluster-wide.
pub fn refusal_may_mean_absent_namespace(plan: &Plan) -> bool {
    plan.resource
        .as_ref()
        .is_some_and(|i| i.scope == Scope::Namespaced && i.policy == Policy::TenantOwned)
        && plan.namespace().is_some()
        && !plan.cluster_wide
}

/// `group_resource` for messages, exported for the server's logs.
pub fn display_resource(info: &ResourceInfo) -> String {
    group_resource(info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{parse_request, plan};
    use crate::tenant::TenantId;
    use std::sync::Arc;

    fn ctx() -> TenantContext {
        TenantContext {
            tenant: TenantId::parse("foofoo").unwrap(),
            catalog: Arc::new(crate::catalog::tests::catalog()),
        }
    }

    fn answer(method: &str, path: &str, q: Option<&str>) -> Option<AbsentAnswer> {
        let c = ctx();
        let mut p = plan(&c, parse_request(method, path, q).unwrap()).unwrap();
        p.response = crate::request::response_kind_for(&p, Some("application/json"));
        absent_namespace_answer(&p, "42")
    }

    fn body(a: Option<AbsentAnswer>) -> (u16, Value) {
        match a.unwrap() {
            AbsentAnswer::Ok(b) => (200, serde_json::from_slice(&b).unwrap()),
            AbsentAnswer::NotFound(b) => (404, serde_json::from_slice(&b).unwrap()),
            AbsentAnswer::Watch { .. } => (0, Value::Null),
        }
    }

    #[test]
    fn absent_namespace_answers_like_a_cluster() {
        let (code, v) = body(answer("GET", "/api/v1/namespaces/x/configmaps", None));
        assert_eq!(code, 200);
        assert_eq!(
            v,
            json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "42"}, "items": []})
        );
        let (code, v) = body(answer("POST", "/api/v1/namespaces/x/configmaps", None));
        assert_eq!(code, 404);
        assert_eq!(v["message"], "namespaces \"x\" not found");
        assert_eq!(v["details"], json!({"name": "x", "kind": "namespaces"}));
        for (m, p) in [
            ("GET", "/apis/apps/v1/namespaces/x/deployments/web"),
            ("PUT", "/apis/apps/v1/namespaces/x/deployments/web"),
            ("PATCH", "/apis/apps/v1/namespaces/x/deployments/web"),
            ("DELETE", "/apis/apps/v1/namespaces/x/deployments/web"),
            ("GET", "/apis/apps/v1/namespaces/x/deployments/web/status"),
        ] {
            let (code, v) = body(answer(m, p, None));
            assert_eq!(code, 404, "{m} {p}");
            assert_eq!(v["message"], "deployments.apps \"web\" not found");
            assert_eq!(
                v["details"],
                json!({"name": "web", "group": "apps", "kind": "deployments"})
            );
        }
        // A subresource create is a create in the namespace.
        let (code, v) = body(answer(
            "POST",
            "/api/v1/namespaces/x/serviceaccounts/ci/token",
            None,
        ));
        assert_eq!(
            (code, v["message"].as_str()),
            (404, Some("namespaces \"x\" not found"))
        );
        let (code, v) = body(answer("DELETE", "/api/v1/namespaces/x/configmaps", None));
        assert_eq!((code, v["items"].clone()), (200, json!([])));
        // Tables (kubectl get): no rows.
        let c = ctx();
        let mut p = plan(
            &c,
            parse_request("GET", "/api/v1/namespaces/x/pods", None).unwrap(),
        )
        .unwrap();
        p.response = crate::request::response_kind_for(
            &p,
            Some("application/json;as=Table;v=v1;g=meta.k8s.io"),
        );
        let Some(AbsentAnswer::Ok(b)) = absent_namespace_answer(&p, "7") else {
            panic!("table")
        };
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(
            (v["kind"].as_str(), v["rows"].clone()),
            (Some("Table"), json!([]))
        );
    }

    #[test]
    fn absent_namespace_watches_stay_open_briefly() {
        let a = answer(
            "GET",
            "/api/v1/namespaces/x/configmaps",
            Some("watch=1&timeoutSeconds=5"),
        );
        assert_eq!(
            a,
            Some(AbsentAnswer::Watch {
                seconds: 5,
                first: None
            })
        );
        let Some(AbsentAnswer::Watch { seconds, first }) = answer(
            "GET",
            "/api/v1/namespaces/x/configmaps",
            Some(
                "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            ),
        ) else {
            panic!("watch")
        };
        assert_eq!(seconds, ABSENT_WATCH_MAX_SECONDS);
        let ev: Value = serde_json::from_slice(first.unwrap().trim_ascii_end()).unwrap();
        assert_eq!(ev["type"], "BOOKMARK");
        assert_eq!(
            ev["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
        assert_eq!(ev["object"]["kind"], "ConfigMap");
    }

    #[test]
    fn absent_namespace_does_not_apply_outside_namespaces() {
        assert!(answer("GET", "/api/v1/namespaces/x", None).is_none());
        assert!(answer("GET", "/api/v1/nodes/n", None).is_none());
        assert!(answer("GET", "/api/v1/configmaps", None).is_none());
        let c = ctx();
        let p = plan(
            &c,
            parse_request("GET", "/api/v1/namespaces/x/configmaps", None).unwrap(),
        )
        .unwrap();
        assert!(refusal_may_mean_absent_namespace(&p));
        let p = plan(
            &c,
            parse_request("GET", "/api/v1/configmaps", None).unwrap(),
        )
        .unwrap();
        assert!(!refusal_may_mean_absent_namespace(&p));
        let p = plan(
            &c,
            parse_request("GET", "/api/v1/namespaces/x", None).unwrap(),
        )
        .unwrap();
        assert!(!refusal_may_mean_absent_namespace(&p));
    }

    #[test]
    fn shared_writes_probe_the_named_object() {
        let c = ctx();
        let req = parse_request(
            "DELETE",
            "/apis/networking.k8s.io/v1/ingressclasses/nginx",
            None,
        )
        .unwrap();
        let p = shared_write_probe(&c, &req).unwrap();
        assert_eq!(
            p.upstream_path,
            "/apis/networking.k8s.io/v1/ingressclasses/nginx"
        );
        let v: Value = serde_json::from_slice(&p.not_found).unwrap();
        assert_eq!(
            v["message"],
            "ingressclasses.networking.k8s.io \"nginx\" not found"
        );
        for (m, path) in [
            ("PATCH", "/api/v1/nodes/kwok-node-0"),
            ("PUT", "/api/v1/nodes/kwok-node-0/status"),
        ] {
            assert!(
                shared_write_probe(&c, &parse_request(m, path, None).unwrap()).is_some(),
                "{m} {path}"
            );
        }
        // Creates of a whole object, collections, tenant-owned and forbidden kinds: no probe.
        for (m, path) in [
            ("POST", "/apis/networking.k8s.io/v1/ingressclasses"),
            ("DELETE", "/apis/networking.k8s.io/v1/ingressclasses"),
            ("DELETE", "/api/v1/namespaces/x"),
            (
                "DELETE",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/x",
            ),
            ("DELETE", "/api/v1/componentstatuses/etcd-0"),
            ("GET", "/apis/networking.k8s.io/v1/ingressclasses/nginx"),
        ] {
            let Ok(req) = parse_request(m, path, None) else {
                continue;
            };
            assert!(shared_write_probe(&c, &req).is_none(), "{m} {path}");
        }
    }
}
