//! Review objects: access reviews' resourceAttributes and identities, rules reviews' status,
//! SelfSubjectReview's userInfo.

use serde_json::{Value, json};

use super::rbac::{group_down, rule_resource_infos};
use super::refs::{namespace_up, str_of};
use super::text::REDACTED;
use crate::context::TenantContext;
use crate::error::TranslateError;
use crate::identity::{
    map_group_down, map_group_up, map_user_down, map_user_info_group_down, map_user_up,
    tenant_group,
};
use crate::names::{name_down, name_up};
use crate::tenant::{TENANT_LABEL, TenantId};

pub(crate) fn resource_attributes_up(
    ctx: &TenantContext,
    ra: &mut Value,
) -> Result<(), TranslateError> {
    let t = &ctx.tenant;
    let Value::Object(ra) = ra else { return Ok(()) };
    if let Some(Value::String(ns)) = ra.get_mut("namespace")
        && !ns.is_empty()
    {
        *ns = namespace_up(t, ns)?;
    }
    let group = str_of(ra, "group");
    let resource = str_of(ra, "resource");
    if let Some(Value::String(n)) = ra.get_mut("name")
        && !n.is_empty()
        && let Some(info) = ctx.catalog.resolve_any_version(t, &group, &resource)
        && info.prefixes_name()
    {
        *n = name_up(t, &info, n)?;
    }
    if let Some(Value::String(g)) = ra.get_mut("group") {
        *g = ctx.catalog.rule_group_up(t, g);
    }
    Ok(())
}

pub(crate) fn resource_attributes_down(ctx: &TenantContext, ra: &mut Value) {
    let t = &ctx.tenant;
    let Value::Object(ra) = ra else { return };
    let group = str_of(ra, "group");
    let resource = str_of(ra, "resource");
    if let Some(Value::String(ns)) = ra.get_mut("namespace")
        && let Some(s) = t.strip(ns)
    {
        *ns = s.to_owned();
    }
    if let Some(info) = ctx
        .catalog
        .resolve_upstream_any_version(t, &group, &resource)
        && info.prefixes_name()
        && let Some(Value::String(n)) = ra.get_mut("name")
        && let Some(d) = name_down(t, &info, n)
    {
        *n = d;
    }
    if let Some(g) = ra.get_mut("group") {
        group_down(ctx, g);
    }
}

/// The user, groups and extra of a (Local)SubjectAccessReview's spec.
pub(crate) fn identity_up(t: &TenantId, spec: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(spec) = spec else {
        return Ok(());
    };
    let mut tenant_user = false;
    let mut service_account = false;
    if let Some(Value::String(u)) = spec.get_mut("user") {
        service_account = u.starts_with("system:serviceaccount:");
        tenant_user = !service_account;
        *u = map_user_up(t, u)?;
    }
    if let Some(Value::Array(gs)) = spec.get_mut("groups") {
        for g in gs.iter_mut() {
            if let Value::String(s) = g {
                // Groups every tenant identity (every service account) really carries upstream,
                // as `kubectl --as-group` accepts them (impersonate.rs): asking with them asks
                // about the identity as it is. Alone, without a user, the second would ask about
                // every service account of the cluster.
                let universal = s == "system:authenticated"
                    || (service_account && s == "system:serviceaccounts");
                if !universal {
                    *s = map_group_up(t, s)?;
                }
            }
        }
    }
    if let Some(Value::Object(extra)) = spec.get_mut("extra")
        && extra.contains_key(TENANT_LABEL)
    {
        return Err(TranslateError::forbidden(format!(
            "extra {TENANT_LABEL} is reserved"
        )));
    }
    // Upstream, a tenant user always carries these; without them the review would answer for
    // an identity that cannot exist.
    if tenant_user {
        let gs = spec
            .entry("groups")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(gs) = gs {
            for g in [tenant_group(t), "system:authenticated".to_owned()] {
                if !gs.iter().any(|x| x.as_str() == Some(g.as_str())) {
                    gs.push(Value::String(g));
                }
            }
        }
        let extra = spec.entry("extra").or_insert_with(|| json!({}));
        if let Value::Object(extra) = extra {
            extra.insert(TENANT_LABEL.into(), json!([t.as_str()]));
        }
    }
    Ok(())
}

/// Inverse of [`identity_up`]: identities mapped down, foreign groups and the additions removed.
pub(crate) fn identity_down(t: &TenantId, spec: &mut Value) {
    let Value::Object(spec) = spec else { return };
    if let Some(Value::String(u)) = spec.get_mut("user") {
        *u = map_user_down(t, u).unwrap_or_else(|| REDACTED.to_owned());
    }
    if let Some(gs) = spec.get_mut("groups") {
        map_or_drop(gs, &|s| map_group_down(t, s));
    }
    let mut drop_extra = false;
    if let Some(Value::Object(extra)) = spec.get_mut("extra") {
        extra.shift_remove(TENANT_LABEL);
        drop_extra = extra.is_empty();
    }
    if drop_extra {
        spec.shift_remove("extra");
    }
}

/// A SelfSubjectRulesReview's `status.resourceRules`: names and groups the tenant's, rules on
/// groups the tenant cannot see removed.
pub(crate) fn rules_review_status_down(ctx: &TenantContext, rules: &mut Value) {
    let t = &ctx.tenant;
    let Value::Array(rules) = rules else { return };
    for rule in rules {
        let Value::Object(rule) = rule else { continue };
        if let Ok(Some(info)) = rule_resource_infos(ctx, rule, true)
            && let Some(Value::Array(names)) = rule.get_mut("resourceNames")
        {
            for n in names {
                if let Value::String(s) = n
                    && let Some(d) = name_down(t, &info, s)
                {
                    *s = d;
                }
            }
        }
        if let Some(Value::Array(groups)) = rule.get_mut("apiGroups") {
            groups.retain_mut(|g| match g {
                Value::String(s) => match ctx.catalog.rule_group_down(t, s) {
                    Some(d) => {
                        *s = d;
                        true
                    }
                    None => false,
                },
                _ => true,
            });
        }
    }
}

pub(crate) fn user_info_down(t: &TenantId, ui: &mut Value) {
    let Value::Object(ui) = ui else { return };
    if let Some(Value::String(u)) = ui.get_mut("username") {
        *u = map_user_down(t, u).unwrap_or_else(|| REDACTED.to_owned());
    }
    if let Some(gs) = ui.get_mut("groups") {
        map_or_drop(gs, &|s| map_user_info_group_down(t, s));
    }
    if let Some(Value::Object(extra)) = ui.get_mut("extra") {
        extra.shift_remove(TENANT_LABEL);
    }
}

/// A list of strings mapped down; entries that do not map (not the tenant's) are dropped.
fn map_or_drop(list: &mut Value, f: &dyn Fn(&str) -> Option<String>) {
    if let Value::Array(a) = list {
        a.retain_mut(|g| match g {
            Value::String(s) => match f(s) {
                Some(d) => {
                    *s = d;
                    true
                }
                None => false,
            },
            _ => false,
        });
    }
}
