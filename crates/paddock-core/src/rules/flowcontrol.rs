//! Tenant FlowSchemas and PriorityLevelConfigurations (API Priority and Fairness). A tenant
//! writes both kinds as a cluster admin would; upstream they are confined so
//! that they can only ever act on the tenant's own requests and never take seats from anyone:
//!
//! - a FlowSchema's subjects are mapped into the tenant as RBAC subjects are (users and groups
//!   `paddock:<tid>:*`, service-account namespaces prefixed, `system:authenticated` to the
//!   group every identity of the tenant carries, `paddock:tenant:<tid>`), so whatever its
//!   `matchingPrecedence` it matches only the tenant's requests;
//! - its `priorityLevelConfiguration.name` is prefixed like every tenant cluster-scoped name,
//!   so it sends them only to the tenant's own levels (`exempt` or `global-default` become a
//!   dangling `<tid>-exempt`, which the apiserver skips);
//! - a tenant PriorityLevelConfiguration may not be `Exempt`, and its
//!   `nominalConcurrencyShares` is held at 0 upstream (the tenant's value is kept in the
//!   annotation [`SHARES_ANNOTATION`] and shown back): it owns no seats of the apiserver, so it
//!   can never shrink another level's share, and with nothing nominal it has nothing to lend or
//!   borrow against.
//!
//! The admission guard (`guard::flowcontrol_guard`) holds the same lines upstream.

use serde_json::{Map, Value};

use super::modes::UpMode;
use super::refs::namespace_up;
use crate::error::TranslateError;
use crate::identity::{map_group_down, map_group_up, map_user_down, map_user_up, tenant_group};
use crate::tenant::TenantId;

/// Where a tenant PriorityLevelConfiguration's `nominalConcurrencyShares` is kept upstream.
pub const SHARES_ANNOTATION: &str = "paddock.io/nominal-concurrency-shares";

/// The v1 default of `nominalConcurrencyShares` when a Limited level leaves it out.
const DEFAULT_SHARES: i64 = 30;

const ALL_USERS: &str = "system:authenticated";

fn refuse_everyone(what: &str) -> TranslateError {
    TranslateError::forbidden(format!(
        "{what} cannot be used in this cluster: a FlowSchema matches only this cluster's own \
         identities; use the group {ALL_USERS} for all of them"
    ))
}

/// A FlowSchema's `subjects` (one list), up.
pub(crate) fn subjects_up(t: &TenantId, v: &mut Value) -> Result<(), TranslateError> {
    let Value::Array(subjects) = v else {
        return Ok(());
    };
    for s in subjects {
        let Value::Object(s) = s else {
            return Err(TranslateError::bad("subjects entries must be objects"));
        };
        // By the member present, not by `kind`: a merge patch may carry the member alone.
        if let Some(n) = member_name(s, "user", "name") {
            *n = match n.as_str() {
                "*" => return Err(refuse_everyone("user \"*\"")),
                u => map_user_up(t, u)?,
            };
        }
        if let Some(n) = member_name(s, "group", "name") {
            *n = match n.as_str() {
                "*" => return Err(refuse_everyone("group \"*\"")),
                ALL_USERS => tenant_group(t),
                g => map_group_up(t, g)?,
            };
        }
        if let Some(ns) = member_name(s, "serviceAccount", "namespace") {
            *ns = match ns.as_str() {
                "*" => return Err(refuse_everyone("service accounts of every namespace")),
                n => namespace_up(t, n)?,
            };
        }
    }
    Ok(())
}

/// A FlowSchema's `subjects`, down: the tenant's names back.
pub(crate) fn subjects_down(t: &TenantId, v: &mut Value) {
    let Value::Array(subjects) = v else { return };
    for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
        if let Some(n) = member_name(s, "user", "name")
            && let Some(u) = map_user_down(t, n)
        {
            *n = u;
        }
        if let Some(n) = member_name(s, "group", "name") {
            if *n == tenant_group(t) {
                *n = ALL_USERS.to_owned();
            } else if let Some(g) = map_group_down(t, n) {
                *n = g;
            }
        }
        if let Some(ns) = member_name(s, "serviceAccount", "namespace")
            && let Some(x) = t.strip(ns)
        {
            *ns = x.to_owned();
        }
    }
}

fn member_name<'a>(
    s: &'a mut Map<String, Value>,
    member: &str,
    key: &str,
) -> Option<&'a mut String> {
    match s.get_mut(member)?.get_mut(key)? {
        Value::String(n) => Some(n),
        _ => None,
    }
}

/// A resource rule's `namespaces`, up: each prefixed; `*` (every namespace) kept, as the
/// subjects already confine the schema to the tenant.
pub(crate) fn namespaces_up(t: &TenantId, v: &mut Value) -> Result<(), TranslateError> {
    let Value::Array(a) = v else { return Ok(()) };
    for ns in a.iter_mut() {
        if let Value::String(s) = ns
            && s != "*"
        {
            *s = namespace_up(t, s)?;
        }
    }
    Ok(())
}

/// Down: own prefix stripped.
pub(crate) fn namespaces_down(t: &TenantId, v: &mut Value) {
    let Value::Array(a) = v else { return };
    for ns in a.iter_mut() {
        if let Value::String(s) = ns
            && let Some(x) = t.strip(s)
        {
            *s = x.to_owned();
        }
    }
}

/// A whole PriorityLevelConfiguration, up: `Exempt` refused; `nominalConcurrencyShares` moved
/// into [`SHARES_ANNOTATION`] and held at 0. A full body without the field gets the v1 default
/// (30) in the annotation, which is what the tenant would read back from a cluster.
pub(crate) fn priority_level_up(o: &mut Value, mode: UpMode) -> Result<(), TranslateError> {
    let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let exempt = spec.get("type").and_then(Value::as_str) == Some("Exempt")
        || spec.get("exempt").is_some_and(|e| !e.is_null());
    if exempt {
        return Err(TranslateError::forbidden(
            "PriorityLevelConfigurations of type Exempt are not allowed in this cluster: an \
             exempt level bypasses the apiserver's priority and fairness for every tenant",
        ));
    }
    let Some(limited) = spec.get_mut("limited").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let shares = match limited.get("nominalConcurrencyShares") {
        Some(Value::Number(n)) => n.as_i64().ok_or_else(|| {
            TranslateError::invalid("spec.limited.nominalConcurrencyShares must be an integer")
        })?,
        // `null` in a patch removes the field, which the apiserver then defaults.
        Some(Value::Null) => DEFAULT_SHARES,
        None if mode == UpMode::Full => DEFAULT_SHARES,
        None => return Ok(()),
        Some(_) => {
            return Err(TranslateError::invalid(
                "spec.limited.nominalConcurrencyShares must be an integer",
            ));
        }
    };
    if !(0..=i64::from(i32::MAX)).contains(&shares) {
        return Err(TranslateError::invalid(
            "spec.limited.nominalConcurrencyShares must be between 0 and 2147483647",
        ));
    }
    limited.insert("nominalConcurrencyShares".into(), Value::from(0));
    let meta = o.as_object_mut().map(|m| {
        m.entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()))
    });
    if let Some(Value::Object(meta)) = meta {
        let ann = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if ann.is_null() {
            *ann = Value::Object(Map::new());
        }
        if let Value::Object(ann) = ann {
            ann.insert(SHARES_ANNOTATION.into(), Value::String(shares.to_string()));
        }
    }
    Ok(())
}

/// A json-patch operation may not address a level's shares or what holds them: its value
/// is translated alone, without the object's metadata, so the annotation could not follow.
pub fn json_patch_reaches_shares(upstream_group: &str, resource: &str, segs: &[&str]) -> bool {
    const SHARES: [&str; 3] = ["spec", "limited", "nominalConcurrencyShares"];
    upstream_group == "flowcontrol.apiserver.k8s.io"
        && resource == "prioritylevelconfigurations"
        && !segs.is_empty()
        && (SHARES.starts_with(segs) || segs.starts_with(&SHARES))
}

/// Down: the tenant's shares back from the annotation, which is removed.
pub(crate) fn priority_level_down(o: &mut Value) {
    let kept = o
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
        .and_then(|a| {
            let v = a.shift_remove(SHARES_ANNOTATION);
            v.and_then(|v| v.as_str().and_then(|s| s.parse::<i64>().ok()))
        });
    if let Some(Value::Object(meta)) = o.get_mut("metadata")
        && meta
            .get("annotations")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
    {
        meta.remove("annotations");
    }
    if let Some(shares) = kept
        && let Some(Value::Object(limited)) = o.get_mut("spec").and_then(|s| s.get_mut("limited"))
    {
        limited.insert("nominalConcurrencyShares".into(), Value::from(shares));
    }
}

#[cfg(test)]
#[path = "flowcontrol_tests.rs"]
mod tests;
