//! Review objects: access reviews' resourceAttributes and identities, rules reviews' status,
//! SelfSubjectReview's userInfo.

use serde_json::Value;

use super::rbac::{group_down, rule_resource_infos};
use super::refs::{namespace_up, str_of};
use super::text::REDACTED;
use crate::catalog::context::TenantContext;
use crate::error::TranslateError;
use crate::identity::names::{name_down, name_up};
use crate::identity::{
    map_group_down, map_group_up, map_user_down, map_user_info_group_down, map_user_up,
    tenant_group,
};
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

/// Groups a (Local)SubjectAccessReview may name as they are, whoever the user is.
///
/// `system:authenticated` is every caller's. `system:serviceaccounts` is, in the tenant's
/// cluster, every service account of that cluster: a tenant cannot bind it (RBAC subjects
/// refuse it, `map_group_up`), so the only rights it carries are the platform's bindings to
/// it, which every service account of every tenant really holds upstream (paddock
/// impersonates tenant service accounts with it). Asked as it is, it answers exactly what a
/// tenant service account gets through it, and it can reveal nothing of another tenant: no
/// tenant binding names it, and the review's namespace and other subjects are the tenant's.
/// The conformance SubjectReview test asks a LocalSubjectAccessReview for user `e2e` with the
/// groups of a service account, this one among them.
pub(crate) fn universal_review_group(g: &str) -> bool {
    g == "system:authenticated" || g == "system:serviceaccounts"
}

/// The user, groups and extra of a (Local)SubjectAccessReview's spec.
pub(crate) fn identity_up(t: &TenantId, spec: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(spec) = spec else {
        return Ok(());
    };
    let mut tenant_user = false;
    if let Some(Value::String(u)) = spec.get_mut("user") {
        tenant_user = !u.starts_with("system:serviceaccount:");
        *u = map_user_up(t, u)?;
    }
    if let Some(Value::Array(gs)) = spec.get_mut("groups") {
        for g in gs.iter_mut() {
            if let Value::String(s) = g {
                // Groups every tenant identity (every service account) really carries upstream:
                // asking with them asks about the identity as it is (`universal_review_group`).
                if !universal_review_group(s) {
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
        // `system:serviceaccounts` went up as it is (`identity_up`); `system:authenticated`
        // may have been added there, so it is not shown back.
        map_or_drop(gs, &|s| {
            if s == "system:serviceaccounts" {
                Some(s.to_owned())
            } else {
                map_group_down(t, s)
            }
        });
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

/// The error of a TokenReview answered `authenticated: false` because the token is not one of
/// the tenant's cluster (it may be another tenant's or the platform's: the answer says no more
/// than a cluster says of a token it did not issue).
pub const FOREIGN_TOKEN_ERROR: &str = "invalid bearer token: not a credential of this cluster (paddock: only tokens of this cluster's own service accounts are reviewed)";

/// A TokenReview's `status` (JSON, or lifted from protobuf with `authenticated` as 0/1): a
/// token that authenticates upstream as one of the tenant's own identities (a service account
/// in one of its namespaces) keeps its answer, the user info mapped into the tenant's names.
/// Any other answer becomes `authenticated: false` with no user and paddock's error: a tenant
/// learns nothing about another tenant's or the platform's tokens, not even that they are
/// valid.
pub(crate) fn token_review_status_down(t: &TenantId, status: &mut Value) {
    let Value::Object(st) = status else { return };
    let authenticated = st
        .get("authenticated")
        .is_some_and(|a| a.as_bool() == Some(true) || a.as_i64() == Some(1));
    let own = st
        .get("user")
        .and_then(|u| u.get("username"))
        .and_then(Value::as_str)
        .is_some_and(|u| map_user_down(t, u).is_some());
    if authenticated && own {
        if let Some(ui) = st.get_mut("user") {
            user_info_down(t, ui);
        }
        return;
    }
    // Absent fields are false and empty, in JSON and in protobuf alike. Upstream's own error
    // is replaced too: it may name a platform service account ("... has been deleted").
    st.shift_remove("authenticated");
    st.shift_remove("user");
    st.shift_remove("audiences");
    st.insert("error".into(), Value::String(FOREIGN_TOKEN_ERROR.into()));
}
