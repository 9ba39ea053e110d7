//! The admission guard's rules for tenant ValidatingAdmissionPolicies and their bindings (the
//! second wall behind paddock-core's `rules::policy`): a tenant identity writing straight to the
//! apiserver still cannot make a policy act outside its namespaces, put a platform or another
//! tenant's policy in force, or read params it does not own.

use crate::rules::BUILTIN_PARAM_KINDS;
use serde_json::{Value, json};

use crate::provision::{GUARD_NAME, guard_policy, guard_tid_vars};

/// The guard policy for `validatingadmissionpolicies` and `validatingadmissionpolicybindings`.
pub fn admission_policies_guard() -> (String, Value) {
    let builtin_params = BUILTIN_PARAM_KINDS
        .iter()
        .map(|(av, kind)| format!("(p.apiVersion == '{av}' && p.kind == '{kind}')"))
        .chain(std::iter::once("false".to_owned()))
        .collect::<Vec<_>>()
        .join(" || ");
    let confined = "has(object.spec.matchConstraints) && has(object.spec.matchConstraints.namespaceSelector) && \
        has(object.spec.matchConstraints.namespaceSelector.matchExpressions) && \
        object.spec.matchConstraints.namespaceSelector.matchExpressions.exists(e, e.key == 'paddock.io/tenant' && e.operator == 'In' && e.values == [variables.tid]) && \
        (!has(object.spec.matchConstraints.resourceRules) || object.spec.matchConstraints.resourceRules.all(r, \
           (has(r.scope) && r.scope == 'Namespaced') || (has(r.resources) && r.resources.all(x, x == 'namespaces' || x.startsWith('namespaces/')))))";
    let mut vars = guard_tid_vars().as_array().cloned().unwrap_or_default();
    vars.push(json!({"name": "res", "expression": "request.resource.resource"}));
    guard_policy(
        &format!("{GUARD_NAME}-policies"),
        json!({"resourceRules": [{
            "apiGroups": ["admissionregistration.k8s.io"], "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"]
        }]}),
        Value::Array(vars),
        json!([
            {"expression": format!("variables.res != 'validatingadmissionpolicies' || ({confined})"),
             "message": "paddock: a tenant ValidatingAdmissionPolicy must be confined to the tenant's namespaces (namespaceSelector on paddock.io/tenant, namespaced rules)"},
            {"expression": format!("variables.res != 'validatingadmissionpolicies' || !has(object.spec.paramKind) || \
                [object.spec.paramKind].all(p, p.apiVersion.startsWith(variables.tid + '-') || {builtin_params})"),
             "message": "paddock: a tenant policy's params must be a kind of the tenant's own custom resources"},
            {"expression": "variables.res != 'validatingadmissionpolicybindings' || object.spec.policyName.startsWith(variables.tid + '-')",
             "message": "paddock: a tenant binding may only put the tenant's own policies in force"},
            {"expression": "variables.res != 'validatingadmissionpolicybindings' || !has(object.spec.paramRef) || \
                !has(object.spec.paramRef.namespace) || object.spec.paramRef.namespace.startsWith(variables.tid + '-')",
             "message": "paddock: a tenant binding's params must be in the tenant's namespaces"}
        ]),
    )
}
