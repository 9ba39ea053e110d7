//! Stamping namespace templates (docs/templates.md): what the templates of a namespace say is
//! written upstream with server-side apply (forced, so a drifted object is put back), stale
//! locked objects are deleted, and the namespace's `paddock.io/templates` annotation records
//! what it carries. The decisions are `paddock_core::templates`; the templates themselves and
//! the discovery catalog come from the replica through a [`TemplateSource`].

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use paddock_core::templates::{
    self as tpl, FoundLocked, LOCKED_LABEL, NamespaceTemplate, Stamp, TEMPLATE_KINDS,
    TEMPLATE_LABEL, TEMPLATES_ANNOTATION,
};
use paddock_core::{Catalog, TenantContext, TenantId};
use paddock_upstream::error::ServerError;
use paddock_upstream::upjson;
use paddock_upstream::upstream::Upstream;
use serde_json::{Value, json};

/// The templates in force and the catalog to translate them with.
#[derive(Clone)]
pub struct TemplateSet {
    pub templates: Vec<NamespaceTemplate>,
    pub catalog: Arc<Catalog>,
}

/// Where the templates come from (the gateway: its store, configuration and catalog).
pub trait TemplateSource: Send + Sync {
    fn current(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<TemplateSet, ServerError>> + Send + '_>>;
}

static SOURCE: OnceLock<Arc<dyn TemplateSource>> = OnceLock::new();

/// Records the replica's template source (first call wins), before any namespace is set up.
pub fn set_template_source(source: Arc<dyn TemplateSource>) {
    let _ = SOURCE.set(source);
}

/// The templates in force, when a source is set (a replica always sets one).
pub async fn current() -> Result<Option<TemplateSet>, ServerError> {
    match SOURCE.get() {
        Some(s) => s.current().await.map(Some),
        None => Ok(None),
    }
}

/// The stamping of a namespace at its set-up (namespace creation, tenant creation, repair):
/// `ns` is the namespace as it was asked for (its labels name the optional templates).
/// A built-in template that cannot be stamped fails the set-up, as paddock's own objects
/// always did; any other failure is recorded in the annotation and retried by the sync loop.
pub async fn stamp_at_setup(
    up: &Upstream,
    t: &TenantId,
    upstream_ns: &str,
    ns: &Value,
) -> Result<(), ServerError> {
    let Some(set) = current().await? else {
        tracing::warn!(
            namespace = upstream_ns,
            "no template source: namespace templates not stamped"
        );
        return Ok(());
    };
    let mut ns = ns.clone();
    ns["metadata"]["name"] = json!(upstream_ns);
    let report = stamp_namespace(up, t, &ns, &set, Prune::Skip).await?;
    if let Some(e) = report.builtin_error {
        return Err(e);
    }
    Ok(())
}

/// What one stamping did.
#[derive(Debug, Default)]
pub struct StampReport {
    /// Objects written.
    pub applied: usize,
    /// Stale locked objects deleted.
    pub deleted: usize,
    /// Templates that failed.
    pub failed: Vec<String>,
    /// The first failure of a built-in template.
    pub builtin_error: Option<ServerError>,
    /// The objects written, as the apiserver answered the applies (the sync remembers them
    /// to tell its own writes from drift).
    pub written: Vec<Value>,
}

/// Whether a stamping also deletes locked objects no wanted template stamps any more (a
/// template deleted or changed since the namespace was stamped).
#[derive(Debug, Clone)]
pub enum Prune {
    /// No (the set-up of a new namespace has none).
    Skip,
    /// Look for them upstream (a LIST per stamped kind).
    List,
    /// These, found in the sync's watch caches.
    Known(Vec<FoundLocked>),
}

/// Stamps namespace `ns` (its upstream object) of tenant `t` with the templates it should
/// carry, pruning as `prune` says. Writes the annotation when it changed.
pub async fn stamp_namespace(
    up: &Upstream,
    t: &TenantId,
    ns: &Value,
    set: &TemplateSet,
    prune: Prune,
) -> Result<StampReport, ServerError> {
    let upstream_ns = ns["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ctx = TenantContext {
        tenant: t.clone(),
        catalog: set.catalog.clone(),
    };
    let wanted = tpl::wanted(&set.templates, t, ns);
    let mut report = StampReport::default();
    let mut stamps = BTreeMap::new();
    for w in &wanted {
        let writes = w.manifests.iter().map(|m| {
            let ctx = &ctx;
            let upstream_ns = &upstream_ns;
            async move {
                let (path, obj) = tpl::stamped_object(ctx, w, m, upstream_ns)
                    .map_err(|e| ServerError::BadRequest(e.to_string()))?;
                upjson::apply_object(up, &path, &obj).await
            }
        });
        let results = futures_util::future::join_all(writes).await;
        let mut ok = true;
        for r in results {
            match r {
                Ok(written) => {
                    report.applied += 1;
                    report.written.push(written);
                }
                Err(e) => {
                    ok = false;
                    tracing::warn!(namespace = %upstream_ns, template = %w.name, error = %e, "stamping a namespace template failed");
                    if w.builtin && report.builtin_error.is_none() {
                        report.builtin_error = Some(e);
                    }
                }
            }
        }
        if !ok {
            report.failed.push(w.name.clone());
        }
        stamps.insert(
            w.name.clone(),
            Stamp {
                generation: w.generation,
                in_sync: ok,
            },
        );
    }
    let found = match prune {
        Prune::Skip => Vec::new(),
        Prune::List => find_locked(up, &upstream_ns).await?,
        Prune::Known(found) => found,
    };
    for stale in tpl::stale_locked(&found, &wanted) {
        upjson::delete(up, &tpl::object_path(stale.kind, &upstream_ns, &stale.name)).await?;
        report.deleted += 1;
    }
    let value = tpl::format_annotation(&stamps);
    let before = ns["metadata"]["annotations"][TEMPLATES_ANNOTATION]
        .as_str()
        .unwrap_or("");
    if value != before {
        let v = if value.is_empty() {
            Value::Null
        } else {
            Value::String(value)
        };
        let a = upjson::call(
            up,
            http::Method::PATCH,
            &format!("/api/v1/namespaces/{upstream_ns}?fieldManager=paddock-templates"),
            Some("application/merge-patch+json"),
            Some(&json!({"metadata": {"annotations": {TEMPLATES_ANNOTATION: v}}})),
        )
        .await?;
        if !a.status.is_success() && a.status != http::StatusCode::NOT_FOUND {
            return Err(ServerError::Upstream(format!(
                "annotating namespace {upstream_ns} with its templates failed ({}): {}",
                a.status,
                a.message()
            )));
        }
    }
    Ok(report)
}

/// The locked objects in a namespace, of every kind templates stamp.
async fn find_locked(up: &Upstream, upstream_ns: &str) -> Result<Vec<FoundLocked>, ServerError> {
    let selector = upjson::query_escape(&format!("{LOCKED_LABEL}=true"));
    let lists = TEMPLATE_KINDS.iter().map(|k| {
        let path = format!(
            "{}?labelSelector={selector}",
            tpl::collection_path(k, upstream_ns)
        );
        async move { (k, upjson::list(up, &path).await) }
    });
    let mut out = Vec::new();
    for (kind, items) in futures_util::future::join_all(lists).await {
        for o in items? {
            if let Some(name) = o["metadata"]["name"].as_str() {
                out.push(FoundLocked {
                    kind,
                    name: name.to_string(),
                    template: o["metadata"]["labels"][TEMPLATE_LABEL]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                });
            }
        }
    }
    Ok(out)
}
