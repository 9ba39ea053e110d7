//! Unit tests of the object rules, one test (or more) per rule; docs/translation.md names them.

use serde_json::{Value, json};

use super::*;
use crate::rules::text::{text_down, text_down_with};

use crate::catalog::context::tests::ctx;

fn up(v: Value) -> Result<Value, TranslateError> {
    let mut v = v;
    object_up(&ctx(), &mut v, None)?;
    Ok(v)
}

fn up_ns(v: Value, ns: &str) -> Result<Value, TranslateError> {
    let mut v = v;
    object_up(&ctx(), &mut v, Some(ns))?;
    Ok(v)
}

fn down(v: Value) -> (Disposition, Value) {
    let mut v = v;
    let d = object_down(&ctx(), &mut v).unwrap();
    (d, v)
}

/// up, check, then down and compare with the original.
fn round_trip(orig: Value, expect_up: Value) {
    let u = up(orig.clone()).unwrap();
    assert_eq!(u, expect_up, "up");
    let (d, back) = down(u);
    assert_eq!(d, Disposition::Keep);
    assert_eq!(back, orig, "down");
}

#[test]
fn namespace_name_label_and_stamp() {
    round_trip(
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dev","labels":{"kubernetes.io/metadata.name":"dev","team":"a"}}}),
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"foofoo-dev","labels":{"kubernetes.io/metadata.name":"foofoo-dev","team":"a","paddock.io/tenant":"foofoo"}}}),
    );
    round_trip(
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"generateName":"e2e-"}}),
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"generateName":"foofoo-e2e-","labels":{"paddock.io/tenant":"foofoo"}}}),
    );
    let e = up(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a".repeat(57)}}))
        .unwrap_err();
    assert!(e.message().contains("at most 56"));
}

#[test]
fn tenant_label_cannot_be_set() {
    for v in [
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x","labels":{"paddock.io/tenant":"foofoo"}}}),
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default","labels":{"paddock.io/tenant":"barbar"}}}),
    ] {
        assert_eq!(up(v).unwrap_err().http_code(), 403);
    }
}

#[test]
fn namespaced_object_namespace() {
    round_trip(
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"default"},"data":{"a":"foofoo-x"}}),
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"foofoo-default"},"data":{"a":"foofoo-x"}}),
    );
    // no namespace in the body: the URL decides, nothing added
    let v = up_ns(
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"}}),
        "default",
    )
    .unwrap();
    assert_eq!(v["metadata"], json!({"name":"cfg"}));
    let e = up_ns(
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"other"}}),
        "default",
    )
    .unwrap_err();
    assert_eq!(e.http_code(), 400);
    // cluster-scoped objects lose a stray namespace
    let v = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r","namespace":"default"}})).unwrap();
    assert!(v["metadata"].get("namespace").is_none());
}

#[test]
fn down_drops_other_tenants() {
    let (d, _) = down(
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"barbar-default"}}),
    );
    assert_eq!(d, Disposition::Drop);
    let (d, _) = down(
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"kube-system"}}),
    );
    assert_eq!(d, Disposition::Drop);
    let (d, _) =
        down(json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"barbar-default"}}));
    assert_eq!(d, Disposition::Drop);
    let (d, _) = down(
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"foofoo-x","labels":{"paddock.io/tenant":"barbar"}}}),
    );
    assert_eq!(d, Disposition::Drop);
    let (d, _) = down(
        json!({"apiVersion":"barbar-example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"barbar-default"}}),
    );
    assert_eq!(d, Disposition::Drop);
    let (d, _) = down(
        json!({"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"csr-1"}}),
    );
    assert_eq!(d, Disposition::Drop);
    // shared objects are kept as they are
    let node =
        json!({"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1","labels":{"x":"y"}}});
    assert_eq!(down(node.clone()), (Disposition::Keep, node));
}

#[test]
fn down_with_hint_for_list_items() {
    let c = ctx();
    let pods = c.catalog.resolve(&c.tenant, "", "v1", "pods").unwrap();
    let mut item = json!({"metadata":{"name":"p","namespace":"foofoo-default"}});
    assert_eq!(
        object_down_as(&c, &mut item, Some(&pods)).unwrap(),
        Disposition::Keep
    );
    assert_eq!(item["metadata"]["namespace"], "default");
    let mut item = json!({"metadata":{"name":"p","namespace":"barbar-default"}});
    assert_eq!(
        object_down_as(&c, &mut item, Some(&pods)).unwrap(),
        Disposition::Drop
    );
    let mut pom = json!({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"foofoo-x"}});
    let ns = c
        .catalog
        .resolve(&c.tenant, "", "v1", "namespaces")
        .unwrap();
    assert_eq!(
        object_down_as(&c, &mut pom, Some(&ns)).unwrap(),
        Disposition::Keep
    );
    assert_eq!(pom["metadata"]["name"], "x");
}

#[test]
fn list_down_filters_items() {
    let (d, v) = down(
        json!({"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"5","remainingItemCount":9},"items":[
            {"metadata":{"name":"foofoo-a","labels":{"paddock.io/tenant":"foofoo"}}},
            {"metadata":{"name":"barbar-b","labels":{"paddock.io/tenant":"barbar"}}},
            {"metadata":{"name":"kube-system"}}
        ]}),
    );
    assert_eq!(d, Disposition::Keep);
    assert_eq!(
        v,
        json!({"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a"}}]})
    );
}

#[test]
fn owner_references() {
    round_trip(
        json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default","ownerReferences":[
            {"apiVersion":"example.com/v1","kind":"Gadget","name":"g1","uid":"u1","controller":true},
            {"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"u2"},
            {"apiVersion":"v1","kind":"Namespace","name":"dev","uid":"u3"}
        ]}}),
        json!({"apiVersion":"foofoo-example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"foofoo-default","ownerReferences":[
            {"apiVersion":"foofoo-example.com/v1","kind":"Gadget","name":"foofoo-g1","uid":"u1","controller":true},
            {"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"u2"},
            {"apiVersion":"v1","kind":"Namespace","name":"foofoo-dev","uid":"u3"}
        ]}}),
    );
    let e = up(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"d","ownerReferences":[{"apiVersion":"nosuch.io/v1","kind":"Thing","name":"x","uid":"u"}]}})).unwrap_err();
    assert_eq!(e.http_code(), 422);
    let e = up(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"d","ownerReferences":[{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","name":"x","uid":"u"}]}})).unwrap_err();
    assert_eq!(e.http_code(), 403);
}

#[test]
fn custom_resources_and_managed_fields() {
    round_trip(
        json!({"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"example.com/v1","fieldsV1":{"f:spec":{}}}]},"spec":{"size":1}}),
        json!({"apiVersion":"foofoo-example.com/v1","kind":"Gadget","metadata":{"name":"foofoo-g","managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":"foofoo-example.com/v1","fieldsV1":{"f:spec":{}}}],"labels":{"paddock.io/tenant":"foofoo"}},"spec":{"size":1}}),
    );
    // the tenant label is hidden from managedFields on the way down
    let (_, v) = down(
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"foofoo-a","labels":{"paddock.io/tenant":"foofoo"},"managedFields":[{"manager":"m","apiVersion":"v1","fieldsV1":{"f:metadata":{"f:labels":{"f:paddock.io/tenant":{},"f:x":{}}}}}]}}),
    );
    assert_eq!(
        v["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:metadata":{"f:labels":{"f:x":{}}}})
    );
    assert!(v["metadata"].get("labels").is_none());
}

#[test]
fn crd_group_name_and_conversion_webhook() {
    round_trip(
        json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
            "spec":{"group":"example.com","names":{"plural":"widgets","kind":"Widget"},"scope":"Namespaced",
            "conversion":{"strategy":"Webhook","webhook":{"clientConfig":{"service":{"namespace":"conv","name":"svc","port":443}},"conversionReviewVersions":["v1"]}}}}),
        json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.foofoo-example.com","labels":{"paddock.io/tenant":"foofoo"}},
            "spec":{"group":"foofoo-example.com","names":{"plural":"widgets","kind":"Widget"},"scope":"Namespaced",
            "conversion":{"strategy":"Webhook","webhook":{"clientConfig":{"service":{"namespace":"foofoo-conv","name":"svc","port":443}},"conversionReviewVersions":["v1"]}}}}),
    );
    let e = up(json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"w.example.com"},"spec":{"group":"example.com","conversion":{"strategy":"Webhook","webhook":{"clientConfig":{"url":"https://evil"}}}}})).unwrap_err();
    assert_eq!(e.http_code(), 403);
    let e = up(json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.apps"},"spec":{"group":"apps"}})).unwrap_err();
    assert_eq!(e.http_code(), 422);
    let (d, _) = down(
        json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.barbar-example.com"},"spec":{"group":"barbar-example.com"}}),
    );
    assert_eq!(d, Disposition::Drop);
}

#[test]
fn cluster_role_rules_and_aggregation() {
    round_trip(
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"reader"},"rules":[
            {"apiGroups":["","apps"],"resources":["pods","deployments"],"verbs":["get"]},
            {"apiGroups":["example.com"],"resources":["widgets"],"verbs":["*"]},
            {"apiGroups":[""],"resources":["namespaces"],"resourceNames":["dev"],"verbs":["get"]},
            {"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"resourceNames":["widgets.example.com"],"verbs":["get"]},
            {"nonResourceURLs":["/healthz"],"verbs":["get"]}
        ],"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"agg":"yes"}}]}}),
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"foofoo-reader","labels":{"paddock.io/tenant":"foofoo"}},"rules":[
            {"apiGroups":["","apps"],"resources":["pods","deployments"],"verbs":["get"]},
            {"apiGroups":["foofoo-example.com"],"resources":["widgets"],"verbs":["*"]},
            {"apiGroups":[""],"resources":["namespaces"],"resourceNames":["foofoo-dev"],"verbs":["get"]},
            {"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"resourceNames":["widgets.foofoo-example.com"],"verbs":["get"]},
            {"nonResourceURLs":["/healthz"],"verbs":["get"]}
        ],"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"agg":"yes"},"matchExpressions":[{"key":"paddock.io/tenant","operator":"In","values":["foofoo"]}]}]}}),
    );
    // resourceNames on a mix of prefixed and plain kinds, or on "*", cannot be expressed
    for rule in [
        json!({"apiGroups":[""],"resources":["namespaces","pods"],"resourceNames":["a"],"verbs":["get"]}),
        json!({"apiGroups":[""],"resources":["*"],"resourceNames":["a"],"verbs":["get"]}),
    ] {
        let e = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"},"rules":[rule]})).unwrap_err();
        assert_eq!(e.http_code(), 422);
    }
    // in a Role, resourceNames name namespaced objects and stay
    let v = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"r","namespace":"default"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"resourceNames":["c"],"verbs":["get"]}]})).unwrap();
    assert_eq!(v["rules"][0]["resourceNames"], json!(["c"]));
    let e = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"paddock.io/tenant":"barbar"}}]}})).unwrap_err();
    assert_eq!(e.http_code(), 403);
}

#[test]
fn role_binding_role_ref_and_subjects() {
    round_trip(
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"default"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},
            "subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"alice"},
                        {"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"dev"},
                        {"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:serviceaccounts:ci"},
                        {"kind":"ServiceAccount","name":"builder","namespace":"ci"},
                        {"kind":"ServiceAccount","name":"local"}]}),
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"foofoo-default"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"foofoo-view"},
            "subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"paddock:foofoo:alice"},
                        {"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"paddock:foofoo:dev"},
                        {"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:serviceaccounts:foofoo-ci"},
                        {"kind":"ServiceAccount","name":"builder","namespace":"foofoo-ci"},
                        {"kind":"ServiceAccount","name":"local"}]}),
    );
    let v = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"default"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"reader"}})).unwrap();
    assert_eq!(v["roleRef"]["name"], "foofoo-reader");
    let v = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"default"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r"}})).unwrap();
    assert_eq!(v["roleRef"]["name"], "r");
    for s in [
        json!({"kind":"Group","name":"system:masters"}),
        json!({"kind":"Group","name":"system:authenticated"}),
        json!({"kind":"User","name":"system:admin"}),
        json!({"kind":"User","name":"paddock:barbar:bob"}),
    ] {
        let e = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"default"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[s]})).unwrap_err();
        assert_eq!(e.http_code(), 403);
    }
}

#[test]
fn cluster_role_binding_never_reaches_shared_roles() {
    round_trip(
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"b"},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},
            "subjects":[{"kind":"ServiceAccount","name":"sa","namespace":"default"}]}),
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"foofoo-b","labels":{"paddock.io/tenant":"foofoo"}},
            "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"foofoo-view"},
            "subjects":[{"kind":"User","name":"paddock:cluster:foofoo:system:serviceaccount:foofoo-default:sa","apiGroup":"rbac.authorization.k8s.io"}]}),
    );
    let e = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"b"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"x"},"subjects":[{"kind":"ServiceAccount","name":"sa"}]})).unwrap_err();
    assert_eq!(e.http_code(), 422);
    let e = up(json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"b"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"x"}})).unwrap_err();
    assert_eq!(e.http_code(), 422);
}

#[test]
fn subjects_down_drop_foreign_identities() {
    let (_, v) = down(
        json!({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b","namespace":"foofoo-default"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"platform-role"},
        "subjects":[{"kind":"User","name":"paddock:foofoo:alice"},{"kind":"User","name":"paddock:barbar:bob"},{"kind":"Group","name":"system:masters"},
                    {"kind":"ServiceAccount","name":"x","namespace":"kube-system"},{"kind":"ServiceAccount","name":"y","namespace":"foofoo-ci"}]}),
    );
    assert_eq!(
        v["subjects"],
        json!([{"kind":"User","name":"alice"},{"kind":"ServiceAccount","name":"y","namespace":"ci"}])
    );
    assert_eq!(v["roleRef"]["name"], "platform-role");
}

#[test]
fn persistent_volumes_and_claims() {
    round_trip(
        json!({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"},"spec":{"capacity":{"storage":"1Gi"},"nfs":{"server":"s","path":"/x"},"storageClassName":"standard","claimRef":{"namespace":"default","name":"data"}}}),
        json!({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"foofoo-pv1","labels":{"paddock.io/tenant":"foofoo"}},"spec":{"capacity":{"storage":"1Gi"},"nfs":{"server":"s","path":"/x"},"storageClassName":"standard","claimRef":{"namespace":"foofoo-default","name":"data"}}}),
    );
    for src in ["hostPath", "local"] {
        let e = up(json!({"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"},"spec":{src:{"path":"/"}}})).unwrap_err();
        assert_eq!(e.http_code(), 403);
    }
    round_trip(
        json!({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"default"},"spec":{"volumeName":"pv1","storageClassName":"standard"}}),
        json!({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"foofoo-default"},"spec":{"volumeName":"foofoo-pv1","storageClassName":"standard"}}),
    );
    let dynamic = "pvc-0b6a3a52-6d4e-4c47-9b0e-2f6f6b0d7a11";
    round_trip(
        json!({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"default"},"spec":{"volumeName":dynamic}}),
        json!({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"foofoo-default"},"spec":{"volumeName":dynamic}}),
    );
}

#[test]
fn class_names_are_shared() {
    let pod = json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"priorityClassName":"high","runtimeClassName":"gvisor","nodeName":"worker-1","containers":[{"name":"c","image":"nginx"}]}});
    let v = up(pod).unwrap();
    assert_eq!(v["spec"]["priorityClassName"], "high");
    assert_eq!(v["spec"]["runtimeClassName"], "gvisor");
    assert_eq!(v["spec"]["nodeName"], "worker-1");
    let ing = up(json!({"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"i","namespace":"default"},"spec":{"ingressClassName":"nginx"}})).unwrap();
    assert_eq!(ing["spec"]["ingressClassName"], "nginx");
}

#[test]
fn pod_affinity_namespaces_and_selectors() {
    let term = json!({"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"kubernetes.io/hostname","namespaces":["data"],"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"prod"}}});
    let term_up = json!({"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"kubernetes.io/hostname","namespaces":["foofoo-data"],"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"foofoo-prod"},"matchExpressions":[{"key":"paddock.io/tenant","operator":"In","values":["foofoo"]}]}});
    round_trip(
        json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"template":{"spec":{"affinity":{
            "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[term.clone()]},
            "podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"podAffinityTerm":term.clone()}]}}}}}}),
        json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"foofoo-default"},"spec":{"template":{"spec":{"affinity":{
            "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[term_up.clone()]},
            "podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"podAffinityTerm":term_up.clone()}]}}}}}}),
    );
    let v = up(json!({"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c","namespace":"default"},"spec":{"jobTemplate":{"spec":{"template":{"spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"namespaceSelector":{},"topologyKey":"x"}]}}}}}}}})).unwrap();
    assert_eq!(
        v["spec"]["jobTemplate"]["spec"]["template"]["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            [0]["namespaceSelector"],
        json!({"matchExpressions":[{"key":"paddock.io/tenant","operator":"In","values":["foofoo"]}]})
    );
}

#[test]
fn network_policy_namespace_selectors() {
    round_trip(
        json!({"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"np","namespace":"default"},"spec":{"podSelector":{},
            "ingress":[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"In","values":["a","b"]}]}},{"podSelector":{"matchLabels":{"x":"y"}}}]}],
            "egress":[{"to":[{"namespaceSelector":{"matchLabels":{"team":"x"}}}]}]}}),
        json!({"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"np","namespace":"foofoo-default"},"spec":{"podSelector":{},
            "ingress":[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"In","values":["foofoo-a","foofoo-b"]},{"key":"paddock.io/tenant","operator":"In","values":["foofoo"]}]}},{"podSelector":{"matchLabels":{"x":"y"}}}]}],
            "egress":[{"to":[{"namespaceSelector":{"matchLabels":{"team":"x"},"matchExpressions":[{"key":"paddock.io/tenant","operator":"In","values":["foofoo"]}]}}]}]}}),
    );
    // {} means all of the tenant's namespaces
    let v = up(json!({"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"np","namespace":"default"},"spec":{"ingress":[{"from":[{"namespaceSelector":{}}]}]}})).unwrap();
    assert_eq!(
        v["spec"]["ingress"][0]["from"][0]["namespaceSelector"],
        json!({"matchExpressions":[{"key":"paddock.io/tenant","operator":"In","values":["foofoo"]}]})
    );
    let e = up(json!({"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"np","namespace":"default"},"spec":{"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"paddock.io/tenant":"barbar"}}}]}]}})).unwrap_err();
    assert_eq!(e.http_code(), 403);
}

#[test]
fn webhook_configurations_are_confined() {
    let v = up(json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"vw"},"webhooks":[
        {"name":"a.example.com","clientConfig":{"service":{"namespace":"hooks","name":"svc"},"caBundle":"Zm9v"},
         "rules":[{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["widgets"]},
                  {"apiGroups":[""],"apiVersions":["v1"],"operations":["*"],"resources":["namespaces"],"scope":"Cluster"}],
         "sideEffects":"None","admissionReviewVersions":["v1"]}]})).unwrap();
    assert_eq!(v["metadata"]["name"], "foofoo-vw");
    let h = &v["webhooks"][0];
    assert_eq!(h["clientConfig"]["service"]["namespace"], "foofoo-hooks");
    assert_eq!(
        h["namespaceSelector"],
        json!({"matchExpressions":[{"key":"paddock.io/tenant","operator":"In","values":["foofoo"]}]})
    );
    assert_eq!(h["rules"][0]["apiGroups"], json!(["foofoo-example.com"]));
    assert_eq!(h["rules"][0]["scope"], "Namespaced");
    assert_eq!(h["rules"][1]["scope"], "Cluster");
    let (_, back) = down(v);
    assert_eq!(back["webhooks"][0]["namespaceSelector"], json!({}));
    assert_eq!(
        back["webhooks"][0]["clientConfig"]["service"]["namespace"],
        "hooks"
    );
    assert_eq!(
        back["webhooks"][0]["rules"][0]["apiGroups"],
        json!(["example.com"])
    );
    assert_eq!(back["metadata"]["name"], "vw");

    let e = up(json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"m"},"webhooks":[{"name":"a","clientConfig":{"url":"https://x"}}]})).unwrap_err();
    assert_eq!(e.http_code(), 403);
    let e = up(json!({"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"m"},"webhooks":[{"name":"a","rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"scope":"Cluster"}]}]})).unwrap_err();
    assert_eq!(e.http_code(), 403);
    // a strategic merge element without a selector keeps the stored one
    let mut p = json!({"webhooks":[{"name":"a","timeoutSeconds":5}]});
    let c = ctx();
    let info = c
        .catalog
        .resolve(
            &c.tenant,
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
        )
        .unwrap();
    object_up_with(&c, &mut p, Some(&info), None, UpMode::StrategicMerge).unwrap();
    assert_eq!(p, json!({"webhooks":[{"name":"a","timeoutSeconds":5}]}));
    // a merge patch replaces the list: the selector is forced
    let mut p = json!({"webhooks":[{"name":"a","timeoutSeconds":5}]});
    object_up_with(&c, &mut p, Some(&info), None, UpMode::MergePatch).unwrap();
    assert!(p["webhooks"][0]["namespaceSelector"].is_object());
    // a strategic merge `null` would delete the confining selector
    let mut p = json!({"webhooks":[{"name":"a","namespaceSelector":null}]});
    let e = object_up_with(&c, &mut p, Some(&info), None, UpMode::StrategicMerge).unwrap_err();
    assert_eq!(e.http_code(), 403);
    // in a merge patch the list is replaced whole: `null` becomes the confining selector
    let mut p = json!({"webhooks":[{"name":"a","namespaceSelector":null}]});
    object_up_with(&c, &mut p, Some(&info), None, UpMode::MergePatch).unwrap();
    assert!(p["webhooks"][0]["namespaceSelector"]["matchExpressions"].is_array());
}

#[path = "object_tests_bodies.rs"]
mod bodies;
