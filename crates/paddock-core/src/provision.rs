//! What paddock installs upstream, as data: the names, labels and groups of the objects it
//! keeps there, the platform-wide bootstrap (the shared cluster-scope role, the admission
//! guard policies, the tenants' priority level), and each tenant namespace's own objects.
//! The reconciler (`paddock-reconciler`) writes them; nothing here does I/O.

use serde_json::{Value, json};

use crate::rules::BUILTIN_PARAM_KINDS;
use crate::tenant::{TENANT_LABEL, TenantId};

pub use crate::identity::{shadow_admin_group, upstream_admin_group};

/// The tenant's default namespaces (its view).
pub const DEFAULT_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];
/// In-tenant group of the tenant's administrators.
pub const TENANT_ADMIN_GROUP: &str = crate::identity::TENANT_ADMIN_GROUP;
/// Shared ClusterRole with the cluster-scoped rights of tenant admins, bound once (a
/// ClusterRoleBinding of the same name) to [`CLUSTER_SCOPE_GROUP`], which paddock asserts only
/// on requests of a tenant admin for cluster-scoped objects; the real identity of a tenant user
/// holds no cluster-scoped right at all.
pub const CLUSTER_SCOPE_ROLE: &str = "paddock:tenant-cluster-scope";
/// The group every tenant admin's *shadow* identity carries besides its own shadow groups.
///
/// One binding for all tenants, not one per tenant: the apiserver's RBAC authorizer lists and
/// matches every ClusterRoleBinding of the cluster for every request of every user that is not
/// `system:masters`, so a binding per tenant made every request in the cluster cost
/// O(tenants) (docs/performance.md). Every tenant's admins had the same role anyway; what keeps
/// them apart is the admission guard (`paddock:tenant:<tid>`) and paddock's label-filtered
/// lists, not the binding. Not `paddock:cluster:<tid>:`-shaped, so no tenant
/// ClusterRoleBinding can name it (the guard), and no tenant-written group maps to it (tenant
/// groups become `paddock:<tid>:<g>`).
pub const CLUSTER_SCOPE_GROUP: &str = crate::identity::CLUSTER_SCOPE_GROUP;
/// Name of the admission guard policy and binding.
pub const GUARD_NAME: &str = "paddock-tenant-guard";
pub use crate::tenant::MANAGED_FOR_LABEL;
/// Name of the RoleBinding paddock keeps in each tenant namespace.
pub const NAMESPACE_ADMIN_BINDING: &str = "paddock-tenant-admins";
/// Name of the NetworkPolicy paddock keeps in each tenant namespace (MTB NI-1).
pub const NAMESPACE_NETWORK_POLICY: &str = "paddock-tenant-isolation";
/// Name of the ResourceQuota paddock keeps in each tenant namespace (MTB FNS-2, HI NodePort).
pub const NAMESPACE_QUOTA: &str = "paddock-tenant-limits";
/// The pod-security level stamped on a tenant namespace that asks for none (a locked label).
/// A tenant's policy may raise it (`restricted`) or let the tenant's namespaces choose
/// `privileged` (crate::admission::policy::PodSecurityLevel).
pub const POD_SECURITY_LEVEL: &str = "baseline";
/// The pod-security enforce label.
pub const PSA_ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

/// Whether the reconciler keeps a tenant namespace's enforce label as it is: any known level,
/// `privileged` included. Who may write which level is decided where the label is written: the
/// request path's lock and the admission guard (a tenant's policy), and a policy change raises
/// the namespaces below the new level. A namespace without the label, or with an unknown
/// value, is set up with [`POD_SECURITY_LEVEL`].
pub fn keeps_namespace_level(label: Option<&str>) -> bool {
    label
        .and_then(crate::admission::policy::PodSecurityLevel::parse)
        .is_some()
}
/// Tenant ids refused because their identities would collide with paddock's own
/// (`paddock:tenant:<tid>` is the tenant marker group).
pub const RESERVED_TENANT_IDS: &[&str] = &["tenant"];

/// Name of the guard policy about Services (replaced by the webhook's tenant policy when
/// paddock's admission webhook is served).
pub fn services_guard_name() -> String {
    format!("{GUARD_NAME}-services")
}

/// The per-tenant ClusterRoleBinding of the tenant admins' shadow group to
/// [`CLUSTER_SCOPE_ROLE`] that paddock wrote before [`CLUSTER_SCOPE_GROUP`]; removed when a
/// tenant is repaired (start-up) or deleted.
pub fn legacy_tenant_scope_binding_name(t: &TenantId) -> String {
    format!("paddock:tenant:{}", t.as_str())
}

/// Per-tenant ClusterRole (and its binding) for the tenant's custom resources (its CRD groups),
/// bound to the admins' shadow group; kept in step by `rbac_sync`, and present only while the
/// tenant has CRDs.
pub fn tenant_cluster_role_name(t: &TenantId) -> String {
    format!("paddock:tenant:{}:custom-resources", t.as_str())
}

pub fn managed_labels(t: &TenantId) -> Value {
    json!({MANAGED_FOR_LABEL: t.as_str(), "app.kubernetes.io/managed-by": "paddock"})
}

/// The cluster-scope role shared by every tenant's admins (shadow identity): rights on the
/// cluster-scoped kinds a tenant owns (the admission guard limits writes to the tenant's prefix
/// and label; paddock label-filters lists) and reads of the shared read-only kinds. It grants
/// nothing inside any namespace.
pub fn cluster_scope_role() -> Value {
    let all = json!([
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection"
    ]);
    let read = json!(["get", "list", "watch"]);
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": CLUSTER_SCOPE_ROLE, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "rules": [
            {"apiGroups": [""], "resources": ["namespaces", "persistentvolumes"], "verbs": all},
            {"apiGroups": [""], "resources": ["namespaces/status", "namespaces/finalize", "persistentvolumes/status"], "verbs": ["get", "update", "patch"]},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles", "clusterrolebindings"],
             "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "bind", "escalate"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions", "customresourcedefinitions/status"], "verbs": all},
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"], "verbs": all},
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"], "verbs": all},
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingadmissionpolicies/status"], "verbs": ["get", "update", "patch"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": read},
            {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses", "csidrivers", "csinodes"], "verbs": read},
            {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": read},
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingressclasses"], "verbs": read},
            {"apiGroups": ["node.k8s.io"], "resources": ["runtimeclasses"], "verbs": read},
            {"apiGroups": ["flowcontrol.apiserver.k8s.io"], "resources": ["flowschemas", "prioritylevelconfigurations"], "verbs": all},
            {"apiGroups": ["flowcontrol.apiserver.k8s.io"], "resources": ["flowschemas/status", "prioritylevelconfigurations/status"], "verbs": ["get", "update", "patch"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
            // A tenant admin's SubjectAccessReview (about a tenant identity: paddock-core maps
            // its user and groups into the tenant) is asked as the admin's shadow.
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
            // A tenant admin's TokenReview, asked as the admin's shadow: the answer is confined
            // to the tenant's own tokens on the way down (rules/reviews.rs).
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}
        ]
    })
}

/// The one binding of [`CLUSTER_SCOPE_ROLE`]: to [`CLUSTER_SCOPE_GROUP`].
pub fn cluster_scope_binding() -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": CLUSTER_SCOPE_ROLE, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_SCOPE_ROLE},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": CLUSTER_SCOPE_GROUP}]
    })
}

/// The admission guard: the second wall. Any write by a `paddock:tenant:<tid>` identity to
/// anything outside that tenant's namespaces, prefix or label is refused by the apiserver
/// itself, even if paddock's translation had a bug or were bypassed; so are changes to
/// paddock-managed objects, to the tenant and pod-security labels, RBAC that reaches outside
/// the tenant, and host-exposing Services.
///
/// It is several policies, one per concern, each matching only the kinds it is about: the
/// apiserver re-plans every CEL expression of a matching policy on every request (cost
/// tracking makes each evaluation build its program anew), and one policy holding every rule
/// cost a tenant's ConfigMap write about 0.7 ms of apiserver CPU, a quarter of its CPU under
/// a write load (docs/performance.md). The first policy matches every write and holds the
/// rules that apply to any kind; the others are narrowed by `matchConstraints`.
/// `admission_webhook`: paddock's admission webhook is served, so Service types follow each
/// tenant's policy there and the guard's Service rule is left out.
pub fn guard_policies(admission_webhook: bool) -> Vec<(String, Value)> {
    // Fields of `request` that are empty are absent in CEL, hence the has() guards.
    let name_var = "(has(request.name) && request.name != '') ? request.name : \
        ((variables.obj != null && has(variables.obj.metadata) && has(variables.obj.metadata.name)) ? variables.obj.metadata.name : '')";
    let labels_of = |o: &str| {
        format!(
            "({o} != null && has({o}.metadata) && has({o}.metadata.labels)) ? {o}.metadata.labels : {{}}"
        )
    };
    let annotations_of = |o: &str| {
        format!(
            "({o} != null && has({o}.metadata) && has({o}.metadata.annotations)) ? {o}.metadata.annotations : {{}}"
        )
    };
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
    let with = |extra: Value| -> Value {
        let mut v = tid_vars.as_array().cloned().unwrap_or_default();
        v.extend(extra.as_array().cloned().unwrap_or_default());
        Value::Array(v)
    };
    let writes = json!(["CREATE", "UPDATE"]);
    let rule = |groups: &[&str], resources: &[&str], ops: &Value| json!({"apiGroups": groups, "apiVersions": ["*"], "operations": ops, "resources": resources});

    let generic = guard_policy(
        GUARD_NAME,
        json!({
            "resourceRules": [rule(&["*"], &["*/*"], &json!(["CREATE", "UPDATE", "DELETE", "CONNECT"]))],
            "excludeResourceRules": [{
                "apiGroups": ["authorization.k8s.io", "authentication.k8s.io"], "apiVersions": ["*"],
                "operations": ["CREATE"], "resources": ["*"]
            }]
        }),
        with(json!([
            {"name": "obj", "expression": "request.operation == 'DELETE' ? oldObject : object"},
            {"name": "ns", "expression": "has(request.namespace) ? request.namespace : ''"},
            {"name": "sub", "expression": "has(request.subResource) ? request.subResource : ''"},
            {"name": "name", "expression": name_var},
            {"name": "isCRD", "expression": "request.resource.group == 'apiextensions.k8s.io' && request.resource.resource == 'customresourcedefinitions'"},
            {"name": "newLabels", "expression": labels_of("object")},
            {"name": "oldLabels", "expression": labels_of("oldObject")}
        ])),
        json!([
            {"expression": "size(variables.tids) == 1",
             "message": "paddock: a request may carry exactly one tenant identity"},
            {"expression": "variables.ns == '' || variables.ns.startsWith(variables.tid + '-')",
             "message": "paddock: a tenant may only write inside its own namespaces"},
            {"expression": format!("variables.ns != '' || {} || (variables.isCRD ? (variables.obj != null && has(variables.obj.spec) && variables.obj.spec.group.startsWith(variables.tid + '-')) : variables.name.startsWith(variables.tid + '-'))", crate::platform_grant::guard_exemption()),
             "message": "paddock: a tenant may only write cluster-scoped objects under its own prefix"},
            {"expression": format!("variables.ns != '' || variables.sub != '' || request.operation == 'CONNECT' || {} || ('paddock.io/tenant' in variables.newLabels && variables.newLabels['paddock.io/tenant'] == variables.tid) || (request.operation == 'DELETE' && 'paddock.io/tenant' in variables.oldLabels && variables.oldLabels['paddock.io/tenant'] == variables.tid)", crate::platform_grant::guard_exemption()),
             "message": "paddock: cluster-scoped objects of a tenant must carry its paddock.io/tenant label"},
            {"expression": "request.operation != 'UPDATE' || !('paddock.io/tenant' in variables.oldLabels) || ('paddock.io/tenant' in variables.newLabels && variables.newLabels['paddock.io/tenant'] == variables.oldLabels['paddock.io/tenant'])",
             "message": "paddock: the paddock.io/tenant label cannot be changed or removed"},
            {"expression": "!('paddock.io/managed-for' in variables.newLabels) && !('paddock.io/managed-for' in variables.oldLabels)",
             "message": "paddock: objects managed by the platform (paddock.io/managed-for) cannot be created, changed or deleted by a tenant"}
        ]),
    );
    let namespaces = guard_policy(
        &format!("{GUARD_NAME}-namespaces"),
        json!({"resourceRules": [rule(&[""], &["namespaces"], &writes)]}),
        with(json!([
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
                crate::billing::guard_validations()
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
            v.push(crate::span::guard_validation());
            Value::Array(v)
        },
    );
    let rbac = guard_policy(
        &format!("{GUARD_NAME}-rbac"),
        json!({"resourceRules": [rule(&["rbac.authorization.k8s.io"], &["rolebindings", "clusterrolebindings", "clusterroles"], &writes)]}),
        with(json!([
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
    let services = guard_policy(
        &services_guard_name(),
        json!({"resourceRules": [rule(&[""], &["services"], &writes)]}),
        tid_vars.clone(),
        json!([
            {"expression": "(!has(object.spec.type) || object.spec.type == 'ClusterIP' || object.spec.type == 'ExternalName') && \
                (!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0)",
             "message": "paddock: NodePort and LoadBalancer Services and externalIPs are not available to tenants"}
        ]),
    );
    let webhooks = guard_policy(
        &format!("{GUARD_NAME}-webhooks"),
        json!({"resourceRules": [rule(&["admissionregistration.k8s.io"], &["validatingwebhookconfigurations", "mutatingwebhookconfigurations"], &writes)]}),
        tid_vars.clone(),
        json!([
            {"expression": "!has(object.webhooks) || object.webhooks.all(w, has(w.namespaceSelector) && has(w.namespaceSelector.matchExpressions) && \
                  w.namespaceSelector.matchExpressions.exists(e, e.key == 'paddock.io/tenant' && e.operator == 'In' && e.values == [variables.tid]) && \
                  !has(w.clientConfig.url) && \
                  (!has(w.rules) || w.rules.all(r, (has(r.scope) && r.scope == 'Namespaced') || (has(r.resources) && r.resources.all(x, x == 'namespaces' || x.startsWith('namespaces/'))))))",
             "message": "paddock: a tenant webhook must be confined to the tenant's namespaces (namespaceSelector on paddock.io/tenant, namespaced rules, a service in the tenant)"},
            {"expression": "!has(object.webhooks) || object.webhooks.all(w, !has(w.clientConfig.service) || w.clientConfig.service.namespace.startsWith(variables.tid + '-'))",
             "message": "paddock: a tenant webhook must call a service in the tenant's namespaces"}
        ]),
    );
    let policies = admission_policies_guard();
    let flowcontrol = flowcontrol_guard();
    if admission_webhook {
        return vec![generic, namespaces, rbac, webhooks, policies, flowcontrol];
    }
    vec![
        generic,
        namespaces,
        rbac,
        services,
        webhooks,
        policies,
        flowcontrol,
    ]
}

/// The CEL variables every guard policy starts with: the tenant id of the request's identity.
pub(crate) fn guard_tid_vars() -> Value {
    json!([
        {"name": "tids", "expression": "request.userInfo.groups.filter(g, g.startsWith('paddock:tenant:')).map(g, g.substring(15))"},
        {"name": "tid", "expression": "variables.tids[0]"}
    ])
}

/// One policy of the guard: it applies to requests of tenant identities only.
pub(crate) fn guard_policy(
    name: &str,
    match_constraints: Value,
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
                "matchConditions": [{
                    "name": "tenant-identity",
                    "expression": "request.userInfo.groups.exists(g, g.startsWith('paddock:tenant:'))"
                }],
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

/// Name of the FlowSchema and the priority level of tenants' requests (API Priority and
/// Fairness).
pub const TENANT_PRIORITY_LEVEL: &str = "paddock-tenants";

/// The priority level of tenants' requests. Without it they land in `global-default` (20
/// shares: about 50 seats of a default apiserver, shared with every other user), where 64
/// concurrent requests of one tenant already queue; with its own level tenants get seats in
/// proportion to `shares` and queue fairly among themselves (one queue per user, shuffle
/// sharded), and the rest of the cluster keeps its own.
pub fn tenant_priority_level(shares: u32) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": TENANT_PRIORITY_LEVEL, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": 50,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}
        }}
    })
}

/// The FlowSchema that sends every request paddock makes as a tenant (they all carry
/// [`crate::identity::ALL_TENANTS_GROUP`]) to [`tenant_priority_level`]. Its precedence
/// is ahead of `service-accounts` (9000) so tenants' service accounts, impersonated through
/// paddock, land there too; requests from inside tenant pods do not pass through paddock.
pub fn tenant_flow_schema() -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": TENANT_PRIORITY_LEVEL, "labels": {"app.kubernetes.io/managed-by": "paddock"}},
        "spec": {
            "priorityLevelConfiguration": {"name": TENANT_PRIORITY_LEVEL},
            "matchingPrecedence": 8000,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": crate::identity::ALL_TENANTS_GROUP}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                   "clusterScope": true, "namespaces": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
            }]
        }
    })
}

/// Name of tenant `t`'s own FlowSchema, `paddock-tenants-<tid>-flow`: it carries `<tid>-`
/// like every other upstream object of the tenant (not at the start: that form is a tenant's
/// own object name, and tenants cannot write FlowSchemas).
pub fn tenant_flow_schema_name(t: &TenantId) -> String {
    format!("{TENANT_PRIORITY_LEVEL}-{}-flow", t.as_str())
}

/// Tenant `t`'s own FlowSchema: every request paddock makes as any user of `t` (they all
/// carry `paddock:tenant:<tid>`) is ONE flow of the `paddock-tenants` priority level — no
/// distinguisher — so APF's fair queuing shares the level among tenants, not among users: a
/// tenant with a hundred users (or service accounts) gets one tenant's share, not a hundred.
/// It matches ahead of the catch-all [`tenant_flow_schema`] (which, per user, only still
/// catches a request of a tenant whose FlowSchema is not there yet). Labelled with the tenant,
/// so other tenants' reads of the shared FlowSchemas do not show it.
pub fn tenant_own_flow_schema(t: &TenantId) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": tenant_flow_schema_name(t), "labels": {
            MANAGED_FOR_LABEL: t.as_str(), TENANT_LABEL: t.as_str(), "app.kubernetes.io/managed-by": "paddock"}},
        "spec": {
            "priorityLevelConfiguration": {"name": TENANT_PRIORITY_LEVEL},
            "matchingPrecedence": 7900,
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": crate::identity::tenant_group(t)}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                   "clusterScope": true, "namespaces": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
            }]
        }
    })
}

/// The RoleBinding that gives the tenant's admins full rights inside one of its namespaces.
pub fn namespace_admin_binding(t: &TenantId, upstream_ns: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": NAMESPACE_ADMIN_BINDING, "namespace": upstream_ns, "labels": managed_labels(t)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": upstream_admin_group(t)}]
    })
}

/// Default isolation of a tenant namespace: ingress only from the tenant's own namespaces
/// (MTB NI-1). Shown to the tenant as "from every namespace" (its own).
pub fn namespace_network_policy(t: &TenantId, upstream_ns: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": NAMESPACE_NETWORK_POLICY, "namespace": upstream_ns, "labels": managed_labels(t)},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [
                {"key": TENANT_LABEL, "operator": "In", "values": [t.as_str()]}
            ]}}]}]
        }
    })
}

/// Count limits of a tenant namespace (MTB FNS-2); no NodePorts or LoadBalancers (MTB HI)
/// unless the admission webhook decides those per tenant (its policy's services settings).
pub fn namespace_quota(t: &TenantId, upstream_ns: &str, admission_webhook: bool) -> Value {
    let mut quota = namespace_quota_fixed(t, upstream_ns);
    if admission_webhook && let Some(hard) = quota["spec"]["hard"].as_object_mut() {
        hard.remove("services.nodeports");
        hard.remove("services.loadbalancers");
    }
    quota
}

fn namespace_quota_fixed(t: &TenantId, upstream_ns: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": NAMESPACE_QUOTA, "namespace": upstream_ns, "labels": managed_labels(t)},
        "spec": {"hard": {
            "pods": "500", "services": "200", "persistentvolumeclaims": "100", "secrets": "1000", "configmaps": "1000",
            "services.nodeports": "0", "services.loadbalancers": "0"
        }}
    })
}

/// Cluster-scoped kinds a tenant can own, as list paths. Namespaces are handled separately
/// (their deletion takes the namespaced contents with it), after the admission kinds: a
/// tenant's policy or webhook could refuse the deletion of the tenant's namespaces.
pub const OWNED_CLUSTER_KINDS: &[&str] = &[
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
    "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/api/v1/persistentvolumes",
];

pub fn owned_by(obj: &Value, t: &TenantId, crd: bool) -> bool {
    let labelled = obj["metadata"]["labels"][TENANT_LABEL].as_str() == Some(t.as_str());
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    // Exact `<tid>-` check, never a bare prefix match: `foofoo` must not take `foofoox-...`.
    let prefixed = if crd {
        obj["spec"]["group"]
            .as_str()
            .is_some_and(|g| g.starts_with(&t.prefix()))
    } else {
        name.starts_with(&t.prefix())
    };
    labelled && prefixed
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
    let mut vars = guard_tid_vars().as_array().cloned().unwrap_or_default();
    vars.push(json!({"name": "res", "expression": "request.resource.resource"}));
    guard_policy(
        &format!("{GUARD_NAME}-flowcontrol"),
        json!({"resourceRules": [{
            "apiGroups": ["flowcontrol.apiserver.k8s.io"], "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["flowschemas", "prioritylevelconfigurations"]
        }]}),
        Value::Array(vars),
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
