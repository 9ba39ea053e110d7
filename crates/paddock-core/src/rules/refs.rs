//! Rules for fields that name one thing: namespaces, volume names, object references, webhook
//! client configs, CRD groups and apiVersions.

use serde_json::{Map, Value};

use super::modes::Disposition;
use crate::catalog::context::TenantContext;
use crate::catalog::{Policy, join_api_version, split_api_version};
use crate::error::TranslateError;
use crate::identity::names::is_dns_label;
use crate::identity::names::{
    api_version_up, check_crd_group, name_down, name_up, resolve_ref_kind,
};
use crate::tenant::{NameKind, TenantId, check_prefixed_len, looks_tenant_prefixed};

/// A namespace name the tenant wrote -> upstream (checked: a DNS label that still fits).
pub(crate) fn namespace_up(t: &TenantId, ns: &str) -> Result<String, TranslateError> {
    if !is_dns_label(ns) {
        return Err(TranslateError::invalid(format!(
            "{ns:?} is not a valid namespace name"
        )));
    }
    check_prefixed_len(NameKind::Namespace, ns)?;
    Ok(t.upstream_name(ns))
}

/// [`Holds::Namespace`](crate::rules::schema::Holds::Namespace): one namespace (empty = none), or a
/// list of them (each must be a namespace).
pub(crate) fn namespaces_up(t: &TenantId, v: &mut Value) -> Result<(), TranslateError> {
    match v {
        Value::String(ns) if !ns.is_empty() => *ns = namespace_up(t, ns)?,
        Value::Array(a) => {
            for e in a {
                if let Value::String(s) = e {
                    *s = namespace_up(t, s)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// A name upstream -> the tenant's view: the tenant's own prefix removed; another tenant's
/// name redacted (through `text_down`, which leaves platform names such as `kube-system`).
pub(crate) fn name_or_redacted(ctx: &TenantContext, s: &mut String) {
    match ctx.tenant.strip(s) {
        Some(x) => *s = x.to_owned(),
        None => *s = super::text::text_down(ctx, s),
    }
}

/// Namespaces and volume names down.
pub(crate) fn names_down(ctx: &TenantContext, v: &mut Value) {
    let strip = |s: &mut String| name_or_redacted(ctx, s);
    match v {
        Value::String(s) => strip(s),
        Value::Array(a) => {
            for e in a {
                if let Value::String(s) = e {
                    strip(s);
                }
            }
        }
        _ => {}
    }
}

/// Dynamically provisioned volumes are named `pvc-<uid>` by the upstream provisioner and are
/// not the tenant's objects; a bound claim keeps referring to them by that name.
fn is_provisioned_volume_name(s: &str) -> bool {
    s.strip_prefix("pvc-").is_some_and(|u| {
        u.len() == 36
            && u.char_indices().all(|(i, c)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    c == '-'
                } else {
                    c.is_ascii_hexdigit()
                }
            })
    })
}

pub(crate) fn volume_name_up(t: &TenantId, v: &mut Value) -> Result<(), TranslateError> {
    if let Value::String(s) = v
        && !s.is_empty()
        && !is_provisioned_volume_name(s)
    {
        check_prefixed_len(NameKind::DnsSubdomain, s)?;
        *s = t.upstream_name(s);
    }
    Ok(())
}

/// ObjectReference (Event involvedObject/related/regarding, Endpoints targetRef).
pub(crate) fn objref_up(ctx: &TenantContext, r: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(m) = r else { return Ok(()) };
    let t = &ctx.tenant;
    if let Some(Value::String(ns)) = m.get_mut("namespace")
        && !ns.is_empty()
    {
        *ns = namespace_up(t, ns)?;
    }
    let (av, kind) = type_of(m);
    let info = kind
        .as_deref()
        .and_then(|k| resolve_ref_kind(ctx, av.as_deref(), k));
    if let Some(info) = &info {
        if info.policy == Policy::Forbidden {
            return Err(TranslateError::forbidden(format!(
                "{} objects are not available to tenants of this cluster",
                info.kind
            )));
        }
        if info.prefixes_name()
            && let Some(Value::String(n)) = m.get_mut("name")
            && !n.is_empty()
        {
            *n = name_up(t, info, n)?;
        }
    }
    if let Some(Value::String(a)) = m.get_mut("apiVersion") {
        *a = api_version_up(ctx, a);
    }
    Ok(())
}

pub(crate) fn objref_down(ctx: &TenantContext, r: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(m) = r else { return Ok(()) };
    let t = &ctx.tenant;
    if let Some(Value::String(ns)) = m.get_mut("namespace") {
        name_or_redacted(ctx, ns);
    }
    let (av, kind) = type_of(m);
    let info = match (av.as_deref(), kind.as_deref()) {
        (Some(av), Some(k)) => ctx.catalog.resolve_upstream_kind(t, av, k),
        (None, Some(k)) => resolve_ref_kind(ctx, None, k),
        _ => None,
    };
    // A namespaced object's name is the same inside the tenant; a prefixed one that is not
    // the tenant's is redacted.
    if let Some(info) = info.filter(|i| i.prefixes_name())
        && let Some(Value::String(n)) = m.get_mut("name")
    {
        *n = name_down(t, &info, n).unwrap_or_else(|| super::text::text_down(ctx, n));
    }
    if let Some(Value::String(a)) = m.get_mut("apiVersion") {
        *a = ref_api_version_down(t, a);
    }
    Ok(())
}

/// A webhook clientConfig (admission webhooks, CRD conversion webhooks).
pub(crate) fn client_config_up(t: &TenantId, cc: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(cc) = cc else { return Ok(()) };
    if cc.get("url").is_some_and(|u| !u.is_null()) {
        return Err(TranslateError::forbidden(
            "webhook clientConfig.url is not allowed in this cluster: use clientConfig.service",
        ));
    }
    if let Some(Value::String(ns)) = cc.get_mut("service").and_then(|s| s.get_mut("namespace")) {
        *ns = namespace_up(t, ns)?;
    }
    Ok(())
}

pub(crate) fn client_config_down(ctx: &TenantContext, cc: &mut Value) {
    if let Some(Value::String(ns)) = cc.get_mut("service").and_then(|s| s.get_mut("namespace")) {
        name_or_redacted(ctx, ns);
    }
}

pub(crate) fn crd_group_up(t: &TenantId, g: &mut Value) -> Result<(), TranslateError> {
    if let Value::String(g) = g {
        check_crd_group(g)?;
        *g = t.upstream_name(g);
    }
    Ok(())
}

/// Another tenant's CRD is not shown.
pub(crate) fn crd_group_down(t: &TenantId, g: &mut Value) -> Disposition {
    if let Value::String(g) = g {
        match t.strip(g) {
            Some(s) => *g = s.to_owned(),
            None => return Disposition::Drop,
        }
    }
    Disposition::Keep
}

/// `apiVersion` of an upstream object, list or reference into the tenant's view: the tenant's
/// own CRD group loses its prefix; another tenant's group is refused (it must never reach the
/// tenant). One function for objects, lists and watch events: the object side once let a
/// foreign group through where the list side refused it; the refusal is the safer of the two.
pub fn api_version_down(tenant: &TenantId, av: &str) -> Result<String, TranslateError> {
    let (g, v) = split_api_version(av);
    if g.is_empty() {
        return Ok(av.to_owned());
    }
    if let Some(own) = tenant.strip(g) {
        Ok(join_api_version(own, v))
    } else if looks_tenant_prefixed(g) {
        Err(TranslateError::Upstream(
            "upstream returned an object of a group outside the tenant".into(),
        ))
    } else {
        Ok(av.to_owned())
    }
}

/// Reads a string member.
pub(crate) fn str_of(m: &Map<String, Value>, k: &str) -> String {
    m.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The apiVersion inside a reference (ownerReferences, managedFields, ObjectReference): own
/// CRD group stripped, another tenant's group redacted, anything else left as it is. Not
/// [`api_version_down`]'s refusal: the object holding the reference is the tenant's (its
/// namespace or name says so), and refusing would fail a whole list over one reference a
/// platform component made (a tenant cannot write one: `ownerReferences` up refuses groups it
/// cannot see). The splice fast path of lists falls back to this rule for such items.
pub(crate) fn ref_api_version_down(tenant: &TenantId, av: &str) -> String {
    let (g, v) = split_api_version(av);
    match tenant.strip(g) {
        Some(own) => join_api_version(own, v),
        None if looks_tenant_prefixed(g) => join_api_version(super::text::REDACTED, v),
        None => av.to_owned(),
    }
}

/// The `apiVersion` and `kind` members of an object or reference.
pub(crate) fn type_of(m: &Map<String, Value>) -> (Option<String>, Option<String>) {
    let get = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    (get("apiVersion"), get("kind"))
}
