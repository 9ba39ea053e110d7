//! Unit tests of the object rules (continued): references in events and endpoints, review
//! kinds, subresource and status bodies, free text, and the shared-object checks.

use serde_json::json;

use super::*;

#[test]
fn events_involved_object_and_regarding() {
    round_trip(
        json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"default"},"involvedObject":{"kind":"Pod","namespace":"default","name":"web","apiVersion":"v1"},"reason":"Started","message":"Started container"}),
        json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"foofoo-default"},"involvedObject":{"kind":"Pod","namespace":"foofoo-default","name":"web","apiVersion":"v1"},"reason":"Started","message":"Started container"}),
    );
    round_trip(
        json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"default"},"involvedObject":{"kind":"Namespace","name":"dev","apiVersion":"v1"}}),
        json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"foofoo-default"},"involvedObject":{"kind":"Namespace","name":"foofoo-dev","apiVersion":"v1"}}),
    );
    round_trip(
        json!({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e","namespace":"default"},"regarding":{"kind":"Gadget","name":"g","apiVersion":"example.com/v1"},"related":{"kind":"Pod","namespace":"default","name":"p"},"note":"hi"}),
        json!({"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e","namespace":"foofoo-default"},"regarding":{"kind":"Gadget","name":"foofoo-g","apiVersion":"foofoo-example.com/v1"},"related":{"kind":"Pod","namespace":"foofoo-default","name":"p"},"note":"hi"}),
    );
    // messages are un-prefixed on the way down
    let (_, v) = down(
        json!({"apiVersion":"v1","kind":"Event","metadata":{"name":"e","namespace":"foofoo-default"},"involvedObject":{"kind":"Pod","namespace":"foofoo-default","name":"web"},"message":"Successfully assigned foofoo-default/web to kwok-node-0"}),
    );
    assert_eq!(
        v["message"],
        "Successfully assigned default/web to kwok-node-0"
    );
}

#[test]
fn endpoints_target_refs() {
    round_trip(
        json!({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"svc","namespace":"default"},"subsets":[{"addresses":[{"ip":"10.0.0.1","targetRef":{"kind":"Pod","namespace":"default","name":"p1"}}],"notReadyAddresses":[{"ip":"10.0.0.2","targetRef":{"kind":"Pod","namespace":"default","name":"p2"}}]}]}),
        json!({"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"svc","namespace":"foofoo-default"},"subsets":[{"addresses":[{"ip":"10.0.0.1","targetRef":{"kind":"Pod","namespace":"foofoo-default","name":"p1"}}],"notReadyAddresses":[{"ip":"10.0.0.2","targetRef":{"kind":"Pod","namespace":"foofoo-default","name":"p2"}}]}]}),
    );
    round_trip(
        json!({"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"svc-x","namespace":"default"},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"],"targetRef":{"kind":"Pod","namespace":"default","name":"p1"}}]}),
        json!({"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"svc-x","namespace":"foofoo-default"},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"],"targetRef":{"kind":"Pod","namespace":"foofoo-default","name":"p1"}}]}),
    );
}

#[test]
fn access_reviews() {
    round_trip(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}}),
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"resourceAttributes":{"namespace":"foofoo-default","verb":"get","resource":"pods"}}}),
    );
    round_trip(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"resourceAttributes":{"verb":"delete","resource":"namespaces","name":"dev"}}}),
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"resourceAttributes":{"verb":"delete","resource":"namespaces","name":"foofoo-dev"}}}),
    );
    round_trip(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"resourceAttributes":{"verb":"list","group":"example.com","resource":"widgets"}}}),
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"resourceAttributes":{"verb":"list","group":"foofoo-example.com","resource":"widgets"}}}),
    );
    round_trip(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":{},"spec":{"user":"alice","groups":["dev"],"resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}}),
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":{},"spec":{"user":"paddock:foofoo:alice","groups":["paddock:foofoo:dev","paddock:tenant:foofoo","system:authenticated"],"resourceAttributes":{"namespace":"foofoo-default","verb":"get","resource":"pods"}}}),
    );
    round_trip(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"default"},"spec":{"user":"system:serviceaccount:default:sa","resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}}),
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"foofoo-default"},"spec":{"user":"system:serviceaccount:foofoo-default:sa","resourceAttributes":{"namespace":"foofoo-default","verb":"get","resource":"pods"}}}),
    );
    round_trip(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","metadata":{},"spec":{"namespace":"default"}}),
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","metadata":{},"spec":{"namespace":"foofoo-default"}}),
    );
    // The conformance test's review of a service account with its real groups: the universal
    // ones stay, the namespace's group is mapped; alone, `system:serviceaccounts` is refused.
    let v = up(json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":{},"spec":{"user":"system:serviceaccount:web:e2e","groups":["system:authenticated","system:serviceaccounts","system:serviceaccounts:web"],"resourceAttributes":{"namespace":"web","verb":"list","resource":"configmaps"}}})).unwrap();
    assert_eq!(
        v["spec"]["groups"],
        json!([
            "system:authenticated",
            "system:serviceaccounts",
            "system:serviceaccounts:foofoo-web"
        ])
    );
    let v = up(json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":{},"spec":{"user":"alice","groups":["system:authenticated"]}})).unwrap();
    assert_eq!(
        v["spec"]["groups"],
        json!(["system:authenticated", "paddock:tenant:foofoo"])
    );
    // The conformance test's LocalSubjectAccessReview: user `e2e` (not a service account) with
    // a service account's groups. `system:serviceaccounts` is every service account of the
    // tenant's cluster: kept as it is (no tenant binding can name it); the namespace's group
    // is mapped; the user gets the groups every tenant user carries.
    let v = up(json!({"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"web"},"spec":{"user":"e2e","groups":["system:authenticated","system:serviceaccounts","system:serviceaccounts:web"],"resourceAttributes":{"namespace":"web","verb":"list","resource":"configmaps"}}})).unwrap();
    assert_eq!(v["spec"]["user"], "paddock:foofoo:e2e");
    assert_eq!(
        v["spec"]["groups"],
        json!([
            "system:authenticated",
            "system:serviceaccounts",
            "system:serviceaccounts:foofoo-web",
            "paddock:tenant:foofoo"
        ])
    );
    let v = up(json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"groups":["system:serviceaccounts"],"resourceAttributes":{"namespace":"web","verb":"get","resource":"secrets"}}})).unwrap();
    assert_eq!(v["spec"]["groups"], json!(["system:serviceaccounts"]));
    assert_eq!(v["spec"]["resourceAttributes"]["namespace"], "foofoo-web");
    // Every other system group stays refused, and so do other tenants' identities.
    for bad in [
        "system:nodes",
        "system:unauthenticated",
        "system:serviceaccounts:",
        "paddock:tenant:barbar",
        "paddock:barbar:dev",
    ] {
        let e = up(json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","groups":[bad]}})).unwrap_err();
        assert!(matches!(e.http_code(), 400 | 403 | 422), "{bad}: {e:?}");
    }
    // Down: the group is shown back as the tenant wrote it.
    let (_, v) = down(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"foofoo-web"},"spec":{"user":"paddock:foofoo:e2e","groups":["system:authenticated","system:serviceaccounts","system:serviceaccounts:foofoo-web","paddock:tenant:foofoo"]},"status":{"allowed":false}}),
    );
    assert_eq!(v["spec"]["user"], "e2e");
    assert_eq!(
        v["spec"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:web"])
    );
    let e = up(json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"system:admin"}})).unwrap_err();
    assert_eq!(e.http_code(), 403);
    let e = up(json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"groups":["system:masters"]}})).unwrap_err();
    assert_eq!(e.http_code(), 403);
}

#[test]
fn access_review_status_down() {
    let (_, v) = down(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","metadata":{},"spec":{"namespace":"foofoo-default"},
        "status":{"resourceRules":[{"verbs":["get"],"apiGroups":["foofoo-example.com"],"resources":["widgets"]},{"verbs":["get"],"apiGroups":[""],"resources":["namespaces"],"resourceNames":["foofoo-dev"]}],"incomplete":false}}),
    );
    assert_eq!(v["spec"]["namespace"], "default");
    assert_eq!(
        v["status"]["resourceRules"][0]["apiGroups"],
        json!(["example.com"])
    );
    assert_eq!(
        v["status"]["resourceRules"][1]["resourceNames"],
        json!(["dev"])
    );
    let (_, v) = down(
        json!({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","metadata":{},"status":{"userInfo":{"username":"paddock:foofoo:alice","groups":["paddock:foofoo:dev","paddock:tenant:foofoo","system:authenticated"],"extra":{"paddock.io/tenant":["foofoo"]}}}}),
    );
    assert_eq!(
        v["status"]["userInfo"],
        json!({"username":"alice","groups":["dev","system:authenticated"],"extra":{}})
    );
    let (_, v) = down(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{},"spec":{"resourceAttributes":{"namespace":"foofoo-default","verb":"get","resource":"pods"}},"status":{"allowed":false,"reason":"RBAC: user \"paddock:foofoo:alice\" cannot get pods in namespace \"foofoo-default\""}}),
    );
    assert_eq!(
        v["status"]["reason"],
        "RBAC: user \"alice\" cannot get pods in namespace \"default\""
    );
}

#[test]
fn subresource_bodies() {
    round_trip(
        json!({"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":3}}),
        json!({"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"foofoo-default"},"spec":{"replicas":3}}),
    );
    round_trip(
        json!({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p","namespace":"default"}}),
        json!({"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p","namespace":"foofoo-default"}}),
    );
    let mut d = json!({"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Foreground","preconditions":{"uid":"u"}});
    let orig = d.clone();
    object_up(&ctx(), &mut d, None).unwrap();
    assert_eq!(d, orig);
    assert!(up(json!({"apiVersion":"v1","kind":"PodList","items":[]})).is_err());
    assert_eq!(
        up(json!({"apiVersion":"v1","kind":"Nonsense"}))
            .unwrap_err()
            .http_code(),
        400
    );
}

#[test]
fn shared_and_forbidden_kinds_cannot_be_written() {
    assert_eq!(
        up(json!({"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"s"}}))
            .unwrap_err()
            .http_code(),
        403
    );
    assert_eq!(
        up(json!({"apiVersion":"v1","kind":"Node","metadata":{"name":"n"}}))
            .unwrap_err()
            .http_code(),
        403
    );
    assert_eq!(up(json!({"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"a"}})).unwrap_err().http_code(), 403);
}

#[test]
fn body_kind_must_match_url() {
    let c = ctx();
    let ns = c
        .catalog
        .resolve(&c.tenant, "", "v1", "namespaces")
        .unwrap();
    let mut v = json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"y"}});
    assert_eq!(
        object_up_with(&c, &mut v, Some(&ns), None, UpMode::Full)
            .unwrap_err()
            .http_code(),
        400
    );
}

#[test]
fn partial_objects_are_never_filled() {
    let c = ctx();
    let ns = c
        .catalog
        .resolve(&c.tenant, "", "v1", "namespaces")
        .unwrap();
    let mut p = json!({"metadata":{"annotations":{"a":"b"}}});
    object_up_with(&c, &mut p, Some(&ns), None, UpMode::MergePatch).unwrap();
    assert_eq!(p, json!({"metadata":{"annotations":{"a":"b"}}}));
    let mut p = json!({"metadata":{"labels":{"x":"y"}}});
    object_up_with(&c, &mut p, Some(&ns), None, UpMode::MergePatch).unwrap();
    assert_eq!(p, json!({"metadata":{"labels":{"x":"y"}}}));
    let mut p = json!({"metadata":{"labels":null}});
    assert_eq!(
        object_up_with(&c, &mut p, Some(&ns), None, UpMode::MergePatch)
            .unwrap_err()
            .http_code(),
        422
    );
    // strategic `$patch: replace` on labels keeps the stamp
    let mut p = json!({"metadata":{"labels":{"$patch":"replace","x":"y"}}});
    object_up_with(&c, &mut p, Some(&ns), None, UpMode::StrategicMerge).unwrap();
    assert_eq!(p["metadata"]["labels"]["paddock.io/tenant"], "foofoo");
}

#[test]
fn status_bodies_down() {
    let (_, v) = down(
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
        "message":"namespaces \"foofoo-dev\" not found","reason":"NotFound","details":{"name":"foofoo-dev","kind":"namespaces"},"code":404}),
    );
    assert_eq!(v["message"], "namespaces \"dev\" not found");
    assert_eq!(v["details"]["name"], "dev");
    let (_, v) = down(
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
        "message":"customresourcedefinitions.apiextensions.k8s.io \"widgets.foofoo-example.com\" already exists","reason":"AlreadyExists",
        "details":{"name":"widgets.foofoo-example.com","group":"apiextensions.k8s.io","kind":"customresourcedefinitions","causes":[{"message":"x in barbar-ns","field":"metadata.name"}]},"code":409}),
    );
    assert_eq!(
        v["message"],
        "customresourcedefinitions.apiextensions.k8s.io \"widgets.example.com\" already exists"
    );
    assert_eq!(v["details"]["name"], "widgets.example.com");
    assert_eq!(v["details"]["causes"][0]["message"], "x in <redacted>");
    let (_, v) = down(
        json!({"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden: User \"paddock:foofoo:alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"foofoo-default\"","code":403}),
    );
    assert_eq!(
        v["message"],
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
}

#[test]
fn free_text() {
    let c = ctx();
    assert_eq!(text_down(&c, "foofoo-default/web"), "default/web");
    assert_eq!(
        text_down(&c, "namespace \"foofoo-a\" and foofoo-b."),
        "namespace \"a\" and b."
    );
    assert_eq!(
        text_down(&c, "widgets.foofoo-example.com"),
        "widgets.example.com"
    );
    assert_eq!(
        text_down(&c, "system:serviceaccount:foofoo-ci:sa"),
        "system:serviceaccount:ci:sa"
    );
    assert_eq!(text_down(&c, "see barbar-secret now"), "see <redacted> now");
    assert_eq!(
        text_down(&c, "kube-system and cert-manager stay"),
        "kube-system and cert-manager stay"
    );
    assert_eq!(text_down(&c, "myfoofoo-x stays"), "myfoofoo-x stays");
    assert_eq!(text_down(&c, "foofoo- alone"), "foofoo- alone");
    assert_eq!(text_down(&c, "ünïcode foofoo-x"), "ünïcode x");
    assert_eq!(
        text_down_with(&c, "node worker-1, ns barbar-x", &|id| id == "barbar"),
        "node worker-1, ns <redacted>"
    );
}

#[test]
fn cluster_role_binding_subjects_are_inert_shadows_upstream() {
    // A tenant ClusterRoleBinding must grant nothing cluster-wide upstream: its subjects are
    // stored as `paddock:cluster:<tid>:<identity>`, which no real caller carries.
    round_trip(
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"b"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"reader"},
            "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"},
                        {"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"dev"},
                        {"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:serviceaccounts:ci"}]}),
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"foofoo-b","labels":{"paddock.io/tenant":"foofoo"}},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"foofoo-reader"},
            "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"paddock:cluster:foofoo:paddock:foofoo:alice"},
                        {"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"paddock:cluster:foofoo:paddock:foofoo:dev"},
                        {"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"paddock:cluster:foofoo:system:serviceaccounts:foofoo-ci"}]}),
    );
    // RoleBindings keep real subjects (they only grant inside one tenant namespace).
    let v = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"default"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"reader"},
        "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]})).unwrap();
    assert_eq!(v["subjects"][0]["name"], "paddock:foofoo:alice");
    // Another tenant's shadows and real identities in a ClusterRoleBinding are not shown.
    let (_, v) = down(
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"foofoo-b","labels":{"paddock.io/tenant":"foofoo"}},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"foofoo-r"},
        "subjects":[{"kind":"User","name":"paddock:cluster:barbar:paddock:barbar:bob"},{"kind":"Group","name":"system:masters"},
                    {"kind":"User","name":"paddock:cluster:foofoo:paddock:barbar:bob"}]}),
    );
    assert_eq!(v["subjects"], json!([]));
    // A json-patch of one subject field cannot be mapped to the shadow form.
    let e = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"b"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"x"},"subjects":[{"namespace":"default"}]})).unwrap_err();
    assert_eq!(e.http_code(), 422);
}

#[test]
fn cluster_role_cannot_aggregate_into_platform_roles() {
    // The aggregation label is renamed: the platform's roles select the original spelling.
    let v = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
        "metadata":{"name":"sneaky","labels":{"rbac.authorization.k8s.io/aggregate-to-edit":"true"}},
        "rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]})).unwrap();
    let labels = v["metadata"]["labels"].as_object().unwrap();
    assert!(
        !labels
            .keys()
            .any(|k| k.starts_with("rbac.authorization.k8s.io/"))
    );
    assert_eq!(labels["paddock.io/aggregate-to-edit"], "true");
    let mut back = v.clone();
    assert_eq!(object_down(&ctx(), &mut back).unwrap(), Disposition::Keep);
    assert_eq!(
        back["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"],
        "true"
    );
    // paddock's spelling is reserved, as a label and in a selector.
    let e = up(
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
        "metadata":{"name":"sneaky","labels":{"paddock.io/aggregate-to-edit":"true"}},"rules":[]}),
    )
    .unwrap_err();
    assert_eq!(e.http_code(), 403);
    let e = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"c"},
        "aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"paddock.io/aggregate-to-edit":"true"}}]}})).unwrap_err();
    assert_eq!(e.http_code(), 403);
    // Other labels (a tenant's own aggregation) are fine.
    let v = up(
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole",
        "metadata":{"name":"part","labels":{"example.com/aggregate-to-mine":"true"}},"rules":[]}),
    )
    .unwrap();
    assert_eq!(v["metadata"]["name"], "foofoo-part");
}

#[test]
fn text_down_leaves_platform_lookalikes_when_tenants_are_known() {
    let base = ctx();
    let c = TenantContext {
        tenant: base.tenant.clone(),
        catalog: std::sync::Arc::new(
            (*base.catalog)
                .clone()
                .with_known_tenants(["foofoo".to_string(), "barbar".to_string()]),
        ),
    };
    assert_eq!(
        text_down(&c, "Created pod: webapp-7d9f on worker-1"),
        "Created pod: webapp-7d9f on worker-1"
    );
    assert_eq!(
        text_down(&c, "see barbar-secret, foofoo-web"),
        "see <redacted>, web"
    );
}

#[test]
fn text_down_reads_shadow_identities_as_their_identity() {
    let c = ctx();
    assert_eq!(
        text_down(&c, "paddock:cluster:foofoo:paddock:foofoo:devs"),
        "devs"
    );
    assert_eq!(
        text_down(
            &c,
            "paddock:cluster:foofoo:system:serviceaccount:foofoo-ci:b"
        ),
        "system:serviceaccount:ci:b"
    );
}

#[test]
fn volume_secrets_and_ephemeral_claims() {
    round_trip(
        json!({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"v"},"spec":{"csi":{"driver":"d","volumeHandle":"h","nodePublishSecretRef":{"name":"s","namespace":"creds"}},"azureFile":{"secretName":"s","secretNamespace":"creds","shareName":"x"}}}),
        json!({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"foofoo-v","labels":{"paddock.io/tenant":"foofoo"}},"spec":{"csi":{"driver":"d","volumeHandle":"h","nodePublishSecretRef":{"name":"s","namespace":"foofoo-creds"}},"azureFile":{"secretName":"s","secretNamespace":"foofoo-creds","shareName":"x"}}}),
    );
    round_trip(
        json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"volumes":[{"name":"s","ephemeral":{"volumeClaimTemplate":{"spec":{"volumeName":"pv1","dataSourceRef":{"kind":"PersistentVolumeClaim","name":"src","namespace":"other"}}}}}]}}),
        json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"foofoo-default"},"spec":{"volumes":[{"name":"s","ephemeral":{"volumeClaimTemplate":{"spec":{"volumeName":"foofoo-pv1","dataSourceRef":{"kind":"PersistentVolumeClaim","name":"src","namespace":"foofoo-other"}}}}}]}}),
    );
}

#[test]
fn shared_objects_labelled_for_a_tenant_are_hidden() {
    // paddock's per-tenant plumbing among shared kinds (a tenant's FlowSchema) is hidden from
    // every tenant, its own included; unlabelled shared objects stay visible.
    for owner in ["barbar", "foofoo"] {
        let (d, _) = down(
            json!({"apiVersion":"v1","kind":"Node","metadata":{"name":"n","labels":{"paddock.io/tenant": owner}}}),
        );
        assert_eq!(d, Disposition::Drop, "{owner}");
    }
    let (d, _) =
        down(json!({"apiVersion":"v1","kind":"Node","metadata":{"name":"n","labels":{"x":"y"}}}));
    assert_eq!(d, Disposition::Keep);
}

#[test]
fn token_reviews_authenticate_only_the_tenants_own_tokens() {
    use crate::rules::reviews::FOREIGN_TOKEN_ERROR;
    // Up: the token goes as it is.
    let r = json!({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","metadata":{},"spec":{"token":"abc.def.ghi","audiences":["api"]}});
    assert_eq!(up(r.clone()).unwrap(), r);
    // Down, a token of one of the tenant's service accounts: the identity in its names.
    let (d, v) = down(
        json!({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","metadata":{},"spec":{"token":"t"},
               "status":{"authenticated":true,"audiences":["api"],"user":{"username":"system:serviceaccount:foofoo-web:robot","uid":"u1",
               "groups":["system:serviceaccounts","system:serviceaccounts:foofoo-web","system:authenticated"],
               "extra":{"authentication.kubernetes.io/pod-name":["p"]}}}}),
    );
    assert_eq!(d, Disposition::Keep);
    assert_eq!(
        v["status"],
        json!({"authenticated":true,"audiences":["api"],"user":{"username":"system:serviceaccount:web:robot","uid":"u1",
               "groups":["system:serviceaccounts","system:serviceaccounts:web","system:authenticated"],
               "extra":{"authentication.kubernetes.io/pod-name":["p"]}}})
    );
    // Another tenant's, the platform's, a shadow identity's: not authenticated, nothing shown.
    for user in [
        "system:serviceaccount:barbar-web:robot",
        "system:serviceaccount:kube-system:default",
        "system:admin",
        "paddock:barbar:alice",
        "paddock:cluster:foofoo:paddock:foofoo:admin",
    ] {
        let (d, v) = down(
            json!({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","metadata":{},
            "status":{"authenticated":true,"audiences":["api"],"user":{"username":user,"groups":["system:masters"]}}}),
        );
        assert_eq!(d, Disposition::Keep);
        assert_eq!(v["status"], json!({"error": FOREIGN_TOKEN_ERROR}), "{user}");
    }
    // An invalid token: upstream's error (which may name platform objects) is not shown.
    let (_, v) = down(
        json!({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","metadata":{},
        "status":{"error":"serviceaccounts \"plat-sa\" not found"}}),
    );
    assert_eq!(v["status"], json!({"error": FOREIGN_TOKEN_ERROR}));
}
