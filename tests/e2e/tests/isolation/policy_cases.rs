//! Attack cases of admission policies and API Priority and Fairness.

use super::*;

/// A tenant policy that refuses every ConfigMap labelled `vap-probe: 'yes'` (its message
/// names it), and its binding.
pub(crate) const VAP_DENY_PROBES: &str = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: deny-probes}\nspec:\n  failurePolicy: Fail\n  matchConstraints:\n    objectSelector: {matchLabels: {vap-probe: 'yes'}}\n    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]\n  validations: [{expression: 'false', message: vap-deny-probe}]\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: deny-probes}\nspec: {policyName: deny-probes, validationActions: [Deny]}\n";

pub(crate) fn probe_cm(name: &str, ns: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}, labels: {{vap-probe: 'yes'}}}}\n"
    )
}

/// A tenant policy with a param kind, as the tenant writes it.
pub(crate) fn vap_params(name: &str, av: &str, kind: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {{name: {name}}}\nspec:\n  paramKind: {{apiVersion: {av}, kind: {kind}}}\n  matchConstraints:\n    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}}]\n  validations: [{{expression: 'true'}}]\n"
    )
}

/// The same written straight upstream (bypass): labelled and prefixed, confined or not.
pub(crate) fn vap_up(name: &str, confined: bool, params: &str) -> String {
    let sel = if confined {
        "    namespaceSelector: {matchExpressions: [{key: paddock.io/tenant, operator: In, values: [alphaa]}]}\n"
    } else {
        ""
    };
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {{name: {name}, labels: {{paddock.io/tenant: alphaa}}}}\nspec:\n{params}  matchConstraints:\n{sel}    resourceRules: [{{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps], scope: Namespaced}}]\n  validations: [{{expression: 'false'}}]\n"
    )
}

/// Tenant ValidatingAdmissionPolicies (issue 13): confined to the tenant's namespaces, binding
/// only the tenant's policies, params only from the tenant. The first case puts a deny-all
/// policy of the attacker in force; the victim and platform cases come after the others, so
/// that it has long been active (the control waits for its type check as well).
pub(crate) fn admission_policy_cases() -> Vec<Case> {
    use Expect::*;
    use Who::*;
    vec![
        case("vap-confined", "VAPs reaching other tenants", "a tenant policy's namespaceSelector is confined upstream")
            .setup(step_in(A, "apply -f -", VAP_DENY_PROBES))
            .attack(step(Up, "get validatingadmissionpolicy alphaa-deny-probes -o jsonpath={.spec.matchConstraints.namespaceSelector}"), OkWith("paddock.io/tenant"))
            .control(step(A, "get validatingadmissionpolicy deny-probes -o name"), OkWith("deny-probes"))
            .bypass(step_in(Bypass, "create -f -", &vap_up("alphaa-vap-wide", false, ""))),
        case("vap-params-platform", "VAPs reading platform objects", "a tenant policy taking its params from Nodes")
            .attack(step_in(A, "create -f -", &vap_params("node-params", "v1", "Node")), RefusedWith("paramKind"))
            .control(step_in(A, "apply -f -", &vap_params("gadget-params", "example.com/v1", "Gadget")), Ok)
            .bypass(step_in(Bypass, "create -f -", &vap_up("alphaa-node-params", true, "  paramKind: {apiVersion: v1, kind: Node}\n"))),
        case("vap-bind-platform-policy", "VAPs reaching the platform", "a binding naming the platform's guard policy names the tenant's own")
            .then(step_in(A, "apply -f -", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: bind-guard}\nspec: {policyName: paddock-tenant-guard, validationActions: [Deny]}\n"))
            .attack(step(Up, "get validatingadmissionpolicybinding alphaa-bind-guard -o jsonpath={.spec.policyName}"), OkWith("alphaa-paddock-tenant-guard"))
            .control(step(A, "get validatingadmissionpolicybinding bind-guard -o jsonpath={.spec.policyName}"), OkWith("paddock-tenant-guard"))
            .bypass(step_in(Bypass, "create -f -", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: alphaa-bind-guard2, labels: {paddock.io/tenant: alphaa}}\nspec: {policyName: paddock-tenant-guard, validationActions: [Warn]}\n")),
        case("vap-victim-writes", "VAPs reaching other tenants", "the attacker's deny-all policy does not touch the victim's writes")
            .attack(step_in(B, "create -f -", &probe_cm("vap-probe-b", "vault-ns")), Ok)
            .control_pre(step(A, "wait --for=jsonpath={.status.observedGeneration}=1 validatingadmissionpolicy deny-probes --timeout=60s"))
            .control(step_in(A, "create -f -", &probe_cm("vap-probe-a", "web")), RefusedWith("vap-deny-probe"))
            .bypass(step_in(Bypass, "create -f -", &vap_up("alphaa-vap-victim", true, "").replace("values: [alphaa]", "values: [bravoo]"))),
        case("vap-platform-writes", "VAPs reaching the platform", "the attacker's deny-all policy does not touch platform writes")
            .attack(step_in(Up, "create -f -", &probe_cm("vap-probe-plat", "plat-core")), Ok)
            .control(step_in(A, "create -f -", &probe_cm("vap-probe-a2", "web")), RefusedWith("vap-deny-probe")),
    ]
}

/// A tenant FlowSchema as the tenant writes it: one subject, a level, a precedence.
pub(crate) fn flow_schema(name: &str, subject: &str, level: &str) -> String {
    format!(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {{name: {name}}}\nspec:\n  matchingPrecedence: 2\n  priorityLevelConfiguration: {{name: {level}}}\n  rules:\n  - subjects: [{subject}]\n    nonResourceRules: [{{verbs: ['*'], nonResourceURLs: ['*']}}]\n"
    )
}

/// The same written straight upstream (bypass): labelled and prefixed.
pub(crate) fn flow_schema_up(name: &str, subject: &str, level: &str) -> String {
    flow_schema(name, subject, level).replace(
        &format!("metadata: {{name: {name}}}"),
        &format!("metadata: {{name: {name}, labels: {{paddock.io/tenant: alphaa}}}}"),
    )
}

pub(crate) fn priority_level(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    )
}

pub(crate) fn priority_level_up(name: &str, spec: &str) -> String {
    priority_level(name, spec).replace(
        &format!("metadata: {{name: {name}}}"),
        &format!("metadata: {{name: {name}, labels: {{paddock.io/tenant: alphaa}}}}"),
    )
}

pub(crate) const ALL_USERS: &str = "{kind: Group, group: {name: 'system:authenticated'}}";
pub(crate) const LIMITED_HUGE: &str =
    "{type: Limited, limited: {nominalConcurrencyShares: 1000000, limitResponse: {type: Reject}}}";
/// The attacker's cluster shadow identity with the shared cluster-scope group (what paddock
/// asserts for its cluster-scoped requests): upstream RBAC lets it write FlowSchemas and
/// levels, so in these bypass runs only the admission guard stands in the way.
pub(crate) const SHADOW: &str = "--as=paddock:cluster:alphaa:paddock:alphaa:admin --as-group=paddock:tenant-cluster-scope-admins";

/// Tenant FlowSchemas and PriorityLevelConfigurations (issue 13): a FlowSchema matches only
/// the tenant's own identities and sends them only to the tenant's own levels; a tenant level
/// is never Exempt and owns no seats; lists show the platform's objects but no other tenant's.
pub(crate) fn flowcontrol_cases() -> Vec<Case> {
    use Expect::*;
    use Who::*;
    vec![
        case("apf-match-everyone", "FlowSchemas reaching other tenants", "a FlowSchema for system:authenticated matches only the tenant's identities")
            // A dangling level (never created): the tenant's own requests are not sent anywhere.
            .setup(step_in(A, "create -f -", &flow_schema("catch-all", ALL_USERS, "no-such-level")))
            .attack(step(Up, "get flowschema alphaa-catch-all -o jsonpath=subject={.spec.rules[0].subjects[0].group.name};"), OkWith("subject=paddock:tenant:alphaa;"))
            .control(step(A, "get flowschema catch-all -o jsonpath=subject={.spec.rules[0].subjects[0].group.name};"), OkWith("subject=system:authenticated;"))
            .bypass(step_in(Bypass, &format!("create {SHADOW} -f -"), &flow_schema_up("alphaa-wide", ALL_USERS, "alphaa-slow-lane"))),
        case("apf-match-others", "FlowSchemas reaching other tenants", "a FlowSchema naming every user, or another tenant's user")
            .attack(step_in(A, "create -f -", &flow_schema("star", "{kind: User, user: {name: '*'}}", "slow-lane")), RefusedWith("matches only this cluster's own identities"))
            .control(step_in(A, "apply -f -", &flow_schema("alice-only", "{kind: User, user: {name: alice}}", "slow-lane")), Ok)
            .bypass(step_in(Bypass, &format!("create {SHADOW} -f -"), &flow_schema_up("alphaa-victim", "{kind: User, user: {name: 'paddock:bravoo:admin'}}", "alphaa-slow-lane"))),
        case("apf-level-exempt", "FlowSchemas reaching the platform", "a FlowSchema sending the tenant's requests to the platform's exempt level")
            .then(step_in(A, "apply -f -", &flow_schema("to-exempt", ALL_USERS, "exempt")))
            .attack(step(Up, "get flowschema alphaa-to-exempt -o jsonpath=level={.spec.priorityLevelConfiguration.name};"), OkWith("level=alphaa-exempt;"))
            .control(step(A, "get flowschema to-exempt -o jsonpath=level={.spec.priorityLevelConfiguration.name};"), OkWith("level=exempt;"))
            .bypass(step_in(Bypass, &format!("create {SHADOW} -f -"), &flow_schema_up("alphaa-to-exempt2", ALL_USERS, "exempt"))),
        case("apf-exempt-level", "priority levels taking seats", "a PriorityLevelConfiguration of type Exempt")
            .attack(step_in(A, "create -f -", &priority_level("vip", "{type: Exempt}")), RefusedWith("Exempt are not allowed"))
            .control(step_in(A, "apply -f -", &priority_level("slow-lane", "{type: Limited, limited: {nominalConcurrencyShares: 5, limitResponse: {type: Reject}}}")), Ok)
            .bypass(step_in(Bypass, &format!("create {SHADOW} -f -"), &priority_level_up("alphaa-vip", "{type: Exempt}"))),
        case("apf-huge-shares", "priority levels taking seats", "a level with a million shares owns none upstream")
            .then(step_in(A, "apply -f -", &priority_level("greedy", LIMITED_HUGE)))
            .attack(step(Up, "get prioritylevelconfiguration alphaa-greedy -o jsonpath=shares={.spec.limited.nominalConcurrencyShares};"), OkWith("shares=0;"))
            .control(step(A, "get prioritylevelconfiguration greedy -o jsonpath=shares={.spec.limited.nominalConcurrencyShares};"), OkWith("shares=1000000;"))
            .bypass(step_in(Bypass, &format!("create {SHADOW} -f -"), &priority_level_up("alphaa-greedy2", LIMITED_HUGE))),
        case("apf-list-others", "FlowSchemas of other tenants", "FlowSchema and level lists show the platform's and one's own, never another tenant's")
            .setup(step_in(B, "apply -f -", &flow_schema("crown-jewels", "{kind: User, user: {name: nobody}}", "crown-jewels")))
            .setup(step_in(B, "apply -f -", &priority_level("crown-jewels", "{type: Limited, limited: {nominalConcurrencyShares: 1, limitResponse: {type: Reject}}}")))
            .attack(step(A, "get flowschemas,prioritylevelconfigurations -o yaml"), NoLeak)
            .control(step(A, "get flowschemas,prioritylevelconfigurations"), OkWith("global-default"))
            .bypass(step(Bypass, "get flowschema bravoo-crown-jewels")),
        // A GET by name falls back to the platform's object of that name after a 404
        // (proxy/follow_platform.rs): never to another tenant's object or paddock's plumbing.
        case("apf-get-others", "FlowSchemas of other tenants", "a FlowSchema GET by another tenant's upstream name does not reach it through the platform fallback")
            .setup(step_in(B, "apply -f -", &flow_schema("peek", "{kind: User, user: {name: nobody}}", "peek")))
            .attack(step(A, "get flowschema bravoo-peek -o yaml"), RefusedWith("(NotFound)"))
            .control(step(A, "get flowschema exempt -o name"), OkWith("flowschema.flowcontrol.apiserver.k8s.io/exempt"))
            .bypass(step(Bypass, "get flowschema bravoo-peek")),
        case("apf-get-plumbing", "FlowSchemas of other tenants", "a FlowSchema GET by the name of paddock's per-tenant FlowSchema of another tenant")
            .attack(step(A, "get flowschema paddock-tenants-bravoo-flow -o yaml"), RefusedWith("(NotFound)"))
            .control(step(A, "get prioritylevelconfiguration global-default -o name"), OkWith("prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/global-default")),
    ]
}

/// A hostPort pod (what the conformance test SchedulerPredicates "same hostPort" creates).
fn host_port_pod(name: &str) -> String {
    pod(name, PLAIN, "ports: [{containerPort: 80, hostPort: 80}]")
}

/// The privileged pod-security setting (issue 13): bravoo's policy has `podSecurity:
/// privileged` (set when the world is built), alphaa's has not. Only a tenant with the
/// setting may label a namespace `privileged` and run host-exposing pods there, and only in
/// the namespaces that ask; the guard lifts its lock only for a request carrying the writer's
/// own tenant's privileged group (paddock asserts it). The bypass runs are the attacker's
/// cluster shadow (upstream RBAC lets it write its namespaces, so only the guard stands in the
/// way) with the victim's privileged group added.
pub(crate) fn pod_security_setting_cases() -> Vec<Case> {
    use Expect::*;
    use Who::*;
    let forged = format!("{SHADOW} --as-group=paddock:pod-security-privileged:bravoo");
    vec![
        case("psa-privileged-setting-label", "pod-security setting", "label one's namespace privileged without the setting (the victim has it)")
            .setup(step(B, "create namespace b-host"))
            .attack(step(A, "label namespace web pod-security.kubernetes.io/enforce=privileged --overwrite"), RefusedWith("pod-security"))
            .control(step(B, "label namespace b-host pod-security.kubernetes.io/enforce=privileged --overwrite"), Ok)
            .bypass(step(Bypass, &format!("label namespace alphaa-web pod-security.kubernetes.io/enforce=privileged --overwrite {forged}"))),
        case("psa-privileged-setting-hostport", "pod-security setting", "a hostPort pod without the setting (the victim runs one in its privileged namespace)")
            .attack(step_in(A, "create -n web -f -", &host_port_pod("hport-a")), RefusedWith("hostPort"))
            .control(step_in(B, "create -n b-host -f -", &host_port_pod("hport-b")), Ok)
            .bypass(step_in(Bypass, &format!("create {forged} -f -"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: alphaa-hostns, labels: {paddock.io/tenant: alphaa, pod-security.kubernetes.io/enforce: privileged}}\n")),
        case("psa-privileged-setting-unasked", "pod-security setting", "with the setting, a namespace that asks for no level stays at baseline")
            .setup(step(B, "create namespace b-plain"))
            .attack(step_in(B, "create -n b-plain -f -", &host_port_pod("hport-b2")), RefusedWith("hostPort"))
            .control(step(B, "get namespace b-host -o jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}"), OkWith("privileged")),
    ]
}
