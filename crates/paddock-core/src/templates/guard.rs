//! The admission guard that locks the objects of mandatory templates upstream, so that a
//! tenant cannot change them even bypassing paddock (its identity, or a service account token
//! of one of its namespaces, straight at the apiserver).
//!
//! Two policies, each matching only what it protects (every matching policy costs every
//! matched request its CEL, its `matchConditions` first; docs/performance.md): the lock
//! itself matches only objects that carry (or carried) the lock label, through an
//! `objectSelector`, so an ordinary ConfigMap write of a tenant evaluates nothing; the
//! namespace annotation guard matches only namespace creates and updates.

use serde_json::{Value, json};

use super::model::{LOCKED_LABEL, POLICY, TEMPLATE_KINDS, TEMPLATES_ANNOTATION};

/// Name of the ValidatingAdmissionPolicy (and its binding) of the lock.
pub const TEMPLATES_GUARD_NAME: &str = "paddock-tenant-guard-templates";

/// Name of the policy (and binding) that keeps paddock's record on namespaces.
pub const TEMPLATES_NAMESPACE_GUARD_NAME: &str = "paddock-tenant-guard-templates-namespaces";

/// Requests of a tenant identity (`paddock:tenant:<tid>`), or of a service account of a tenant
/// namespace writing in a namespace of the same tenant (tenant namespaces are `<tid>-<name>`,
/// tenant ids six characters).
fn tenant_condition() -> Value {
    let tenant_sa = "has(request.namespace) && request.namespace.matches('^[a-z][a-z0-9]{5}-') && \
        request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace.substring(0, 7))";
    json!([{
        "name": "tenant-identity",
        "expression": format!("request.userInfo.groups.exists(g, g.startsWith('paddock:tenant:')) || ({tenant_sa})")
    }])
}

fn policy(name: &str, match_constraints: Value, variables: Value, validations: Value) -> Value {
    crate::provision::guard::policy_object(
        name,
        match_constraints,
        tenant_condition(),
        variables,
        validations,
    )
    .1
}

/// The kinds templates stamp, and namespaces, as resource rules by API group.
fn stamped_kinds_rules() -> Vec<Value> {
    let mut groups: Vec<&str> = Vec::new();
    for k in TEMPLATE_KINDS {
        let g = k.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    groups
        .iter()
        .map(|g| {
            let mut res: Vec<&str> = TEMPLATE_KINDS
                .iter()
                .filter(|k| k.api_version.rsplit_once('/').map_or("", |(x, _)| x) == *g)
                .map(|k| k.resource)
                .collect();
            if g.is_empty() {
                res.push("namespaces");
            }
            json!({"apiGroups": [g], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE", "DELETE"], "resources": res})
        })
        .collect()
}

/// The guard policies, `(name, policy)`:
///
/// - [`TEMPLATES_GUARD_NAME`]: for requests of a tenant identity, refuses with 403 any create,
///   change or delete of an object carrying [`LOCKED_LABEL`], and setting or removing that
///   label (forging a lock, or lifting one). Its `objectSelector` (the label exists) matches
///   a request when the object or its old version carries the label (the apiserver matches
///   either), which is every case the rule refuses;
/// - [`TEMPLATES_NAMESPACE_GUARD_NAME`]: refuses any change of a namespace's
///   [`TEMPLATES_ANNOTATION`] (paddock's record of what it stamped).
pub fn templates_guards() -> Vec<(String, Value)> {
    let labels_of = |o: &str| {
        format!(
            "({o} != null && has({o}.metadata) && has({o}.metadata.labels)) ? {o}.metadata.labels : {{}}"
        )
    };
    let ann_of = |o: &str| {
        format!(
            "({o} != null && has({o}.metadata) && has({o}.metadata.annotations)) ? {o}.metadata.annotations : {{}}"
        )
    };
    let lock = policy(
        TEMPLATES_GUARD_NAME,
        json!({
            "resourceRules": stamped_kinds_rules(),
            "objectSelector": {"matchExpressions": [{"key": LOCKED_LABEL, "operator": "Exists"}]}
        }),
        json!([
            {"name": "newLabels", "expression": labels_of("object")},
            {"name": "oldLabels", "expression": labels_of("oldObject")},
            {"name": "template", "expression": format!("'{LOCKED_LABEL}' in variables.oldLabels && 'paddock.io/template' in variables.oldLabels ? variables.oldLabels['paddock.io/template'] : ''")}
        ]),
        json!([
            {"expression": format!("!('{LOCKED_LABEL}' in variables.oldLabels) && !('{LOCKED_LABEL}' in variables.newLabels)"),
             "messageExpression": format!("variables.template != '' ? \
                'paddock: policy {POLICY}: this object is stamped by mandatory namespace template ' + variables.template + ' and is locked: it can be read, not changed or deleted' : \
                'paddock: policy {POLICY}: the {LOCKED_LABEL} label belongs to the platform and cannot be set or removed'"),
             "reason": "Forbidden"}
        ]),
    );
    let a = TEMPLATES_ANNOTATION;
    let namespaces = policy(
        TEMPLATES_NAMESPACE_GUARD_NAME,
        json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"], "resources": ["namespaces"]}]}),
        json!([
            {"name": "newAnn", "expression": ann_of("object")},
            {"name": "oldAnn", "expression": ann_of("oldObject")}
        ]),
        json!([
            {"expression": format!("('{a}' in variables.newAnn) == ('{a}' in variables.oldAnn) && (!('{a}' in variables.newAnn) || variables.newAnn['{a}'] == variables.oldAnn['{a}'])"),
             "message": format!("paddock: policy {POLICY}: the {a} annotation is written by paddock and cannot be set or changed"),
             "reason": "Forbidden"}
        ]),
    );
    vec![
        (TEMPLATES_GUARD_NAME.to_owned(), lock),
        (TEMPLATES_NAMESPACE_GUARD_NAME.to_owned(), namespaces),
    ]
}
