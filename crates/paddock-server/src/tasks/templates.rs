//! Where the namespace templates come from (configuration and store), and the tenant
//! namespaces upstream; the watch-driven sync that keeps namespaces in step with them is
//! `tasks::template_sync` (docs/templates.md "Sync").

use std::pin::Pin;
use std::sync::Arc;

use paddock_core::TenantId;
use paddock_core::templates::builtin_templates;
use paddock_reconciler::templates::{TemplateSet, TemplateSource};
use paddock_store::TenantPhase;
use serde_json::Value;
use tokio::sync::Notify;

use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;

pub(crate) static WAKE: Notify = Notify::const_new();

/// Asks this replica's syncs (one per cluster) to read the templates now (a template was
/// written here). A sync busy at this moment reads them at its next tick.
pub fn wake() {
    WAKE.notify_waiters();
}

/// The replica's templates: the built-in ones of its configuration, then the stored ones.
pub struct StoreTemplates(pub Arc<AppState>);

impl TemplateSource for StoreTemplates {
    fn current(
        &self,
    ) -> Pin<Box<dyn std::future::Future<Output = Result<TemplateSet, ServerError>> + Send + '_>>
    {
        Box::pin(all_templates(&self.0))
    }
}

/// Built-in and stored templates, and the catalog to translate them with.
pub async fn all_templates(state: &AppState) -> Result<TemplateSet, ServerError> {
    let mut templates = builtin_templates(
        state.config.admission.listen.is_some(),
        state.config.templates.pl1,
    );
    templates.extend(
        state
            .store
            .list_templates()
            .await?
            .into_iter()
            .map(|(t, _)| t),
    );
    Ok(TemplateSet {
        templates,
        catalog: state.catalog().await?,
    })
}

/// The tenant namespaces upstream (paddock's own credential), each with its tenant.
pub async fn tenant_namespaces(state: &AppState) -> Result<Vec<(TenantId, Value)>, ServerError> {
    let path = format!(
        "/api/v1/namespaces?labelSelector={}",
        upjson::query_escape(paddock_core::TENANT_LABEL)
    );
    let mut out = Vec::new();
    for ns in upjson::list(&state.upstream, &path).await? {
        if let Some(t) = live_tenant_namespace(state, &ns) {
            out.push((t, ns));
        }
    }
    Ok(out)
}

/// The tenant of a namespace upstream, when it is a namespace of a live tenant (labelled,
/// named with the tenant's prefix, the tenant not terminating, the namespace not deleted).
pub fn live_tenant_namespace(state: &AppState, ns: &Value) -> Option<TenantId> {
    let tid = ns["metadata"]["labels"][paddock_core::TENANT_LABEL].as_str()?;
    let t = TenantId::parse(tid).ok()?;
    let name = ns["metadata"]["name"].as_str().unwrap_or_default();
    let live = state
        .cache
        .tenant(tid)
        .is_some_and(|r| r.phase != TenantPhase::Terminating);
    (live && t.strip(name).is_some() && ns["metadata"]["deletionTimestamp"].is_null()).then_some(t)
}
