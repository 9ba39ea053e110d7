//! Stamping a tenant's billing key on its upstream namespaces (paddock_core::observe::billing holds the
//! decisions; docs/metering.md). Three moments: a namespace the tenant creates is stamped
//! before the answer; an admin change restamps every namespace of the tenant before the admin
//! API answers; the watch-driven resync (`resync.rs`) restamps any namespace that drifted (the
//! key removed upstream, another replica's window, a namespace created while paddock was down).

use paddock_core::TenantId;
use paddock_core::observe::billing::{BILLING_FIELD_MANAGER, BillingKey};
use serde_json::Value;

use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;
use paddock_upstream::upstream::Upstream;

/// Server-side apply of the key on one namespace, as paddock's billing field manager.
pub async fn stamp_namespace(
    up: &Upstream,
    key: &BillingKey,
    upstream_ns: &str,
) -> Result<(), ServerError> {
    let path =
        format!("/api/v1/namespaces/{upstream_ns}?fieldManager={BILLING_FIELD_MANAGER}&force=true");
    let a = upjson::call(
        up,
        http::Method::PATCH,
        &path,
        Some("application/apply-patch+yaml"),
        Some(&key.namespace_stamp(upstream_ns)),
    )
    .await?;
    // A namespace deleted meanwhile has nothing left to bill.
    if a.status.is_success() || a.status == http::StatusCode::NOT_FOUND {
        Ok(())
    } else {
        Err(ServerError::Upstream(format!(
            "stamping the billing key on namespace {upstream_ns} failed ({}): {}",
            a.status,
            a.message()
        )))
    }
}

/// Stamps `key` on those of `namespaces` (upstream Namespace objects) that belong to `t`, are
/// not terminating and do not carry it yet. Returns how many were stamped.
pub async fn restamp_listed(
    up: &Upstream,
    t: &TenantId,
    key: &BillingKey,
    namespaces: &[Value],
) -> Result<usize, ServerError> {
    let stale: Vec<&str> = namespaces
        .iter()
        .filter(|n| n["metadata"]["deletionTimestamp"].is_null() && !key.is_stamped_on(n))
        .filter_map(|n| n["metadata"]["name"].as_str())
        .filter(|name| t.strip(name).is_some())
        .collect();
    futures_util::future::try_join_all(stale.iter().map(|ns| stamp_namespace(up, key, ns))).await?;
    Ok(stale.len())
}

/// Reads the tenant's namespaces upstream (by its label) and stamps every one that does not
/// carry `key`. Returns how many were stamped.
pub async fn restamp_tenant(
    up: &Upstream,
    t: &TenantId,
    key: &BillingKey,
) -> Result<usize, ServerError> {
    let selector = format!(
        "/api/v1/namespaces?labelSelector={}%3D{}",
        paddock_core::TENANT_LABEL,
        t.as_str()
    );
    let namespaces = upjson::list(up, &selector).await?;
    restamp_listed(up, t, key, &namespaces).await
}
