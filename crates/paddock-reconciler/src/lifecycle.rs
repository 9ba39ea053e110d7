//! A tenant's life upstream: created (record first, then its objects; rolled back when that
//! fails), repaired, and deleted (everything it owns, its certificates, then its record).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use paddock_core::TenantId;
use paddock_core::fair::share::LimitOverrides;
use paddock_store::{TenantPhase, TenantRecord};
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;
use paddock_upstream::upstream::Upstream;

use crate::provision::{self, ensure_builtin_roles, set_up_namespace};
use crate::{Reconciler, rbac_sync};
use paddock_core::provision::{DEFAULT_NAMESPACES, legacy_tenant_scope_binding_name};

/// Makes sure a tenant namespace has what paddock keeps in it: the admins' RoleBinding, the
/// isolation NetworkPolicy, the quota, the locked pod-security label, and the mirrors of the
/// tenant's ClusterRoleBindings.
pub async fn ensure_namespace_binding(
    up: &Upstream,
    t: &TenantId,
    upstream_ns: &str,
) -> Result<(), ServerError> {
    set_up_namespace(
        up,
        t,
        upstream_ns,
        rbac_sync::sync_namespace(up, t, upstream_ns),
    )
    .await
}

/// [`provision_tenant`] for a tenant that may have been provisioned by an older paddock (at
/// start-up): also removes what this version no longer keeps.
pub async fn repair_tenant(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    // Tenants provisioned before CLUSTER_SCOPE_GROUP had a binding of their own.
    upjson::delete(
        up,
        &format!(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{}",
            legacy_tenant_scope_binding_name(t)
        ),
    )
    .await?;
    provision_tenant(up, t).await
}

/// Creates (or repairs) everything a tenant needs upstream, and brings what derives from its
/// RBAC and CRDs in step (six lists by the tenant's label). Idempotent.
pub async fn provision_tenant(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    provision_fresh_tenant(up, t).await?;
    rbac_sync::sync_tenant(up, t).await
}

/// What a new tenant needs upstream: its default namespaces, their bindings, the `kubernetes`
/// Service and the built-in roles. Enough for a tenant the prefix check has just shown to own
/// nothing upstream (no bindings to mirror, no CRD): [`provision_tenant`]'s RBAC sync would
/// read six lists (each a scan of the apiserver's cache of that kind, so slower as the
/// cluster grows) to find nothing to do, and the watch-driven resync judges the tenant from
/// its caches as soon as its namespaces appear.
async fn provision_fresh_tenant(up: &Upstream, t: &TenantId) -> Result<(), ServerError> {
    // The default namespaces side by side: tenant creation is a chain of upstream round
    // trips, and its latency is what the platform admin waits for (docs/performance.md).
    let namespaces: Vec<String> = DEFAULT_NAMESPACES
        .iter()
        .map(|ns| t.upstream_name(ns))
        .collect();
    futures_util::future::try_join_all(
        namespaces
            .iter()
            .map(|ns| ensure_namespace_binding(up, t, ns)),
    )
    .await?;
    // Every cluster has the `kubernetes` Service in `default`; clients (and the e2e
    // framework) look for it. It is managed: the tenant can read it, not change it. With the
    // in-cluster path (docs/inside.md) its Endpoints and EndpointSlice point at paddock.
    let default_ns = t.upstream_name("default");
    let objects = paddock_core::provision::api_service_objects(
        t,
        &default_ns,
        &provision::in_cluster_endpoints(),
    );
    futures_util::future::try_join_all(
        objects
            .iter()
            .map(|(path, object)| upjson::apply(up, path, object)),
    )
    .await?;
    ensure_builtin_roles(up, t).await
}

/// How long a tenant deletion waits for upstream namespaces to finish terminating.
pub const DELETE_TIMEOUT: Duration = Duration::from_secs(300);

pub fn rfc3339(t: SystemTime) -> String {
    let odt = time::OffsetDateTime::from(t);
    odt.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Creates a tenant: record first (so a store outage refuses before anything exists
/// upstream), then upstream provisioning; a failed provisioning is rolled back.
pub async fn create_tenant(
    state: &Arc<Reconciler>,
    id: &str,
    display_name: String,
    labels: BTreeMap<String, String>,
    limits: Option<LimitOverrides>,
    quota: Option<BTreeMap<String, String>>,
) -> Result<TenantRecord, ServerError> {
    let tid = TenantId::parse(id)
        .map_err(|e| ServerError::BadRequest(format!("invalid tenant id {id:?}: {e}")))?;
    if let Some(existing) = state.store.get_tenant(tid.as_str()).await? {
        if existing.phase == TenantPhase::Terminating {
            return Err(ServerError::Conflict(format!(
                "tenant {tid} is being deleted; retry when it is gone"
            )));
        }
        // Idempotent: creating an existing tenant repairs its upstream objects.
        provision_tenant(&state.upstream, &tid).await?;
        if state.tenant_priority_shares > 0 {
            let own = state.own_flow_schema(&existing);
            provision::sync_tenant_flow_schema(&state.upstream, &tid, own).await?;
        }
        return Ok(existing);
    }
    provision::check_prefix_unused(&state.upstream, &state.namespaces, &tid).await?;
    let rec = TenantRecord {
        id: tid.clone(),
        display_name,
        labels,
        phase: TenantPhase::Active,
        created: rfc3339(SystemTime::now()),
        progress: None,
        generation: 1,
        limits,
        billing: Default::default(),
        policy: None,
        quota,
        scoped_quota: BTreeMap::new(),
        clusters: state.placed_on(),
        span: None,
        suspension: None,
        deletion_protection: false,
        expiry: None,
        sleep: None,
        moving: None,
    };
    state.store.create_tenant(&rec).await?;
    // A new tenant has no FlowSchema to remove: only one of its own is written.
    let provisioned = match provision_fresh_tenant(&state.upstream, &tid).await {
        Ok(()) if state.own_flow_schema(&rec) => {
            provision::sync_tenant_flow_schema(&state.upstream, &tid, true).await
        }
        done => done,
    };
    if let Err(e) = provisioned {
        tracing::warn!(tenant = %tid, error = %e, "provisioning failed; rolling back");
        let _ = provision::delete_tenant_objects(
            &state.upstream,
            &tid,
            state.tenant_priority_shares > 0,
            Duration::from_secs(30),
            |_| {},
        )
        .await;
        let _ = state.store.delete_tenant(tid.as_str()).await;
        return Err(e);
    }
    tracing::info!(tenant = %tid, "tenant created");
    Ok(rec)
}

/// Marks a tenant Terminating and removes it in the background.
pub async fn start_tenant_deletion(
    state: &Arc<Reconciler>,
    id: &str,
) -> Result<TenantRecord, ServerError> {
    let mut rec =
        state.store.get_tenant(id).await?.ok_or_else(|| {
            ServerError::NotFound(format!("tenants.paddock.io \"{id}\" not found"))
        })?;
    if rec.phase != TenantPhase::Terminating {
        rec.phase = TenantPhase::Terminating;
        rec.progress = Some("deletion started".into());
        rec.generation += 1;
        state.store.put_tenant(&rec).await?;
    }
    let state2 = state.clone();
    let tid = rec.id.clone();
    tokio::spawn(async move { finish_tenant_deletion(state2, tid).await });
    Ok(rec)
}

/// Removes everything upstream, revokes the tenant's certificates, then the record. Safe to
/// run twice (two replicas, or after a crash midway).
pub async fn finish_tenant_deletion(state: Arc<Reconciler>, tid: TenantId) {
    let store = state.store.clone();
    let tid2 = tid.clone();
    let last_progress = Arc::new(parking_lot::Mutex::new(String::new()));
    let lp = last_progress.clone();
    let result = provision::delete_tenant_objects(
        &state.upstream,
        &tid,
        state.tenant_priority_shares > 0,
        DELETE_TIMEOUT,
        move |p| {
            *lp.lock() = p;
        },
    );
    let updater = {
        let store = store.clone();
        let tid = tid2.clone();
        let lp = last_progress.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let p = lp.lock().clone();
                if let Ok(Some(mut rec)) = store.get_tenant(tid.as_str()).await {
                    if rec.progress.as_deref() != Some(p.as_str()) && !p.is_empty() {
                        rec.progress = Some(p);
                        let _ = store.put_tenant(&rec).await;
                    }
                } else {
                    break;
                }
            }
        })
    };
    let outcome = result.await;
    updater.abort();
    match outcome {
        Ok(()) => {
            if let Ok(certs) = store.list_certs(Some(tid.as_str())).await {
                for c in certs.iter().filter(|c| !c.revoked) {
                    let _ = store.revoke_cert(&c.serial_hex).await;
                }
            }
            // The quota ledger goes before the record: a record without a ledger is a
            // fresh count, a ledger without a record would be left behind for good.
            if let Err(e) = store.delete_quota_ledger(&tid).await {
                tracing::warn!(tenant = %tid, error = %e, "quota ledger not deleted");
            }
            // Its Ingress hosts become free for other tenants.
            if let Err(e) = store.release_claims(tid.as_str()).await {
                tracing::warn!(tenant = %tid, error = %e, "could not release the tenant's claims");
            }
            match store.delete_tenant(tid.as_str()).await {
                Ok(()) => tracing::info!(tenant = %tid, "tenant deleted"),
                Err(e) => {
                    tracing::warn!(tenant = %tid, error = %e, "tenant objects removed but the record could not be deleted")
                }
            }
        }
        Err(e) => {
            tracing::warn!(tenant = %tid, error = %e, "tenant deletion incomplete");
            if let Ok(Some(mut rec)) = store.get_tenant(tid.as_str()).await {
                rec.progress = Some(format!("deletion incomplete, will retry: {e}"));
                let _ = store.put_tenant(&rec).await;
            }
        }
    }
}
