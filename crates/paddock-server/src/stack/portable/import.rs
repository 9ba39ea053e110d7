//! `POST tenants/<id>/import`: an archive checked whole (`paddock_core::portable`: format,
//! checksums, kinds known and allowed) and every object dry-run through the tenant's stack
//! before the first is written; then created in apply order as the tenant's admin, each CRD
//! waited for until it is established.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use paddock_api::portable::{IMPORT_KIND, ImportSummary};
use paddock_core::TenantId;
use paddock_core::portable::archive;
use paddock_core::portable::import::{Step, plan};

use super::{Answer, TenantCall};
use crate::state::AppState;
use paddock_upstream::error::ServerError;

/// How long a new CRD may take to be established, and its kind to be served.
const CRD_WAIT: Duration = Duration::from_secs(60);
/// Most problems a refusal lists.
const MAX_LISTED: usize = 20;

/// Imports `bytes` (an archive) into `tenant`; with `dry_run`, only checks it.
pub async fn import(
    state: &Arc<AppState>,
    tenant: &TenantId,
    bytes: &[u8],
    dry_run: bool,
) -> Result<ImportSummary, ServerError> {
    let home = crate::clusters::route(state, tenant)?;
    let call = TenantCall::new(state, tenant);
    import_with(state, &home, call, tenant, bytes, dry_run).await
}

/// [`import`] with `call`, whose requests go to the cluster of `to` (the tenant's home, or
/// where a move takes it).
pub async fn import_with(
    state: &Arc<AppState>,
    to: &Arc<AppState>,
    call: TenantCall,
    tenant: &TenantId,
    bytes: &[u8],
    dry_run: bool,
) -> Result<ImportSummary, ServerError> {
    let Checked {
        source,
        objects,
        steps,
    } = checked(state, to, tenant, bytes).await?;
    let kept = dry_run_all(&call, &steps).await?;
    let mut summary = ImportSummary {
        api_version: paddock_api::GROUP_VERSION.into(),
        kind: IMPORT_KIND.into(),
        tenant: tenant.as_str().into(),
        source_tenant: source,
        dry_run,
        objects,
        created: steps.len() - kept.len(),
        kept: kept.iter().cloned().collect(),
    };
    if dry_run {
        return Ok(summary);
    }
    summary.created = create_all(&call, &steps, &kept).await?;
    Ok(summary)
}

/// An archive read and planned against a tenant's cluster.
pub struct Checked {
    /// The tenant it was exported from.
    pub source: String,
    /// Objects it holds.
    pub objects: usize,
    /// What to create, in order.
    pub steps: Vec<Step>,
}

/// The archive read and planned against the tenant's cluster, or a 400 naming why it is
/// refused.
pub async fn checked(
    state: &Arc<AppState>,
    to: &Arc<AppState>,
    tenant: &TenantId,
    bytes: &[u8],
) -> Result<Checked, ServerError> {
    let rec = state.cache.tenant(tenant.as_str()).ok_or_else(|| {
        ServerError::NotFound(format!("tenants.paddock.io \"{tenant}\" not found"))
    })?;
    if rec.phase != paddock_store::TenantPhase::Active {
        return Err(ServerError::Conflict(format!(
            "tenant {tenant} is not active: nothing is imported"
        )));
    }
    let refused = |e: paddock_core::portable::PortableError| {
        ServerError::BadRequest(format!("import refused, nothing written: {e}"))
    };
    let archive = archive::read(bytes).map_err(refused)?;
    let catalog = to.catalog().await?;
    let steps = plan(&archive, &catalog, tenant).map_err(refused)?;
    Ok(Checked {
        source: archive.manifest.source_tenant.clone(),
        objects: archive.manifest.objects,
        steps,
    })
}

/// Every step sent with `dryRun=All`. What it may answer without refusing the archive: a
/// created object; a Namespace that exists (kept); a namespace the archive creates that is
/// not there yet; a kind whose CRD the archive creates. Anything else refuses the whole
/// archive. Answers the namespaces kept.
async fn dry_run_all(call: &TenantCall, steps: &[Step]) -> Result<BTreeSet<String>, ServerError> {
    let created_ns: BTreeSet<&str> = steps
        .iter()
        .filter(|s| s.namespace_object)
        .map(|s| s.name.as_str())
        .collect();
    let mut kept = BTreeSet::new();
    let mut problems = Vec::new();
    for s in steps {
        let path = format!("{}?dryRun=All&fieldManager=paddock-import", s.collection);
        let a = call.send(Method::POST, &path, Some(&s.object)).await?;
        match a.status {
            st if st.is_success() => {}
            StatusCode::CONFLICT if s.namespace_object => {
                kept.insert(s.name.clone());
            }
            StatusCode::NOT_FOUND if s.new_kind => {}
            StatusCode::NOT_FOUND
                if a.details_kind().as_deref() == Some("namespaces")
                    && s.namespace
                        .as_deref()
                        .is_some_and(|n| created_ns.contains(n)) => {}
            st => problems.push(format!("{}: {} ({})", what(s), a.message(), st.as_u16())),
        }
    }
    // A namespace the archive creates that is there already is kept, so the objects in it
    // were checked there.
    if !problems.is_empty() {
        let n = problems.len();
        problems.truncate(MAX_LISTED);
        return Err(ServerError::BadRequest(format!(
            "import refused, nothing written: {n} objects fail the server-side dry run: {}",
            problems.join("; ")
        )));
    }
    Ok(kept)
}

/// Creates every step in order; a namespace in `kept` is left as it is. Answers how many were
/// created.
pub async fn create_all(
    call: &TenantCall,
    steps: &[Step],
    kept: &BTreeSet<String>,
) -> Result<usize, ServerError> {
    let mut created = 0;
    for s in steps {
        if s.namespace_object && kept.contains(&s.name) {
            continue;
        }
        let path = format!("{}?fieldManager=paddock-import", s.collection);
        let a = create(call, s, &path).await?;
        if !a.status.is_success() {
            return Err(ServerError::Conflict(format!(
                "import stopped after {created} objects: {}: {} ({})",
                what(s),
                a.message(),
                a.status.as_u16()
            )));
        }
        created += 1;
        if s.crd {
            established(call, s).await?;
        }
    }
    Ok(created)
}

/// One create; a kind whose CRD was just created may be unknown for a moment (discovery is
/// re-read on a miss at most once a second), so its 404 is tried again.
async fn create(call: &TenantCall, s: &Step, path: &str) -> Result<Answer, ServerError> {
    let until = tokio::time::Instant::now() + CRD_WAIT;
    loop {
        let a = call.send(Method::POST, path, Some(&s.object)).await?;
        if a.status == StatusCode::NOT_FOUND && s.new_kind && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        }
        return Ok(a);
    }
}

/// Waits until the CRD of `s` says `Established`.
async fn established(call: &TenantCall, s: &Step) -> Result<(), ServerError> {
    let path = format!("{}/{}", s.collection, s.name);
    let until = tokio::time::Instant::now() + CRD_WAIT;
    loop {
        let a = call.send(Method::GET, &path, None).await?;
        let v = a.json();
        let ok = v["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
        if ok {
            return Ok(());
        }
        if tokio::time::Instant::now() >= until {
            return Err(ServerError::Unavailable(format!(
                "import stopped: CustomResourceDefinition {} not established within {}s",
                s.name,
                CRD_WAIT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn what(s: &Step) -> String {
    match &s.namespace {
        Some(ns) => format!("{} {ns}/{}", s.kind, s.name),
        None => format!("{} {}", s.kind, s.name),
    }
}
