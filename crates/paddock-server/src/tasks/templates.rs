//! Keeps every tenant namespace in step with the namespace templates (docs/templates.md
//! "Sync"): each replica, every `template_sync_interval` and at once after a template change
//! it served, lists the tenant namespaces and restamps those whose annotation shows a
//! template missing, changed, failed or gone; about once a minute it restamps every
//! namespace with a mandatory template, which puts back anything changed upstream by
//! someone the lock does not hold (a cluster admin).

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use paddock_core::TenantId;
use paddock_core::templates::{self as tpl, builtin_templates};
use paddock_reconciler::templates::{TemplateSet, TemplateSource, stamp_namespace};
use paddock_store::TenantPhase;
use serde_json::Value;
use tokio::sync::Notify;

use crate::state::AppState;
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;

/// Every this many passes, a pass restamps all namespaces (drift repair).
const FULL_PASS_EVERY: u64 = 30;
/// Namespaces stamped at once.
const PARALLEL: usize = 16;

static WAKE: Notify = Notify::const_new();

/// Asks this replica's sync loop for a pass now (a template was written here).
pub fn wake() {
    WAKE.notify_one();
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
        let Some(tid) = ns["metadata"]["labels"][paddock_core::TENANT_LABEL].as_str() else {
            continue;
        };
        let Ok(t) = TenantId::parse(tid) else {
            continue;
        };
        let name = ns["metadata"]["name"].as_str().unwrap_or_default();
        let live = state
            .cache
            .tenant(tid)
            .is_some_and(|r| r.phase != TenantPhase::Terminating);
        if live && t.strip(name).is_some() && ns["metadata"]["deletionTimestamp"].is_null() {
            out.push((t, ns));
        }
    }
    Ok(out)
}

/// What a pass did.
#[derive(Debug, Default)]
pub struct PassReport {
    pub namespaces: usize,
    pub stamped: usize,
    pub failed: usize,
}

/// One pass over every tenant namespace. `full`: restamp all, not only those out of step.
pub async fn sync_pass(state: &AppState, full: bool) -> Result<PassReport, ServerError> {
    let set = all_templates(state).await?;
    let namespaces = tenant_namespaces(state).await?;
    let mut report = PassReport {
        namespaces: namespaces.len(),
        ..Default::default()
    };
    let jobs: Vec<(TenantId, Value, bool)> = namespaces
        .into_iter()
        .filter_map(|(t, ns)| {
            let wanted = tpl::wanted(&set.templates, &t, &ns);
            let stale = tpl::needs_stamp(&ns, &wanted);
            // Something stamped before may have to go: prune (lists every stamped kind).
            let prune = full || (stale && !tpl::current_stamps(&ns).is_empty());
            (stale || (full && !wanted.is_empty())).then_some((t, ns, prune))
        })
        .collect();
    let set = &set;
    let mut results =
        futures_util::stream::iter(jobs)
            .map(|(t, ns, prune)| async move {
                stamp_namespace(&state.upstream, &t, &ns, set, prune).await
            })
            .buffer_unordered(PARALLEL);
    while let Some(r) = results.next().await {
        match r {
            Ok(r) if r.failed.is_empty() => report.stamped += 1,
            Ok(_) => report.failed += 1,
            Err(e) => {
                report.failed += 1;
                tracing::warn!(error = %e, "template sync of a namespace failed");
            }
        }
    }
    Ok(report)
}

/// The sync loop of one replica.
pub async fn sync_loop(state: Arc<AppState>) {
    let mut tick = tokio::time::interval(
        state
            .config
            .templates
            .sync_interval
            .max(Duration::from_millis(200)),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pass: u64 = 0;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = WAKE.notified() => {}
            _ = state.shutdown.cancelled() => return,
        }
        if !state
            .bootstrapped
            .load(std::sync::atomic::Ordering::Acquire)
        {
            continue;
        }
        let started = Instant::now();
        match sync_pass(&state, pass.is_multiple_of(FULL_PASS_EVERY)).await {
            Ok(r) if r.stamped + r.failed > 0 => tracing::info!(
                namespaces = r.namespaces,
                stamped = r.stamped,
                failed = r.failed,
                millis = started.elapsed().as_millis() as u64,
                "namespace templates synced"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "namespace template sync pass failed"),
        }
        pass += 1;
    }
}
