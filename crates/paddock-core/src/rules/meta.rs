//! `metadata` (ObjectMeta), the rules every kind shares: namespace, name and generateName,
//! the tenant label, ownerReferences, managedFields.

use serde_json::{Map, Value, json};

use super::modes::{Disposition, UpMode};
use super::refs::{namespace_up, ref_api_version_down, str_of, type_of};
use crate::catalog::context::TenantContext;
use crate::catalog::{Policy, ResourceInfo, Scope};
use crate::error::TranslateError;
use crate::identity::names::{api_version_up, name_down, name_up};
use crate::tenant::{NAMESPACE_NAME_LABEL, TENANT_LABEL};

fn bad(m: impl Into<String>) -> TranslateError {
    TranslateError::BadRequest(m.into())
}

pub(crate) fn metadata_up(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    info: &ResourceInfo,
    path_ns: Option<&str>,
    mode: UpMode,
) -> Result<(), TranslateError> {
    let stamp = info.stamps_label();
    if !o.contains_key("metadata") {
        if mode == UpMode::Full && stamp {
            o.insert("metadata".into(), json!({}));
        } else {
            return Ok(());
        }
    }
    let Some(meta) = o.get_mut("metadata") else {
        return Ok(());
    };
    if meta.is_null() {
        if stamp {
            return Err(TranslateError::invalid("metadata cannot be removed"));
        }
        return Ok(());
    }
    let Value::Object(meta) = meta else {
        return Err(bad("metadata must be an object"));
    };
    meta_namespace_up(ctx, meta, info, path_ns)?;
    if info.prefixes_name() {
        meta_names_up(ctx, meta, info)?;
    }
    meta_labels_up(ctx, meta, info, mode)?;
    meta_references_up(ctx, meta)
}

/// `metadata.namespace`: must match the path's, mapped up; dropped on cluster-scoped kinds.
fn meta_namespace_up(
    ctx: &TenantContext,
    meta: &mut Map<String, Value>,
    info: &ResourceInfo,
    path_ns: Option<&str>,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    match info.scope {
        Scope::Namespaced => match meta.get_mut("namespace") {
            Some(Value::String(ns)) if !ns.is_empty() => {
                if let Some(p) = path_ns
                    && p != ns
                {
                    return Err(bad(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                *ns = namespace_up(t, ns)?;
            }
            Some(Value::String(_) | Value::Null) | None => {}
            Some(_) => return Err(bad("metadata.namespace must be a string")),
        },
        Scope::Cluster => {
            // The apiserver clears it for cluster-scoped kinds; clearing it here keeps a
            // tenant's namespace name from travelling upstream at all.
            if matches!(meta.get("namespace"), Some(Value::String(s)) if !s.is_empty()) {
                meta.remove("namespace");
            }
        }
    }
    Ok(())
}

/// `metadata.name` and `generateName` of a kind whose names are prefixed.
fn meta_names_up(
    ctx: &TenantContext,
    meta: &mut Map<String, Value>,
    info: &ResourceInfo,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    if let Some(Value::String(n)) = meta.get_mut("name")
        && !n.is_empty()
    {
        *n = name_up(t, info, n)?;
    }
    if let Some(Value::String(g)) = meta.get_mut("generateName")
        && !g.is_empty()
    {
        if info.is_crd() {
            return Err(TranslateError::invalid(
                "custom resource definitions cannot use generateName",
            ));
        }
        *g = t.upstream_name(g);
    }
    Ok(())
}

/// `metadata.labels`: the tenant label is reserved, stamped where the kind carries it.
fn meta_labels_up(
    ctx: &TenantContext,
    meta: &mut Map<String, Value>,
    info: &ResourceInfo,
    mode: UpMode,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    let stamp = info.stamps_label();
    let is_namespace = info.upstream_group.is_empty() && info.kind == "Namespace";
    let is_cluster_role = is_cluster_role(info);
    let force_stamp = mode == UpMode::Full
        || meta.get("$patch").and_then(Value::as_str) == Some("replace")
        || meta
            .get("labels")
            .and_then(|l| l.get("$patch"))
            .and_then(Value::as_str)
            == Some("replace");
    match meta.get_mut("labels") {
        Some(Value::Object(labels)) => {
            if labels.contains_key(TENANT_LABEL) {
                return Err(TranslateError::forbidden(format!(
                    "label {TENANT_LABEL} is reserved and cannot be set"
                )));
            }
            if is_namespace && let Some(Value::String(v)) = labels.get_mut(NAMESPACE_NAME_LABEL) {
                *v = namespace_up(t, v)?;
            }
            if is_cluster_role {
                super::aggregate::labels_up(labels)?;
            }
            if stamp && force_stamp {
                labels.insert(TENANT_LABEL.into(), Value::String(t.as_str().into()));
            }
        }
        Some(Value::Null) if stamp => {
            if mode == UpMode::Full {
                meta.insert("labels".into(), json!({TENANT_LABEL: t.as_str()}));
            } else {
                return Err(TranslateError::invalid(format!(
                    "metadata.labels cannot be removed as a whole on this kind (it carries {TENANT_LABEL}); remove labels one by one"
                )));
            }
        }
        None if stamp && force_stamp => {
            meta.insert("labels".into(), json!({TENANT_LABEL: t.as_str()}));
        }
        Some(Value::Null) | None => {}
        Some(_) => return Err(bad("metadata.labels must be an object")),
    }
    Ok(())
}

/// `metadata.ownerReferences`, and the apiVersions in `managedFields` (echoed back on update).
fn meta_references_up(
    ctx: &TenantContext,
    meta: &mut Map<String, Value>,
) -> Result<(), TranslateError> {
    if let Some(v) = meta.get_mut("ownerReferences") {
        match v {
            Value::Array(refs) => {
                for r in refs {
                    owner_ref_up(ctx, r)?;
                }
            }
            Value::Null => {}
            _ => return Err(bad("metadata.ownerReferences must be an array")),
        }
    }
    // managedFields (echoed back on update)
    if let Some(Value::Array(mf)) = meta.get_mut("managedFields") {
        for e in mf {
            if let Some(Value::String(av)) = e.get_mut("apiVersion") {
                *av = api_version_up(ctx, av);
            }
        }
    }
    Ok(())
}

fn owner_ref_up(ctx: &TenantContext, r: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(m) = r else {
        return Err(bad("ownerReferences entries must be objects"));
    };
    let (av, kind) = type_of(m);
    let (Some(av), Some(kind)) = (av, kind) else {
        // A strategic-merge element addressed by uid only (e.g. `$patch: delete`) names nothing.
        if m.contains_key("name") {
            return Err(bad("ownerReferences entries must have apiVersion and kind"));
        }
        return Ok(());
    };
    let info = ctx
        .catalog
        .resolve_kind(&ctx.tenant, &av, &kind)
        .ok_or_else(|| {
            TranslateError::invalid(format!("ownerReferences: unknown kind {kind:?} in {av:?}"))
        })?;
    if info.policy == Policy::Forbidden {
        return Err(TranslateError::forbidden(format!(
            "ownerReferences: {kind} objects are not available to tenants of this cluster"
        )));
    }
    m.insert(
        "apiVersion".into(),
        Value::String(info.upstream_api_version()),
    );
    if info.prefixes_name()
        && let Some(Value::String(n)) = m.get_mut("name")
    {
        *n = name_up(&ctx.tenant, &info, n)?;
    }
    if let Some(Value::String(n)) = m.get_mut("name")
        && let Some(up) = super::apiservice::object_name_up(ctx, &info, n)
    {
        *n = up;
    }
    Ok(())
}

pub(crate) fn metadata_down(
    ctx: &TenantContext,
    o: &mut Map<String, Value>,
    info: &ResourceInfo,
) -> Result<Disposition, TranslateError> {
    let t = &ctx.tenant;
    let Some(Value::Object(meta)) = o.get_mut("metadata") else {
        return Ok(Disposition::Keep);
    };
    if info.is_review() {
        // Answers to the tenant's own request: never dropped, only un-prefixed.
        if let Some(Value::String(ns)) = meta.get_mut("namespace")
            && let Some(s) = t.strip(ns)
        {
            *ns = s.to_owned();
        }
        return Ok(Disposition::Keep);
    }
    match info.scope {
        Scope::Namespaced => {
            if let Some(Value::String(ns)) = meta.get_mut("namespace")
                && !ns.is_empty()
            {
                match t.strip(ns) {
                    Some(s) => *ns = s.to_owned(),
                    None => return Ok(Disposition::Drop),
                }
            }
        }
        Scope::Cluster => {
            if info.prefixes_name() {
                if let Some(Value::String(n)) = meta.get_mut("name") {
                    match name_down(t, info, n) {
                        Some(s) => *n = s,
                        None => return Ok(Disposition::Drop),
                    }
                }
                let label = meta
                    .get("labels")
                    .and_then(|l| l.get(TENANT_LABEL))
                    .and_then(Value::as_str);
                if label.is_some_and(|l| l != t.as_str()) {
                    return Ok(Disposition::Drop);
                }
                if let Some(Value::String(g)) = meta.get_mut("generateName")
                    && let Some(s) = t.strip(g)
                {
                    *g = s.to_owned();
                }
            }
        }
    }
    // labels: hide the tenant label, un-map the namespace name label.
    let mut now_empty = false;
    if let Some(Value::Object(labels)) = meta.get_mut("labels") {
        if labels.shift_remove(TENANT_LABEL).is_some() && labels.is_empty() {
            now_empty = true;
        }
        if is_cluster_role(info) {
            super::aggregate::labels_down(labels);
        }
        if info.upstream_group.is_empty()
            && info.kind == "Namespace"
            && let Some(Value::String(v)) = labels.get_mut(NAMESPACE_NAME_LABEL)
            && let Some(s) = t.strip(v)
        {
            *v = s.to_owned();
        }
    }
    if now_empty {
        meta.shift_remove("labels");
    }
    if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
        for r in refs {
            owner_ref_down(ctx, r)?;
        }
    }
    if let Some(Value::Array(mf)) = meta.get_mut("managedFields") {
        for e in mf {
            let Value::Object(e) = e else { continue };
            if let Some(Value::String(av)) = e.get_mut("apiVersion") {
                *av = ref_api_version_down(&ctx.tenant, av);
            }
            if let Some(Value::Object(labels)) = e
                .get_mut("fieldsV1")
                .and_then(|f| f.get_mut("f:metadata"))
                .and_then(|m| m.get_mut("f:labels"))
            {
                labels.shift_remove(&format!("f:{TENANT_LABEL}"));
            }
        }
    }
    Ok(Disposition::Keep)
}

fn owner_ref_down(ctx: &TenantContext, r: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(m) = r else {
        return Ok(());
    };
    let (av, kind) = (str_of(m, "apiVersion"), str_of(m, "kind"));
    let info = ctx.catalog.resolve_upstream_kind(&ctx.tenant, &av, &kind);
    if let Some(info) = info.as_ref().filter(|i| i.prefixes_name())
        && let Some(Value::String(n)) = m.get_mut("name")
        && let Some(s) = name_down(&ctx.tenant, info, n)
    {
        *n = s;
    }
    // An APIService's name: its group part mapped, or redacted when it is not the tenant's to see.
    if info.as_ref().is_some_and(super::apiservice::names_by_rule)
        && let Some(Value::String(n)) = m.get_mut("name")
    {
        *n = super::apiservice::name_down(ctx, n).unwrap_or_else(|| super::text::text_down(ctx, n));
    }
    if let Some(Value::String(a)) = m.get_mut("apiVersion") {
        *a = ref_api_version_down(&ctx.tenant, a);
    }
    Ok(())
}

/// ClusterRoles carry aggregation labels, renamed upstream (rules/aggregate.rs).
fn is_cluster_role(info: &ResourceInfo) -> bool {
    info.upstream_group == "rbac.authorization.k8s.io" && info.kind == "ClusterRole"
}
