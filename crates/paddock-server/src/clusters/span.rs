//! Tenants spanning several clusters (docs/clusters.md "Spanning tenants"): each namespace
//! lives on one of the tenant's clusters, chosen when it is created (label
//! `paddock.io/cluster`, else the cluster holding fewest of its namespaces) and recorded in
//! the store's namespace map before the upstream create. Routing by namespace is a read of
//! this replica's copy of that map (the store is read on a miss); a namespace with no entry
//! is the home cluster's (where it is then absent, or was created without a readable body).
//! The pure decisions are `paddock_core::clusters::span`.

use std::sync::{Arc, Weak};

use crate::body::ReqBody;
use bytes::Bytes;
use http::{Request, StatusCode};
use paddock_core::TenantId;
use paddock_core::clusters::cluster::DEFAULT_CLUSTER;
use paddock_core::clusters::span::{CLUSTER_LABEL, SpanTarget, place_namespace, requested_cluster};
use serde_json::Value;

use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// The body of a namespace create, read by the router to place the namespace; the body
/// translation takes it in place of the request's (then drained) body.
#[derive(Clone)]
pub struct PreRead(pub Bytes);

/// The tenant's clusters if it spans more than one (home first).
pub fn spanning_clusters(main: &AppState, tenant: &TenantId) -> Option<Vec<String>> {
    let rec = main.cache.tenant(tenant.as_str())?;
    (rec.clusters.len() > 1).then(|| rec.clusters.clone())
}

/// The default cluster's state, reachable from any cluster's state (the registry is shared).
fn default_state(any: &Arc<AppState>) -> Option<Arc<AppState>> {
    any.clusters.main.get().and_then(Weak::upgrade)
}

/// The state of cluster `name` for a request of `tenant`: a 503 naming the cluster when this
/// replica does not know it or it does not answer.
pub fn state_of(
    any: &Arc<AppState>,
    tenant: &TenantId,
    name: &str,
) -> Result<Arc<AppState>, ServerError> {
    let state = if name == DEFAULT_CLUSTER {
        default_state(any).ok_or_else(|| {
            ServerError::Internal("the default cluster's state is not registered".into())
        })?
    } else {
        any.clusters
            .member(name)
            .map(|m| m.state.clone())
            .ok_or_else(|| {
                ServerError::Unavailable(format!(
                    "cluster {name:?} of tenant {tenant} is not registered on this paddock replica"
                ))
            })?
    };
    if !state.health.is_healthy() {
        return Err(ServerError::Unavailable(format!(
            "cluster {name:?} of tenant {tenant} cannot be reached; try again later"
        )));
    }
    Ok(state)
}

/// Every cluster of a spanning tenant with its state, home first; the first one that cannot
/// be reached is the error (a merged answer is never partial).
pub fn all_states(
    any: &Arc<AppState>,
    tenant: &TenantId,
    clusters: &[String],
) -> Result<Vec<(String, Arc<AppState>)>, ServerError> {
    clusters
        .iter()
        .map(|c| state_of(any, tenant, c).map(|s| (c.clone(), s)))
        .collect()
}

/// The cluster namespace `ns` of `tenant` lives on, if placed (this replica's copy, then the
/// store: a namespace placed through another replica in the last seconds).
pub async fn namespace_cluster(
    main: &AppState,
    tenant: &TenantId,
    ns: &str,
) -> Result<Option<String>, ServerError> {
    let map = &main.clusters.namespaces;
    if let Some(c) = map.get(tenant.as_str(), ns) {
        return Ok(Some(c));
    }
    let found = match main.store.namespace_cluster(tenant.as_str(), ns).await {
        Ok(found) => found,
        // Not a namespace name: not placed (the request is answered as for any bad name).
        Err(paddock_store::StoreError::Invalid(_)) => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(c) = &found {
        map.insert(tenant.as_str(), ns, c);
    }
    Ok(found)
}

/// What to do once the request is answered.
pub enum After {
    Nothing,
    /// A namespace placed for this create: forgotten again if the create did not happen.
    Placed {
        ns: String,
        dry_run: bool,
    },
    /// A namespace deleted: forgotten once upstream accepted the deletion.
    Deleted {
        ns: String,
    },
}

impl After {
    /// Keeps the namespace map in line with the answer.
    pub async fn answered(self, main: &AppState, tenant: &TenantId, status: StatusCode) {
        let ns = match self {
            After::Nothing => return,
            // A 409 is another create of the same namespace that won: its placement stays.
            After::Placed { ns, dry_run }
                if dry_run || !(status.is_success() || status == StatusCode::CONFLICT) =>
            {
                ns
            }
            After::Deleted { ns } if status.is_success() => ns,
            _ => return,
        };
        main.clusters.namespaces.remove(tenant.as_str(), &ns);
        if let Err(e) = main.store.release_namespace(tenant.as_str(), &ns).await {
            tracing::warn!(%tenant, namespace = ns, error = %e, "forgetting a namespace's cluster failed");
        }
    }
}

/// The state a spanning tenant's request is served with, and what to do after it.
pub async fn route(
    main: &Arc<AppState>,
    tenant: &TenantId,
    clusters: &[String],
    req: &mut Request<ReqBody>,
) -> Result<(Arc<AppState>, After), ServerError> {
    let home = clusters
        .first()
        .map(String::as_str)
        .unwrap_or(DEFAULT_CLUSTER);
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    match paddock_core::clusters::span::span_target(&method, &path) {
        SpanTarget::Namespace(ns) => {
            let after = if method == "DELETE" && is_namespace_object(&path, ns) {
                After::Deleted { ns: ns.to_string() }
            } else {
                After::Nothing
            };
            let cluster = namespace_cluster(main, tenant, ns).await?;
            let state = state_of(main, tenant, cluster.as_deref().unwrap_or(home))?;
            Ok((state, after))
        }
        SpanTarget::CreateNamespace => create_namespace(main, tenant, clusters, req).await,
        SpanTarget::ClusterWide
            if paddock_core::clusters::span::shared_object_get(&method, &path) =>
        {
            Ok((
                holder_of(main, tenant, clusters, &path).await?,
                After::Nothing,
            ))
        }
        SpanTarget::ListNamespaces | SpanTarget::ClusterWide => {
            Ok((state_of(main, tenant, home)?, After::Nothing))
        }
    }
}

/// The first of the tenant's clusters (home first) holding the shared object at `path` (a
/// node or storage class), asked as paddock; the home when none has it (its 404 answers). A
/// cluster that cannot be reached is a 503 naming it, as for the merged list: never an
/// answer that may be wrong. The tenant's request then goes to that cluster unchanged (its
/// own rights decide there).
async fn holder_of(
    main: &Arc<AppState>,
    tenant: &TenantId,
    clusters: &[String],
    path: &str,
) -> Result<Arc<AppState>, ServerError> {
    let states = all_states(main, tenant, clusters)?;
    for (_, state) in &states {
        let a =
            paddock_upstream::upjson::call(&state.upstream, http::Method::GET, path, None, None)
                .await?;
        if a.status.is_success() {
            return Ok(state.clone());
        }
    }
    states
        .into_iter()
        .next()
        .map(|(_, s)| s)
        .ok_or_else(|| ServerError::Internal(format!("tenant {tenant} names no cluster")))
}

fn is_namespace_object(path: &str, ns: &str) -> bool {
    path.trim_end_matches('/') == format!("/api/v1/namespaces/{ns}")
}

/// Places a new namespace: reads the body (bounded), checks the label, chooses the cluster,
/// records it by compare-and-swap, and stamps the label so the namespace says where it lives.
async fn create_namespace(
    main: &Arc<AppState>,
    tenant: &TenantId,
    clusters: &[String],
    req: &mut Request<ReqBody>,
) -> Result<(Arc<AppState>, After), ServerError> {
    // Read through `&mut`: the (drained) body stays in the request, which goes on down the stack.
    let raw = paddock_upstream::limit::collect_limited(req.body_mut(), main.config.max_body_bytes)
        .await?;
    let home = clusters[0].as_str();
    let json = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|ct| ct.starts_with("application/json"));
    let parsed = NamespaceBody::read(json, &raw);
    let (Some(body), Some(ns)) = (
        parsed.as_ref(),
        parsed.as_ref().and_then(NamespaceBody::name),
    ) else {
        // Neither JSON nor protobuf with a name: translation answers it (a 400) or it lands
        // on the home cluster, where a namespace without an entry lives.
        req.extensions_mut().insert(PreRead(raw));
        return Ok((state_of(main, tenant, home)?, After::Nothing));
    };
    let bad = |e: paddock_core::clusters::span::SpanError| ServerError::BadRequest(e.to_string());
    let requested = body.requested().map_err(bad)?;
    let names: Vec<&str> = clusters.iter().map(String::as_str).collect();
    let counts = main.clusters.namespaces.counts(tenant.as_str());
    let available: Vec<(&str, usize)> = names
        .iter()
        .filter(|c| state_of(main, tenant, c).is_ok())
        .map(|c| (*c, counts.get(*c).copied().unwrap_or(0)))
        .collect();
    let chosen = place_namespace(requested.as_deref(), &names, &available)
        .map_err(bad)?
        .ok_or_else(|| {
            ServerError::Unavailable(format!(
                "no cluster of tenant {tenant} can be reached ({}); try again later",
                names.join(", ")
            ))
        })?;
    let previous = namespace_cluster(main, tenant, &ns).await?;
    let holder = main
        .store
        .place_namespace(tenant.as_str(), &ns, &chosen)
        .await?;
    main.clusters
        .namespaces
        .insert(tenant.as_str(), &ns, &holder);
    let rewritten = body.stamped(&holder)?;
    req.extensions_mut().insert(PreRead(Bytes::from(rewritten)));
    let dry_run = req.uri().query().is_some_and(|q| q.contains("dryRun="));
    let after = if previous.is_none() {
        After::Placed { ns, dry_run }
    } else {
        // Placed already (it exists, or another create is under way): upstream answers.
        After::Nothing
    };
    Ok((state_of(main, tenant, &holder)?, after))
}

/// A namespace create's body as the router reads it: JSON, or protobuf (what kubectl and
/// client-go send for built-in kinds), so that both are placed alike.
enum NamespaceBody {
    Json(Value),
    Protobuf(Bytes),
}

impl NamespaceBody {
    fn read(json: bool, raw: &Bytes) -> Option<NamespaceBody> {
        if json {
            serde_json::from_slice(raw).ok().map(NamespaceBody::Json)
        } else if paddock_core::wire::protobuf::is_protobuf(raw) {
            Some(NamespaceBody::Protobuf(raw.clone()))
        } else {
            None
        }
    }

    fn name(&self) -> Option<String> {
        match self {
            NamespaceBody::Json(v) => v
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string),
            NamespaceBody::Protobuf(b) => paddock_core::wire::pb_label::protobuf_name(b)
                .ok()
                .flatten(),
        }
    }

    /// The cluster the tenant asked for with the label.
    fn requested(&self) -> Result<Option<String>, paddock_core::clusters::span::SpanError> {
        match self {
            NamespaceBody::Json(v) => Ok(requested_cluster(v)?.map(str::to_string)),
            NamespaceBody::Protobuf(b) => Ok(paddock_core::wire::pb_label::protobuf_label(
                b,
                CLUSTER_LABEL,
            )
            .ok()
            .flatten()),
        }
    }

    /// The body with the label naming the cluster it was placed on.
    fn stamped(&self, cluster: &str) -> Result<Vec<u8>, ServerError> {
        match self {
            NamespaceBody::Json(v) => {
                let mut body = v.clone();
                if let Some(labels) = body
                    .pointer_mut("/metadata")
                    .and_then(Value::as_object_mut)
                    .map(|m| {
                        m.entry("labels")
                            .or_insert_with(|| Value::Object(Default::default()))
                    })
                    .and_then(Value::as_object_mut)
                {
                    labels.insert(CLUSTER_LABEL.into(), Value::String(cluster.to_string()));
                }
                serde_json::to_vec(&body).map_err(|e| ServerError::Internal(e.to_string()))
            }
            NamespaceBody::Protobuf(b) => {
                paddock_core::wire::pb_label::set_protobuf_label(b, CLUSTER_LABEL, cluster)
                    .map_err(|e| ServerError::BadRequest(e.to_string()))
            }
        }
    }
}

/// Whether a planned request of a spanning tenant is a read merged from all its clusters by
/// the fan-out: a list or watch of namespaces or of a shared kind (nodes, storage classes).
/// (`-A` reads of namespaced kinds fan out for every tenant already.)
pub fn merged_read(state: &AppState, tenant: &TenantId, plan: &paddock_core::Plan) -> bool {
    let (Some(info), paddock_core::ApiPath::Resource(rp)) = (&plan.resource, &plan.request.path)
    else {
        return false;
    };
    let kind = (info.group.as_str(), info.resource.as_str());
    rp.name.is_none()
        && rp.namespace.is_none()
        && rp.subresource.is_none()
        && matches!(
            plan.request.verb,
            paddock_core::Verb::List | paddock_core::Verb::Watch
        )
        && (kind == ("", "namespaces")
            || paddock_core::clusters::span::merged_shared_kind(kind.0, kind.1))
        && spanning_clusters(state, tenant).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::nsmap::NamespaceMap;

    #[test]
    fn the_namespace_map_counts_a_tenants_namespaces_per_cluster() {
        let m = NamespaceMap::default();
        m.insert("acme01", "web", "east");
        m.insert("acme01", "db", "east");
        m.insert("acme01", "ops", "default");
        m.insert("other1", "web", "default");
        assert_eq!(m.get("acme01", "web").as_deref(), Some("east"));
        assert_eq!(m.get("other1", "db"), None);
        let counts = m.counts("acme01");
        assert_eq!((counts["east"], counts["default"]), (2, 1));
        m.remove("acme01", "web");
        assert_eq!(m.counts("acme01")["east"], 1);
        m.replace(std::collections::BTreeMap::new());
        assert_eq!(m.get("acme01", "db"), None);
    }

    #[test]
    fn only_the_namespace_object_path_is_its_deletion() {
        assert!(is_namespace_object("/api/v1/namespaces/web", "web"));
        assert!(is_namespace_object("/api/v1/namespaces/web/", "web"));
        assert!(!is_namespace_object("/api/v1/namespaces/web/pods", "web"));
        assert!(!is_namespace_object("/apis/x.io/v1/namespaces/web", "web"));
    }
}
