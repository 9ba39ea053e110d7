//! Unit tests of the object rules, one test (or more) per rule; docs/translation.md names them.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::catalog::tests::catalog;
use crate::rules::text::{text_down, text_down_with};
use crate::tenant::TenantId;

fn ctx() -> TenantContext {
    TenantContext {
        tenant: TenantId::parse("foofoo").unwrap(),
        catalog: Arc::new(catalog()),
    }
}

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
        json!({"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.apps"}}),
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
    let e = up(json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"d","ownerReferences":[{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","name":"x","uid":"u"}]}})).unwrap_err();
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
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":{},"spec":{"user":"paddock:foofoo:alice","groups":["paddock:foofoo:dev","paddock:tenant:foofoo","system:authenticated"],"resourceAttributes":{"namespace":"foofoo-default","verb":"get","resource":"pods"},"extra":{"paddock.io/tenant":["foofoo"]}}}),
    );
    round_trip(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"default"},"spec":{"user":"system:serviceaccount:default:sa","resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}}),
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":{"namespace":"foofoo-default"},"spec":{"user":"system:serviceaccount:foofoo-default:sa","resourceAttributes":{"namespace":"foofoo-default","verb":"get","resource":"pods"}}}),
    );
    round_trip(
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","metadata":{},"spec":{"namespace":"default"}}),
        json!({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","metadata":{},"spec":{"namespace":"foofoo-default"}}),
    );
    let e = up(json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"system:admin"}})).unwrap_err();
    assert_eq!(e.http_code(), 403);
    let e = up(json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"groups":["system:masters"]}})).unwrap_err();
    assert_eq!(e.http_code(), 403);
    let e = up(
        json!({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x"}}),
    )
    .unwrap_err();
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
