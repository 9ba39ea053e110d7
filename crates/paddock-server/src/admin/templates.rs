//! The admin API of namespace templates (docs/templates.md):
//! `/apis/paddock.io/v1alpha1/namespacetemplates[/<name>]`, platform admins only.
//!
//! - `GET` the list (built-in and stored) or one (with how many namespaces carry it in step);
//! - `POST` creates (409 when it exists), `PUT` creates or replaces (the generation rises only
//!   when the spec changed, so applying the same file twice restamps nothing);
//! - `DELETE` removes a stored template; mandatory objects go with it, optional ones stay
//!   with their tenants. Built-in templates are read-only.

use std::sync::Arc;

use crate::body::ReqBody;
use http::{Method, Response, StatusCode};
use paddock_core::TenantContext;
use paddock_core::templates::{self as tpl, NamespaceTemplate};
use serde_json::Value;

use crate::admin::answer::json_response;
use crate::admin::request;
use crate::state::AppState;
use crate::tasks::templates::{all_templates, tenant_namespaces, wake};
use paddock_core::identity::Caller;
use paddock_upstream::error::ServerError;
use paddock_upstream::limit::collect_limited;
use paddock_upstream::res_body::ResBody;

use paddock_api::GROUP_VERSION as GV;
use paddock_api::List;
use paddock_api::template::{
    self as api, TemplateMeta, TemplateNamespaces, TemplateSpec, TemplateStatus,
};

/// Names of stored templates may not start with this (the built-in ones do).
const RESERVED_PREFIX: &str = "paddock-";

/// A template as an object of the admin API.
pub fn template_object(t: &NamespaceTemplate) -> api::NamespaceTemplate {
    api::NamespaceTemplate {
        api_version: GV.into(),
        kind: api::KIND.into(),
        metadata: TemplateMeta {
            name: Some(t.name.clone()),
            generation: Some(t.generation),
            creation_timestamp: Some(t.created.clone()),
        },
        spec: TemplateSpec {
            mandatory: Some(t.mandatory),
            tenants: t.tenants.clone(),
            manifests: Some(t.manifests.clone()),
        },
        status: Some(TemplateStatus {
            builtin: t.builtin,
            namespaces: None,
        }),
    }
}

/// Serves `/namespacetemplates...` (`segs` after the group version).
pub async fn serve_templates(
    state: &Arc<AppState>,
    caller: &Caller,
    method: Method,
    segs: &[&str],
    body: ReqBody,
) -> Result<Response<ResBody>, ServerError> {
    match (method, segs) {
        (Method::GET, ["namespacetemplates"]) => {
            let set = all_templates(state).await?;
            let items = set.templates.iter().map(template_object).collect();
            json_response(StatusCode::OK, &List::new(api::LIST_KIND, items))
        }
        (Method::GET, ["namespacetemplates", name]) => {
            let set = all_templates(state).await?;
            let t = set
                .templates
                .iter()
                .find(|t| t.name == *name)
                .ok_or_else(|| not_found(name))?;
            let mut obj = template_object(t);
            let namespaces = namespaces_status(state, t).await?;
            if let Some(status) = obj.status.as_mut() {
                status.namespaces = Some(namespaces);
            }
            json_response(StatusCode::OK, &obj)
        }
        (Method::POST, ["namespacetemplates"]) => {
            let t = parse(&read_json(body).await?, None)?;
            let t = write(state, t, true).await?;
            tracing::info!(admin = caller.user(), template = %t.name, mandatory = t.mandatory, "namespace template created");
            json_response(StatusCode::CREATED, &template_object(&t))
        }
        (Method::PUT, ["namespacetemplates", name]) => {
            let t = parse(&read_json(body).await?, Some(name))?;
            let t = write(state, t, false).await?;
            tracing::info!(admin = caller.user(), template = %t.name, generation = t.generation, "namespace template written");
            json_response(StatusCode::OK, &template_object(&t))
        }
        (Method::DELETE, ["namespacetemplates", name]) => {
            refuse_builtin(name)?;
            let (t, version) = state
                .store
                .get_template(name)
                .await?
                .ok_or_else(|| not_found(name))?;
            if !state.store.delete_template(name, version).await? {
                return Err(ServerError::Conflict(format!(
                    "namespacetemplates.paddock.io \"{name}\" changed while it was being deleted; try again"
                )));
            }
            wake();
            tracing::info!(admin = caller.user(), template = %name, "namespace template deleted");
            json_response(StatusCode::OK, &template_object(&t))
        }
        (m, _) => Err(ServerError::NotFound(format!(
            "{m} is not served on namespacetemplates.paddock.io at this path"
        ))),
    }
}

fn not_found(name: &str) -> ServerError {
    ServerError::NotFound(format!(
        "namespacetemplates.paddock.io \"{name}\" not found"
    ))
}

async fn read_json(body: ReqBody) -> Result<Value, ServerError> {
    let raw = collect_limited(body, 3 << 20).await?;
    serde_json::from_slice(&raw)
        .map_err(|e| ServerError::BadRequest(format!("the request body is not valid JSON: {e}")))
}

/// A `NamespaceTemplate` object from the request; unknown spec fields are refused.
fn parse(obj: &Value, path_name: Option<&str>) -> Result<NamespaceTemplate, ServerError> {
    let meta: TemplateMeta = request::part(&obj["metadata"], "metadata")?;
    let name = meta
        .name
        .as_deref()
        .or(path_name)
        .ok_or_else(|| ServerError::BadRequest("metadata.name is required".into()))?;
    if path_name.is_some_and(|p| p != name) {
        return Err(ServerError::BadRequest(format!(
            "metadata.name {name} does not match the name in the path"
        )));
    }
    let fields = obj["spec"]
        .as_object()
        .ok_or_else(|| ServerError::BadRequest("spec is required".into()))?;
    if let Some(k) = request::unknown_field(fields, &TemplateSpec::FIELDS) {
        return Err(ServerError::BadRequest(format!(
            "spec.{k}: unknown field (spec has mandatory, tenants, manifests)"
        )));
    }
    let spec: TemplateSpec = request::part(&obj["spec"], "spec")?;
    let mandatory = spec.mandatory.ok_or_else(|| {
        ServerError::BadRequest("spec.mandatory (true or false) is required".into())
    })?;
    let manifests = spec.manifests.ok_or_else(|| {
        ServerError::BadRequest("spec.manifests (a list of objects) is required".into())
    })?;
    Ok(NamespaceTemplate {
        name: name.to_string(),
        mandatory,
        tenants: spec.tenants,
        manifests,
        generation: 1,
        created: paddock_store::now_rfc3339(),
        builtin: false,
    })
}

fn refuse_builtin(name: &str) -> Result<(), ServerError> {
    if !name.starts_with(RESERVED_PREFIX) {
        return Ok(());
    }
    let builtin = tpl::builtin_templates(true, true)
        .iter()
        .any(|b| b.name == name);
    Err(ServerError::Forbidden(if builtin {
        format!(
            "namespacetemplates.paddock.io \"{name}\" is built into paddock and cannot be changed or deleted here (the default_templates setting chooses the built-in set; docs/templates.md)"
        )
    } else {
        format!(
            "template names starting with {RESERVED_PREFIX} are reserved for paddock's built-in templates"
        )
    }))
}

/// Validates and stores `t` (a create when `create`, else create-or-replace), raising the
/// generation when the spec changed.
async fn write(
    state: &Arc<AppState>,
    mut t: NamespaceTemplate,
    create: bool,
) -> Result<NamespaceTemplate, ServerError> {
    refuse_builtin(&t.name)?;
    let set = all_templates(state).await?;
    let probe = TenantContext {
        tenant: paddock_core::TenantId::parse("tmplpr")
            .map_err(|e| ServerError::Internal(e.to_string()))?,
        catalog: set.catalog.clone(),
    };
    let invalid = |e: tpl::TemplateError| ServerError::BadRequest(e.to_string());
    tpl::validate(&t, &probe).map_err(invalid)?;
    tpl::check_overlap(&t, &set.templates).map_err(invalid)?;
    for _ in 0..5 {
        let current = state.store.get_template(&t.name).await?;
        let version = match &current {
            Some(_) if create => {
                return Err(ServerError::Conflict(format!(
                    "namespacetemplates.paddock.io \"{}\" already exists",
                    t.name
                )));
            }
            Some((old, v)) => {
                let same = old.mandatory == t.mandatory
                    && old.tenants == t.tenants
                    && old.manifests == t.manifests;
                if same {
                    return Ok(old.clone());
                }
                t.generation = old.generation + 1;
                t.created = old.created.clone();
                *v
            }
            None => 0,
        };
        if state.store.swap_template(&t, version).await? {
            wake();
            return Ok(t);
        }
    }
    Err(ServerError::Conflict(format!(
        "namespacetemplates.paddock.io \"{}\" is being changed by someone else; try again",
        t.name
    )))
}

/// How many namespaces should carry `t`, and how many carry its generation in step.
async fn namespaces_status(
    state: &AppState,
    t: &NamespaceTemplate,
) -> Result<TemplateNamespaces, ServerError> {
    let (mut wanted, mut in_sync, mut failed) = (0, 0, 0);
    let one = std::slice::from_ref(t);
    for (tid, ns) in tenant_namespaces(state).await? {
        if tpl::wanted(one, &tid, &ns).is_empty() {
            continue;
        }
        wanted += 1;
        match tpl::current_stamps(&ns).get(&t.name) {
            Some(s) if s.generation == t.generation && s.in_sync => in_sync += 1,
            Some(s) if !s.in_sync => failed += 1,
            _ => {}
        }
    }
    Ok(TemplateNamespaces {
        wanted,
        in_sync,
        failed,
    })
}
