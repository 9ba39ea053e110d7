//! Object rules, shared by request and response sides: the entry points that resolve an
//! object's kind and policy, then apply `metadata` and the kind's row of the rule table
//! ([`super::table`]) through the walker ([`super::walk`]), up or down.
//!
//! The rules only touch the fields they know; every other field is kept exactly as it is
//! (serde_json with `preserve_order` keeps key order too).

use serde_json::{Map, Value};

use super::meta::{metadata_down, metadata_up};
use super::modes::{Disposition, UpMode};
use super::refs::type_of;
use super::table::{self};
use super::text::status_down;
use super::walk;
use crate::catalog::context::TenantContext;
use crate::catalog::{Policy, ResourceInfo, Scope, split_api_version};
use crate::error::TranslateError;
use crate::rules::schema::KindRules;
use crate::tenant::tenant_of;

fn bad(m: impl Into<String>) -> TranslateError {
    TranslateError::BadRequest(m.into())
}

// ---------------------------------------------------------------------------------------------
// Up: tenant view -> upstream

// Up: tenant view -> upstream

/// Tenant view -> upstream, for request bodies (create/update, and the object inside apply
/// patches). Refuses names that do not fit after prefixing, unmappable identities, and
/// references to things outside the tenant. Stamps the tenant label on namespaces,
/// cluster-scoped objects and CRDs. `path_namespace` is the namespace from the URL, if any.
pub fn object_up(
    ctx: &TenantContext,
    obj: &mut Value,
    path_namespace: Option<&str>,
) -> Result<(), TranslateError> {
    object_up_with(ctx, obj, None, path_namespace, UpMode::Full)
}

/// [`object_up`] with the resource the URL names (used when the body carries no `kind`, as
/// merge patches usually do) and the completeness of the body.
pub fn object_up_with(
    ctx: &TenantContext,
    obj: &mut Value,
    hint: Option<&ResourceInfo>,
    path_namespace: Option<&str>,
    mode: UpMode,
) -> Result<(), TranslateError> {
    let Value::Object(o) = obj else {
        return Err(bad("request body must be a JSON object"));
    };
    let (av, kind) = type_of(o);
    let info = match (av.as_deref(), kind.as_deref()) {
        (_, Some("DeleteOptions")) => return check_delete_options(o),
        (Some(av), Some(kind)) => body_kind(ctx, av, kind, hint)?,
        (None, None) => hint
            .cloned()
            .ok_or_else(|| bad("request body must have apiVersion and kind"))?,
        _ => {
            return Err(bad(
                "request body must have both apiVersion and kind, or neither",
            ));
        }
    };
    match info.policy {
        // A granted platform kind is written as the platform's (names as they are).
        Policy::TenantOwned | Policy::PlatformGranted => {}
        Policy::SharedReadOnly => {
            return Err(TranslateError::forbidden(format!(
                "{} objects are shared read-only in this cluster",
                info.kind
            )));
        }
        Policy::Forbidden => {
            return Err(TranslateError::forbidden(format!(
                "{} objects are not available to tenants of this cluster",
                info.kind
            )));
        }
    }
    // A top-level `$patch: replace` makes a strategic merge patch a whole object.
    let mode = if o.get("$patch").and_then(Value::as_str) == Some("replace") {
        UpMode::Full
    } else {
        mode
    };
    up_resource(ctx, o, &info, path_namespace, mode)
}

fn check_delete_options(o: &Map<String, Value>) -> Result<(), TranslateError> {
    // DeleteOptions carry preconditions (uid, resourceVersion) and policies, never names.
    if o.contains_key("metadata") && !matches!(o.get("metadata"), Some(Value::Null)) {
        let empty = o
            .get("metadata")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty);
        if !empty {
            return Err(bad("DeleteOptions must not carry metadata"));
        }
    }
    Ok(())
}

/// Kinds that are bodies of subresources and have no resource of their own.
/// The resource of a kind that is the body of a subresource and has no resource of its own.
pub(crate) fn body_kind_info(row: &KindRules, version: &str) -> ResourceInfo {
    ResourceInfo {
        group: row.group.to_owned(),
        version: version.to_owned(),
        resource: String::new(),
        kind: row.kind.to_owned(),
        scope: Scope::Namespaced,
        policy: Policy::TenantOwned,
        verbs: Vec::new(),
        subresources: Vec::new(),
        tenant_crd: false,
        upstream_group: row.group.to_owned(),
        builtin: None,
    }
}

/// Kinds that are bodies of subresources (Scale, Eviction, TokenRequest).
fn subresource_body_kind(group: &str, version: &str, kind: &str) -> Option<ResourceInfo> {
    table::rules_for(group, kind)
        .filter(|r| r.body_of.is_some())
        .map(|r| body_kind_info(r, version))
}

fn body_kind(
    ctx: &TenantContext,
    av: &str,
    kind: &str,
    hint: Option<&ResourceInfo>,
) -> Result<ResourceInfo, TranslateError> {
    let (g, v) = split_api_version(av);
    if let Some(i) = subresource_body_kind(g, v, kind) {
        return Ok(i);
    }
    if kind.ends_with("List") {
        return Err(bad(format!(
            "{kind} cannot be written: send the items one by one"
        )));
    }
    let info = ctx
        .catalog
        .resolve_kind(&ctx.tenant, av, kind)
        .ok_or_else(|| {
            bad(format!(
                "no kind {kind:?} is registered for version {av:?} in this cluster"
            ))
        })?;
    if let Some(h) = hint
        && (h.kind != info.kind || h.group != info.group)
    {
        return Err(bad(format!(
            "the body is a {kind} ({av}), but the URL addresses {}",
            h.resource
        )));
    }
    Ok(info)
}

fn up_resource(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    info: &ResourceInfo,
    path_ns: Option<&str>,
    mode: UpMode,
) -> Result<(), TranslateError> {
    if info.tenant_crd
        && let Some(Value::String(av)) = o.get_mut("apiVersion")
    {
        *av = info.upstream_api_version();
    }
    metadata_up(ctx, o, info, path_ns, mode)?;
    let Some(row) = table::rules_for(&info.upstream_group, &info.kind) else {
        return Ok(());
    };
    let mut v = Value::Object(std::mem::take(o));
    let r = walk::checks(&mut v, row).and_then(|()| walk::fields_up(ctx, &mut v, row.fields, mode));
    if let Value::Object(m) = v {
        *o = m;
    }
    r
}

// ---------------------------------------------------------------------------------------------
// Down: upstream -> tenant view

/// Rewrite one object (any kind, as JSON) from the upstream view into the tenant's view.
/// Returns Drop when the object lies outside the tenant (wrong prefix / label).
pub fn object_down(ctx: &TenantContext, obj: &mut Value) -> Result<Disposition, TranslateError> {
    object_down_as(ctx, obj, None)
}

/// [`object_down`] with the resource the request addressed, for objects that do not carry
/// their own `kind` (items of built-in lists, `PartialObjectMetadata` rows of Tables).
pub fn object_down_as(
    ctx: &TenantContext,
    obj: &mut Value,
    hint: Option<&ResourceInfo>,
) -> Result<Disposition, TranslateError> {
    let (av, kind) = obj.as_object().map(type_of).unwrap_or_default();
    if matches!(
        (av.as_deref(), kind.as_deref()),
        (Some("v1") | None, Some("Status"))
    ) {
        status_down(ctx, obj);
        return Ok(Disposition::Keep);
    }
    let Value::Object(o) = obj else {
        return Ok(Disposition::Keep);
    };
    let info = match (av.as_deref(), kind.as_deref()) {
        (Some(av), Some(k))
            if k.ends_with("List") && o.get("items").is_some_and(Value::is_array) =>
        {
            return list_down(ctx, o, av, k, hint);
        }
        (Some(av), Some(k)) if k != "PartialObjectMetadata" => {
            let (g, v) = split_api_version(av);
            if let Some(i) = subresource_body_kind(g, v, k) {
                Some(i)
            } else if tenant_of(g).is_some() && ctx.tenant.strip(g).is_none() {
                // Another tenant's CRD group.
                return Ok(Disposition::Drop);
            } else {
                ctx.catalog
                    .resolve_upstream_kind(&ctx.tenant, av, k)
                    .or_else(|| hint.cloned())
            }
        }
        _ => hint.cloned(),
    };
    let Some(info) = info else {
        // Not a kind we know: keep it only if its metadata says it is the tenant's.
        return Ok(generic_down(ctx, o));
    };
    match info.policy {
        Policy::Forbidden => return Ok(Disposition::Drop),
        // paddock's own per-tenant objects among the shared kinds (each tenant's FlowSchema)
        // carry the tenant label: plumbing, hidden from every tenant (their names and rules
        // would tell one tenant the others' ids).
        Policy::SharedReadOnly | Policy::PlatformGranted if has_tenant_label(o) => {
            return Ok(Disposition::Drop);
        }
        // Shown as the platform wrote it, but for its kind's own rules where the table has
        // a row (an APIService names a group, which may be a tenant's: rules/apiservice.rs).
        Policy::SharedReadOnly | Policy::PlatformGranted => return kind_rules_down(ctx, o, &info),
        // A platform object among the tenant's own: shown as it is (writes to its name reach
        // only the tenant's own prefixed name).
        Policy::TenantOwned if info.lists_platform_objects() && is_platform_object(o) => {
            return Ok(Disposition::Keep);
        }
        Policy::TenantOwned => {}
    }
    down_resource(ctx, o, &info)
}

/// Neither a tenant's object nor paddock's per-tenant plumbing.
pub(crate) fn is_platform_object(o: &Map<String, Value>) -> bool {
    let labels = o.get("metadata").and_then(|m| m.get("labels"));
    !has_tenant_label(o)
        && labels
            .and_then(|l| l.get(crate::tenant::MANAGED_FOR_LABEL))
            .is_none()
}

fn has_tenant_label(o: &Map<String, Value>) -> bool {
    o.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(crate::tenant::TENANT_LABEL))
        .is_some()
}

fn list_down(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    av: &str,
    kind: &str,
    hint: Option<&ResourceInfo>,
) -> Result<Disposition, TranslateError> {
    let item_kind = kind.trim_end_matches("List");
    let item_info = ctx
        .catalog
        .resolve_upstream_kind(&ctx.tenant, av, item_kind)
        .or_else(|| hint.cloned());
    if let Some(Value::String(a)) = o.get_mut("apiVersion")
        && let Some(i) = &item_info
        && i.tenant_crd
    {
        *a = i.api_version();
    }
    if let Some(Value::Array(items)) = o.get_mut("items") {
        let mut kept = Vec::with_capacity(items.len());
        for mut it in items.drain(..) {
            if object_down_as(ctx, &mut it, item_info.as_ref())? == Disposition::Keep {
                kept.push(it);
            }
        }
        *items = kept;
    }
    // After filtering the count of remaining items is not ours to tell.
    if let Some(Value::Object(m)) = o.get_mut("metadata") {
        m.remove("remainingItemCount");
    }
    Ok(Disposition::Keep)
}

fn generic_down(ctx: &TenantContext, o: &mut Map<String, Value>) -> Disposition {
    let Some(Value::Object(meta)) = o.get_mut("metadata") else {
        return Disposition::Keep;
    };
    if let Some(Value::String(ns)) = meta.get_mut("namespace") {
        if ns.is_empty() {
            return Disposition::Keep;
        }
        return match ctx.tenant.strip(ns) {
            Some(s) => {
                *ns = s.to_owned();
                Disposition::Keep
            }
            None => Disposition::Drop,
        };
    }
    Disposition::Keep
}

fn down_resource(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    info: &ResourceInfo,
) -> Result<Disposition, TranslateError> {
    if info.tenant_crd
        && let Some(Value::String(av)) = o.get_mut("apiVersion")
    {
        *av = info.api_version();
    }
    if metadata_down(ctx, o, info)? == Disposition::Drop {
        return Ok(Disposition::Drop);
    }
    // A sleeping tenant's workloads read as it left them.
    super::asleep::object_as_left(&info.upstream_group, &info.kind, o);
    kind_rules_down(ctx, o, info)
}

/// The field rules of the kind's row in the rule table, if it has one.
fn kind_rules_down(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    info: &ResourceInfo,
) -> Result<Disposition, TranslateError> {
    let Some(row) = table::rules_for(&info.upstream_group, &info.kind) else {
        return Ok(Disposition::Keep);
    };
    let mut v = Value::Object(std::mem::take(o));
    let r = walk::fields_down(ctx, &mut v, row.fields);
    if let Value::Object(m) = v {
        *o = m;
    }
    r
}

#[cfg(test)]
#[path = "object_tests.rs"]
mod tests;
