//! A tenant's suspension upstream (docs/operations.md "Suspend, protection and TTL"; the
//! decisions are paddock-core's `provision::suspended` and `lifecycle::workloads`):
//!
//! - the mark on its namespaces ([`mark_tenant`] at suspend and resume, [`mark_listed`] from
//!   the resync's caches, which keeps it in step with the record);
//! - its workloads stopped ([`stop_workloads`], with `--stop-workloads`) and, at resume,
//!   brought back, with every controller short of pods touched so that it creates them at
//!   once ([`resume_workloads`]);
//! - a sleeping tenant's workloads: stopped by the same [`stop_workloads`] (for
//!   `Mark::Sleep`) and brought back when it wakes ([`wake_workloads`]).
//!
//! Everything here is written with paddock's own credential, which the suspension guard does
//! not hold back; it is idempotent, so a suspend or resume that failed halfway is run again.

use futures_util::future::try_join_all;
use http::Method;
use paddock_core::TenantId;
use paddock_core::lifecycle::workloads::{
    Mark, Workload, kick_patch, restore_patch, short_of_pods, stop_patch,
};
use paddock_core::provision::suspended::{mark_patch, marked_as};
use serde_json::Value;

use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;
use paddock_upstream::upstream::Upstream;

/// Upstream requests of a suspend or resume in flight at once (in rounds).
const AT_ONCE: usize = 8;

/// A JSON merge patch of `path`; an object gone meanwhile counts as done.
async fn merge_patch(up: &Upstream, path: &str, patch: &Value) -> Result<(), ServerError> {
    let a = upjson::call(
        up,
        Method::PATCH,
        path,
        Some("application/merge-patch+json"),
        Some(patch),
    )
    .await?;
    if a.status.is_success() || a.status == http::StatusCode::NOT_FOUND {
        Ok(())
    } else {
        Err(ServerError::Upstream(format!(
            "patching {path} upstream failed ({}): {}",
            a.status,
            a.message()
        )))
    }
}

/// The tenant's upstream Namespace objects on this cluster (by its label).
async fn namespace_objects(up: &Upstream, t: &TenantId) -> Result<Vec<Value>, ServerError> {
    upjson::list(
        up,
        &format!(
            "/api/v1/namespaces?labelSelector={}",
            upjson::query_escape(&t.tenant_label_selector())
        ),
    )
    .await
}

/// The names of the tenant's upstream namespaces on this cluster that are not being deleted
/// (by its label and its prefix).
pub async fn tenant_namespaces(up: &Upstream, t: &TenantId) -> Result<Vec<String>, ServerError> {
    Ok(namespace_objects(up, t)
        .await?
        .iter()
        .filter(|n| n["metadata"]["deletionTimestamp"].is_null())
        .filter_map(|n| n["metadata"]["name"].as_str())
        .filter(|name| t.strip(name).is_some())
        .map(str::to_owned)
        .collect())
}

/// Marks (`suspended`) or unmarks those of `namespaces` (upstream Namespace objects) that
/// belong to `t`, are not being deleted and are not marked so yet. Returns how many changed.
pub async fn mark_listed(
    up: &Upstream,
    t: &TenantId,
    suspended: bool,
    namespaces: &[Value],
) -> Result<usize, ServerError> {
    let stale: Vec<String> = namespaces
        .iter()
        .filter(|n| n["metadata"]["deletionTimestamp"].is_null() && !marked_as(n, suspended))
        .filter_map(|n| n["metadata"]["name"].as_str())
        .filter(|name| t.strip(name).is_some())
        .map(|ns| format!("/api/v1/namespaces/{ns}"))
        .collect();
    let patch = mark_patch(suspended);
    for chunk in stale.chunks(AT_ONCE) {
        try_join_all(chunk.iter().map(|path| merge_patch(up, path, &patch))).await?;
    }
    Ok(stale.len())
}

/// Reads the tenant's namespaces and marks or unmarks them ([`mark_listed`]).
pub async fn mark_tenant(
    up: &Upstream,
    t: &TenantId,
    suspended: bool,
) -> Result<usize, ServerError> {
    mark_listed(up, t, suspended, &namespace_objects(up, t).await?).await
}

/// Every workload object of the kinds `m` stops in the tenant's namespaces, kind by kind
/// (parents first).
async fn workloads(
    up: &Upstream,
    namespaces: &[String],
    m: Mark,
) -> Result<Vec<(Workload, Value)>, ServerError> {
    let collections: Vec<(Workload, String)> = m
        .kinds()
        .iter()
        .flat_map(|w| namespaces.iter().map(move |ns| (*w, w.collection(ns))))
        .collect();
    let mut out = Vec::new();
    for chunk in collections.chunks(AT_ONCE) {
        let lists = try_join_all(chunk.iter().map(|(_, path)| upjson::list(up, path))).await?;
        for ((w, _), items) in chunk.iter().zip(lists) {
            out.extend(items.into_iter().map(|o| (*w, o)));
        }
    }
    Ok(out)
}

/// The object's own path (its collection and name).
fn object_path(w: Workload, obj: &Value) -> Option<String> {
    let ns = obj["metadata"]["namespace"].as_str()?;
    let name = obj["metadata"]["name"].as_str()?;
    Some(format!("{}/{name}", w.collection(ns)))
}

/// Applies `patch_of` to every workload it gives a patch for; returns how many.
async fn patch_each(
    up: &Upstream,
    objects: &[(Workload, Value)],
    patch_of: impl Fn(Workload, &Value) -> Option<Value>,
) -> Result<usize, ServerError> {
    let patches: Vec<(String, Value)> = objects
        .iter()
        .filter_map(|(w, o)| Some((object_path(*w, o)?, patch_of(*w, o)?)))
        .collect();
    for chunk in patches.chunks(AT_ONCE) {
        try_join_all(
            chunk
                .iter()
                .map(|(path, patch)| merge_patch(up, path, patch)),
        )
        .await?;
    }
    Ok(patches.len())
}

/// Stops the workloads of `t`'s namespaces on this cluster for reason `m` (a suspension, a
/// sleep: `lifecycle::workloads`); returns how many objects were changed.
pub async fn stop_workloads(up: &Upstream, t: &TenantId, m: Mark) -> Result<usize, ServerError> {
    let namespaces = tenant_namespaces(up, t).await?;
    let objects = workloads(up, &namespaces, m).await?;
    patch_each(up, &objects, |w, o| stop_patch(m, w, o)).await
}

/// When a tenant wakes: brings back what its sleep stopped on this cluster; returns how many
/// objects were changed. Its controllers were never refused pods (a sleep is no suspension),
/// so none waits out a backoff: nothing is touched.
pub async fn wake_workloads(up: &Upstream, t: &TenantId) -> Result<usize, ServerError> {
    let namespaces = tenant_namespaces(up, t).await?;
    let objects = workloads(up, &namespaces, Mark::Sleep).await?;
    patch_each(up, &objects, |w, o| restore_patch(Mark::Sleep, w, o)).await
}

/// At resume: brings back what [`stop_workloads`] stopped, and touches every other controller
/// short of pods (`now`: the time written on it). Returns (brought back, touched).
pub async fn resume_workloads(
    up: &Upstream,
    t: &TenantId,
    now: &str,
) -> Result<(usize, usize), ServerError> {
    let namespaces = tenant_namespaces(up, t).await?;
    let m = Mark::Suspension;
    let objects = workloads(up, &namespaces, m).await?;
    let restored = patch_each(up, &objects, |w, o| restore_patch(m, w, o)).await?;
    let kick = kick_patch(now);
    let kicked = patch_each(up, &objects, |w, o| {
        (restore_patch(m, w, o).is_none() && short_of_pods(w, o)).then(|| kick.clone())
    })
    .await?;
    Ok((restored, kicked))
}
