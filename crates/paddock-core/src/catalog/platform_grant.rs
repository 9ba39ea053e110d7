//! Platform grants: a tenant trusted with a shared built-in kind (`spec.policy.platformKinds`).
//!
//! By default a tenant reads the platform's IngressClasses, StorageClasses, RuntimeClasses and
//! CSINodes (shared read-only) and cannot touch VolumeAttachments, ServiceCIDRs or IPAddresses:
//! each is one object for the whole cluster, so a tenant writing it would change every
//! tenant's ingress, storage, nodes or Service addresses. A platform admin may still trust one
//! tenant with such a kind (the platform team's own tenant, a trusted CI tenant, a conformance
//! run): the tenant policy's `platformKinds` names the kinds, each `<resource>.<group>`. For a
//! granted kind the tenant's admins act on the shared objects as a cluster admin would: names
//! unprefixed, every verb; upstream, the tenant admins' cluster identity gets exactly those
//! rights (a ClusterRole and binding of the tenant's own, [`grant_role`]). This gives up
//! isolation for that kind and only that kind (docs/security.md "Platform grants"). Only the
//! kinds of [`GRANTABLE`] can be granted; a tenant without the grant keeps the defaults above.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};

use crate::tenant::TenantId;

/// The kinds a platform admin may grant: (upstream group, resource). Each is a cluster-scoped
/// built-in kind that is shared (read-only or refused) by default.
pub const GRANTABLE: &[(&str, &str)] = &[
    ("networking.k8s.io", "ingressclasses"),
    ("networking.k8s.io", "servicecidrs"),
    ("networking.k8s.io", "ipaddresses"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "volumeattachments"),
    ("node.k8s.io", "runtimeclasses"),
    // Riskier still (docs/security.md "Platform grants"): an approved CSR for a real signer
    // mints a real upstream credential, a tenant writing Nodes can register, taint, cordon or
    // delete the nodes every tenant's pods run on, and a PriorityClass decides whose pods are
    // preempted.
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("", "nodes"),
    ("scheduling.k8s.io", "priorityclasses"),
];

/// Every tenant's granted (upstream group, resource) pairs, by tenant id.
pub type Grants = HashMap<String, BTreeSet<(String, String)>>;

/// `ingressclasses.networking.k8s.io` -> ("networking.k8s.io", "ingressclasses"), if grantable.
/// A core kind is written with an empty group, as RBAC and admission name it: `nodes.`; plain
/// `nodes` is accepted too.
pub fn parse_kind(s: &str) -> Option<(String, String)> {
    let (resource, group) = s.split_once('.').unwrap_or((s, ""));
    GRANTABLE
        .iter()
        .find(|(g, r)| *g == group && *r == resource)
        .map(|(g, r)| ((*g).to_owned(), (*r).to_owned()))
}

/// Checks a policy's `platformKinds`; the error names the kinds that may be granted.
pub fn validate(kinds: &[String]) -> Result<(), String> {
    for k in kinds {
        if parse_kind(k).is_none() {
            let allowed: Vec<String> = GRANTABLE.iter().map(|(g, r)| format!("{r}.{g}")).collect();
            return Err(format!(
                "platformKinds: {k:?} cannot be granted (grantable: {})",
                allowed.join(", ")
            ));
        }
    }
    Ok(())
}

/// The (group, resource) pairs of a policy's `platformKinds` (unknown ones left out; the
/// policy was validated when it was stored).
pub fn granted(kinds: &[String]) -> BTreeSet<(String, String)> {
    kinds.iter().filter_map(|k| parse_kind(k)).collect()
}

/// The name of tenant `t`'s grant ClusterRole and ClusterRoleBinding upstream.
pub fn grant_role_name(t: &TenantId) -> String {
    format!("paddock:platform-grant:{}", t.as_str())
}

/// Tenant `t`'s grant ClusterRole upstream: every verb on exactly the granted kinds (and their
/// status subresources). None when nothing is granted (the role is then removed).
pub fn grant_role(t: &TenantId, granted: &BTreeSet<(String, String)>) -> Option<Value> {
    if granted.is_empty() {
        return None;
    }
    let rules: Vec<Value> = granted.iter().flat_map(|(g, r)| kind_rules(g, r)).collect();
    Some(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": grant_role_name(t), "labels": {"paddock.io/managed-for": t.as_str()}},
        "rules": rules,
    }))
}

/// The upstream RBAC rules of one granted kind: every verb on it and its status; a CSR's
/// `approval` too, and the right to approve and sign for every signer, which the apiserver's
/// CertificateApproval and CertificateSigning admission checks per signer name.
fn kind_rules(g: &str, r: &str) -> Vec<Value> {
    let mut resources = vec![r.to_owned(), format!("{r}/status")];
    let mut extra = Vec::new();
    if (g, r) == ("certificates.k8s.io", "certificatesigningrequests") {
        resources.push(format!("{r}/approval"));
        extra.push(
            json!({"apiGroups": [g], "resources": ["signers"], "verbs": ["approve", "sign"]}),
        );
    }
    let mut rules = vec![json!({"apiGroups": [g], "resources": resources, "verbs": ["*"]})];
    rules.extend(extra);
    rules
}

/// The upstream group paddock asserts, beside the caller's own, on a request of a granted
/// kind by one of the tenant's admins (`Plan::asserts_platform_grant`). Nothing else can carry it: a
/// tenant's own groups are mapped into `paddock:<tid>:...`, and a tenant's own bindings name
/// only such groups. The grant role is bound to it, and the tenant guard lets it write the
/// granted kinds under their own names ([`guard_exemption`]).
pub fn grant_group(t: &TenantId) -> String {
    format!("paddock:platform-grant:{}", t.as_str())
}

/// The tenant guard's exemption (a CEL expression over its variables): a request carrying the
/// tenant's [`grant_group`] on one of the [`GRANTABLE`] kinds may write it under its own name
/// without the tenant label. RBAC still decides which of those kinds (the tenant's grant role).
pub fn guard_exemption() -> String {
    let kinds: Vec<String> = GRANTABLE
        .iter()
        .map(|(g, r)| format!("'{r}.{g}'"))
        .collect();
    format!(
        "(('paddock:platform-grant:' + variables.tid) in request.userInfo.groups && \
          (request.resource.resource + '.' + request.resource.group) in [{}])",
        kinds.join(", ")
    )
}

/// The binding of [`grant_role`] to [`grant_group`] (only the tenant's admins carry it: its
/// other users get nothing from the grant).
pub fn grant_binding(t: &TenantId) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": grant_role_name(t), "labels": {"paddock.io/managed-for": t.as_str()}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": grant_role_name(t)},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": grant_group(t)}],
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_the_grantable_kinds_parse() {
        assert_eq!(
            parse_kind("ingressclasses.networking.k8s.io"),
            Some(("networking.k8s.io".into(), "ingressclasses".into()))
        );
        for bad in [
            "ingressclasses",
            "clusterroles.rbac.authorization.k8s.io",
            "namespaces.",
            "namespaces",
            "nodes.core",
            "signers.certificates.k8s.io",
            "tokenreviews.authentication.k8s.io",
            "INGRESSCLASSES.networking.k8s.io",
        ] {
            assert_eq!(parse_kind(bad), None, "{bad}");
        }
        assert!(validate(&["storageclasses.storage.k8s.io".into()]).is_ok());
        assert_eq!(parse_kind("nodes."), Some(("".into(), "nodes".into())));
        assert_eq!(parse_kind("nodes"), Some(("".into(), "nodes".into())));
        assert_eq!(
            parse_kind("certificatesigningrequests.certificates.k8s.io"),
            Some((
                "certificates.k8s.io".into(),
                "certificatesigningrequests".into()
            ))
        );
        let e = validate(&["clusterroles.rbac.authorization.k8s.io".into()]).unwrap_err();
        assert!(e.contains("cannot be granted") && e.contains("ingressclasses.networking.k8s.io"));
    }

    #[test]
    fn the_role_names_exactly_the_granted_kinds_for_the_tenant_admins() {
        let t = TenantId::parse("foofoo").unwrap();
        assert_eq!(grant_role(&t, &BTreeSet::new()), None);
        let g = granted(&["runtimeclasses.node.k8s.io".into(), "bogus".into()]);
        let role = grant_role(&t, &g).unwrap();
        assert_eq!(role["metadata"]["name"], "paddock:platform-grant:foofoo");
        assert_eq!(role["rules"].as_array().unwrap().len(), 1);
        assert_eq!(role["rules"][0]["apiGroups"], json!(["node.k8s.io"]));
        assert_eq!(
            role["rules"][0]["resources"],
            json!(["runtimeclasses", "runtimeclasses/status"])
        );
        // A CSR grant: the approval subresource and the signers it must approve and sign for.
        let role = grant_role(
            &t,
            &granted(&["certificatesigningrequests.certificates.k8s.io".into()]),
        )
        .unwrap();
        assert_eq!(
            role["rules"][0]["resources"],
            json!([
                "certificatesigningrequests",
                "certificatesigningrequests/status",
                "certificatesigningrequests/approval"
            ])
        );
        assert_eq!(role["rules"][1]["resources"], json!(["signers"]));
        assert_eq!(role["rules"][1]["verbs"], json!(["approve", "sign"]));
        let role = grant_role(&t, &granted(&["nodes.".into()])).unwrap();
        assert_eq!(role["rules"][0]["apiGroups"], json!([""]));
        assert_eq!(
            role["rules"][0]["resources"],
            json!(["nodes", "nodes/status"])
        );
        assert!(guard_exemption().contains("'nodes.'"));
        let b = grant_binding(&t);
        assert_eq!(b["subjects"][0]["name"], "paddock:platform-grant:foofoo");
        assert!(guard_exemption().contains("'ingressclasses.networking.k8s.io'"));
        assert_eq!(b["roleRef"]["name"], "paddock:platform-grant:foofoo");
    }
}

#[cfg(test)]
mod catalog_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::catalog::Policy;
    use crate::catalog::context::TenantContext;
    use crate::request::{parse_request, plan};

    fn ctx_with_grant(id: &str) -> TenantContext {
        let mut grants = Grants::new();
        grants.insert(
            "foofoo".into(),
            granted(&[
                "ingressclasses.networking.k8s.io".into(),
                "volumeattachments.storage.k8s.io".into(),
            ]),
        );
        let catalog = crate::catalog::tests::catalog().with_platform_grants(grants);
        TenantContext {
            tenant: TenantId::parse(id).unwrap(),
            catalog: std::sync::Arc::new(catalog),
        }
    }

    fn policy(c: &TenantContext, g: &str, r: &str) -> Policy {
        c.catalog
            .resolve_any_version(&c.tenant, g, r)
            .unwrap()
            .policy
    }

    #[test]
    fn a_granted_kind_is_the_tenants_to_write_under_the_platforms_names() {
        let c = ctx_with_grant("foofoo");
        assert_eq!(
            policy(&c, "networking.k8s.io", "ingressclasses"),
            Policy::PlatformGranted
        );
        assert_eq!(
            policy(&c, "storage.k8s.io", "volumeattachments"),
            Policy::PlatformGranted
        );
        let p = plan(
            &c,
            parse_request(
                "DELETE",
                "/apis/networking.k8s.io/v1/ingressclasses/nginx",
                None,
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            p.upstream_path_and_query,
            "/apis/networking.k8s.io/v1/ingressclasses/nginx"
        );
        let p = plan(
            &c,
            parse_request("POST", "/apis/storage.k8s.io/v1/volumeattachments", None).unwrap(),
        )
        .unwrap();
        assert_eq!(
            p.upstream_path_and_query,
            "/apis/storage.k8s.io/v1/volumeattachments"
        );
    }

    #[test]
    fn the_grant_reaches_neither_other_kinds_nor_other_tenants() {
        let c = ctx_with_grant("foofoo");
        assert_eq!(
            policy(&c, "storage.k8s.io", "storageclasses"),
            Policy::SharedReadOnly
        );
        assert_eq!(policy(&c, "", "nodes"), Policy::SharedReadOnly);
        assert_eq!(policy(&c, "", "namespaces"), Policy::TenantOwned);
        let refused = |c: &TenantContext, m: &str, path: &str| {
            plan(c, parse_request(m, path, None).unwrap())
                .err()
                .map(|e| e.http_code())
        };
        assert_eq!(
            refused(&c, "DELETE", "/apis/storage.k8s.io/v1/storageclasses/fast"),
            Some(403)
        );
        let other = ctx_with_grant("barbar");
        assert_eq!(
            policy(&other, "networking.k8s.io", "ingressclasses"),
            Policy::SharedReadOnly
        );
        assert_eq!(
            policy(&other, "storage.k8s.io", "volumeattachments"),
            Policy::Forbidden
        );
        assert_eq!(
            refused(
                &other,
                "DELETE",
                "/apis/networking.k8s.io/v1/ingressclasses/nginx"
            ),
            Some(403)
        );
        assert_eq!(
            refused(&other, "GET", "/apis/storage.k8s.io/v1/volumeattachments"),
            Some(403)
        );
    }
}
