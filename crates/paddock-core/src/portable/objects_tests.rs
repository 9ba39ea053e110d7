use serde_json::json;

use super::*;
use crate::catalog::tests::catalog;
use crate::portable::PortableError;
use crate::portable::archive::{self, Entry, Manifest};

fn t() -> TenantId {
    TenantId::parse("foofoo").unwrap()
}

fn kind(c: &Catalog, group: &str, resource: &str) -> ResourceInfo {
    exported_kinds(c, &t())
        .into_iter()
        .find(|i| i.group == group && i.resource == resource)
        .unwrap_or_else(|| panic!("{group}/{resource} not exported"))
}

#[test]
fn kinds_come_in_apply_order_without_what_kubernetes_makes() {
    let c = catalog();
    let kinds = exported_kinds(&c, &t());
    let names: Vec<String> = kinds
        .iter()
        .map(|i| format!("{}/{}", i.group, i.resource))
        .collect();
    let at = |n: &str| names.iter().position(|x| x == n);
    assert_eq!(
        at("apiextensions.k8s.io/customresourcedefinitions"),
        Some(0)
    );
    assert_eq!(at("/namespaces"), Some(1));
    let cluster_role = at("rbac.authorization.k8s.io/clusterroles").unwrap();
    let binding = at("rbac.authorization.k8s.io/clusterrolebindings").unwrap();
    let sa = at("/serviceaccounts").unwrap();
    let cm = at("/configmaps").unwrap();
    let deploy = at("apps/deployments").unwrap();
    assert!(
        cluster_role < binding && binding < sa && sa < cm && cm < deploy,
        "{names:?}"
    );
    for left_out in [
        "/events",
        "events.k8s.io/events",
        "/endpoints",
        "discovery.k8s.io/endpointslices",
        "coordination.k8s.io/leases",
        "apps/controllerrevisions",
        "/persistentvolumes",
        "/nodes",
        "authorization.k8s.io/selfsubjectaccessreviews",
        "flowcontrol.apiserver.k8s.io/flowschemas",
        "storage.k8s.io/storageclasses",
    ] {
        assert_eq!(at(left_out), None, "{left_out} exported: {names:?}");
    }
    // The tenant's own CRD group, last and in its own name; no other tenant's group.
    let own = kinds.iter().position(|i| i.tenant_crd).unwrap();
    assert_eq!(kinds[own].group, "example.com");
    assert!(kinds[own..].iter().all(|i| i.tenant_crd));
    assert!(kinds.iter().all(|i| !i.group.contains('-') || i.tenant_crd));
}

#[test]
fn an_object_loses_its_server_fields() {
    let c = catalog();
    let cm = kind(&c, "", "configmaps");
    let obj = json!({
        "metadata": {"name": "app", "namespace": "default", "uid": "u", "resourceVersion": "9",
            "creationTimestamp": "x", "managedFields": [], "generation": 2,
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u2"}],
            "labels": {"a": "b"}, "annotations": {"paddock.io/slept": "3"}},
        "data": {"k": "v"}, "status": {}
    });
    let out = clean(&cm, &obj, false).unwrap();
    assert_eq!(
        out,
        json!({"metadata": {"name": "app", "namespace": "default", "labels": {"a": "b"}},
               "data": {"k": "v"}, "apiVersion": "v1", "kind": "ConfigMap"})
    );
}

#[test]
fn a_namespace_loses_what_paddock_stamps_on_it() {
    let c = catalog();
    let ns = kind(&c, "", "namespaces");
    let obj = json!({"metadata": {"name": "apps",
        "labels": {"team": "blue", "pod-security.kubernetes.io/enforce": "baseline",
                   "kubernetes.io/metadata.name": "apps", "paddock.io/suspended": "true"},
        "annotations": {"paddock.io/templates": "[]", "paddock.io/billing-labels": "{}"}}});
    let out = clean(&ns, &obj, false).unwrap();
    assert_eq!(
        out["metadata"],
        json!({"name": "apps", "labels": {"team": "blue", "kubernetes.io/metadata.name": "apps"}})
    );
}

#[test]
fn what_others_make_is_left_out() {
    let c = catalog();
    let (cm, sa, secret, rs) = (
        kind(&c, "", "configmaps"),
        kind(&c, "", "serviceaccounts"),
        kind(&c, "", "secrets"),
        kind(&c, "apps", "replicasets"),
    );
    let named = |n: &str| json!({"metadata": {"name": n, "namespace": "default"}});
    assert_eq!(
        clean(&cm, &named("kube-root-ca.crt"), true),
        Err(LeftOut::Kubernetes)
    );
    assert_eq!(
        clean(&sa, &named("default"), true),
        Err(LeftOut::Kubernetes)
    );
    assert!(clean(&sa, &named("robot"), true).is_ok());
    let token = json!({"metadata": {"name": "t"}, "type": "kubernetes.io/service-account-token"});
    assert_eq!(clean(&secret, &token, true), Err(LeftOut::Kubernetes));
    let helm =
        json!({"metadata": {"name": "sh.helm.release.v1.web.v1"}, "type": "helm.sh/release.v1"});
    assert_eq!(clean(&secret, &helm, false), Err(LeftOut::Secret));
    assert!(clean(&secret, &helm, true).is_ok());
    let owned = json!({"metadata": {"name": "web-1", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u", "controller": true}]}});
    assert_eq!(clean(&rs, &owned, true), Err(LeftOut::Controlled));
    let stamped = json!({"metadata": {"name": "q", "labels": {"paddock.io/template": "x"}}});
    assert_eq!(clean(&cm, &stamped, true), Err(LeftOut::Paddock));
    let managed =
        json!({"metadata": {"name": "q", "labels": {"paddock.io/managed-for": "foofoo"}}});
    assert_eq!(clean(&cm, &managed, true), Err(LeftOut::Paddock));
}

#[test]
fn assigned_fields_are_assigned_anew() {
    let c = catalog();
    let svc = kind(&c, "", "services");
    let s = json!({"metadata": {"name": "web"}, "spec": {"clusterIP": "10.0.0.3",
        "clusterIPs": ["10.0.0.3"], "type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}});
    let out = clean(&svc, &s, false).unwrap();
    assert_eq!(
        out["spec"],
        json!({"type": "NodePort", "ports": [{"port": 80}]})
    );
    let headless =
        json!({"metadata": {"name": "db"}, "spec": {"clusterIP": "None", "clusterIPs": ["None"]}});
    assert_eq!(
        clean(&svc, &headless, false).unwrap()["spec"]["clusterIP"],
        "None"
    );
    let job = kind(&c, "batch", "jobs");
    let j = json!({"metadata": {"name": "once"}, "spec": {
        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
        "template": {"metadata": {"labels": {"app": "x", "controller-uid": "u",
            "batch.kubernetes.io/controller-uid": "u", "job-name": "once", "batch.kubernetes.io/job-name": "once"}}}}});
    let out = clean(&job, &j, false).unwrap();
    assert_eq!(
        out["spec"],
        json!({"template": {"metadata": {"labels": {"app": "x"}}}})
    );
}

fn archive_of(objects: &[serde_json::Value]) -> archive::Archive {
    let files: Vec<Vec<u8>> = objects
        .iter()
        .map(|o| serde_norway::to_string(o).unwrap().into_bytes())
        .collect();
    let entries = objects
        .iter()
        .zip(&files)
        .enumerate()
        .map(|(i, (o, f))| {
            let (api_version, kind, namespace, name) = identity(o);
            Entry {
                file: archive::file_name(i + 1, &kind),
                sha256: archive::sha256_hex(f),
                secret: kind == "Secret",
                api_version,
                kind,
                namespace,
                name,
            }
        })
        .collect::<Vec<_>>();
    let m = Manifest {
        format: archive::FORMAT.into(),
        source_tenant: "barbar".into(),
        created: String::new(),
        secrets: true,
        volume_data: "not included".into(),
        objects: entries.len(),
        entries,
    };
    archive::read(&archive::write(&m, &files).unwrap()).unwrap()
}

#[test]
fn an_import_is_planned_in_apply_order_with_the_archives_own_kinds() {
    let objects = vec![
        json!({"apiVersion": "acme.io/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "apps"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "apps"}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}}),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "gadgets.acme.io"},
               "spec": {"group": "acme.io", "scope": "Namespaced", "names": {"kind": "Gadget", "plural": "gadgets"},
                        "versions": [{"name": "v1"}]}}),
    ];
    let steps = super::super::import::plan(&archive_of(&objects), &catalog(), &t()).unwrap();
    let got: Vec<(&str, bool, bool)> = steps
        .iter()
        .map(|s| (s.collection.as_str(), s.crd, s.new_kind))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                true,
                false
            ),
            ("/api/v1/namespaces", false, false),
            ("/api/v1/namespaces/apps/configmaps", false, false),
            ("/apis/acme.io/v1/namespaces/apps/gadgets", false, true),
        ]
    );
}

#[test]
fn kinds_the_target_refuses_refuse_the_whole_archive() {
    let objects = vec![
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"}}),
        json!({"apiVersion": "nowhere.io/v1", "kind": "Thing", "metadata": {"name": "x"}}),
    ];
    let e = super::super::import::plan(&archive_of(&objects), &catalog(), &t()).unwrap_err();
    let PortableError::Refused(msg) = e else {
        panic!("{e}")
    };
    for k in ["Node (v1)", "Event (v1)", "Thing (nowhere.io/v1)"] {
        assert!(msg.contains(k), "{msg}");
    }
    assert!(!msg.contains("ConfigMap"), "{msg}");
    // A path that is not a name.
    let sneaky = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "../../x", "namespace": "default"}})];
    let e = super::super::import::plan(&archive_of(&sneaky), &catalog(), &t()).unwrap_err();
    assert!(matches!(e, PortableError::Damaged(_)), "{e}");
}
