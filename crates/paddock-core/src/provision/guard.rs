//! The admission guard upstream, as data: ValidatingAdmissionPolicies (and their bindings)
//! that refuse what a tenant identity may not write even when paddock's translation is
//! bypassed — the second wall (docs/security.md "The admission guard"). The reconciler
//! (`paddock-reconciler`) installs them; nothing here does I/O.
//!
//! What a policy costs the apiserver shapes how the rules are split (docs/performance.md,
//! "What the guard costs a tenant write"): for every policy whose `matchConstraints` and
//! selectors take a request, kube-apiserver converts the object, the old object, the
//! request and the namespace to unstructured values once for the `matchConditions`, and once
//! each for the validations, the message expressions and the audit annotations, and it plans
//! every CEL expression it evaluates anew (cost tracking builds each program per
//! evaluation). Selectors and resource rules are matched in Go, for nothing. So: rules that
//! only labelled objects can break are matched by `objectSelector`; and the rules every
//! namespaced write of a tenant goes through are also written, negated, into the match condition
//! ([`prefiltered`]): a write that keeps them stops after the match conditions, and only one
//! that breaks one reaches the validations, which name the rule.

use serde_json::{Value, json};

use crate::provision::{POD_SECURITY_LEVEL, PSA_ENFORCE_LABEL};
use crate::rules::BUILTIN_PARAM_KINDS;
use crate::tenant::{MANAGED_FOR_LABEL, TENANT_LABEL};

/// Name of the admission guard policy and binding.
pub const GUARD_NAME: &str = "paddock-tenant-guard";

/// Name of the guard policy about Services (replaced by the webhook's tenant policy when
/// paddock's admission webhook is served).
/// The CEL conditions on a tenant webhook's `clientConfig` for the relay at `relay_url`: its
/// `url` (none, or the relay's for the tenant) and, ORed into the Service rule, the relay's
/// Service (paddock's own, on a path for the tenant). The relay's location comes from the
/// same function that writes it (`paddock_client_config`).
fn relay_conditions(relay_url: Option<&str>) -> (String, String) {
    let Some(url) = relay_url else {
        return ("!has(w.clientConfig.url)".into(), String::new());
    };
    let lit = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let at = crate::catalog::webhook_relay::paddock_client_config(
        url,
        crate::catalog::webhook_relay::RELAY_PATH,
        "",
    );
    let tenant_path = |prefix: &str| format!("{} + variables.tid + '/'", lit(prefix));
    match (at["url"].as_str(), at["service"].as_object()) {
        (Some(u), _) => (
            format!(
                "!has(w.clientConfig.url) || w.clientConfig.url.startsWith({})",
                tenant_path(u)
            ),
            String::new(),
        ),
        (None, Some(svc)) => {
            let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or_default();
            (
                "!has(w.clientConfig.url)".into(),
                format!(
                    " || (w.clientConfig.service.namespace == {} && w.clientConfig.service.name == {} && has(w.clientConfig.service.path) && w.clientConfig.service.path.startsWith({}))",
                    lit(s("namespace")),
                    lit(s("name")),
                    tenant_path(s("path"))
                ),
            )
        }
        _ => ("!has(w.clientConfig.url)".into(), String::new()),
    }
}

pub fn services_guard_name() -> String {
    format!("{GUARD_NAME}-services")
}

/// The admission guard: the second wall. Any write by a `paddock:tenant:<tid>` identity to
/// anything outside that tenant's namespaces, prefix or label is refused by the apiserver
/// itself, even if paddock's translation had a bug or were bypassed; so are changes to
/// paddock-managed objects, to the tenant and pod-security labels, RBAC that reaches outside
/// the tenant, and host-exposing Services.
///
/// It is several policies, one per concern, each matching only the requests it is about
/// (the module's comment says why): the rules every write obeys are split by scope —
/// [`GUARD_NAME`] for cluster-scoped objects, `-namespaced` (prefiltered) for namespaced ones,
/// with the two label rules of namespaced objects in `-managed` and `-tenant-label`, matched
/// only by objects that carry the label — and the others are narrowed to their kinds by
/// `matchConstraints`. The cluster-scoped policy comes last, so that on an upgrade from
/// one policy for every scope the namespaced rules are in force before it is narrowed.
/// `admission_webhook`: paddock's admission webhook is served, so Service types follow each
/// tenant's policy there and the guard's Service rule is left out. `relay_url`: paddock's
/// admission URL when it relays the tenants' webhooks (docs/webhooks.md): a tenant webhook
/// may then name paddock's relay for its own tenant, and nothing else but a Service in the
/// tenant's namespaces.
pub fn guard_policies(admission_webhook: bool, relay_url: Option<&str>) -> Vec<(String, Value)> {
    let tenant_subject = "(s.kind == 'ServiceAccount' && has(s.namespace) && s.namespace.startsWith(variables.tid + '-')) || \
        (s.kind == 'User' && s.name.startsWith('paddock:' + variables.tid + ':')) || \
        (s.kind == 'Group' && (s.name.startsWith('paddock:' + variables.tid + ':') || s.name.startsWith('system:serviceaccounts:' + variables.tid + '-')))";
    let shadow = "'paddock:cluster:' + variables.tid + ':'";
    let shadow_subject = format!(
        "(s.kind == 'User' || s.kind == 'Group') && (s.name.startsWith({shadow} + 'paddock:' + variables.tid + ':') || \
         s.name.startsWith({shadow} + 'system:serviceaccount:' + variables.tid + '-') || \
         s.name.startsWith({shadow} + 'system:serviceaccounts:' + variables.tid + '-'))"
    );
    // On CREATE the label may still be absent (a body paddock could not rewrite, e.g.
    // protobuf): paddock sets it before the tenant gets any right inside the namespace (the
    // admins' RoleBinding is written after the label). Any other value, and any later change
    // or removal, is refused, except a stricter level (`restricted`), which only limits the
    // tenant further (the e2e framework labels its test namespaces that way), and
    // `privileged` on a request carrying the tenant's own privileged group, which paddock
    // asserts only for a tenant whose policy allows it (`podSecurity: privileged`).
    let privileged_group = crate::admission::podsecurity::PRIVILEGED_GROUP_PREFIX;
    let psa = format!(
        "((request.operation == 'CREATE' && !('{PSA_ENFORCE_LABEL}' in variables.newLabels)) || \
           ('{PSA_ENFORCE_LABEL}' in variables.newLabels && (variables.newLabels['{PSA_ENFORCE_LABEL}'] in ['{POD_SECURITY_LEVEL}', 'restricted'] || \
             (variables.newLabels['{PSA_ENFORCE_LABEL}'] == 'privileged' && ('{privileged_group}' + variables.tid) in request.userInfo.groups)))) && \
          (!('{PSA_ENFORCE_LABEL}-version' in variables.newLabels) || variables.newLabels['{PSA_ENFORCE_LABEL}-version'] == 'latest')"
    );
    let tid_vars = guard_tid_vars();
    let writes = json!(["CREATE", "UPDATE"]);
    let rule = |groups: &[&str], resources: &[&str], ops: &Value| json!({"apiGroups": groups, "apiVersions": ["*"], "operations": ops, "resources": resources});

    let namespaces = guard_policy(
        &format!("{GUARD_NAME}-namespaces"),
        json!({"resourceRules": [rule(&[""], &["namespaces"], &writes)]}),
        tid_vars_with(json!([
            {"name": "newLabels", "expression": labels_of("object")},
            {"name": "oldLabels", "expression": labels_of("oldObject")},
            {"name": "newAnn", "expression": annotations_of("object")},
            {"name": "oldAnn", "expression": annotations_of("oldObject")}
        ])),
        {
            let mut v = vec![json!(
            {"expression": psa,
             "message": "paddock: the pod-security.kubernetes.io/enforce label of a tenant namespace is locked to the tenant's level (policy pod-security: baseline or restricted; privileged only for a tenant whose policy has podSecurity: privileged)"})];
            v.extend(
                crate::observe::billing::guard_validations()
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
            v.push(crate::clusters::span::guard_validation());
            v.push(crate::provision::suspended::mark_locked_validation());
            Value::Array(v)
        },
    );
    let rbac = guard_policy(
        &format!("{GUARD_NAME}-rbac"),
        json!({"resourceRules": [rule(&["rbac.authorization.k8s.io"], &["rolebindings", "clusterrolebindings", "clusterroles"], &writes)]}),
        tid_vars_with(json!([
            {"name": "res", "expression": "request.resource.resource"},
            {"name": "newLabels", "expression": labels_of("object")}
        ])),
        json!([
            {"expression": "variables.res != 'rolebindings' || \
                object.roleRef.kind == 'Role' || object.roleRef.name.startsWith(variables.tid + '-') || object.roleRef.name in ['admin', 'edit', 'view']",
             "message": "paddock: a RoleBinding may refer only to a Role, a ClusterRole of the tenant, or admin, edit or view"},
            {"expression": format!("variables.res != 'rolebindings' || !has(object.subjects) || object.subjects.all(s, {tenant_subject})"),
             "message": "paddock: RoleBinding subjects must be identities of the tenant"},
            {"expression": "variables.res != 'clusterrolebindings' || \
                (object.roleRef.kind == 'ClusterRole' && object.roleRef.name.startsWith(variables.tid + '-'))",
             "message": "paddock: a tenant ClusterRoleBinding may refer only to a ClusterRole of the tenant"},
            {"expression": format!("variables.res != 'clusterrolebindings' || !has(object.subjects) || object.subjects.all(s, {shadow_subject})"),
             "message": "paddock: ClusterRoleBinding subjects must be the tenant's inert cluster identities (paddock:cluster:<tenant>:...)"},
            {"expression": "variables.res != 'clusterroles' || \
                (!variables.newLabels.exists(k, k.startsWith('rbac.authorization.k8s.io/aggregate-to-')) && \
                 (!has(object.aggregationRule) || !has(object.aggregationRule.clusterRoleSelectors) || \
                  object.aggregationRule.clusterRoleSelectors.all(sel, has(sel.matchExpressions) && sel.matchExpressions.exists(e, e.key == 'paddock.io/tenant' && e.operator == 'In' && e.values == [variables.tid]))))",
             "message": "paddock: a tenant ClusterRole may neither aggregate into platform roles nor aggregate roles of others"}
        ]),
    );
    let services = prefiltered(
        &services_guard_name(),
        json!({"resourceRules": [rule(&[""], &["services"], &writes)]}),
        &[(
            "(!has(object.spec.type) || object.spec.type == 'ClusterIP' || object.spec.type == 'ExternalName') && \
                (!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0)"
                .to_owned(),
            "paddock: NodePort and LoadBalancer Services and externalIPs are not available to tenants",
        )],
    );
    let (url_ok, service_relay) = relay_conditions(relay_url);
    let webhooks = guard_policy(
        &format!("{GUARD_NAME}-webhooks"),
        json!({"resourceRules": [rule(&["admissionregistration.k8s.io"], &["validatingwebhookconfigurations", "mutatingwebhookconfigurations"], &writes)]}),
        tid_vars.clone(),
        json!([
            {"expression": format!("!has(object.webhooks) || object.webhooks.all(w, has(w.namespaceSelector) && has(w.namespaceSelector.matchExpressions) && \
                  w.namespaceSelector.matchExpressions.exists(e, e.key == 'paddock.io/tenant' && e.operator == 'In' && e.values == [variables.tid]) && \
                  ({url_ok}) && \
                  (!has(w.rules) || w.rules.all(r, (has(r.scope) && r.scope == 'Namespaced') || (has(r.resources) && r.resources.all(x, x == 'namespaces' || x.startsWith('namespaces/'))))))"),
             "message": "paddock: a tenant webhook must be confined to the tenant's namespaces (namespaceSelector on paddock.io/tenant, namespaced rules, a service in the tenant)"},
            {"expression": format!("!has(object.webhooks) || object.webhooks.all(w, !has(w.clientConfig.service) || w.clientConfig.service.namespace.startsWith(variables.tid + '-'){service_relay})"),
             "message": "paddock: a tenant webhook must call a service in the tenant's namespaces"}
        ]),
    );
    let policies = admission_policies_guard();
    let flowcontrol = flowcontrol_guard();
    let refused = refused_kinds_guard();
    let [
        namespaced,
        namespaced_managed,
        namespaced_tenant_label,
        cluster_scoped,
    ] = scope_guards();
    let mut guards = vec![
        namespaced,
        namespaced_managed,
        namespaced_tenant_label,
        namespaces,
        rbac,
    ];
    if !admission_webhook {
        guards.push(services);
    }
    let suspended = {
        use crate::provision::suspended::{GUARD_SUFFIX, policy_parts};
        let (constraints, conditions, validations) = policy_parts();
        let name = format!("{GUARD_NAME}-{GUARD_SUFFIX}");
        policy_object(&name, constraints, conditions, json!([]), validations)
    };
    guards.extend([
        webhooks,
        policies,
        flowcontrol,
        refused,
        suspended,
        cluster_scoped,
    ]);
    guards
}

/// `{}` or the labels of CEL value `o` (`object`, `oldObject`: absent on DELETE and CREATE).
fn labels_of(o: &str) -> String {
    format!(
        "({o} != null && has({o}.metadata) && has({o}.metadata.labels)) ? {o}.metadata.labels : {{}}"
    )
}

fn annotations_of(o: &str) -> String {
    format!(
        "({o} != null && has({o}.metadata) && has({o}.metadata.annotations)) ? {o}.metadata.annotations : {{}}"
    )
}

/// The guards every write of a tenant meets, by scope: `-namespaced` (rules 1 and 2,
/// prefiltered), `-managed` and `-tenant-label` (the label rules of namespaced objects,
/// matched by `objectSelector`), and [`GUARD_NAME`] for cluster-scoped writes (rules 1-5).
fn scope_guards() -> [(String, Value); 4] {
    // Fields of `request` that are empty are absent in CEL, hence the has() guards.
    let name_var = "(has(request.name) && request.name != '') ? request.name : \
        ((variables.obj != null && has(variables.obj.metadata) && has(variables.obj.metadata.name)) ? variables.obj.metadata.name : '')";
    let all_writes = json!(["CREATE", "UPDATE", "DELETE", "CONNECT"]);
    let every_resource = |scope: &str| {
        json!({
            "resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": all_writes, "resources": ["*/*"], "scope": scope}],
            "excludeResourceRules": [{
                "apiGroups": ["authorization.k8s.io", "authentication.k8s.io"], "apiVersions": ["*"],
                "operations": ["CREATE"], "resources": ["*"]
            }]
        })
    };
    let label_vars = json!([
        {"name": "newLabels", "expression": labels_of("object")},
        {"name": "oldLabels", "expression": labels_of("oldObject")}
    ]);
    let tenant_label_kept = json!(
        {"expression": format!("request.operation != 'UPDATE' || !('{TENANT_LABEL}' in variables.oldLabels) || ('{TENANT_LABEL}' in variables.newLabels && variables.newLabels['{TENANT_LABEL}'] == variables.oldLabels['{TENANT_LABEL}'])"),
         "message": "paddock: the paddock.io/tenant label cannot be changed or removed"});
    let not_managed = json!(
        {"expression": format!("!('{MANAGED_FOR_LABEL}' in variables.newLabels) && !('{MANAGED_FOR_LABEL}' in variables.oldLabels)"),
         "message": "paddock: objects managed by the platform (paddock.io/managed-for) cannot be created, changed or deleted by a tenant"});

    let cluster_scoped = guard_policy(
        GUARD_NAME,
        every_resource("Cluster"),
        tid_vars_with(json!([
            {"name": "obj", "expression": "request.operation == 'DELETE' ? oldObject : object"},
            {"name": "ns", "expression": "has(request.namespace) ? request.namespace : ''"},
            {"name": "sub", "expression": "has(request.subResource) ? request.subResource : ''"},
            {"name": "name", "expression": name_var},
            {"name": "isCRD", "expression": "request.resource.group == 'apiextensions.k8s.io' && request.resource.resource == 'customresourcedefinitions'"},
            label_vars[0],
            label_vars[1]
        ])),
        json!([
            {"expression": "size(variables.tids) == 1",
             "message": ONE_TENANT_MESSAGE},
            {"expression": "variables.ns == '' || variables.ns.startsWith(variables.tid + '-')",
             "message": OWN_NAMESPACES_MESSAGE},
            {"expression": format!("variables.ns != '' || {} || (variables.isCRD ? (variables.obj != null && has(variables.obj.spec) && variables.obj.spec.group.startsWith(variables.tid + '-')) : variables.name.startsWith(variables.tid + '-'))", crate::catalog::platform_grant::guard_exemption()),
             "message": "paddock: a tenant may only write cluster-scoped objects under its own prefix"},
            {"expression": format!("variables.ns != '' || variables.sub != '' || request.operation == 'CONNECT' || {} || ('paddock.io/tenant' in variables.newLabels && variables.newLabels['paddock.io/tenant'] == variables.tid) || (request.operation == 'DELETE' && 'paddock.io/tenant' in variables.oldLabels && variables.oldLabels['paddock.io/tenant'] == variables.tid)", crate::catalog::platform_grant::guard_exemption()),
             "message": "paddock: cluster-scoped objects of a tenant must carry its paddock.io/tenant label"},
            tenant_label_kept.clone(),
            not_managed.clone()
        ]),
    );
    // A namespaced write of a tenant obeys rules 1 and 2 here; the label rules apply only to
    // objects carrying the label, which their policies' objectSelectors match (the selector
    // takes a request when the object or its old version has the label: every case the rule
    // refuses).
    let namespaced = prefiltered(
        &format!("{GUARD_NAME}-namespaced"),
        every_resource("Namespaced"),
        &[
            (ONE_TENANT.to_owned(), ONE_TENANT_MESSAGE),
            (IN_OWN_NAMESPACE.to_owned(), OWN_NAMESPACES_MESSAGE),
        ],
    );
    let labelled = |suffix: &str, label: &str, rule: Value| {
        let mut constraints = every_resource("Namespaced");
        constraints["objectSelector"] =
            json!({"matchExpressions": [{"key": label, "operator": "Exists"}]});
        guard_policy(
            &format!("{GUARD_NAME}-{suffix}"),
            constraints,
            label_vars.clone(),
            json!([rule]),
        )
    };
    let namespaced_managed = managed_guard(every_resource("Namespaced"), &label_vars, &not_managed);
    let namespaced_tenant_label = labelled("tenant-label", TENANT_LABEL, tenant_label_kept);
    [
        namespaced,
        namespaced_managed,
        namespaced_tenant_label,
        cluster_scoped,
    ]
}

/// The request is a service account's: a tenant pod's token straight at the apiserver has no
/// `paddock:tenant:` group, only `system:serviceaccounts:<tid>-<ns>`.
const SERVICE_ACCOUNT: &str = "request.userInfo.username.startsWith('system:serviceaccount:')";

/// `-managed`: objects paddock keeps for a tenant (label `paddock.io/managed-for: <tid>`) are
/// refused to that tenant's identities through paddock and to its own service accounts with
/// their tokens straight at the apiserver (an admin of a namespace could otherwise delete the
/// `kubernetes` Service's Endpoints or edit a RoleBinding mirror there). A service account
/// is the tenant's when it lives in a `<tid>-` namespace of the object's tenant: that prefix
/// is reserved to the tenant upstream (the prefix check at creation), so no platform
/// account (paddock's own, the controllers' in `kube-system`) is ever taken for it.
fn managed_guard(constraints: Value, label_vars: &Value, not_managed: &Value) -> (String, Value) {
    let mut constraints = constraints;
    constraints["objectSelector"] =
        json!({"matchExpressions": [{"key": MANAGED_FOR_LABEL, "operator": "Exists"}]});
    let mut variables = label_vars.as_array().cloned().unwrap_or_default();
    variables.push(json!({"name": "managedFor", "expression": format!(
        "'{MANAGED_FOR_LABEL}' in variables.newLabels ? variables.newLabels['{MANAGED_FOR_LABEL}'] : \
         ('{MANAGED_FOR_LABEL}' in variables.oldLabels ? variables.oldLabels['{MANAGED_FOR_LABEL}'] : '')")}));
    let own_account = "request.userInfo.username.startsWith('system:serviceaccount:' + variables.managedFor + '-')";
    let rule = format!(
        "{TENANT_IDENTITY} ? ({}) : (variables.managedFor == '' || !({own_account}))",
        not_managed["expression"].as_str().unwrap_or("false")
    );
    policy_object(
        &format!("{GUARD_NAME}-managed"),
        constraints,
        json!([{"name": "tenant-or-service-account",
                "expression": format!("{TENANT_IDENTITY} || {SERVICE_ACCOUNT}")}]),
        Value::Array(variables),
        json!([{"expression": rule, "message": not_managed["message"]}]),
    )
}

/// [`guard_tid_vars`] followed by `extra` (a JSON array of variables).
fn tid_vars_with(extra: Value) -> Value {
    let mut v = guard_tid_vars().as_array().cloned().unwrap_or_default();
    v.extend(extra.as_array().cloned().unwrap_or_default());
    Value::Array(v)
}

/// The CEL variables every guard policy starts with: the tenant id of the request's identity.
pub(crate) fn guard_tid_vars() -> Value {
    json!([
        {"name": "tids", "expression": "request.userInfo.groups.filter(g, g.startsWith('paddock:tenant:')).map(g, g.substring(15))"},
        {"name": "tid", "expression": "variables.tids[0]"}
    ])
}

/// The match condition of every guard policy: the request is a tenant identity's.
const TENANT_IDENTITY: &str = "request.userInfo.groups.exists(g, g.startsWith('paddock:tenant:'))";

/// Rule 1, without variables (a match condition may use none): exactly one tenant identity.
const ONE_TENANT: &str = "request.userInfo.groups.exists_one(g, g.startsWith('paddock:tenant:'))";
const ONE_TENANT_MESSAGE: &str = "paddock: a request may carry exactly one tenant identity";

/// Rule 2, without variables: the request's namespace is under its tenant's prefix (with
/// exactly one tenant identity, as rule 1 requires, the one identity that matches is it).
const IN_OWN_NAMESPACE: &str = "!has(request.namespace) || request.namespace == '' || \
    request.userInfo.groups.exists(g, g.startsWith('paddock:tenant:') && request.namespace.startsWith(g.substring(15) + '-'))";
const OWN_NAMESPACES_MESSAGE: &str = "paddock: a tenant may only write inside its own namespaces";

/// One policy of the guard: it applies to requests of tenant identities only.
pub(crate) fn guard_policy(
    name: &str,
    match_constraints: Value,
    variables: Value,
    validations: Value,
) -> (String, Value) {
    policy_object(
        name,
        match_constraints,
        json!([{"name": "tenant-identity", "expression": TENANT_IDENTITY}]),
        variables,
        validations,
    )
}

/// A guard policy whose rules, written without variables, are also its match condition,
/// negated: a tenant's request that keeps every rule is let through after the match
/// conditions, without the validations, messages and audit annotations the apiserver would
/// otherwise prepare the request for (three conversions of the object, the old object, the
/// request and the namespace, and the rules planned again); a request that breaks one is
/// refused by the validations with that rule's message. The rules are declared once, here.
pub(crate) fn prefiltered(
    name: &str,
    match_constraints: Value,
    rules: &[(String, &str)],
) -> (String, Value) {
    let all_kept = rules
        .iter()
        .map(|(rule, _)| format!("({rule})"))
        .collect::<Vec<_>>()
        .join(" && ");
    let validations = rules
        .iter()
        .map(|(rule, message)| json!({"expression": rule, "message": message}))
        .collect();
    policy_object(
        name,
        match_constraints,
        // One condition, not two: the apiserver evaluates every condition of a policy for
        // every write it matches, anyone's, and `&&` stops at a request that is no tenant's.
        json!([{
            "name": "tenant-breaking-a-rule",
            "expression": format!("{TENANT_IDENTITY} && !({all_kept})")
        }]),
        json!([]),
        Value::Array(validations),
    )
}

pub(crate) fn policy_object(
    name: &str,
    match_constraints: Value,
    match_conditions: Value,
    variables: Value,
    validations: Value,
) -> (String, Value) {
    (
        name.to_string(),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": match_constraints,
                "matchConditions": match_conditions,
                "variables": variables,
                "validations": validations
            }
        }),
    )
}

/// Binding that puts one guard policy in force (Deny).
pub fn guard_binding(name: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "spec": {"policyName": name, "validationActions": ["Deny"]}
    })
}

// The guard's rules for tenant ValidatingAdmissionPolicies and their bindings (the second
// wall behind `rules::policy`): a tenant identity writing straight to the apiserver still
// cannot make a policy act outside its namespaces, put a platform or another tenant's policy
// in force, or read params it does not own.

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
    guard_policy(
        &format!("{GUARD_NAME}-policies"),
        json!({"resourceRules": [{
            "apiGroups": ["admissionregistration.k8s.io"], "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"]
        }]}),
        tid_vars_with(json!([{"name": "res", "expression": "request.resource.resource"}])),
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

// The guard's rules for tenant FlowSchemas and PriorityLevelConfigurations (the second wall
// behind `rules::flowcontrol`): a tenant identity writing straight to the apiserver still
// cannot match anyone else's requests, send its own to a level that is not its, or own seats.

/// The guard policy for `flowschemas` and `prioritylevelconfigurations`.
pub fn flowcontrol_guard() -> (String, Value) {
    let tenant_flow_subject = "(s.kind == 'User' && has(s.user) && \
          (s.user.name.startsWith('paddock:' + variables.tid + ':') || s.user.name.startsWith('system:serviceaccount:' + variables.tid + '-'))) || \
        (s.kind == 'Group' && has(s.group) && (s.group.name == 'paddock:tenant:' + variables.tid || \
          s.group.name.startsWith('paddock:' + variables.tid + ':') || s.group.name.startsWith('system:serviceaccounts:' + variables.tid + '-'))) || \
        (s.kind == 'ServiceAccount' && has(s.serviceAccount) && s.serviceAccount.namespace.startsWith(variables.tid + '-'))";
    guard_policy(
        &format!("{GUARD_NAME}-flowcontrol"),
        json!({"resourceRules": [{
            "apiGroups": ["flowcontrol.apiserver.k8s.io"], "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["flowschemas", "prioritylevelconfigurations"]
        }]}),
        tid_vars_with(json!([{"name": "res", "expression": "request.resource.resource"}])),
        json!([
            {"expression": "variables.res != 'flowschemas' || object.spec.priorityLevelConfiguration.name.startsWith(variables.tid + '-')",
             "message": "paddock: a tenant FlowSchema may only send requests to the tenant's own priority levels"},
            {"expression": format!("variables.res != 'flowschemas' || !has(object.spec.rules) || \
                object.spec.rules.all(r, !has(r.subjects) || r.subjects.all(s, {tenant_flow_subject}))"),
             "message": "paddock: a tenant FlowSchema may match only identities of the tenant"},
            {"expression": "variables.res != 'prioritylevelconfigurations' || (object.spec.type == 'Limited' && \
                has(object.spec.limited) && has(object.spec.limited.nominalConcurrencyShares) && object.spec.limited.nominalConcurrencyShares == 0)",
             "message": "paddock: a tenant priority level is Limited and owns no seats (nominalConcurrencyShares 0)"}
        ]),
    )
}

/// The kinds no tenant identity writes, whatever its RBAC (a tenant's own ClusterRole, bound
/// to its cluster identities, can grant any verb on any kind): the kind table's cluster-scoped
/// kinds shared read-only or refused that no platform grant opens
/// (`platform_grant::GRANTABLE`), as (group, resource), in the table's order. APIServices
/// among them: an APIService's name is `<version>.<group>`, so `<tid>-v1.example.org` with the
/// tenant label would pass the cluster-scoped rules (prefix, label) and hand a group to a
/// Service of the tenant's.
pub fn refused_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    use crate::catalog::{Policy, Scope, kinds::KINDS, platform_grant::GRANTABLE};
    KINDS
        .iter()
        .filter(|k| k.scope == Scope::Cluster && !k.review)
        .filter(|k| matches!(k.policy, Policy::SharedReadOnly | Policy::Forbidden))
        .map(|k| (k.group, k.resource))
        .filter(|gr| !GRANTABLE.contains(gr))
}

/// The guard policy `-refused`: every write of a tenant identity to [`refused_kinds`] (and
/// their subresources) is refused.
pub fn refused_kinds_guard() -> (String, Value) {
    let rules: Vec<Value> = refused_kinds()
        .map(|(g, r)| {
            json!({"apiGroups": [g], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE", "DELETE"],
                   "resources": [r, format!("{r}/*")]})
        })
        .collect();
    guard_policy(
        &format!("{GUARD_NAME}-refused"),
        json!({"resourceRules": rules}),
        json!([]),
        json!([{
            "expression": "false",
            "messageExpression": "'paddock: ' + request.resource.resource + '.' + request.resource.group + ' are shared read-only or refused in this cluster: a tenant may not write them'",
            "message": "paddock: this kind is shared read-only or refused in this cluster: a tenant may not write it"
        }]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refused_kinds_are_never_writable_and_never_grantable() {
        let kinds: Vec<(&str, &str)> = refused_kinds().collect();
        for gr in [
            ("apiregistration.k8s.io", "apiservices"),
            ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
            (
                "admissionregistration.k8s.io",
                "mutatingadmissionpolicybindings",
            ),
        ] {
            assert!(kinds.contains(&gr), "{gr:?} not refused");
        }
        for gr in [("", "nodes"), ("storage.k8s.io", "storageclasses")] {
            assert!(!kinds.contains(&gr), "{gr:?} is grantable");
        }
        let (name, p) = refused_kinds_guard();
        assert_eq!(name, "paddock-tenant-guard-refused");
        let rules = p["spec"]["matchConstraints"]["resourceRules"]
            .as_array()
            .unwrap();
        assert_eq!(rules.len(), kinds.len());
        let apiservices = rules
            .iter()
            .find(|r| r["apiGroups"][0] == "apiregistration.k8s.io")
            .unwrap();
        assert_eq!(
            apiservices["resources"],
            json!(["apiservices", "apiservices/*"])
        );
        assert_eq!(
            apiservices["operations"],
            json!(["CREATE", "UPDATE", "DELETE"])
        );
        assert_eq!(p["spec"]["validations"][0]["expression"], "false");
    }

    fn policy<'a>(guards: &'a [(String, Value)], name: &str) -> &'a Value {
        &guards
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no guard policy {name}"))
            .1["spec"]
    }

    #[test]
    fn a_prefiltered_policy_matches_exactly_the_requests_that_break_one_of_its_rules() {
        let (_, p) = prefiltered(
            "p",
            json!({}),
            &[("a == 1".to_owned(), "m1"), ("b || c".to_owned(), "m2")],
        );
        let conditions = p["spec"]["matchConditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 1);
        assert_eq!(
            conditions[0]["expression"],
            format!("{TENANT_IDENTITY} && !((a == 1) && (b || c))")
        );
        assert_eq!(
            p["spec"]["validations"],
            json!([{"expression": "a == 1", "message": "m1"}, {"expression": "b || c", "message": "m2"}])
        );
    }

    #[test]
    fn a_tenant_webhook_may_name_only_its_own_tenants_relay() {
        let text = |relay| {
            policy(
                &guard_policies(true, relay),
                &format!("{GUARD_NAME}-webhooks"),
            )["validations"]
                .to_string()
        };
        let by_url = text(Some("https://127.0.0.1:9443/"));
        assert!(
            by_url.contains("w.clientConfig.url.startsWith('https://127.0.0.1:9443/tenant-webhook/v1/' + variables.tid + '/')"),
            "{by_url}"
        );
        let by_service = text(Some("https://paddock.paddock-system.svc:9443"));
        assert!(
            by_service.contains("!has(w.clientConfig.url)"),
            "{by_service}"
        );
        assert!(
            by_service.contains("w.clientConfig.service.namespace == 'paddock-system' && w.clientConfig.service.name == 'paddock' && has(w.clientConfig.service.path) && w.clientConfig.service.path.startsWith('/tenant-webhook/v1/' + variables.tid + '/')"),
            "{by_service}"
        );
        let none = text(None);
        assert!(!none.contains("tenant-webhook") && none.contains("!has(w.clientConfig.url)"));
    }

    #[test]
    fn every_write_meets_the_guard_by_scope_and_the_cluster_scoped_policy_is_narrowed_last() {
        for webhook in [false, true] {
            let guards = guard_policies(webhook, None);
            assert_eq!(guards.last().map(|(n, _)| n.as_str()), Some(GUARD_NAME));
            let scope = |name: &str| {
                policy(&guards, name)["matchConstraints"]["resourceRules"][0]["scope"].clone()
            };
            assert_eq!(scope(GUARD_NAME), "Cluster");
            assert_eq!(scope("paddock-tenant-guard-namespaced"), "Namespaced");
            for (name, label) in [
                ("paddock-tenant-guard-managed", MANAGED_FOR_LABEL),
                ("paddock-tenant-guard-tenant-label", TENANT_LABEL),
            ] {
                let p = policy(&guards, name);
                assert_eq!(
                    p["matchConstraints"]["objectSelector"]["matchExpressions"][0]["key"],
                    label
                );
                assert_eq!(
                    p["matchConstraints"]["resourceRules"][0]["scope"],
                    "Namespaced"
                );
            }
            let services = guards.iter().any(|(n, _)| *n == services_guard_name());
            assert_eq!(services, !webhook);
        }
    }
}
