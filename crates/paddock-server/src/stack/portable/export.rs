//! `GET tenants/<id>/export`: every object the tenant owns, read through its own stack as its
//! admin (so in its own names, the way its `kubectl` sees them), chosen and cleaned by
//! `paddock_core::portable::objects`, written as one archive.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::{Method, StatusCode};
use paddock_core::TenantId;
use paddock_core::portable::archive::{self, Entry, Manifest};
use paddock_core::portable::import::collection;
use paddock_core::portable::objects::{self, LeftOut};
use serde_json::Value;

use super::TenantCall;
use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// The tenant's objects as an archive (the bytes of a tar).
pub async fn export(
    state: &Arc<AppState>,
    tenant: &TenantId,
    secrets: bool,
) -> Result<Vec<u8>, ServerError> {
    let (objects, left_out) = read_objects(state, tenant, secrets).await?;
    tracing::info!(%tenant, objects = objects.len(), ?left_out, "tenant export read");
    let mut entries = Vec::with_capacity(objects.len());
    let mut files = Vec::with_capacity(objects.len());
    for (i, obj) in objects.iter().enumerate() {
        let yaml = serde_norway::to_string(obj)
            .map_err(|e| ServerError::Internal(format!("an object as YAML: {e}")))?;
        let (api_version, kind, namespace, name) = objects::identity(obj);
        entries.push(Entry {
            file: archive::file_name(i + 1, &kind),
            sha256: archive::sha256_hex(yaml.as_bytes()),
            secret: kind == "Secret" && api_version == "v1",
            api_version,
            kind,
            namespace,
            name,
        });
        files.push(yaml.into_bytes());
    }
    let manifest = Manifest {
        format: archive::FORMAT.into(),
        source_tenant: tenant.as_str().to_owned(),
        created: paddock_reconciler::lifecycle::rfc3339(std::time::SystemTime::now()),
        secrets,
        volume_data: "not included".into(),
        objects: entries.len(),
        entries,
    };
    archive::write(&manifest, &files).map_err(|e| ServerError::Internal(e.to_string()))
}

/// Every exported object of the tenant, cleaned, in apply order; and how many were left out
/// for each reason.
pub async fn read_objects(
    state: &Arc<AppState>,
    tenant: &TenantId,
    secrets: bool,
) -> Result<(Vec<Value>, BTreeMap<String, usize>), ServerError> {
    let rec = state.cache.tenant(tenant.as_str()).ok_or_else(|| {
        ServerError::NotFound(format!("tenants.paddock.io \"{tenant}\" not found"))
    })?;
    if rec.phase == paddock_store::TenantPhase::Terminating {
        return Err(ServerError::Conflict(format!(
            "tenant {tenant} is being deleted"
        )));
    }
    let catalog = crate::clusters::route(state, tenant)?.catalog().await?;
    let call = TenantCall::new(state, tenant);
    let mut out = Vec::new();
    let mut left_out: BTreeMap<String, usize> = BTreeMap::new();
    for kind in objects::exported_kinds(&catalog, tenant) {
        let path = collection(&kind, None);
        let answer = call.send(Method::GET, &path, None).await?;
        if answer.status != StatusCode::OK {
            return Err(ServerError::Upstream(format!(
                "listing {path} as the tenant: {} ({})",
                answer.message(),
                answer.status
            )));
        }
        let list = answer.json();
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let mut kept: Vec<Value> = Vec::with_capacity(items.len());
        for item in &items {
            match objects::clean(&kind, item, secrets) {
                Ok(v) => kept.push(v),
                Err(why) => *left_out.entry(reason(why).to_owned()).or_default() += 1,
            }
        }
        // A stable order within a kind: namespace, then name.
        kept.sort_by_key(|v| {
            let (_, _, ns, name) = objects::identity(v);
            (ns, name)
        });
        out.extend(kept);
    }
    Ok((out, left_out))
}

fn reason(why: LeftOut) -> &'static str {
    match why {
        LeftOut::Kubernetes => "made by Kubernetes",
        LeftOut::Controlled => "made by their controller",
        LeftOut::Paddock => "made by paddock",
        LeftOut::Secret => "secrets (not asked for)",
        LeftOut::Deleting => "being deleted",
    }
}
