//! RBAC and admission rules: policy rules (apiGroups, resourceNames), roleRefs, subjects
//! (with a ClusterRoleBinding's shadow form), and admission webhook rules.

use serde_json::{Map, Value};

use super::refs::{namespace_up, str_of};
use crate::catalog::ResourceInfo;
use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::identity::names::{name_down, name_up};
use crate::identity::{
    cluster_shadow, cluster_unshadow, map_group_down, map_group_up, map_user_down, map_user_up,
};
use crate::tenant::{NameKind, TenantId, check_prefixed_len};

fn bad(m: impl Into<String>) -> TranslateError {
    TranslateError::BadRequest(m.into())
}

pub(crate) fn rule_resource_infos(
    ctx: &TenantContext,
    rule: &Map<String, Value>,
    upstream_view: bool,
) -> Result<Option<ResourceInfo>, TranslateError> {
    let strs = |k: &str| -> Vec<String> {
        rule.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let groups = strs("apiGroups");
    let resources = strs("resources");
    let mut prefixed: Option<ResourceInfo> = None;
    let mut plain = false;
    for g in &groups {
        for r in &resources {
            let base = r.split('/').next().unwrap_or(r);
            if g == "*" || base == "*" {
                return Err(TranslateError::invalid(
                    "rules with resourceNames cannot use \"*\" groups or resources in this cluster",
                ));
            }
            let info = if upstream_view {
                ctx.catalog
                    .resolve_upstream_any_version(&ctx.tenant, g, base)
            } else {
                ctx.catalog.resolve_any_version(&ctx.tenant, g, base)
            };
            match info {
                Some(i) if i.prefixes_name() => {
                    if prefixed.as_ref().is_some_and(|p| p.is_crd() != i.is_crd()) {
                        return Err(TranslateError::invalid(
                            "rules with resourceNames cannot mix custom resource definitions with other cluster-scoped kinds",
                        ));
                    }
                    prefixed = Some(i);
                }
                _ => plain = true,
            }
        }
    }
    if prefixed.is_some() && plain {
        return Err(TranslateError::invalid(
            "rules with resourceNames cannot mix tenant cluster-scoped kinds with other kinds; split the rule",
        ));
    }
    Ok(prefixed)
}

pub(crate) fn rules_up(
    ctx: &TenantContext,
    rules: &mut Value,
    cluster: bool,
) -> Result<(), TranslateError> {
    let Value::Array(rules) = rules else {
        return Ok(());
    };
    for rule in rules {
        let Value::Object(rule) = rule else {
            return Err(bad("rules entries must be objects"));
        };
        // resourceNames of cluster-scoped tenant kinds are prefixed; in a Role they name only
        // namespaced objects.
        let has_names = rule
            .get("resourceNames")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if cluster
            && has_names
            && let Some(info) = rule_resource_infos(ctx, rule, false)?
            && let Some(Value::Array(names)) = rule.get_mut("resourceNames")
        {
            for n in names {
                if let Value::String(s) = n {
                    *s = name_up(&ctx.tenant, &info, s)?;
                }
            }
        }
        if let Some(Value::Array(groups)) = rule.get_mut("apiGroups") {
            for g in groups {
                if let Value::String(s) = g {
                    *s = ctx.catalog.rule_group_up(&ctx.tenant, s);
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn role_ref_up(
    t: &TenantId,
    rr: &mut Value,
    cluster_binding: bool,
) -> Result<(), TranslateError> {
    let Value::Object(m) = rr else {
        return Err(bad("roleRef must be an object"));
    };
    if let Some(g) = m.get("apiGroup").and_then(Value::as_str)
        && g != "rbac.authorization.k8s.io"
    {
        return Err(TranslateError::invalid(format!(
            "roleRef.apiGroup {g:?} is not supported"
        )));
    }
    let kind = m
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match (kind.as_str(), cluster_binding) {
        // Always the tenant's ClusterRole, built-in ones included: a RoleBinding to `edit`
        // names the tenant's copy, which aggregates the tenant's own `aggregate-to-edit` roles
        // (builtin_roles.rs), as in a cluster.
        ("ClusterRole", _) => {
            if let Some(Value::String(n)) = m.get_mut("name") {
                check_prefixed_len(NameKind::DnsSubdomain, n)?;
                *n = t.upstream_name(n);
            }
        }
        ("Role", false) => {}
        ("", _) if !m.contains_key("name") => {}
        _ => {
            return Err(TranslateError::invalid(format!(
                "roleRef.kind {kind:?} is not supported here"
            )));
        }
    }
    Ok(())
}

pub(crate) fn subjects_up(
    t: &TenantId,
    subjects: &mut Value,
    cluster_binding: bool,
) -> Result<(), TranslateError> {
    let Value::Array(subjects) = subjects else {
        return Ok(());
    };
    for s in subjects {
        let Value::Object(s) = s else {
            return Err(bad("subjects entries must be objects"));
        };
        let kind = str_of(s, "kind");
        match kind.as_str() {
            "User" => {
                if let Some(Value::String(n)) = s.get_mut("name") {
                    *n = map_user_up(t, n)?;
                }
            }
            "Group" => {
                if let Some(Value::String(n)) = s.get_mut("name") {
                    *n = map_group_up(t, n)?;
                }
            }
            "ServiceAccount" => match s.get_mut("namespace") {
                Some(Value::String(ns)) if !ns.is_empty() => *ns = namespace_up(t, ns)?,
                _ if cluster_binding => {
                    return Err(TranslateError::invalid(
                        "ServiceAccount subjects of a ClusterRoleBinding need a namespace",
                    ));
                }
                _ => {}
            },
            // A ClusterRoleBinding's subjects are stored in the inert shadow form (see
            // `identity::CLUSTER_SHADOW_PREFIX`), so a json-patch of one field cannot be mapped.
            "" if cluster_binding => {
                return Err(TranslateError::invalid(
                    "patch the subjects of a ClusterRoleBinding as whole entries (kind, name, namespace)",
                ));
            }
            // A json-patch on `/subjects/N/namespace` carries the namespace alone; only
            // ServiceAccount subjects have one.
            "" if !s.contains_key("name") => {
                if let Some(Value::String(ns)) = s.get_mut("namespace")
                    && !ns.is_empty()
                {
                    *ns = namespace_up(t, ns)?;
                }
            }
            other => {
                return Err(TranslateError::invalid(format!(
                    "subject kind {other:?} is not supported"
                )));
            }
        }
        if cluster_binding {
            shadow_subject(t, s);
        }
    }
    Ok(())
}

/// A (mapped) subject of a ClusterRoleBinding -> its inert shadow form. ServiceAccounts become
/// shadow Users `paddock:cluster:<tid>:system:serviceaccount:<ns>:<sa>`.
fn shadow_subject(t: &TenantId, s: &mut Map<String, Value>) {
    let kind = s
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let name = s
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match kind.as_str() {
        "User" | "Group" => {
            s.insert("name".into(), Value::String(cluster_shadow(t, &name)));
        }
        "ServiceAccount" => {
            let ns = s
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            s.shift_remove("namespace");
            s.insert("kind".into(), Value::String("User".into()));
            s.insert(
                "apiGroup".into(),
                Value::String("rbac.authorization.k8s.io".into()),
            );
            s.insert(
                "name".into(),
                Value::String(cluster_shadow(
                    t,
                    &format!("system:serviceaccount:{ns}:{name}"),
                )),
            );
        }
        _ => {}
    }
}

/// Inverse of [`shadow_subject`]; false when the subject is not a shadow identity of `t`.
fn unshadow_subject(t: &TenantId, s: &mut Value) -> bool {
    let Value::Object(m) = s else { return false };
    let kind = m
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some(real) = m
        .get("name")
        .and_then(Value::as_str)
        .and_then(|n| cluster_unshadow(t, n))
        .map(str::to_owned)
    else {
        return false;
    };
    if kind == "User"
        && let Some(rest) = real.strip_prefix("system:serviceaccount:")
        && let Some((ns, sa)) = rest.split_once(':')
    {
        m.insert("kind".into(), Value::String("ServiceAccount".into()));
        m.shift_remove("apiGroup");
        m.insert("name".into(), Value::String(sa.to_owned()));
        m.insert("namespace".into(), Value::String(ns.to_owned()));
        return true;
    }
    m.insert("name".into(), Value::String(real));
    true
}

pub(crate) fn role_ref_down(ctx: &TenantContext, rr: &mut Value) {
    if let Value::Object(rr) = rr
        && rr.get("kind").and_then(Value::as_str) == Some("ClusterRole")
        && let Some(Value::String(n)) = rr.get_mut("name")
    {
        super::refs::name_or_redacted(ctx, n);
    }
}

/// A tenant ClusterRoleBinding's subjects are stored in the shadow form; one that is not
/// (written before the shadow form existed, or by someone else) is shown only if it is the
/// tenant's.
pub(crate) fn subjects_down(t: &TenantId, subjects: &mut Value, cluster: bool) {
    if let Value::Array(subjects) = subjects {
        subjects.retain_mut(|s| {
            if cluster {
                unshadow_subject(t, s);
            }
            subject_down(t, s)
        });
    }
}

pub(crate) fn group_down(ctx: &TenantContext, g: &mut Value) {
    if let Value::String(s) = g {
        match ctx.catalog.rule_group_down(&ctx.tenant, s) {
            Some(d) => *s = d,
            // A group the tenant cannot see: another tenant's is not named.
            None => *s = super::text::text_down(ctx, s),
        }
    }
}

pub(crate) fn rules_down(ctx: &TenantContext, rules: &mut Value, cluster: bool) {
    let Value::Array(rules) = rules else {
        return;
    };
    for rule in rules {
        let Value::Object(rule) = rule else { continue };
        if cluster
            && let Ok(Some(info)) = rule_resource_infos(ctx, rule, true)
            && let Some(Value::Array(names)) = rule.get_mut("resourceNames")
        {
            for n in names {
                if let Value::String(s) = n
                    && let Some(d) = name_down(&ctx.tenant, &info, s)
                {
                    *s = d;
                }
            }
        }
        if let Some(Value::Array(groups)) = rule.get_mut("apiGroups") {
            for g in groups {
                group_down(ctx, g);
            }
        }
    }
}

/// Keeps a subject only if it is an identity of this tenant (rewritten to the tenant's name).
fn subject_down(t: &TenantId, s: &mut Value) -> bool {
    let Value::Object(s) = s else { return false };
    let kind = s
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match kind.as_str() {
        "User" | "Group" => {
            let Some(Value::String(n)) = s.get_mut("name") else {
                return false;
            };
            let mapped = if kind == "User" {
                map_user_down(t, n)
            } else {
                map_group_down(t, n)
            };
            match mapped {
                Some(m) => {
                    *n = m;
                    true
                }
                None => false,
            }
        }
        "ServiceAccount" => match s.get_mut("namespace") {
            Some(Value::String(ns)) if !ns.is_empty() => match t.strip(ns) {
                Some(x) => {
                    *ns = x.to_owned();
                    true
                }
                None => false,
            },
            // Empty namespace: the binding's own, which is the tenant's.
            _ => true,
        },
        _ => false,
    }
}

/// namespaceSelector does not apply to cluster-scoped objects, so a rule matching them would
/// see every tenant's cluster-scoped objects. Scope is forced to Namespaced, except for rules
/// on namespaces themselves (which the namespaceSelector does confine).
pub(crate) fn webhook_rules_up(
    ctx: &TenantContext,
    rules: &mut Value,
) -> Result<(), TranslateError> {
    if let Value::Array(rules) = rules {
        for r in rules {
            webhook_rule_up(ctx, r)?;
        }
    }
    Ok(())
}

pub(crate) fn webhook_rules_down(ctx: &TenantContext, rules: &mut Value) {
    let Value::Array(rules) = rules else { return };
    for r in rules {
        if let Some(Value::Array(groups)) = r.get_mut("apiGroups") {
            for g in groups {
                group_down(ctx, g);
            }
        }
    }
}

fn webhook_rule_up(ctx: &TenantContext, r: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(r) = r else { return Ok(()) };
    if let Some(Value::Array(groups)) = r.get_mut("apiGroups") {
        for g in groups {
            if let Value::String(s) = g {
                *s = ctx.catalog.rule_group_up(&ctx.tenant, s);
            }
        }
    }
    let only_namespaces = r
        .get("resources")
        .and_then(Value::as_array)
        .is_some_and(|rs| {
            !rs.is_empty()
                && rs.iter().all(|x| {
                    x.as_str()
                        .is_some_and(|s| s == "namespaces" || s.starts_with("namespaces/"))
                })
        });
    let scope = r
        .get("scope")
        .and_then(Value::as_str)
        .unwrap_or("*")
        .to_owned();
    match scope.as_str() {
        "Namespaced" => {}
        _ if only_namespaces => {}
        "Cluster" => {
            return Err(TranslateError::forbidden(
                "webhook rules with scope Cluster are only allowed for namespaces in this cluster",
            ));
        }
        _ => {
            r.insert("scope".into(), Value::String("Namespaced".into()));
        }
    }
    Ok(())
}
