//! Tenant ValidatingAdmissionPolicies and their bindings.
//!
//! A tenant policy acts only inside the tenant's cluster, as a tenant webhook does: its
//! `matchConstraints.namespaceSelector` is forced to the tenant's namespaces and its resource
//! rules to namespaced scope (table rows; `rbac::webhook_rules_up`). What is particular to
//! policies is here:
//!
//! - a binding's `policyName` names a cluster-scoped policy of the tenant: prefixed like every
//!   tenant cluster-scoped name, so a binding can never put a platform or another tenant's
//!   policy in force;
//! - `paramKind`: the apiserver reads a policy's params with its own rights, not the tenant's,
//!   and a policy's messages can print them. So a param kind must be one whose objects all
//!   belong to the tenant when the binding confines them: a kind of the tenant's own CRD
//!   groups (none of them: see [`BUILTIN_PARAM_KINDS`] for why). Everything else (ConfigMaps,
//!   Nodes, ClusterRoles, Namespaces, platform CRDs) is refused, here and by the admission
//!   guard upstream, which is generated from the same list.

use serde_json::Value;

use crate::catalog::context::TenantContext;
use crate::catalog::{join_api_version, split_api_version};
use crate::error::TranslateError;
use crate::tenant::{NameKind, check_prefixed_len};

/// Built-in kinds a tenant policy may take its params from, as (apiVersion, kind). None: the
/// apiserver itself requires a policy's author to `get` every object of the param kind,
/// cluster-wide, and a tenant reads no built-in kind outside its namespaces, so a ConfigMap or
/// Secret param kind would be refused upstream with a message about the tenant's upstream
/// identity; paddock refuses it first, naming the policy. Params come from the tenant's own
/// custom resources (the tenant's shadow identity reads all of them). Default deny.
pub const BUILTIN_PARAM_KINDS: &[(&str, &str)] = &[];

/// `spec.policyName` of a binding, up: the tenant's policy name prefixed.
pub(crate) fn policy_name_up(ctx: &TenantContext, v: &mut Value) -> Result<(), TranslateError> {
    if let Value::String(n) = v
        && !n.is_empty()
    {
        check_prefixed_len(NameKind::DnsSubdomain, n)?;
        *n = ctx.tenant.upstream_name(n);
    }
    Ok(())
}

/// Down: the tenant's prefix removed (a binding stored upstream names only the tenant's own
/// policies; the admission guard refuses anything else).
pub(crate) fn policy_name_down(ctx: &TenantContext, v: &mut Value) {
    if let Value::String(n) = v
        && let Some(s) = ctx.tenant.strip(n)
    {
        *n = s.to_owned();
    }
}

/// `spec.paramKind` of a policy, up: the group of a tenant CRD prefixed; refused unless every
/// object of the kind the binding can reach is the tenant's (see the module comment).
pub(crate) fn param_kind_up(ctx: &TenantContext, v: &mut Value) -> Result<(), TranslateError> {
    let Value::Object(m) = v else { return Ok(()) };
    let Some(av) = m
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Ok(());
    };
    let kind = m
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let (g, ver) = split_api_version(&av);
    let ug = ctx.catalog.rule_group_up(&ctx.tenant, g);
    if ctx.tenant.strip(&ug).is_some() {
        // The tenant's own CRD group (whether or not the CRD exists yet).
        m.insert(
            "apiVersion".into(),
            Value::String(join_api_version(&ug, ver)),
        );
        return Ok(());
    }
    if BUILTIN_PARAM_KINDS.contains(&(av.as_str(), kind.as_str())) {
        return Ok(());
    }
    Err(TranslateError::forbidden(format!(
        "paramKind {av} {kind} is not allowed in this cluster: the params of a policy are read \
         with the apiserver's rights, so they must be a kind of your own custom resources"
    )))
}

/// Down: the tenant's CRD group un-prefixed.
pub(crate) fn param_kind_down(ctx: &TenantContext, v: &mut Value) {
    let Some(Value::String(av)) = v.get_mut("apiVersion") else {
        return;
    };
    let (g, ver) = split_api_version(av);
    if let Some(own) = ctx.tenant.strip(g) {
        let down = join_api_version(own, ver);
        *av = down;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use crate::catalog::context::TenantContext;
    use crate::catalog::tests::catalog;
    use crate::rules::modes::Disposition;
    use crate::rules::object::{object_down, object_up};
    use crate::tenant::TenantId;

    fn ctx() -> TenantContext {
        TenantContext {
            tenant: TenantId::parse("foofoo").unwrap(),
            catalog: Arc::new(catalog()),
        }
    }

    fn up(v: Value) -> Result<Value, crate::error::TranslateError> {
        let mut v = v;
        object_up(&ctx(), &mut v, None)?;
        Ok(v)
    }

    fn tenant_term() -> Value {
        json!({"key":"paddock.io/tenant","operator":"In","values":["foofoo"]})
    }

    /// The conformance test's policy: confined to the tenant's namespaces, rules namespaced,
    /// and the tenant gets back what it wrote.
    #[test]
    fn policy_is_confined_and_round_trips() {
        let orig = json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
            "metadata":{"name":"p.example.com"},
            "spec":{"matchConstraints":{
                "namespaceSelector":{"matchLabels":{"e2e-unique":"true"}},
                "resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["deployments"]}]},
              "validations":[{"expression":"object.spec.replicas > 1"}]}});
        let u = up(orig.clone()).unwrap();
        assert_eq!(u["metadata"]["name"], "foofoo-p.example.com");
        assert_eq!(u["metadata"]["labels"]["paddock.io/tenant"], "foofoo");
        let mc = &u["spec"]["matchConstraints"];
        assert_eq!(
            mc["namespaceSelector"],
            json!({"matchLabels":{"e2e-unique":"true"},"matchExpressions":[tenant_term()]})
        );
        assert_eq!(mc["resourceRules"][0]["scope"], "Namespaced");
        let mut back = u;
        assert_eq!(object_down(&ctx(), &mut back).unwrap(), Disposition::Keep);
        assert_eq!(back["metadata"]["name"], "p.example.com");
        assert_eq!(
            back["spec"]["matchConstraints"]["namespaceSelector"],
            orig["spec"]["matchConstraints"]["namespaceSelector"]
        );

        // No selector at all: the confining one is created.
        let u = up(json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
            "metadata":{"name":"all"},"spec":{"matchConstraints":{"resourceRules":[
              {"apiGroups":["*"],"apiVersions":["*"],"operations":["*"],"resources":["*"]}]},
              "validations":[{"expression":"false"}]}}))
        .unwrap();
        let mc = &u["spec"]["matchConstraints"];
        assert_eq!(
            mc["namespaceSelector"]["matchExpressions"],
            json!([tenant_term()])
        );
        assert_eq!(mc["resourceRules"][0]["scope"], "Namespaced");
        // Cluster-scoped rules (they would reach platform objects) are refused.
        let e = up(json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
            "metadata":{"name":"c"},"spec":{"matchConstraints":{"resourceRules":[
              {"apiGroups":["rbac.authorization.k8s.io"],"apiVersions":["v1"],"operations":["*"],"resources":["clusterroles"],"scope":"Cluster"}]}}}))
        .unwrap_err();
        assert_eq!(e.http_code(), 403);
    }

    #[test]
    fn binding_names_only_own_policies_and_params() {
        let orig = json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding",
            "metadata":{"name":"b"},
            "spec":{"policyName":"p.example.com","validationActions":["Deny"],
              "paramRef":{"name":"limits","namespace":"config","parameterNotFoundAction":"Deny"},
              "matchResources":{"namespaceSelector":{"matchLabels":{"u":"true"}}}}});
        let u = up(orig.clone()).unwrap();
        assert_eq!(u["spec"]["policyName"], "foofoo-p.example.com");
        assert_eq!(u["spec"]["paramRef"]["namespace"], "foofoo-config");
        assert_eq!(
            u["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"],
            json!([tenant_term()])
        );
        let mut back = u;
        object_down(&ctx(), &mut back).unwrap();
        assert_eq!(back, orig);
        // A platform policy's name is just another name in the tenant's space.
        let u = up(json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding",
            "metadata":{"name":"b2"},"spec":{"policyName":"paddock-tenant-guard","validationActions":["Deny"]}}))
        .unwrap();
        assert_eq!(u["spec"]["policyName"], "foofoo-paddock-tenant-guard");
    }

    #[test]
    fn param_kinds() {
        let policy = |av: &str, kind: &str| {
            json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
                "metadata":{"name":"p"},"spec":{"paramKind":{"apiVersion":av,"kind":kind},
                "matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]}}})
        };
        // own CRD group, existing or not yet: prefixed, and back
        let u = up(policy("example.com/v1", "Widget")).unwrap();
        assert_eq!(
            u["spec"]["paramKind"]["apiVersion"],
            "foofoo-example.com/v1"
        );
        let mut back = u;
        object_down(&ctx(), &mut back).unwrap();
        assert_eq!(back["spec"]["paramKind"]["apiVersion"], "example.com/v1");
        let u = up(policy("later.example.org/v1", "Limit")).unwrap();
        assert_eq!(
            u["spec"]["paramKind"]["apiVersion"],
            "foofoo-later.example.org/v1"
        );
        // built-in kinds (platform objects, other tenants' objects): refused
        for (av, kind) in [
            ("v1", "ConfigMap"),
            ("v1", "Node"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("v1", "Namespace"),
            ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"),
        ] {
            let e = up(policy(av, kind)).unwrap_err();
            assert_eq!(e.http_code(), 403, "{av} {kind}");
            assert!(e.message().contains("paramKind"), "{}", e.message());
        }
    }
}
