//! Permission checks describe the tenant's cluster.
//!
//! Upstream, a tenant caller's rights are spread over two identities (docs/security.md): the
//! real one holds RoleBindings inside the tenant's namespaces (the admins' binding in every
//! namespace, the mirrors of the tenant's ClusterRoleBindings, the tenant's own RoleBindings),
//! the cluster shadow holds the cluster-scoped rights and, through the tenant's
//! ClusterRoleBindings, their cluster-wide form. A `SelfSubjectAccessReview` asked of either
//! alone answers for upstream, not for what paddock serves: "list namespaces" as the real
//! identity is "no" although paddock serves it; "list pods in all namespaces" is "no" for
//! either although paddock fans it out; anything in a namespace that does not exist yet is
//! "no" although paddock answers there as a cluster would. [`self_review_next`] says, from
//! upstream's answer (JSON, upstream names), what to ask or answer instead; the server runs it
//! until it says [`ReviewNext::Keep`].

use serde_json::{Value, json};

use crate::catalog::context::TenantContext;
use crate::catalog::{Policy, Scope};

/// What the server knows when it decides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReviewFacts {
    /// The caller is an administrator of the tenant (cluster-admin in every namespace of it).
    pub admin: bool,
    /// The answer being judged came from the shadow identity.
    pub asked_as_shadow: bool,
    /// For a review naming a namespace: whether the tenant has it (None: not probed yet).
    pub namespace_exists: Option<bool>,
}

/// The next step for a `SelfSubjectAccessReview` answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewNext {
    /// The answer stands.
    Keep,
    /// Ask this review (JSON, upstream names) as the shadow identity; its answer stands.
    AskShadow(Value),
    /// Find out whether the tenant has this namespace (upstream name), then decide again.
    ProbeNamespace(String),
    /// Allowed: the caller administers the tenant, and the attribute is inside it.
    AllowAdmin,
}

/// The `status` of a review answered by [`ReviewNext::AllowAdmin`].
pub fn admin_allowed_status() -> Value {
    json!({"allowed": true,
           "reason": "allowed: administrators of this cluster hold cluster-admin in every namespace"})
}

fn review(ra: Option<Value>, nra: Option<&Value>) -> Value {
    let mut spec = serde_json::Map::new();
    if let Some(ra) = ra {
        spec.insert("resourceAttributes".into(), ra);
    }
    if let Some(nra) = nra {
        spec.insert("nonResourceAttributes".into(), nra.clone());
    }
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
           "spec": Value::Object(spec)})
}

/// See the module docs. `answer` is upstream's `SelfSubjectAccessReview` answer.
pub fn self_review_next(ctx: &TenantContext, answer: &Value, facts: ReviewFacts) -> ReviewNext {
    let spec = &answer["spec"];
    let allowed = answer["status"]["allowed"].as_bool() == Some(true);
    if let Some(ra) = spec["resourceAttributes"].as_object() {
        let s = |k: &str| ra.get(k).and_then(Value::as_str).unwrap_or("");
        let ns = s("namespace");
        let Some(info) =
            ctx.catalog
                .resolve_upstream_any_version(&ctx.tenant, s("group"), s("resource"))
        else {
            // A resource no API serves, named cluster-wide (an operator's virtual resource for
            // its own RBAC checks: cert-manager's `signers` approval): what the tenant's
            // ClusterRoleBindings grant, which the shadow identity holds. Wildcards and kinds
            // the tenant cannot see otherwise: upstream's answer for the real identity (inside
            // a namespace, or nothing cluster-wide).
            let named = !["", "*"].contains(&s("resource")) && s("group") != "*";
            if named && ns.is_empty() && !allowed && !facts.asked_as_shadow {
                return ReviewNext::AskShadow(review(Some(Value::Object(ra.clone())), None));
            }
            return ReviewNext::Keep;
        };
        if info.scope == Scope::Cluster {
            // `kubectl auth can-i delete nodes` sends the current namespace along: the answer
            // is the one for the cluster-scoped object, which the shadow identity holds.
            if facts.asked_as_shadow && ns.is_empty() {
                return ReviewNext::Keep;
            }
            let mut ra = ra.clone();
            ra.remove("namespace");
            return ReviewNext::AskShadow(review(Some(Value::Object(ra)), None));
        }
        if allowed || info.policy != Policy::TenantOwned {
            return ReviewNext::Keep;
        }
        if !ns.is_empty() {
            if ctx.tenant.strip(ns).is_none() {
                return ReviewNext::Keep;
            }
            match facts.namespace_exists {
                None => return ReviewNext::ProbeNamespace(ns.to_owned()),
                Some(true) => return ReviewNext::Keep,
                Some(false) => {}
            }
        }
        // All namespaces (paddock fans the request out over the tenant's namespaces), or a
        // namespace that does not exist yet (paddock answers there as a cluster would): what
        // the caller holds in every namespace of the tenant.
        if facts.admin {
            return ReviewNext::AllowAdmin;
        }
        if facts.asked_as_shadow {
            return ReviewNext::Keep;
        }
        return ReviewNext::AskShadow(review(Some(Value::Object(ra.clone())), None));
    }
    if let Some(nra) = spec.get("nonResourceAttributes").filter(|v| v.is_object()) {
        if allowed || facts.asked_as_shadow {
            return ReviewNext::Keep;
        }
        return ReviewNext::AskShadow(review(None, Some(nra)));
    }
    ReviewNext::Keep
}

/// A `SubjectAccessReview` (upstream form) asking `review`'s attributes about the shadow form
/// of a tenant subject (`user`, `groups` upstream names): what the subject's ClusterRoleBindings
/// give it. The groups every tenant identity carries stay as they are, the others become
/// shadows; an admin subject's shadow carries the cluster-scope group, as its requests do.
pub fn shadow_subject_review(
    t: &crate::tenant::TenantId,
    review: &Value,
    user: &str,
    groups: &[String],
    extra: &Value,
) -> Value {
    use crate::identity::{cluster_shadow, shadow_groups};
    let gs = shadow_groups(t, groups);
    let mut spec = review["spec"].clone();
    spec["user"] = json!(cluster_shadow(t, user));
    spec["groups"] = json!(gs);
    if extra.is_object() {
        spec["extra"] = extra.clone();
    }
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
}

/// `SelfSubjectRulesReview` (`kubectl auth can-i --list`): upstream's answer for the real
/// identity in a namespace lists the rules of the RoleBindings there; the tenant's cluster also
/// has the rules its ClusterRoleBindings give everywhere, which upstream binds to the shadow
/// identity. `shadow` (the shadow's answer in the same namespace) is merged into `real`,
/// without duplicates.
pub fn merge_rules(real: &mut Value, shadow: &Value) {
    for key in ["resourceRules", "nonResourceRules"] {
        let add: Vec<Value> = shadow["status"][key]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if add.is_empty() {
            continue;
        }
        let Some(list) = status_list(real, key) else {
            return;
        };
        for r in add {
            if !list.contains(&r) {
                list.push(r);
            }
        }
    }
}

/// The namespace (upstream name) a translated `SelfSubjectRulesReview` body asks about, JSON
/// or protobuf (kubectl sends protobuf): upstream's answer does not repeat it.
pub fn rules_review_namespace(body: &[u8]) -> Option<String> {
    if let Some(rest) = body.strip_prefix(b"k8s\0") {
        // runtime.Unknown{raw = 2} -> SelfSubjectRulesReview{spec = 2} -> spec{namespace = 1}.
        let raw = proto_field(rest, 2)?;
        let spec = proto_field(raw, 2)?;
        return proto_field(spec, 1).and_then(|b| String::from_utf8(b.to_vec()).ok());
    }
    let v: Value = serde_json::from_slice(body).ok()?;
    v["spec"]["namespace"].as_str().map(str::to_owned)
}

fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i)?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The first length-delimited field `num` of a protobuf message.
fn proto_field(b: &[u8], num: u64) -> Option<&[u8]> {
    let mut i = 0;
    while i < b.len() {
        let key = varint(b, &mut i)?;
        match key & 7 {
            0 => {
                varint(b, &mut i)?;
            }
            1 => i = i.checked_add(8)?,
            5 => i = i.checked_add(4)?,
            2 => {
                let len = usize::try_from(varint(b, &mut i)?).ok()?;
                let end = i.checked_add(len)?;
                let v = b.get(i..end)?;
                if key >> 3 == num {
                    return Some(v);
                }
                i = end;
            }
            _ => return None,
        }
    }
    None
}

/// Does a rules review already allow every verb on every resource?
pub fn rules_allow_everything(v: &Value) -> bool {
    let star = |r: &Value, k: &str| {
        r[k].as_array()
            .is_some_and(|a| a.iter().any(|x| x.as_str() == Some("*")))
    };
    v["status"]["resourceRules"].as_array().is_some_and(|rs| {
        rs.iter()
            .any(|r| star(r, "verbs") && star(r, "apiGroups") && star(r, "resources"))
    })
}

/// An admin's rules in a namespace of the tenant that does not exist yet: what the admins'
/// RoleBinding (cluster-admin) will give there, put first as a cluster lists them.
pub fn add_admin_rules(v: &mut Value) {
    let rule = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]});
    if let Some(list) = status_list(v, "resourceRules") {
        list.insert(0, rule);
    }
}

/// The array `status.<key>` of a review answer, made (or made an array) where it is not one;
/// None when the answer or its `status` is not an object: `v["status"][key] = ..` would panic
/// on those, and such an answer is passed on as it came.
fn status_list<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Vec<Value>> {
    let status = v.as_object_mut()?.entry("status").or_insert(Value::Null);
    if status.is_null() {
        *status = json!({});
    }
    let list = status.as_object_mut()?.entry(key).or_insert(Value::Null);
    if !list.is_array() {
        *list = json!([]);
    }
    list.as_array_mut()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::TenantId;
    use std::sync::Arc;

    fn ctx() -> TenantContext {
        TenantContext {
            tenant: TenantId::parse("foofoo").unwrap(),
            catalog: Arc::new(crate::catalog::tests::catalog()),
        }
    }

    fn ans(ra: Value, allowed: bool) -> Value {
        json!({"spec": {"resourceAttributes": ra}, "status": {"allowed": allowed}})
    }

    const REAL: ReviewFacts = ReviewFacts {
        admin: false,
        asked_as_shadow: false,
        namespace_exists: None,
    };

    #[test]
    fn cluster_scoped_questions_go_to_the_shadow_without_namespace() {
        let a = ans(
            json!({"namespace": "foofoo-default", "verb": "list", "resource": "namespaces"}),
            true,
        );
        let ReviewNext::AskShadow(r) = self_review_next(&ctx(), &a, REAL) else {
            panic!()
        };
        assert_eq!(
            r["spec"]["resourceAttributes"],
            json!({"verb": "list", "resource": "namespaces"})
        );
        // The shadow's answer to the same question without a namespace stands.
        let a = ans(json!({"verb": "list", "resource": "namespaces"}), false);
        let shadow = ReviewFacts {
            asked_as_shadow: true,
            ..REAL
        };
        assert_eq!(self_review_next(&ctx(), &a, shadow), ReviewNext::Keep);
    }

    #[test]
    fn all_namespaces_and_absent_namespaces_are_the_tenants_whole_cluster() {
        let all = ans(json!({"verb": "list", "resource": "pods"}), false);
        let admin = ReviewFacts {
            admin: true,
            ..REAL
        };
        assert_eq!(
            self_review_next(&ctx(), &all, admin),
            ReviewNext::AllowAdmin
        );
        assert!(matches!(
            self_review_next(&ctx(), &all, REAL),
            ReviewNext::AskShadow(_)
        ));
        let missing = ans(
            json!({"namespace": "foofoo-nowhere", "verb": "create", "resource": "configmaps"}),
            false,
        );
        assert_eq!(
            self_review_next(&ctx(), &missing, admin),
            ReviewNext::ProbeNamespace("foofoo-nowhere".into())
        );
        let probed = ReviewFacts {
            namespace_exists: Some(false),
            ..admin
        };
        assert_eq!(
            self_review_next(&ctx(), &missing, probed),
            ReviewNext::AllowAdmin
        );
        let exists = ReviewFacts {
            namespace_exists: Some(true),
            ..admin
        };
        assert_eq!(self_review_next(&ctx(), &missing, exists), ReviewNext::Keep);
    }

    #[test]
    fn nothing_outside_the_tenant_is_allowed_by_these_rules() {
        // Another tenant's namespace, a forbidden kind, a write to a shared kind: upstream's
        // answer (or the shadow's, which holds no such right) stands, never AllowAdmin.
        let admin = ReviewFacts {
            admin: true,
            namespace_exists: Some(false),
            ..REAL
        };
        let other = ans(
            json!({"namespace": "barbar-vault", "verb": "get", "resource": "secrets"}),
            false,
        );
        assert_eq!(self_review_next(&ctx(), &other, admin), ReviewNext::Keep);
        let forbidden = ans(
            json!({"verb": "list", "group": "certificates.k8s.io", "resource": "certificatesigningrequests"}),
            false,
        );
        assert_ne!(
            self_review_next(&ctx(), &forbidden, admin),
            ReviewNext::AllowAdmin
        );
        let nodes = ans(json!({"verb": "delete", "resource": "nodes"}), false);
        assert!(matches!(
            self_review_next(&ctx(), &nodes, admin),
            ReviewNext::AskShadow(_)
        ));
        let wildcard = ans(json!({"verb": "*", "group": "*", "resource": "*"}), false);
        assert_eq!(self_review_next(&ctx(), &wildcard, admin), ReviewNext::Keep);
    }

    #[test]
    fn a_virtual_resource_cluster_wide_is_asked_of_the_shadow() {
        // cert-manager's approval check: `approve` on `signers` of its (tenant) group, no
        // namespace; the tenant's ClusterRoleBinding grants it to the shadow identity.
        let signers = ans(
            json!({"verb": "approve", "group": "foofoo-cert-manager.io", "resource": "signers",
                   "name": "issuers.cert-manager.io/app.selfsigned"}),
            false,
        );
        assert!(matches!(
            self_review_next(&ctx(), &signers, REAL),
            ReviewNext::AskShadow(_)
        ));
        // asked as the shadow already, allowed, or in a namespace: upstream's answer stands
        let shadow = ReviewFacts {
            asked_as_shadow: true,
            ..REAL
        };
        assert_eq!(self_review_next(&ctx(), &signers, shadow), ReviewNext::Keep);
        let ok = ans(
            json!({"verb": "approve", "group": "foofoo-cert-manager.io", "resource": "signers"}),
            true,
        );
        assert_eq!(self_review_next(&ctx(), &ok, REAL), ReviewNext::Keep);
        let in_ns = ans(
            json!({"namespace": "foofoo-app", "verb": "approve", "group": "foofoo-cert-manager.io", "resource": "signers"}),
            false,
        );
        assert_eq!(self_review_next(&ctx(), &in_ns, REAL), ReviewNext::Keep);
    }

    #[test]
    fn rules_reviews_merge_the_shadow_and_an_admins_namespace() {
        let mut real = json!({"spec": {"namespace": "foofoo-web"}, "status": {"resourceRules": [
            {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"]}
        ]}});
        let shadow = json!({"status": {"resourceRules": [
            {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"]},
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}
        ], "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/api"]}]}});
        merge_rules(&mut real, &shadow);
        assert_eq!(real["status"]["resourceRules"].as_array().unwrap().len(), 2);
        assert_eq!(
            real["status"]["nonResourceRules"].as_array().unwrap().len(),
            1
        );
        assert!(!rules_allow_everything(&real));
        add_admin_rules(&mut real);
        assert!(rules_allow_everything(&real));
        assert_eq!(real["status"]["resourceRules"][0]["verbs"], json!(["*"]));
    }

    /// Answers whose `status` is not an object once panicked (`v["status"][key] = ..`).
    #[test]
    fn rules_reviews_of_another_shape_are_left_as_they_are() {
        let shadow = json!({"status": {"resourceRules": [{"verbs": ["get"]}]}});
        for odd in [
            json!([]),
            json!("x"),
            json!({"status": "x"}),
            json!({"status": [1]}),
        ] {
            let mut real = odd.clone();
            merge_rules(&mut real, &shadow);
            add_admin_rules(&mut real);
            assert_eq!(real, odd);
        }
        let mut real = json!({"status": {"resourceRules": "x"}});
        merge_rules(&mut real, &shadow);
        assert_eq!(real, shadow);
    }

    #[test]
    fn rules_review_namespace_from_json_and_protobuf() {
        let json = br#"{"kind":"SelfSubjectRulesReview","spec":{"namespace":"foofoo-web"}}"#;
        assert_eq!(rules_review_namespace(json).as_deref(), Some("foofoo-web"));
        // k8s\0 + Unknown{typeMeta(1)={}, raw(2)=SSRR{metadata(1)={}, spec(2)={namespace(1)}}}
        let spec = [&[0x0a, 10][..], b"foofoo-web"].concat();
        let ssrr = [&[0x0a, 0][..], &[0x12, spec.len() as u8], &spec].concat();
        let unknown = [&[0x0a, 0][..], &[0x12, ssrr.len() as u8], &ssrr].concat();
        let body = [&b"k8s\0"[..], &unknown].concat();
        assert_eq!(rules_review_namespace(&body).as_deref(), Some("foofoo-web"));
        assert_eq!(rules_review_namespace(b"k8s\0\x12\xff"), None);
        assert_eq!(rules_review_namespace(b"{}"), None);
    }
}
