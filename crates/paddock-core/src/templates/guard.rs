//! The admission guard that locks the objects of mandatory templates upstream, so that a
//! tenant cannot change them even bypassing paddock (its identity, or a service account token
//! of one of its namespaces, straight at the apiserver).

use serde_json::{Value, json};

use super::model::{LOCKED_LABEL, POLICY, TEMPLATE_KINDS, TEMPLATES_ANNOTATION};

/// Name of the ValidatingAdmissionPolicy (and its binding).
pub const TEMPLATES_GUARD_NAME: &str = "paddock-tenant-guard-templates";

/// The policy: for requests of a tenant identity (`paddock:tenant:<tid>`) or of a service
/// account of a tenant namespace writing in a tenant namespace, refuses with 403
///
/// - any create, change or delete of an object carrying [`LOCKED_LABEL`], and setting or
///   removing that label (forging a lock, or lifting one);
/// - any change of a namespace's [`TEMPLATES_ANNOTATION`] (paddock's record of what it
///   stamped).
///
/// It matches only the kinds templates stamp and namespaces (each matching policy costs every
/// matched request its CEL; docs/performance.md).
pub fn templates_guard() -> (String, Value) {
    let mut groups: Vec<&str> = Vec::new();
    for k in TEMPLATE_KINDS {
        let g = k.api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let rules: Vec<Value> = groups
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
        .collect();
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
    // A service account of one of the tenant's namespaces writing in a namespace of the same
    // tenant (tenant namespaces are `<tid>-<name>`, tenant ids six characters).
    let tenant_sa = "has(request.namespace) && request.namespace.matches('^[a-z][a-z0-9]{5}-') && \
        request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace.substring(0, 7))";
    let a = TEMPLATES_ANNOTATION;
    (
        TEMPLATES_GUARD_NAME.to_string(),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": TEMPLATES_GUARD_NAME, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": rules},
                "matchConditions": [{
                    "name": "tenant-identity",
                    "expression": format!("request.userInfo.groups.exists(g, g.startsWith('paddock:tenant:')) || ({tenant_sa})")
                }],
                "variables": [
                    {"name": "newLabels", "expression": labels_of("object")},
                    {"name": "oldLabels", "expression": labels_of("oldObject")},
                    {"name": "newAnn", "expression": ann_of("object")},
                    {"name": "oldAnn", "expression": ann_of("oldObject")},
                    {"name": "template", "expression": format!("'{LOCKED_LABEL}' in variables.oldLabels && 'paddock.io/template' in variables.oldLabels ? variables.oldLabels['paddock.io/template'] : ''")}
                ],
                "validations": [
                    {"expression": format!("!('{LOCKED_LABEL}' in variables.oldLabels) && !('{LOCKED_LABEL}' in variables.newLabels)"),
                     "messageExpression": format!("variables.template != '' ? \
                        'paddock: policy {POLICY}: this object is stamped by mandatory namespace template ' + variables.template + ' and is locked: it can be read, not changed or deleted' : \
                        'paddock: policy {POLICY}: the {LOCKED_LABEL} label belongs to the platform and cannot be set or removed'"),
                     "reason": "Forbidden"},
                    {"expression": format!("request.resource.resource != 'namespaces' || request.operation == 'DELETE' || \
                        (('{a}' in variables.newAnn) == ('{a}' in variables.oldAnn) && (!('{a}' in variables.newAnn) || variables.newAnn['{a}'] == variables.oldAnn['{a}']))"),
                     "message": format!("paddock: policy {POLICY}: the {a} annotation is written by paddock and cannot be set or changed"),
                     "reason": "Forbidden"}
                ]
            }
        }),
    )
}
