//! The tenant's grant on its own CRD groups upstream (the objects are data in
//! `paddock_core::provision::custom_resources`): a ClusterRole over the groups of its CRDs,
//! bound to its admins' shadow group, only while it has CRDs.
//!
//! No window after a CRD is created (issue 39, docs/security.md "Least privilege upstream"):
//! - what a view shows in step is left alone; anything else is written from a **fresh read**,
//!   the role first (with its resourceVersion), then the tenant's CRDs, and the write is
//!   conditional on the role as read (a create fails if another writer made it, a replacement
//!   or a deletion if another changed it): a writer that lost a race reads again. So two CRDs
//!   created at once both end up in the role, and the leader's resync, which judges from
//!   watch caches, never narrows the role from a cache a new CRD's event has not reached;
//! - the binding is read after the role is written, and after a deletion of the binding the
//!   role is read again: a CRD created while the tenant's last one goes keeps its binding.

use std::collections::BTreeSet;

use http::{Method, StatusCode};
use paddock_core::TenantId;
use paddock_core::provision::custom_resources::{self as cr, RoleWrite};
use paddock_core::provision::resync::Watched;
use paddock_core::provision::tenant_cluster_role_name;
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;
use paddock_upstream::upstream::Upstream;
use serde_json::Value;

/// Rounds of read-then-write before giving up (each lost round means another writer won one).
const ROUNDS: usize = 8;

const ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
const BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";

fn object_path(collection: &str, t: &TenantId) -> String {
    format!(
        "{collection}/{}",
        tenant_cluster_role_name(t).replace(':', "%3A")
    )
}

/// The tenant's role or binding in `collection`, `None` when it does not exist: read by a
/// list of that one name (paddock's rights on both are `list`, not `get`; a list is read from
/// etcd, as a get is).
async fn get(up: &Upstream, collection: &str, t: &TenantId) -> Result<Option<Value>, ServerError> {
    let selector = format!("metadata.name={}", tenant_cluster_role_name(t));
    let items = upjson::list(
        up,
        &format!(
            "{collection}?fieldSelector={}",
            upjson::query_escape(&selector)
        ),
    )
    .await?;
    Ok(items.into_iter().next())
}

/// Brings the grant in step with `groups` (the tenant's CRD groups as `role` and `binding`
/// were seen: fetched, or the resync's caches); when they do not agree, [`converge`].
pub(crate) async fn reconcile(
    up: &Upstream,
    t: &TenantId,
    groups: &BTreeSet<String>,
    role: Option<&Value>,
    binding: Option<&Value>,
) -> Result<(), ServerError> {
    if cr::in_step(t, groups, role, binding) {
        return Ok(());
    }
    converge(up, t).await
}

/// Writes the grant from a fresh read, compare-and-swap (see the module).
pub async fn converge(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    for _ in 0..ROUNDS {
        let role = get(up, ROLES, t).await?;
        let crds = upjson::list(
            up,
            &format!(
                "{}?labelSelector={}",
                Watched::Crds.collection(),
                upjson::query_escape(&Watched::Crds.selector(Some(t)))
            ),
        )
        .await?;
        let groups = cr::crd_groups(t, &crds);
        if !write_role(up, t, role.as_ref(), &groups).await? {
            continue;
        }
        return settle_binding(up, t, !groups.is_empty()).await;
    }
    Err(ServerError::Upstream(format!(
        "the custom-resources role of tenant {t} changed under each of {ROUNDS} writes; the resync tries again"
    )))
}

/// The role's write for `groups`; false when another writer changed the role since it was
/// read (a 409: read again).
async fn write_role(
    up: &Upstream,
    t: &TenantId,
    current: Option<&Value>,
    groups: &BTreeSet<String>,
) -> Result<bool, ServerError> {
    let path = object_path(ROLES, t);
    let a = match cr::role_write(t, current, groups) {
        RoleWrite::Keep => return Ok(true),
        RoleWrite::Create(role) => {
            let p = format!("{ROLES}?fieldManager=paddock");
            upjson::call(up, Method::POST, &p, Some("application/json"), Some(&role)).await?
        }
        RoleWrite::Replace(patch) => {
            let p = format!("{path}?fieldManager=paddock");
            let ct = Some("application/merge-patch+json");
            upjson::call(up, Method::PATCH, &p, ct, Some(&patch)).await?
        }
        RoleWrite::Delete(options) => {
            let a = upjson::call(
                up,
                Method::DELETE,
                &path,
                Some("application/json"),
                Some(&options),
            )
            .await?;
            if a.status == StatusCode::NOT_FOUND {
                return Ok(true);
            }
            a
        }
    };
    match a.status {
        s if s.is_success() => Ok(true),
        StatusCode::CONFLICT => Ok(false),
        s => Err(ServerError::Upstream(format!(
            "writing {path} upstream failed ({s}): {}",
            a.message()
        ))),
    }
}

/// The binding, read after the role's write: there while the role is wanted, gone otherwise
/// (unless a role was made again meanwhile).
async fn settle_binding(up: &Upstream, t: &TenantId, wanted: bool) -> Result<(), ServerError> {
    let path = object_path(BINDINGS, t);
    if !wanted {
        upjson::delete(up, &path).await?;
        // A CRD created while the last one went: its writer may have seen this binding
        // before it was deleted; the role it wrote says so.
        if get(up, ROLES, t).await?.is_none() {
            return Ok(());
        }
    } else if get(up, BINDINGS, t)
        .await?
        .is_some_and(|b| cr::binding_ok(t, &b))
    {
        return Ok(());
    }
    upjson::apply(up, &path, &cr::binding(t)).await
}
