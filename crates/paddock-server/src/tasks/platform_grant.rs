//! Platform grants upstream and in the catalog (paddock_core::catalog::platform_grant decides): each
//! tenant's grant ClusterRole and binding are put in place when its policy changes and at
//! start-up, and removed when nothing is granted; the catalog learns every tenant's grants
//! whenever the store's tenants change.

use std::collections::BTreeSet;

use paddock_core::TenantId;
use paddock_core::admission::TenantPolicy;
use paddock_core::catalog::platform_grant::{
    Grants, grant_binding, grant_role, grant_role_name, granted,
};

use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;
use paddock_upstream::upstream::Upstream;

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

/// Every tenant's grants, from the policies in the store cache (or the configured default).
pub fn grants_of(state: &AppState) -> Grants {
    state
        .cache
        .tenants()
        .iter()
        .filter_map(|t| {
            let p = t.policy.as_ref().unwrap_or(&state.config.default_policy);
            let g = granted(&p.platform_kinds);
            (!g.is_empty()).then(|| (t.id.as_str().to_owned(), g))
        })
        .collect()
}

/// Tells the catalog every tenant's grants (after the store's tenants changed).
pub fn refresh_catalog(state: &AppState) {
    state.catalogs.set_platform_grants(grants_of(state));
}

/// [`refresh_catalog`] with tenant `t`'s policy just written (the store cache may not show
/// it yet): the grant is usable as soon as the admin API answers.
pub fn refresh_catalog_with(state: &AppState, t: &TenantId, policy: &TenantPolicy) {
    let mut grants = grants_of(state);
    let g = granted(&policy.platform_kinds);
    if g.is_empty() {
        grants.remove(t.as_str());
    } else {
        grants.insert(t.as_str().to_owned(), g);
    }
    state.catalogs.set_platform_grants(grants);
}

/// At start-up: every tenant of this replica's cluster whose grant role is not what its
/// policy asks for is put in step. One LIST of paddock's per-tenant ClusterRoles decides; a
/// tenant granting nothing that has no role costs nothing (a DELETE of each tenant's role and
/// binding at every start was two thousand requests at a thousand tenants).
pub async fn sync_all(state: &AppState) {
    let listed = match upjson::list(
        &state.upstream,
        &format!(
            "{RBAC}/clusterroles?labelSelector={}",
            paddock_core::tenant::MANAGED_FOR_LABEL
        ),
    )
    .await
    {
        Ok(items) => items,
        Err(e) => {
            tracing::warn!(error = %e, "could not list the tenants' grant roles; grants not checked at start");
            return;
        }
    };
    let present: BTreeSet<&str> = listed
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    for t in state.cache.tenants() {
        if !state.reconciler.owns(&t) || !t.phase.is_live() {
            continue;
        }
        let policy = t.policy.as_ref().unwrap_or(&state.config.default_policy);
        let grants = !granted(&policy.platform_kinds).is_empty();
        if !grants && !present.contains(grant_role_name(&t.id).as_str()) {
            continue;
        }
        if let Err(e) = sync(&state.upstream, &t.id, policy).await {
            tracing::warn!(tenant = %t.id, error = %e, "could not put the tenant's platform grants in place");
        }
    }
}

/// Puts tenant `t`'s grant role and binding in step with `policy` upstream.
pub async fn sync(up: &Upstream, t: &TenantId, policy: &TenantPolicy) -> Result<(), ServerError> {
    let kinds: BTreeSet<(String, String)> = granted(&policy.platform_kinds);
    let name = grant_role_name(t);
    match grant_role(t, &kinds) {
        Some(role) => {
            upjson::apply(up, &format!("{RBAC}/clusterroles/{name}"), &role).await?;
            upjson::apply(
                up,
                &format!("{RBAC}/clusterrolebindings/{name}"),
                &grant_binding(t),
            )
            .await
        }
        None => {
            upjson::delete(up, &format!("{RBAC}/clusterrolebindings/{name}")).await?;
            upjson::delete(up, &format!("{RBAC}/clusterroles/{name}")).await
        }
    }
}
