//! ClusterRole aggregation inside a tenant.
//!
//! A tenant's ClusterRole labelled `rbac.authorization.k8s.io/aggregate-to-admin|edit|view`
//! must add its rules to the tenant's `admin`/`edit`/`view`, never to the platform's. Upstream
//! the label is stored as `paddock.io/aggregate-to-<x>`: the platform's roles select the
//! `rbac.authorization.k8s.io` spelling, which no tenant object carries (the admission guard
//! refuses it on tenant objects, so the tenant identity straight at the apiserver cannot set it
//! either). The tenant's copies of the built-in roles (builtin_roles.rs) select the renamed
//! label and the tenant label, so the upstream aggregation controller fills them from the
//! tenant's roles only. Selectors of a tenant's own aggregating roles are renamed the same way
//! (and confined by the tenant term, selectors.rs). The tenant sees the usual spelling back.

use serde_json::{Map, Value};

use crate::catalog::ResourceInfo;
use crate::error::TranslateError;

/// Label-key prefix of Kubernetes' role aggregation (as the tenant writes and reads it).
pub const AGGREGATE_LABEL_PREFIX: &str = "rbac.authorization.k8s.io/aggregate-to-";
/// The same label as stored upstream on tenant ClusterRoles.
pub const TENANT_AGGREGATE_LABEL_PREFIX: &str = "paddock.io/aggregate-to-";

fn rename(key: &str, from: &str, to: &str) -> Option<String> {
    key.strip_prefix(from).map(|rest| format!("{to}{rest}"))
}

fn rename_keys(m: &mut Map<String, Value>, from: &str, to: &str) {
    if !m.keys().any(|k| k.starts_with(from)) {
        return;
    }
    let old = std::mem::take(m);
    for (k, v) in old {
        let k = rename(&k, from, to).unwrap_or(k);
        m.insert(k, v);
    }
}

/// A tenant ClusterRole's labels, tenant view -> upstream. The upstream spelling is refused
/// (it is paddock's: the tenant's view of it is the `rbac.authorization.k8s.io` one).
pub(crate) fn labels_up(labels: &mut Map<String, Value>) -> Result<(), TranslateError> {
    if let Some(k) = labels
        .keys()
        .find(|k| k.starts_with(TENANT_AGGREGATE_LABEL_PREFIX))
    {
        return Err(TranslateError::forbidden(format!(
            "label {k} is reserved: write {AGGREGATE_LABEL_PREFIX}* to aggregate into this cluster's roles"
        )));
    }
    rename_keys(
        labels,
        AGGREGATE_LABEL_PREFIX,
        TENANT_AGGREGATE_LABEL_PREFIX,
    );
    Ok(())
}

/// Upstream -> tenant view of a ClusterRole's labels.
pub(crate) fn labels_down(labels: &mut Map<String, Value>) {
    rename_keys(
        labels,
        TENANT_AGGREGATE_LABEL_PREFIX,
        AGGREGATE_LABEL_PREFIX,
    );
}

fn selector_keys(sel: &mut Value, from: &str, to: &str) {
    if let Some(Value::Object(ml)) = sel.get_mut("matchLabels") {
        rename_keys(ml, from, to);
    }
    if let Some(Value::Array(exprs)) = sel.get_mut("matchExpressions") {
        for e in exprs {
            if let Some(Value::String(k)) = e.get_mut("key")
                && let Some(n) = rename(k, from, to)
            {
                *k = n;
            }
        }
    }
}

/// An aggregationRule's ClusterRole selector, tenant view -> upstream (keys only; the tenant
/// term is added by `selector_up`).
pub(crate) fn role_selector_up(sel: &mut Value) -> Result<(), TranslateError> {
    let mut bad = None;
    if let Some(Value::Object(ml)) = sel.get("matchLabels") {
        bad = ml
            .keys()
            .find(|k| k.starts_with(TENANT_AGGREGATE_LABEL_PREFIX))
            .cloned();
    }
    if let Some(Value::Array(exprs)) = sel.get("matchExpressions") {
        bad = bad.or_else(|| {
            exprs
                .iter()
                .filter_map(|e| e.get("key").and_then(Value::as_str))
                .find(|k| k.starts_with(TENANT_AGGREGATE_LABEL_PREFIX))
                .map(str::to_owned)
        });
    }
    if let Some(k) = bad {
        return Err(TranslateError::forbidden(format!(
            "selectors on label {k} are not allowed: select {AGGREGATE_LABEL_PREFIX}* instead"
        )));
    }
    selector_keys(sel, AGGREGATE_LABEL_PREFIX, TENANT_AGGREGATE_LABEL_PREFIX);
    Ok(())
}

/// The key of one term of a tenant's label selector (`-l`) on ClusterRoles, tenant view ->
/// upstream: the aggregation labels are stored renamed (above), so a term on them is renamed
/// too; a term on the upstream spelling is refused, as writing it is (the tenant's roles never
/// carry it in the tenant's view).
/// `None`: the key is kept (and for any other kind).
pub(crate) fn selector_term_key_up(
    info: &ResourceInfo,
    key: &str,
) -> Result<Option<String>, TranslateError> {
    if info.upstream_group != "rbac.authorization.k8s.io" || info.resource != "clusterroles" {
        return Ok(None);
    }
    if key.starts_with(TENANT_AGGREGATE_LABEL_PREFIX) {
        return Err(TranslateError::forbidden(format!(
            "label selector on {key} is not allowed: the label is reserved; select {AGGREGATE_LABEL_PREFIX}* instead"
        )));
    }
    Ok(rename(
        key,
        AGGREGATE_LABEL_PREFIX,
        TENANT_AGGREGATE_LABEL_PREFIX,
    ))
}

/// Upstream -> tenant view of an aggregationRule's selector keys.
pub(crate) fn role_selector_down(sel: &mut Value) {
    selector_keys(sel, TENANT_AGGREGATE_LABEL_PREFIX, AGGREGATE_LABEL_PREFIX);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_and_selectors_round_trip() {
        let mut l =
            json!({"a": "1", "rbac.authorization.k8s.io/aggregate-to-edit": "true", "z": "2"});
        labels_up(l.as_object_mut().unwrap()).unwrap();
        assert_eq!(
            l.to_string(),
            r#"{"a":"1","paddock.io/aggregate-to-edit":"true","z":"2"}"#
        );
        labels_down(l.as_object_mut().unwrap());
        assert_eq!(l["rbac.authorization.k8s.io/aggregate-to-edit"], "true");
        let mut own = json!({"paddock.io/aggregate-to-view": "true"});
        assert!(labels_up(own.as_object_mut().unwrap()).is_err());

        let mut s = json!({"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
            "matchExpressions": [{"key": "rbac.authorization.k8s.io/aggregate-to-edit", "operator": "Exists"}]});
        role_selector_up(&mut s).unwrap();
        assert!(!s.to_string().contains("rbac.authorization.k8s.io"));
        role_selector_down(&mut s);
        assert!(!s.to_string().contains("paddock.io"));
        let mut sneaky = json!({"matchLabels": {"paddock.io/aggregate-to-view": "true"}});
        assert!(role_selector_up(&mut sneaky).is_err());
    }
}
